"""kernel_bench's own keyword arguments: validated, and kept apart from the kernel's.

`kernel_bench(fn, *args, name=..., bytes=..., **kwargs)` passes every other keyword to `fn`. A kernel
may take a parameter of the same name (`name`, `bytes`, ...): Python would hand the value to
kernel_bench, and the kernel would fail with "missing 1 required positional argument" or silently
use its default. Such values go in `fn_kwargs={...}` instead, and the collision is named in the
error. Pure module: no torch, no pytest.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from typing import Any

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
