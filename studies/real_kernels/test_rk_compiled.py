"""torch.compile'd kernels written the usual way: one module-level compiled function per operation,
shared by parametrized tests over several shapes and dtypes.

This is the pattern in which the generated code depends on the process's history: the first call
of `compiled_rmsnorm` compiles for that exact shape; a later call with another shape recompiles with
automatic dynamic shapes, and that dynamic kernel then serves every shape after it. Which kernel a
test times therefore depends on which tests ran before it in the same process (order, `-k`,
pytest-xdist's distribution of tests over workers). The studies measure what that does to verdicts.

Without CUDA these tests skip unless KERNELPERF_STUDY_CPU_COMPILE=1 (a cold Inductor compile takes
about 40 s on two CPU cores); with it they run at tiny sizes, timed on the CPU.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch

from studies.real_kernels.common import DTYPES, randn, tolerance


def rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    scaled = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    return scaled.to(x.dtype) * weight


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    mean = xf.mean(dim=-1, keepdim=True)
    var = (xf - mean).pow(2).mean(dim=-1, keepdim=True)
    return ((xf - mean) * torch.rsqrt(var + 1e-5) * weight.float() + bias.float()).to(x.dtype)


def softmax(x: torch.Tensor) -> torch.Tensor:
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


compiled_rmsnorm = torch.compile(rmsnorm)
compiled_layer_norm = torch.compile(layer_norm)
compiled_softmax = torch.compile(softmax)

# On an H200 "large" moves 2 x 64 MiB (fp16) and "small" a few MiB. The CPU shapes are tiny.
SHAPES = {
    "cuda": {"small": (1024, 1024), "mid": (2048, 3072), "large": (8192, 4096)},
    "cpu": {"small": (8, 32), "mid": (16, 48), "large": (24, 64)},
}
RMS_CASES = [("fp16", "small"), ("fp16", "large"), ("bf16", "small"), ("bf16", "large")]
LN_CASES = [("fp16", "mid"), ("bf16", "large")]
SOFTMAX_CASES = [("fp32", "small"), ("bf16", "large")]


def record_graphs(record_property: Any) -> None:
    """Keep in the JUnit XML how many graphs Dynamo has compiled in this process so far (a private
    counter of torch._dynamo; "unknown" if it moved): the history that decides the kernel."""
    try:
        from torch._dynamo.utils import counters

        graphs: object = counters["stats"]["unique_graphs"]
    except Exception:
        graphs = "unknown"
    record_property("dynamo_graphs_so_far", str(graphs))


def shape_of(kernel_bench: Any, size: str) -> tuple[int, int]:
    device = kernel_bench.device
    if device != "cuda" and os.environ.get("KERNELPERF_STUDY_CPU_COMPILE") != "1":
        pytest.skip(
            "torch.compile on the CPU: a cold Inductor compile takes ~40 s on two cores; "
            "set KERNELPERF_STUDY_CPU_COMPILE=1 to run it"
        )
    return SHAPES[device][size]


def ids(cases: list[tuple[str, str]]) -> list[str]:
    return [f"{dtype}-{size}" for dtype, size in cases]


@pytest.mark.parametrize(("dtype", "size"), RMS_CASES, ids=ids(RMS_CASES))
def test_compiled_rmsnorm(kernel_bench: Any, record_property: Any, dtype: str, size: str) -> None:
    rows, cols = shape_of(kernel_bench, size)
    device = kernel_bench.device
    x = randn(rows, cols, dtype=DTYPES[dtype], device=device, seed=9)
    weight = randn(cols, dtype=DTYPES[dtype], device=device, seed=10)
    moved = 2 * x.numel() * x.element_size()
    tol = tolerance(x.dtype)
    kernel_bench(compiled_rmsnorm, x, weight, reference=rmsnorm, name="compiled", bytes=moved, **tol)
    kernel_bench(rmsnorm, x, weight, reference=rmsnorm, name="eager", bytes=moved, **tol)
    record_graphs(record_property)


@pytest.mark.parametrize(("dtype", "size"), LN_CASES, ids=ids(LN_CASES))
def test_compiled_layer_norm(kernel_bench: Any, record_property: Any, dtype: str, size: str) -> None:
    rows, cols = shape_of(kernel_bench, size)
    device = kernel_bench.device
    x = randn(rows, cols, dtype=DTYPES[dtype], device=device, seed=11)
    weight = randn(cols, dtype=DTYPES[dtype], device=device, seed=12)
    bias = randn(cols, dtype=DTYPES[dtype], device=device, seed=13)
    moved = 2 * x.numel() * x.element_size()
    kernel_bench(
        compiled_layer_norm, x, weight, bias, reference=layer_norm, name="compiled", bytes=moved,
        **tolerance(x.dtype),
    )  # fmt: skip
    record_graphs(record_property)


@pytest.mark.parametrize(("dtype", "size"), SOFTMAX_CASES, ids=ids(SOFTMAX_CASES))
def test_compiled_softmax(kernel_bench: Any, record_property: Any, dtype: str, size: str) -> None:
    rows, cols = shape_of(kernel_bench, size)
    device = kernel_bench.device
    x = randn(rows, cols, dtype=DTYPES[dtype], device=device, seed=14, scale=4.0)
    moved = 2 * x.numel() * x.element_size()
    kernel_bench(compiled_softmax, x, reference=softmax, name="compiled", bytes=moved, **tolerance(x.dtype))
    record_graphs(record_property)
