"""A pytest plugin (`-p fixed_timer_plugin`, with scripts/ on PYTHONPATH) whose timer runs the kernel
for real on its device, then reports samples fixed by the test's label.

Used by scripts/gpu_xdist.sh: two parallel updates of the example suite can only give the same
bytes when the figures are the same, and real timings never are. The kernels still run on the
GPU each worker pinned, under the GPU lock, so pinning and locking are exercised as in a real run.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

import pytest

from pytest_kernelperf.timing import Metric, SamplingPlan, Target, Timing


class FixedTimer:
    method = "fixed"

    def measure(self, target: Target, plan: SamplingPlan) -> Timing:
        for _ in range(3):
            target.call()
        if target.device.kind == "cuda":
            import torch

            torch.cuda.synchronize()
        seed = zlib.crc32(target.label.encode())
        rng = random.Random(seed)
        base = 0.05 + (seed % 1000) / 1000
        return Timing(Metric(self.method, tuple(base * (1 + rng.gauss(0, 0.005)) for _ in range(30))))


@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_make_timer(config: pytest.Config, settings: Any, device: Any) -> FixedTimer:
    return FixedTimer()
