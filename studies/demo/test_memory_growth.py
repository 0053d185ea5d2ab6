"""A GELU that can be made to allocate a workspace, or to compile slowly, on demand: device memory
as a judged metric and progress on a long first call, on a real GPU (skips without one).

pytest --kernelperf-update-baselines studies/demo/test_memory_growth.py     # record (peak memory too)
pytest --kernelperf studies/demo/test_memory_growth.py                      # same, Memory column unchanged
KERNELPERF_DEMO_WORKSPACE_MIB=64 pytest --kernelperf studies/demo/test_memory_growth.py
    # fails: "device memory grew ... +64 MiB ...", naming aten::empty among the largest allocations
KERNELPERF_DEMO_FIRST_CALL_S=8 pytest --kernelperf studies/demo/test_memory_growth.py
    # "kernelperf: first call of ... (compile, JIT, autotune) ..." after 5 s, then "... 8.0 s"
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
import torch

from example_kernels.gelu import pytorch_gelu, triton_gelu

WORKSPACE_MIB = int(os.environ.get("KERNELPERF_DEMO_WORKSPACE_MIB", "0"))
FIRST_CALL_S = float(os.environ.get("KERNELPERF_DEMO_FIRST_CALL_S", "0"))
_called: list[int] = []


def workspace_gelu(x: torch.Tensor) -> torch.Tensor:
    if not _called:  # a first call that pays for a long compilation
        _called.append(1)
        time.sleep(FIRST_CALL_S)
    if WORKSPACE_MIB:  # a scratch buffer the kernel did not need before
        scratch = torch.empty(WORKSPACE_MIB << 20, dtype=torch.uint8, device=x.device)
        scratch[0] = 0
    return triton_gelu(x)


def test_workspace_gelu(kernel_bench: Any) -> None:
    if kernel_bench.device != "cuda":
        pytest.skip("device memory is measured on CUDA only")
    x = torch.randn(1 << 24, device="cuda")
    result = kernel_bench(workspace_gelu, x, reference=pytorch_gelu)
    print(f"peak memory beyond the inputs: {result.peak_memory_bytes} bytes; cost {result.cost}")
