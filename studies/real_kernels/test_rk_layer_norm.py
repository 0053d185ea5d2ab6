"""Layer norm forward, Triton against torch.nn.functional.layer_norm, fp16 and bf16."""

from __future__ import annotations

from typing import Any

import pytest

from studies.real_kernels.common import DTYPES, bench_triton, randn, tolerance
from studies.real_kernels.triton_kernels import layer_norm, torch_layer_norm

# rows x cols. The CPU's wide shape (5000 columns) takes two trips through the Triton kernel's chunk loop.
SHAPES = {
    "cuda": {"small": (512, 1024), "large": (8192, 8192)},
    "cpu": {"small": (8, 64), "large": (6, 5000)},
}
CASES = [("fp16", "small"), ("fp16", "large"), ("bf16", "large")]


@pytest.mark.parametrize(("dtype", "size"), CASES, ids=[f"{d}-{s}" for d, s in CASES])
def test_layer_norm(kernel_bench: Any, dtype: str, size: str) -> None:
    device = kernel_bench.device
    rows, cols = SHAPES[device][size]
    x = randn(rows, cols, dtype=DTYPES[dtype], device=device, seed=6)
    weight = randn(cols, dtype=DTYPES[dtype], device=device, seed=7)
    bias = randn(cols, dtype=DTYPES[dtype], device=device, seed=8)
    moved = 2 * x.numel() * x.element_size()
    tol = tolerance(x.dtype)
    bench_triton(kernel_bench, layer_norm, x, weight, bias, reference=torch_layer_norm, bytes=moved, **tol)
    kernel_bench(
        torch_layer_norm, x, weight, bias, reference=torch_layer_norm, name="torch", bytes=moved, **tol
    )
