"""The tensors a call was given (shape, stride, dtype), and how they differ from the baseline's.

A changed input is the most common false regression: a test that now builds 10% more elements
runs about 10% slower with unchanged code. Recording the inputs lets the message say so first.
Pure: tensors are read by duck typing (`shape`, `stride()`, `dtype`), so no torch import.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_kernelperf.model.call import MAX_TENSOR_DIMS, TensorInput, shape_text

MAX_INPUTS = 16
# A name a baseline file may hold: a parameter name, or `#<position>` without a signature.
NAME = re.compile(r"^[#A-Za-z_][A-Za-z0-9_.\[\]]{0,99}$")


def _is_tensor(value: object) -> bool:
    try:
        return (
            hasattr(value, "shape") and hasattr(value, "dtype") and callable(getattr(value, "stride", None))
        )
    except (RuntimeError, NotImplementedError):  # a nested tensor's `shape` raises, not only lacks
        return False


def _dtype_name(dtype: object) -> str:
    return str(dtype).removeprefix("torch.")


def _names(fn: Callable[..., Any] | None, count: int) -> list[str]:
    """Names of the first `count` positional arguments, where the signature tells them."""
    names: list[str] = []
    try:
        parameters = list(inspect.signature(fn).parameters.values()) if fn is not None else []
    except (TypeError, ValueError):  # builtins and some C extensions have no signature
        parameters = []
    for parameter in parameters:
        if len(names) >= count:
            break
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            names.extend(f"{parameter.name}[{i}]" for i in range(count - len(names)))
        elif parameter.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            names.append(parameter.name)
    names.extend(f"#{i}" for i in range(len(names), count))
    return names[:count]


def record(
    args: Sequence[Any], kwargs: Mapping[str, Any], fn: Callable[..., Any] | None = None
) -> tuple[TensorInput, ...]:
    """The tensors among the arguments (top level only), in call order; one without strides, or of
    more than MAX_TENSOR_DIMS dimensions, is left out."""
    names = _names(fn, len(args))
    found: list[TensorInput] = []
    pairs = [*zip(names, args, strict=True), *kwargs.items()]
    for name, value in pairs:
        if not _is_tensor(value) or not NAME.match(name):
            continue
        try:
            shape = tuple(int(d) for d in value.shape)
            stride = tuple(int(s) for s in value.stride())
        except (TypeError, ValueError, RuntimeError, NotImplementedError):  # sparse, nested: no strides
            continue
        if len(shape) > MAX_TENSOR_DIMS:
            continue
        found.append(TensorInput(name, shape, stride, _dtype_name(value.dtype)))
    return tuple(found[:MAX_INPUTS])


def _contiguous(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _grew(old: int, new: int) -> str:
    if old <= 0:
        return "changed"
    change = (new / old - 1) * 100
    word = "grew" if new > old else "shrank"
    return f"{word} {abs(change):.3g}%"


def describe_change(baseline: Sequence[TensorInput], current: Sequence[TensorInput]) -> list[str]:
    """One phrase per input that differs from the baseline's: size, dtype, layout, added or gone."""
    old = {t.name: t for t in baseline}
    new = {t.name: t for t in current}
    parts: list[str] = []
    for name in [t.name for t in current]:
        if name not in old:
            parts.append(f"{new[name].spelled()} is new")
            continue
        a, b = old[name], new[name]
        if a.shape != b.shape:
            parts.append(
                f"{name} {_grew(a.elements, b.elements)} ({a.elements} -> {b.elements} elements, "
                f"shape {shape_text(a.shape)} -> {shape_text(b.shape)})"
            )
        if a.dtype != b.dtype:
            parts.append(f"{name} {a.dtype} -> {b.dtype}")
        if a.shape == b.shape and a.stride != b.stride:
            layout = " (no longer contiguous)" if a.stride == _contiguous(a.shape) else ""
            parts.append(f"{name} strides {shape_text(a.stride)} -> {shape_text(b.stride)}{layout}")
    parts.extend(f"{old[name].spelled()} is gone" for name in old if name not in new)
    return parts


def input_line(baseline: Sequence[TensorInput] | None, current: Sequence[TensorInput] | None) -> str | None:
    """The regression message's line on inputs, or None when both runs had the same (or unknown)."""
    if baseline is None or current is None:
        return None
    parts = describe_change(baseline, current)
    if not parts:
        return None
    return "inputs differ from the baseline's: " + "; ".join(parts) + " (the test changed, not the kernel?)"
