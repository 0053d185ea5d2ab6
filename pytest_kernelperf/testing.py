"""A deterministic timer and profiler for testing code that uses kernel_bench, without real noise.

In a conftest.py::

    from pytest_kernelperf.testing import ScriptedTimer

    @pytest.hookimpl(tryfirst=True)
    def pytest_kernelperf_make_timer(config, settings, device):
        return ScriptedTimer()

Then each timed function states its own time: ``kernel.fake_ms = 1.0``, or one per measurement of it in
the process, the last repeated: ``kernel.fake_ms = [1.2, 1.0]`` (timed alternating with a reference or
another revision, each round is a measurement of its own). A measurement is the
plan's rounds; each round draws its own level, ``fake_ms * exp(N(0, round_sd))``, and its samples are
that level with a small jitter, mirrored in pairs so that a round's midmean is its level. Every
draw is seeded (by the label, KERNELPERF_SCRIPTED_SEED, the
timer's `seed` and how many measurements of that label it has made), so verdicts are the same on
every run, while repeated measurements in one process draw afresh, as on a GPU.
``kernel.fake_throttle = ("software power cap",)`` makes every round report that throttling, with the
SM clock falling from 1980 MHz to ``kernel.fake_clock_mhz`` (default 1980: no drop) over the rounds.
``kernel.fake_load = 1.8`` is the host's load average per core read after the rounds (default: none
read, so that the machine running the tests never decides a verdict).
"""

from __future__ import annotations

import json
import math
import os
import random
import zlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_kernelperf.formatting import significant
from pytest_kernelperf.measure import health as health_mod
from pytest_kernelperf.measure.memory import MemoryReading, MemoryRequest
from pytest_kernelperf.measure.timing import Metric, SamplingPlan, Target, Timing
from pytest_kernelperf.model.call import KernelRecord
from pytest_kernelperf.profiling import inventory
from pytest_kernelperf.profiling.capture import CallProfile, ProfileRequest
from pytest_kernelperf.settings import Settings

SEED_VARIABLE = "KERNELPERF_SCRIPTED_SEED"


def sampling_plan(**changes: Any) -> SamplingPlan:
    """The plan of a run with the default settings (`Settings().plan()`, the options' defaults), with
    `changes`; a fixed number of rounds (`max_rounds=None`) unless given. For tests and studies that
    drive a timer directly."""
    return replace(Settings().plan(), **{"max_rounds": None, **changes})


