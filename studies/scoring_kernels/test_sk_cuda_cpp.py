"""CUDA C++ kernels compiled at run time with NVRTC (`torch.cuda._compile_kernel`), on an H200: a
grid-stride SAXPY on 2^22 fp32 (48 MiB moved) against torch.add(y, x, alpha=a), and a warp-shuffle
row sum of 8192 x 1024 fp32 (32 MiB) against x.sum(dim=1). Skipped without CUDA (no CPU fallback) and
on a torch without the private API.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from studies.scoring_kernels.common import Tolerance, randn
from studies.scoring_kernels.cuda_kernels import (
    row_sum,
    saxpy,
    torch_row_sum,
    torch_saxpy,
    unavailable_reason,
)

SAXPY_SIZE = 1 << 22
ROW_SUM_SHAPE = (8192, 1024)
TOLERANCE = Tolerance(rtol=1e-5, atol=1e-4)


def skip_if_unavailable() -> None:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)


def test_saxpy(kernel_bench: Any) -> None:
    skip_if_unavailable()
    n = SAXPY_SIZE
    x = randn(n, dtype=torch.float32, device="cuda", seed=70)
    y = randn(n, dtype=torch.float32, device="cuda", seed=71)
    moved = 3 * n * 4
    kernel_bench(saxpy, x, y, 1.5, reference=torch_saxpy, name="nvrtc", bytes=moved, **TOLERANCE)
    kernel_bench(torch_saxpy, x, y, 1.5, reference=torch_saxpy, name="torch", bytes=moved, **TOLERANCE)


def test_row_sum(kernel_bench: Any) -> None:
    skip_if_unavailable()
    rows, cols = ROW_SUM_SHAPE
    x = randn(rows, cols, dtype=torch.float32, device="cuda", seed=72)
    moved = (x.numel() + rows) * 4
    kernel_bench(row_sum, x, reference=torch_row_sum, name="nvrtc", bytes=moved, **TOLERANCE)
    kernel_bench(torch_row_sum, x, reference=torch_row_sum, name="torch", bytes=moved, **TOLERANCE)
