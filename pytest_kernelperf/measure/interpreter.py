"""Triton's CPU interpreter noticed, so that a call it runs is checked and never timed.

With TRITON_INTERPRET=1 (the only way to run Triton without a GPU), `triton.jit` makes each kernel
an InterpretedFunction that runs its program in Python on the CPU: right answers, but times of the
interpreter (tens of milliseconds for a kernel of microseconds). Timed, they would be judged and
written into baselines as the kernel's. `interpreted` says whether a call reaches such a kernel:
fn itself, what it wraps (an autotuner, a partial, a bound method), or a kernel its code names,
through the functions it calls, a few levels deep. Triton is never imported here: without it in
`sys.modules` nothing can be interpreted.
"""

from __future__ import annotations

import functools
import inspect
import sys
from types import CodeType
from typing import Any

DEPTH = 3  # functions followed from fn: fn -> a helper -> the launcher -> the kernel


def interpreted(fn: Any) -> str | None:
    """Why calling `fn` runs Triton's CPU interpreter (the note of a `checked` result), or None."""
    module = sys.modules.get("triton.runtime.interpreter")
    kind = getattr(module, "InterpretedFunction", None)
    if not isinstance(kind, type):
        return None
    kernel = _reaches(fn, kind, DEPTH, set())
    if kernel is None:
        return None
    return (
        f"untimed: {kernel} runs in Triton's CPU interpreter (TRITON_INTERPRET=1), whose times are the "
        "interpreter's, not the kernel's; time it on a GPU without TRITON_INTERPRET"
    )


def _reaches(value: Any, kind: type, depth: int, seen: set[int]) -> str | None:
    """The name of an interpreted kernel `value` is, wraps, or (as a function) names; or None."""
    if id(value) in seen:
        return None
    seen.add(id(value))
    if isinstance(value, kind):
        inner = getattr(value, "fn", None)
        return getattr(inner, "__qualname__", None) or getattr(value, "__name__", None) or repr(value)
    wrapped = [_attribute(value, name) for name in ("fn", "__wrapped__", "__func__", "_orig_mod")]
    if isinstance(value, functools.partial):
        wrapped.append(value.func)
    for inner in wrapped:
        if inner is not None and inner is not value:
            found = _reaches(inner, kind, depth, seen)
            if found is not None:
                return found
    if not inspect.isfunction(value) or depth <= 0:
        return None
    namespace = value.__globals__
    held = [namespace[name] for name in _names(value.__code__) if name in namespace]
    held += [cell.cell_contents for cell in value.__closure__ or () if _filled(cell)]
    for item in held:
        if isinstance(item, kind) or callable(item):
            found = _reaches(item, kind, depth - 1, seen)
            if found is not None:
                return found
    return None


def _names(code: CodeType) -> list[str]:
    """The global names a function's code (and the code nested in it) reads."""
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            names += _names(const)
    return names


def _attribute(value: Any, name: str) -> Any:
    try:
        return getattr(value, name, None)
    except Exception:  # an object whose __getattr__ raises something else
        return None


def _filled(cell: Any) -> bool:
    try:
        return cell.cell_contents is not _UNBOUND
    except ValueError:  # a free variable not bound yet
        return False


_UNBOUND = object()
