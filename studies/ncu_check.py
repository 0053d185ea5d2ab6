"""Run under Nsight Compute to cross-check CUPTI kernel times with an independent reading.

    ncu --clock-control none --metrics gpu__time_duration.sum python3 studies/ncu_check.py

launches the Triton GELU ten times at 2^16, 2^20, 2^24 and 2^28 elements (after a warm-up).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from example_kernels.gelu import triton_gelu

for log2 in (16, 20, 24, 28):
    x = torch.randn(1 << log2, device="cuda")
    triton_gelu(x)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(f"gelu_2^{log2}")
    for _ in range(10):
        triton_gelu(x)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
