"""Fused softmax over rows, Triton against torch.softmax, fp32 and bf16, small and large."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from studies.real_kernels.common import DTYPES, bench_triton, randn, tolerance
from studies.real_kernels.triton_kernels import softmax

# rows x cols. On an H200 "large" is 8192 x 4096 (128 MiB in fp32), "small" fits in the L2 many times.
SHAPES = {
    "cuda": {"small": (256, 1024), "large": (8192, 4096)},
    "cpu": {"small": (8, 32), "large": (33, 100)},
}


def torch_softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_softmax(kernel_bench: Any, dtype: str, size: str) -> None:
    device = kernel_bench.device
    rows, cols = SHAPES[device][size]
    x = randn(rows, cols, dtype=DTYPES[dtype], device=device, seed=3, scale=4.0)
    moved = 2 * x.numel() * x.element_size()
    tol = tolerance(x.dtype)
    bench_triton(kernel_bench, softmax, x, reference=torch_softmax, bytes=moved, **tol)
    kernel_bench(torch_softmax, x, reference=torch_softmax, name="torch", bytes=moved, **tol)
