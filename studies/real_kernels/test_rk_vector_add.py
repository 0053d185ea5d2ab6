"""Vector add, Triton against PyTorch: a launch-bound size (~1 us on an H200) and a streaming one.

On an H200 the large size moves 3 x 128 MiB (fp32) or 3 x 64 MiB (fp16), past the 60 MiB L2.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from studies.real_kernels.common import DTYPES, bench_triton, randn
from studies.real_kernels.triton_kernels import vector_add

SIZES = {
    "cuda": {"small": 1 << 14, "large": 1 << 25},
    "cpu": {"small": 1 << 10, "large": 1 << 14},
}


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_vector_add(kernel_bench: Any, dtype: str, size: str) -> None:
    device = kernel_bench.device
    n = SIZES[device][size]
    x = randn(n, dtype=DTYPES[dtype], device=device, seed=1)
    y = randn(n, dtype=DTYPES[dtype], device=device, seed=2)
    moved = 3 * n * x.element_size()
    bench_triton(kernel_bench, vector_add, x, y, reference=torch.add, bytes=moved)
    kernel_bench(torch.add, x, y, reference=torch.add, name="torch", bytes=moved)
