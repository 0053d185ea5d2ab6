"""A kernel_bench call's arguments: kernel_bench's own keywords validated and kept apart from the
kernel's, once, into a CallSpec that every stage reads.

`kernel_bench(fn, *args, name=..., bytes=..., **kwargs)` passes every other keyword to `fn`. A kernel
may take a parameter of the same name (`name`, `bytes`, ...): Python would hand the value to
kernel_bench, and the kernel would fail with "missing 1 required positional argument" or silently
use its default. Such values go in `fn_kwargs={...}` instead, and the collision is named in the
error. No torch, no pytest.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, cast

from pytest_kernelperf.call.context import CallRun
from pytest_kernelperf.correctness import NotRestorable, restore, snapshot
from pytest_kernelperf.verdict.ratio import validate_max_ratio

# kernel_bench's own keywords, in the order of its signature.
OWN_KEYWORDS = (
    "reference",
    "rtol",
    "atol",
    "name",
    "bytes",
    "flops",
    "max_ratio",
    "restore_inputs",
    "fn_kwargs",
)


class CallArgumentError(ValueError):
    """A kernel_bench argument is wrong; the message names it."""


def tolerance(value: object, argument: str) -> float | None:
    """rtol/atol: None (the dtype's default) or a finite number >= 0."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        raise CallArgumentError(
            f"{argument}={value!r} must be a finite number >= 0 (or None for the dtype's default)"
        )
    return float(value)


