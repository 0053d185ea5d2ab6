"""Triton autotuners of a call: the config each chose, and pinning them to the baseline's.

`@triton.autotune` benchmarks its configs on the first call per key and keeps the fastest; on a
real GPU two configs are often within noise of each other, so another process may pick another
one (+15% on a small matmul, measured on an H200). Recording the choice lets a verdict say that
the autotuner, not the code, changed; `autotune=baseline` pins each autotuner to the config the
baseline recorded, so the code is judged apart from that coin flip.

The autotuners are found among what the measured function refers to by name (globals and
closure, two levels deep: a wrapper calling `kernel[grid](...)`), without a scan of all objects.
No torch import; Triton is only looked at where the process imported it.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

FREE = "free"  # each autotuner picks as it will
BASELINE = "baseline"  # each autotuner runs the config the baseline recorded
MODES = (FREE, BASELINE)
_DEPTH = 2


def _autotuner_type() -> type | None:
    module = sys.modules.get("triton.runtime.autotuner")
    tuner = getattr(module, "Autotuner", None)
    return tuner if isinstance(tuner, type) else None


def describe_config(config: Any) -> str:
    """`BLOCK_SIZE=1024, num_warps=4, num_stages=3`: the kernel's meta-parameters, then launch
    options (num_ctas and maxnreg only where set off their defaults)."""
    parts = [f"{k}={v}" for k, v in (getattr(config, "kwargs", None) or {}).items()]
    for option, default in (("num_warps", None), ("num_stages", None), ("num_ctas", 1), ("maxnreg", None)):
        value = getattr(config, option, None)
        if value is not None and value != default:
            parts.append(f"{option}={value}")
    return ", ".join(parts)


def kernel_name(tuner: Any) -> str:
    """The name of the JIT function under an autotuner (through heuristics wrappers)."""
    fn = getattr(tuner, "base_fn", None) or getattr(tuner, "fn", None)
    for _ in range(4):
        name = getattr(fn, "__name__", None)
        if isinstance(name, str):
            return name
        fn = getattr(fn, "fn", None)
    return type(tuner).__name__


def _referenced(obj: Any) -> Iterator[Any]:
    function = getattr(obj, "__func__", obj)
    code = getattr(function, "__code__", None)
    if isinstance(code, types.CodeType):
        scope: Mapping[str, Any] = getattr(function, "__globals__", {}) or {}
        for name in dict.fromkeys(_names(code)):
            if name in scope:
                yield scope[name]
        for cell in getattr(function, "__closure__", None) or ():
            with contextlib.suppress(ValueError):
                yield cell.cell_contents
    inner = getattr(obj, "fn", None)  # heuristics wrapping an autotuner, and the like
    if inner is not None:
        yield inner


def _names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


def autotuners_of(fn: Callable[..., Any]) -> list[Any]:
    """The Triton autotuners `fn` is or refers to, in the order found."""
    tuner_type = _autotuner_type()
    if tuner_type is None:
        return []
    found: list[Any] = []
    seen: set[int] = set()
    frontier = [fn]
    for _ in range(_DEPTH + 1):
        following: list[Any] = []
        for obj in frontier:
            if id(obj) in seen or isinstance(obj, (types.ModuleType, type)):
                continue
            seen.add(id(obj))
            if issubclass(type(obj), tuner_type):
                found.append(obj)
            following.extend(_referenced(obj))
        frontier = following
    return found


class AutotuneWatch:
    """Records what each autotuner of `fn` runs during the call; pins them on request.

    Each autotuner's `run` is wrapped for the duration (an instance attribute over the class's
    method, which `kernel[grid](...)` looks up), so only autotuners that ran are recorded.
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.tuners = autotuners_of(fn)
        self.chosen: dict[str, str] = {}
        self.notes: list[str] = []
        self._pinned: list[tuple[Any, Any]] = []  # (tuner, its own configs list)

    def __enter__(self) -> AutotuneWatch:
        for tuner in self.tuners:
            self._wrap(tuner)
        return self

    def __exit__(self, *exc: object) -> None:
        self.unpin()
        for tuner in self.tuners:
            tuner.__dict__.pop("run", None)

    def _wrap(self, tuner: Any) -> None:
        run = type(tuner).run

        def recorded(*args: Any, **kwargs: Any) -> Any:
            result = run(tuner, *args, **kwargs)
            config = getattr(tuner, "best_config", None)
            if config is not None:
                self.chosen[kernel_name(tuner)] = describe_config(config)
            return result

        tuner.run = recorded

    def pin(self, configs: Mapping[str, str]) -> None:
        """Make each autotuner named in `configs` run that config only (no benchmarking), until
        unpin; an autotuner whose recorded config is no longer among its own is left free."""
        for tuner in self.tuners:
            name = kernel_name(tuner)
            wanted = configs.get(name)
            if wanted is None:
                continue
            own = list(getattr(tuner, "configs", []) or [])
            match = [c for c in own if describe_config(c) == wanted]
            if not match:
                self.notes.append(
                    f"autotune=baseline: {name}'s recorded config ({wanted}) is not among its configs "
                    "now; it was autotuned freely"
                )
                continue
            self._pinned.append((tuner, tuner.configs))
            tuner.configs = match[:1]  # one config: Triton runs it without benchmarking

    def unpin(self) -> None:
        for tuner, configs in reversed(self._pinned):
            tuner.configs = configs
        self._pinned.clear()


def autotune_line(baseline: Mapping[str, str] | None, current: Mapping[str, str] | None) -> str | None:
    """The message's line when an autotuner chose otherwise than in the baseline, else None."""
    if not baseline or not current:
        return None
    changed = [
        f"{name} {baseline[name]} -> {current[name]}"
        for name in sorted(baseline.keys() & current.keys())
        if baseline[name] != current[name]
    ]
    if not changed:
        return None
    return (
        "autotuner chose another config than in the baseline: "
        + "; ".join(changed)
        + " (autotune=baseline, the default when comparing, pins the baseline's configs to judge the code "
        "apart from the autotuner)"
    )
