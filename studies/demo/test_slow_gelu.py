"""A GELU that can be made slower or wrong on demand, to show the verdicts on a real GPU.

pytest --kernelperf-update-baselines studies/demo     # record
KERNELPERF_DEMO_REPEAT=4 pytest --kernelperf studies/demo  # 4x the work: fails with "regression"
KERNELPERF_DEMO_SCALE=1.01 pytest studies/demo             # 1% off: fails with "mismatch"
"""

from __future__ import annotations

import os
from typing import Any

import torch

from example_kernels.gelu import pytorch_gelu, triton_gelu

REPEAT = int(os.environ.get("KERNELPERF_DEMO_REPEAT", "1"))
SCALE = float(os.environ.get("KERNELPERF_DEMO_SCALE", "1"))


def demo_gelu(x: torch.Tensor) -> torch.Tensor:
    for _ in range(REPEAT - 1):
        triton_gelu(x)
    y = triton_gelu(x)
    return y * SCALE if SCALE != 1 else y


def test_demo_gelu(kernel_bench: Any) -> None:
    if kernel_bench.device != "cuda":
        import pytest

        pytest.skip("the demo times Triton on a GPU")
    x = torch.randn(1 << 24, device="cuda")
    kernel_bench(demo_gelu, x, reference=pytorch_gelu)
