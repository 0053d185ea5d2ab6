"""Launch-bound kernels of about 1-2 us on an H200: a Triton RMSNorm of 64 x 1024 fp16 and PyTorch's
rms_norm, a Triton silu(a) * b on 2^16 fp16 and PyTorch's two-kernel version, and torch.add on 2^14
fp32. At this size a verdict rests on CUPTI's 32 ns tick and on launch-to-launch jitter.
"""

from __future__ import annotations

from typing import Any

import torch

from studies.scoring_kernels.common import bench_triton, randn, tolerance
from studies.scoring_kernels.triton_kernels import rms_norm, silu_mul

# By device. CPU sizes: 100 columns (not a power of two, so the row is masked), 3000 elements (a
# ragged last block).
RMS_NORM_SHAPE = {"cuda": (64, 1024), "cpu": (8, 100)}
SILU_MUL_SIZE = {"cuda": 1 << 16, "cpu": 3000}
ADD_SIZE = {"cuda": 1 << 14, "cpu": 1 << 10}


def torch_rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps=1e-6)


def torch_silu_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.silu(a) * b


def test_rms_norm_small(kernel_bench: Any) -> None:
    device = kernel_bench.device
    rows, cols = RMS_NORM_SHAPE[device]
    x = randn(rows, cols, dtype=torch.float16, device=device, seed=50)
    weight = randn(cols, dtype=torch.float16, device=device, seed=51)
    moved = 2 * x.numel() * x.element_size() + weight.numel() * weight.element_size()
    tol = tolerance(x.dtype)
    bench_triton(kernel_bench, rms_norm, x, weight, reference=torch_rms_norm, bytes=moved, **tol)
    kernel_bench(torch_rms_norm, x, weight, reference=torch_rms_norm, name="torch", bytes=moved, **tol)


def test_silu_mul_small(kernel_bench: Any) -> None:
    device = kernel_bench.device
    n = SILU_MUL_SIZE[device]
    a = randn(n, dtype=torch.float16, device=device, seed=52, scale=3.0)
    b = randn(n, dtype=torch.float16, device=device, seed=53)
    moved = 3 * n * a.element_size()
    tol = tolerance(a.dtype)
    bench_triton(kernel_bench, silu_mul, a, b, reference=torch_silu_mul, bytes=moved, **tol)
    kernel_bench(torch_silu_mul, a, b, reference=torch_silu_mul, name="torch", bytes=moved, **tol)


def test_add_small(kernel_bench: Any) -> None:
    device = kernel_bench.device
    n = ADD_SIZE[device]
    x = randn(n, dtype=torch.float32, device=device, seed=54)
    y = randn(n, dtype=torch.float32, device=device, seed=55)
    kernel_bench(torch.add, x, y, reference=torch.add, name="torch", bytes=3 * n * x.element_size())
