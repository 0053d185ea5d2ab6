"""A pytest plugin (`-p fixed_timer_plugin`, with studies/ on PYTHONPATH) whose timer runs the kernel
for real on its device, then reports samples fixed by the test's label; its profiler runs the real
one and fixes the per-kernel times of the inventory the same way (names, launch counts and code
hashes stay as measured).

Used by studies/gpu_xdist.sh: two parallel updates of the example suite can only give the same
bytes when the figures are the same, and real timings never are. The kernels still run on the
GPU each worker pinned, under the GPU lock, so pinning and locking are exercised as in a real run.
"""

from __future__ import annotations

import dataclasses
import random
import zlib
from typing import Any

import pytest

from pytest_kernelperf.measure.timing import Metric, SamplingPlan, Target, Timing
from pytest_kernelperf.profiling.capture import CallProfile, ProfileRequest, capture


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


@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_profile_call(config: pytest.Config, profile_request: ProfileRequest) -> CallProfile:
    real = capture(profile_request)
    if not real.kernels:
        return real
    times = {k.name: 0.01 + zlib.crc32(k.name.encode()) % 1000 / 1e4 for k in real.kernels}
    total = sum(times[k.name] * k.launches for k in real.kernels)
    fixed = tuple(
        dataclasses.replace(k, ms=round(times[k.name], 4), share=round(times[k.name] * k.launches / total, 3))
        for k in real.kernels
    )
    return dataclasses.replace(real, kernels=fixed)
