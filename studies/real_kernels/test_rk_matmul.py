"""fp16 matmul: the autotuned Triton kernel checked against torch.matmul, and cuBLAS timed too.

Shapes (M, N, K) on an H200: 256^3 (a few microseconds), 2048^3 and 4096^3 (about 0.2 ms).
B is scaled by 1/sqrt(K) so that the outputs are of order one whatever K is. The config the autotuner
chose is recorded as the JUnit property `triton_config`.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from studies.real_kernels.common import Tolerance, bench_triton, randn, tolerance
from studies.real_kernels.triton_kernels import autotuned_config, matmul

SHAPES = {
    "cuda": {"small": (256, 256, 256), "mid": (2048, 2048, 2048), "large": (4096, 4096, 4096)},
    "cpu": {"small": (32, 32, 32), "mid": (48, 40, 72), "large": (64, 64, 64)},
}


@pytest.mark.parametrize("size", ["small", "mid", "large"])
def test_matmul(kernel_bench: Any, record_property: Any, size: str) -> None:
    device = kernel_bench.device
    m, n, k = SHAPES[device][size]
    a = randn(m, k, dtype=torch.float16, device=device, seed=4)
    b = randn(k, n, dtype=torch.float16, device=device, seed=5, scale=k**-0.5)
    flops = 2 * m * n * k
    tol = Tolerance(rtol=2e-2, atol=2e-2) if k > 1024 else tolerance(torch.float16)
    bench_triton(kernel_bench, matmul, a, b, reference=torch.matmul, flops=flops, **tol)
    # The autotuner benchmarks its configs afresh in every process and may pick another one: kept in
    # the JUnit XML (a <property>), where the studies read it.
    record_property("triton_config", autotuned_config())
    if device == "cuda":
        kernel_bench(torch.matmul, a, b, reference=torch.matmul, name="cublas", flops=flops)
