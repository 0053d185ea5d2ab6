"""GEMMs in fp16 and bf16 (on an H200): cuBLAS through torch.matmul, and a Triton matmul with one fixed
config (128x256x64 tiles, 8 warps, 3 stages; no autotuning), at 4096x4096x4096 and at M=8192,
N=1024, K=4096 (M x N output, K deep).

B is scaled by 1/sqrt(K) so that outputs are of order one. FLOPs are 2*M*N*K; bytes are A and B read
once and C written once.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from studies.scoring_kernels.common import DTYPES, Tolerance, bench_triton, randn
from studies.scoring_kernels.triton_kernels import matmul

# (M, N, K). The CPU's "tall" shape is ragged against the interpreter's 16x16x16 tiles (masked loads);
# its "square" one is whole tiles (unmasked loads).
SHAPES = {
    "cuda": {"square": (4096, 4096, 4096), "tall": (8192, 1024, 4096)},
    "cpu": {"square": (32, 32, 48), "tall": (72, 40, 56)},
}


@pytest.mark.parametrize("shape", ["square", "tall"])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_matmul(kernel_bench: Any, dtype: str, shape: str) -> None:
    device = kernel_bench.device
    m, n, k = SHAPES[device][shape]
    a = randn(m, k, dtype=DTYPES[dtype], device=device, seed=40)
    b = randn(k, n, dtype=DTYPES[dtype], device=device, seed=41, scale=k**-0.5)
    flops = 2 * m * n * k
    moved = (m * k + k * n + m * n) * a.element_size()
    # fp32 accumulation in another order than cuBLAS's, rounded to 8 (bf16) or 11 (fp16) bits.
    tol = Tolerance(rtol=2e-2, atol=2e-2) if dtype == "fp16" else Tolerance(rtol=4e-2, atol=4e-2)
    bench_triton(kernel_bench, matmul, a, b, reference=torch.matmul, flops=flops, bytes=moved, **tol)
    if device == "cuda":
        kernel_bench(torch.matmul, a, b, reference=torch.matmul, name="cublas", flops=flops, bytes=moved)
