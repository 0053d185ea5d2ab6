"""Compute-bound GEMMs that run at the GPU's software power cap (on an H200): cuBLAS bf16 and fp8
(torch._scaled_mm), 0.6-0.8 ms each. `KERNELPERF_STUDY_PLANT` (default 1.0) makes the code do that
much more work (a deeper K, sliced back), the way a real change slows a kernel: the clock stays at
the cap, the time and the cycles both grow.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch

PLANT = float(os.environ.get("KERNELPERF_STUDY_PLANT", "1.0"))
M = N = 8192
K = 5120


def _deeper(k: int) -> int:
    return round(k * PLANT / 128) * 128


@pytest.fixture
def cuda() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA: the power cap is a GPU's")


def test_gemm_bf16(kernel_bench: Any, cuda: None) -> None:
    k = _deeper(K)
    a = torch.randn(M, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, N, device="cuda", dtype=torch.bfloat16) * k**-0.5

    def gemm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b

    kernel_bench(gemm, a, b, name="bf16", flops=2 * M * N * K)


def test_gemm_fp8(kernel_bench: Any, cuda: None) -> None:
    k = _deeper(K)
    a = torch.randn(M, k, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(N, k, device="cuda").to(torch.float8_e4m3fn).t()
    one = torch.ones((), device="cuda")

    def gemm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    kernel_bench(gemm, a, b, name="fp8", flops=2 * M * N * K)