def amount(value: object, argument: str, unit: str) -> int | None:
    """bytes/flops per call: None or a whole number >= 0 (a float that is whole is accepted)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CallArgumentError(f"{argument}={value!r} must be a number of {unit} per call (an int >= 0)")
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise CallArgumentError(f"{argument}={value!r} must be a whole number of {unit} per call, >= 0")
    return int(value)


def fn_keywords(kwargs: Mapping[str, Any], fn_kwargs: object) -> dict[str, Any]:
    """The keywords for `fn`: the extra keywords of the call plus `fn_kwargs`, which may hold the
    names kernel_bench keeps for itself."""
    if fn_kwargs is None:
        return dict(kwargs)
    if not isinstance(fn_kwargs, Mapping) or not all(isinstance(k, str) for k in fn_kwargs):
        raise CallArgumentError(f"fn_kwargs= must be a dict of keyword arguments for fn, got {fn_kwargs!r}")
    both = sorted(set(kwargs) & set(fn_kwargs))
    if both:
        raise CallArgumentError(f"{', '.join(both)} given both as a keyword and in fn_kwargs=; give it once")
    return {**kwargs, **fn_kwargs}


def check_binding(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any], given: Mapping[str, object]
) -> str | None:
    """Why `fn(*args, **kwargs)` cannot be called, or a note when a keyword meant for kernel_bench is
    also a parameter of `fn`; None when all is well or `fn`'s signature cannot be read.

    `given` holds kernel_bench's own keywords that the caller set (not None).
    """
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins and some C extensions have none
        return None
    parameters = signature.parameters
    shared = [
        k
        for k in given
        if k in parameters
        and k not in kwargs
        and parameters[k].kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]
    try:
        signature.bind(*args, **kwargs)
    except TypeError as exc:
        hint = ""
        required = [k for k in OWN_KEYWORDS if k in parameters and k not in kwargs]
        if required:
            names = ", ".join(f"{k}=" for k in required)
            hint = (
                f"; {names} {'is' if len(required) == 1 else 'are'} kernel_bench's own: pass fn's value "
                f"in fn_kwargs={{{', '.join(repr(k) + ': ...' for k in required)}}}"
            )
        return f"fn cannot be called with these arguments: {exc}{hint}"
    if shared:
        names = ", ".join(f"{k}=" for k in shared)
        return (
            f"note: {names} went to kernel_bench (its own keyword), while fn also has a parameter of that "
            f"name, left at its default; to pass it to fn use fn_kwargs={{{shared[0]!r}: ...}}"
        )
    return None


@dataclass(frozen=True)
class CallSpec:
    """What one kernel_bench call asks for, validated: fn and its arguments, the reference and its
    tolerances, the amounts of work, the max_ratio limit and, for an in-place kernel
    (restore_inputs=True), the inputs' snapshot that is put back before every timed call."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    reference: Callable[..., Any] | None = None
    rtol: float | None = None
    atol: float | None = None
    bytes: int | None = None
    flops: int | None = None
    max_ratio: float | None = None
    saved: object = None  # the inputs' snapshot of an in-place kernel, else None

    @property
    def arguments(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return self.args, self.kwargs

    @property
    def call(self) -> Callable[[], Any]:
        return bind(self.fn, self.args, self.kwargs)

    def kind(self, default: str) -> str:
        """Where the call runs: CUDA when any tensor argument is on a CUDA device, else CPU."""
        tensors = [
            v for v in (*self.args, *self.kwargs.values()) if hasattr(v, "is_cuda") and hasattr(v, "device")
        ]
        if not tensors:
            return default
        return "cuda" if any(t.is_cuda for t in tensors) else "cpu"


def spec_of(
    run: CallRun,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    own: Mapping[str, object],
    fn_kwargs: object = None,
    restore_inputs: object = False,
) -> CallSpec:
    """The call's spec from kernel_bench's arguments (`own`: its keywords other than restore_inputs
    and fn_kwargs); a bad one fails the test with its name (and the test only)."""
    __tracebackhide__ = True
    try:
        if not callable(fn):
            raise CallArgumentError(f"kernel_bench needs a callable to time, got {type(fn).__name__}")
        keywords = fn_keywords(kwargs, fn_kwargs)
        tolerances = (tolerance(own["rtol"], "rtol"), tolerance(own["atol"], "atol"))
        amounts = (
            amount(own.get("bytes"), "bytes", "bytes"),
            amount(own.get("flops"), "flops", "floating-point operations"),
        )
        given = {k: v for k, v in own.items() if v is not None}
        problem = check_binding(fn, args, keywords, given)
    except CallArgumentError as exc:
        error: str | None = str(exc)
    else:
        error = None
        if problem is not None and not problem.startswith("note:"):
            error = problem
        elif problem is not None:
            run.warn(f"kernel_bench {problem.removeprefix('note: ')}")
    if error is not None:  # failed outside the except block: no chained traceback
        run.fail(error)
    reference = cast("Callable[..., Any] | None", own.get("reference"))
    limit = _max_ratio(run, own.get("max_ratio"), reference)
    if not isinstance(restore_inputs, bool):
        run.fail("restore_inputs= must be True or False")
    # An in-place kernel declared so: its inputs are put back before every timed call.
    saved = snapshot((tuple(args), keywords)) if restore_inputs else None
    return CallSpec(fn, tuple(args), keywords, reference, *tolerances, *amounts, max_ratio=limit, saved=saved)


def _max_ratio(run: CallRun, value: object, reference: Callable[..., Any] | None) -> float | None:
    __tracebackhide__ = True
    if value is None:
        return None
    try:
        limit: float | None = validate_max_ratio(value)
    except ValueError as exc:
        limit, error = None, str(exc)
    if limit is None:  # failed outside the except block: no chained traceback
        run.fail(error)
    if reference is None:
        run.fail(
            f"max_ratio={value!r} needs reference=, the function to time fn against "
            "(e.g. kernel_bench(fn, x, reference=torch_fn, max_ratio=1.1))"
        )
    return limit


def bind(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> Callable[[], Any]:
    return lambda: fn(*args, **kwargs)


def restorer(inputs: Any, saved: object, fail: Callable[[str], NoReturn]) -> Callable[[], object] | None:
    """A step that puts `inputs` back to `saved`, their snapshot from before the kernel's first call
    (its own copy: the reference's copy is handed to the reference, which may change it); None
    without a snapshot (a kernel not declared in place). What cannot be put back fails the test
    (`fail`, a usage error), naming the argument, rather than time changed inputs."""
    if saved is None:
        return None

    def put_back() -> None:
        __tracebackhide__ = True
        try:
            restore(inputs, saved)
        except NotRestorable as exc:
            problem = f"{argument_name(exc.path)}: {exc.problem}"
        else:
            return
        fail(f"restore_inputs=True cannot put back {problem}")

    return put_back


def argument_name(path: str) -> str:
    """ "[0][1]" (a path into (args, kwargs)) as the caller wrote it: "args[1]" or "kwargs['x']"."""
    if path.startswith("[0]"):
        return "args" + path[3:]
    return "kwargs" + path[3:] if path.startswith("[1]") else path
