"""The five ways to write GELU (tanh approximation), from slowest to write-it-yourself.

1. manual:   PyTorch ops, one kernel per op (about eight passes over memory on a GPU);
2. pytorch:  the built-in `F.gelu(approximate="tanh")`, one fused kernel;
3. compiled: `torch.compile` of the manual version, which fuses it into one generated kernel;
4. cuda:     a hand-written CUDA kernel (gelu.cu), built on first use with load_inline;
5. triton:   a Triton kernel (triton_gelu.py).

Each costly part is made at its first use, not when the module is imported: torch.compile's
compiler (dynamo and inductor, seconds to import), the CUDA extension (a build or a load) and
Triton. So `pytest --collect-only example_kernels`, or a run of only the PyTorch GELUs, pays none.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

SQRT_2_OVER_PI = 0.79788456
CUDA_SOURCE = Path(__file__).with_name("gelu.cu")
# The lecture's float64 math: a deliberately slower variant, not one of the five (see gelu_double.cu).
CUDA_DOUBLE_SOURCE = Path(__file__).with_name("gelu_double.cu")


def manual_gelu(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1 + torch.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))


def pytorch_gelu(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


def __getattr__(name: str) -> Any:
    """`compiled_gelu`, torch.compile of the manual GELU, made on first use (importing torch's
    compiler takes seconds) and kept as the module's attribute from then on."""
    if name != "compiled_gelu":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Inductor times a few block sizes of a pointwise kernel on first use and keeps the fastest; the
    # pick can differ between cards of one model (an H200 chose 512-element blocks, another 1024,
    # 18% apart), so a baseline recorded on one card would judge another card's pick. One fixed block
    # size keeps the example's kernel the same everywhere; a compiled kernel of your own may want the same.
    compiled = torch.compile(manual_gelu, options={"triton.autotune_pointwise": False})
    globals()[name] = compiled
    return compiled


def cuda_gelu(x: torch.Tensor) -> torch.Tensor:
    return _cuda_extension()(x)


def cuda_gelu_double(x: torch.Tensor) -> torch.Tensor:
    """The CUDA GELU computed in float64 (the lecture's `tanh` and double literals)."""
    return _inline_extension("kernelperf_example_gelu_double", CUDA_DOUBLE_SOURCE)(x)


@cache
def _cuda_extension() -> Callable[[torch.Tensor], torch.Tensor]:
    """The CUDA GELU: the ahead-of-time build (cuda_ext/setup.py) if installed, else load_inline.

    load_inline compiles once per source and flags into torch's extension cache
    (TORCH_EXTENSIONS_DIR, by default ~/.cache/torch_extensions): about a minute the first time,
    a module load after that.
    """
    try:
        import gelu_extension  # type: ignore[import-not-found]
    except ImportError:
        pass
    else:
        return gelu_extension.gelu  # type: ignore[no-any-return]
    return _inline_extension("kernelperf_example_gelu", CUDA_SOURCE)


@cache
def _inline_extension(name: str, source: Path) -> Callable[[torch.Tensor], torch.Tensor]:
    from torch.utils.cpp_extension import load_inline

    module = load_inline(
        name=name,
        cpp_sources=["torch::Tensor gelu(torch::Tensor x);"],
        cuda_sources=[source.read_text()],
        functions=["gelu"],
        extra_cflags=["-O2"],
        extra_cuda_cflags=["-O2"],
    )
    return module.gelu  # type: ignore[no-any-return]


def triton_gelu(x: torch.Tensor) -> torch.Tensor:
    from .triton_gelu import triton_gelu as run

    return run(x)


IMPLEMENTATIONS = ("manual", "pytorch", "compiled", "cuda", "triton")


def implementation(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The GELU named `name` (one of IMPLEMENTATIONS): this module's `<name>_gelu`."""
    fn: Callable[[torch.Tensor], torch.Tensor] = getattr(sys.modules[__name__], f"{name}_gelu")
    return fn
