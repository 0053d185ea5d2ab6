"""A deterministic timer for testing code that uses kernel_bench, without real timing noise.

In a conftest.py::

    from pytest_kernelperf.testing import ScriptedTimer

    @pytest.hookimpl(tryfirst=True)
    def pytest_kernelperf_make_timer(config, settings, device):
        return ScriptedTimer()

Then each timed function states its own time: ``kernel.fake_ms = 1.0``. Samples are that time
with a small seeded jitter, the same on every run, so verdicts are reproducible.
"""

from __future__ import annotations

import os
import random
import zlib

from .timing import Metric, SamplingPlan, Target, Timing

SEED_VARIABLE = "KERNELPERF_SCRIPTED_SEED"


class ScriptedTimer:
    method = "scripted"

    def __init__(self, samples: int = 50, jitter: float = 0.005) -> None:
        self.samples = samples
        self.jitter = jitter

    def measure(self, target: Target, plan: SamplingPlan) -> Timing:
        target.call()  # a kernel that raises must still raise under the fake timer
        fake_ms = getattr(target.fn, "fake_ms", None)
        if fake_ms is None:
            raise AttributeError(f"ScriptedTimer needs {target.fn!r} to have a fake_ms attribute")
        seed = zlib.crc32(f"{target.label}:{os.environ.get(SEED_VARIABLE, '0')}".encode())
        rng = random.Random(seed)
        count = max(self.samples, plan.min_samples)
        samples = tuple(float(fake_ms) * (1 + rng.gauss(0, self.jitter)) for _ in range(count))
        return Timing(device_time=Metric(self.method, samples))
