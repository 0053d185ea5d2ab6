"""Helpers of the scoring suite: those of studies/real_kernels (inputs, tolerances, Triton's CPU
fallback), plus integer inputs and the CUDA-only skips."""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch

from studies.real_kernels.common import CPU_CHECK, DTYPES, Tolerance, bench_triton, randn, tolerance

__all__ = [
    "CPU_CHECK",
    "DTYPES",
    "Tolerance",
    "bench_triton",
    "randint",
    "randn",
    "require_compile",
    "tolerance",
]

COMPILE_VARIABLE = "KERNELPERF_STUDY_CPU_COMPILE"


def randint(low: int, high: int, *shape: int, dtype: torch.dtype, device: str, seed: int = 0) -> torch.Tensor:
    """Uniform integers in [low, high), the same for a given seed whatever ran before (own generator)."""
    generator = torch.Generator(device=device).manual_seed(seed)
    return torch.randint(low, high, shape, device=device, generator=generator, dtype=dtype)


def require_compile(kernel_bench: Any) -> None:
    """Skip a torch.compile test on a machine without CUDA unless KERNELPERF_STUDY_CPU_COMPILE=1."""
    if kernel_bench.device != "cuda" and os.environ.get(COMPILE_VARIABLE) != "1":
        pytest.skip(
            "torch.compile on the CPU: a cold Inductor compile takes ~40 s on two cores; "
            f"set {COMPILE_VARIABLE}=1 to run it"
        )