class ScriptedTimer:
    """Samples from a stated time: round levels drawn with relative SD `round_sd`, samples with
    relative `jitter` around their round's level."""

    method = "scripted"

    def __init__(
        self, samples: int = 50, jitter: float = 0.005, round_sd: float = 0.0, seed: int = 0
    ) -> None:
        self.samples = samples
        self.jitter = jitter
        self.round_sd = round_sd
        self.seed = seed
        self._measured: dict[str, int] = {}

    def measure(self, target: Target, plan: SamplingPlan) -> Timing:
        target.call()  # a kernel that raises must still raise under the fake timer
        fake_ms = getattr(target.fn, "fake_ms", None)
        if fake_ms is None:
            raise AttributeError(f"ScriptedTimer needs {target.fn!r} to have a fake_ms attribute")
        count = self._measured.get(target.label, 0)
        self._measured[target.label] = count + 1
        if isinstance(fake_ms, Sequence):
            fake_ms = fake_ms[min(count, len(fake_ms) - 1)]
        rng = random.Random(
            zlib.crc32(f"{target.label}:{os.environ.get(SEED_VARIABLE, '0')}:{self.seed}:{count}".encode())
        )
        rounds = [
            self.round_samples(float(fake_ms), rng, max(self.samples, plan.min_samples))
            for _ in range(plan.rounds)
        ]
        health = _throttled(
            getattr(target.fn, "fake_throttle", None),
            plan.rounds,
            int(getattr(target.fn, "fake_clock_mhz", 1980)),
        )
        return Timing(
            device_time=Metric.of_rounds(self.method, rounds),
            health=health,
            # As a real timer would: every round and each of its re-measurements throttled.
            throttled_rounds=2 * plan.rounds if health else 0,
            host_load=getattr(target.fn, "fake_load", None),
        )

    def round_samples(self, fake_ms: float, rng: random.Random, count: int) -> list[float]:
        """Jitter in mirrored pairs around the round's level, so that the round's midmean is its
        level: with round_sd 0, a kernel stated 4x slower measures exactly 4x."""
        level = fake_ms * math.exp(rng.gauss(0, self.round_sd)) if self.round_sd else fake_ms
        out = [level] if count % 2 else []
        for _ in range(count // 2):
            jitter = rng.gauss(0, self.jitter)
            out += [level * (1 + jitter), level * (1 - jitter)]
        return out


def _throttled(reasons: Sequence[str] | None, rounds: int, clock_mhz: int) -> health_mod.Health | None:
    if not reasons:
        return None
    start = health_mod.HealthReading(sm_clock_mhz=1980, temperature_c=60, throttle_reasons=tuple(reasons))
    end = replace(start, sm_clock_mhz=clock_mhz)
    return health_mod.Health(start, end, throttled_rounds=rounds, lowest_clock_mhz=min(1980, clock_mhz))


class FakeProfiler:
    """A deterministic stand-in for torch.profiler, for tests of profiles and kernel inventories.

    In a conftest.py::

        from pytest_kernelperf.testing import FakeProfiler

        @pytest.hookimpl(tryfirst=True)
        def pytest_kernelperf_profile_call(config, profile_request):
            return FakeProfiler()(profile_request)

    Then each profiled function states what it launches, as (kernel name, launches per call, ms per
    launch) or (name, launches, ms, code hash) or (name, launches, ms, code hash or None, grid):
    ``kernel.fake_kernels = [("triton_poi_fused_0", 1, 0.5)]``. A function without `fake_kernels`
    gives no inventory, like a CPU run. With a folder in the request it writes `profile.txt` (the
    inventory as a table) and `trace.json` (one Chrome trace event per launch), so that artefact
    paths can be checked too.
    """

    def __call__(self, request: ProfileRequest) -> CallProfile:
        request.call()  # a kernel that raises must still raise under the fake profiler
        spec = getattr(request.fn, "fake_kernels", None)
        kernels = None if spec is None else self.records(spec)
        artifacts: list[Path] = []
        if request.folder is not None:
            request.folder.mkdir(parents=True, exist_ok=True)
            table = request.folder / "profile.txt"
            table.write_text("\n".join(inventory.table(kernels or ())) + "\n", encoding="utf-8")
            trace = request.folder / "trace.json"
            trace.write_text(json.dumps({"traceEvents": self.trace_events(kernels or ())}), encoding="utf-8")
            artifacts = [table, trace]
        return CallProfile(kernels=kernels, artifacts=tuple(artifacts))

    @staticmethod
    def records(spec: Sequence[Sequence[Any]]) -> tuple[KernelRecord, ...]:
        total = sum(int(item[1]) * float(item[2]) for item in spec)
        return tuple(
            sorted(
                (
                    KernelRecord(
                        name=str(item[0]),
                        launches=int(item[1]),
                        share=round(int(item[1]) * float(item[2]) / total, 3) if total else 0.0,
                        ms=significant(float(item[2]), 3),
                        code=str(item[3]) if len(item) > 3 and item[3] is not None else None,
                        grid=tuple(int(g) for g in item[4]) if len(item) > 4 else None,
                    )
                    for item in spec
                ),
                key=lambda k: k.name,
            )
        )

    @staticmethod
    def trace_events(kernels: Sequence[KernelRecord]) -> list[dict[str, Any]]:
        events, start_us = [], 0.0
        for kernel in kernels:
            for _ in range(kernel.launches):
                duration = kernel.ms * 1e3
                events.append(
                    {"name": kernel.name, "ph": "X", "ts": start_us, "dur": duration, "pid": 0, "tid": 7}
                )
                start_us += duration
        return events


class FakeMemoryProbe:
    """A deterministic stand-in for the CUDA allocator's statistics, for tests of device memory.

    In a conftest.py::

        from pytest_kernelperf.testing import FakeMemoryProbe

        @pytest.hookimpl(tryfirst=True)
        def pytest_kernelperf_peak_memory(config, memory_request):
            return FakeMemoryProbe()(memory_request)

    Then each function states the peak it allocates beyond its inputs, in bytes:
    ``kernel.fake_peak_bytes = 64 << 20``, and optionally the operators that allocate it, named in a
    failure: ``kernel.fake_allocations = ("aten::empty 64 MiB",)``. A function without
    `fake_peak_bytes` gives None, as a CPU does: no memory figure.
    """

    def __call__(self, request: MemoryRequest) -> MemoryReading | None:
        if request.prepare is not None:
            request.prepare()
        request.call()  # a kernel that raises must still raise under the fake probe
        peak = getattr(request.fn, "fake_peak_bytes", None)
        if peak is None:
            return None
        allocations = tuple(getattr(request.fn, "fake_allocations", ())) if request.allocations else ()
        return MemoryReading(int(peak), allocations)
