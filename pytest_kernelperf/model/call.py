"""What one measured call was: its torch.compile context, its tensor inputs, the kernels it launched.

Recorded with a baseline entry, so that a regression message can say when the cause is not the
code: a changed input, another compile context, another kernel. Recording them is profiling/'s job
(compile_context, inputs, inventory), comparing them too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# --- the compile context of a torch.compile'd call ------------------------------------------------

STATIC = "static"
DYNAMIC = "dynamic"
SHAPES = (STATIC, DYNAMIC)
# How each kernel_bench measurement meets torch.compile's in-process caches.
FRESH = "fresh"  # a fresh compile context per measurement: verdicts independent of process history
SHARED = "shared"  # the process's warmed caches as they are (measure what a long-lived process runs)
MODES = (FRESH, SHARED)


@dataclass(frozen=True)
class CompileContext:
    """How the torch.compile'd code of one measured call was compiled.

    `dynamic` names the symbolic dimensions ("x: dim 0"); `seen` the shapes the same function was
    given earlier in the process, which made them symbolic; `kernels` the kernels inductor generated
    for the call's graphs and `code` a hash of their source (comments left out).
    """

    shapes: str  # STATIC or DYNAMIC
    compiles: int = 0  # compilations during the first call and warm-up
    dynamic: tuple[str, ...] = ()
    seen: tuple[str, ...] = ()
    kernels: tuple[str, ...] = ()
    code: str | None = None
    mode: str = FRESH
    reason: str | None = None  # dynamo's recompile reason, where it gave one

    def summary(self) -> str:
        if self.shapes == STATIC:
            return "compiled with static shapes"
        dims = f" ({', '.join(self.dynamic)})" if self.dynamic else ""
        return f"compiled with dynamic shapes{dims}"

    def why(self) -> str:
        """Why the shapes are dynamic, as a clause ("because ..."), or ''."""
        if self.shapes != DYNAMIC:
            return ""
        if self.seen:
            return f" because the same function saw {_plural_shapes(self.seen)} earlier in this process" + (
                f" ({self.reason})" if self.reason else ""
            )
        if self.reason:
            return f" ({self.reason})"
        return " (dynamic=True, mark_dynamic, or shapes seen earlier in this process)"


def _plural_shapes(shapes: Sequence[str]) -> str:
    if len(shapes) == 1:
        return f"shape {shapes[0]}"
    return "shapes " + ", ".join(shapes[:-1]) + f" and {shapes[-1]}"


# --- the call's tensor arguments ------------------------------------------------------------------


# The most dimensions of a tensor input an entry records: torch's own bound for a list of
# dimensions (`dim_list_to_bitset`, behind reductions over several dims). A tensor with more is left
# out of the record, as one without strides is (profiling/inputs.py).
MAX_TENSOR_DIMS = 64


@dataclass(frozen=True)
class TensorInput:
    """One tensor argument of the call."""

    name: str  # the parameter's name, or "#0" for the first positional argument without one
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str  # "float32", "bfloat16", ...

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    def spelled(self) -> str:
        return f"{self.name}: {self.dtype} {shape_text(self.shape)}"


def shape_text(shape: Sequence[int]) -> str:
    """`(4096, 1024)`, and `(8,)` for one dimension: a shape or strides as Python writes a tuple."""
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


# --- the kernels the call launched -----------------------------------------------------------------


@dataclass(frozen=True)
class KernelRecord:
    """One kernel (or memcpy/memset) of a call, aggregated over the profiled calls."""

    name: str
    launches: int  # per call
    share: float  # of the call's device time, 0 to 1
    ms: float  # mean duration of one launch
    code: str | None = None  # short hash of the generated code (Triton PTX, CUDA SASS), where known
    grid: tuple[int, ...] | None = None  # launch grid in blocks (x, y, z), where the profiler gives one

    @property
    def blocks(self) -> int | None:
        return math.prod(self.grid) if self.grid else None

    @property
    def per_call_ms(self) -> float:
        return self.launches * self.ms
