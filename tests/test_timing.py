"""The sampling loop and warm-up, with fake batches and fake clocks (no real timing asserted)."""

from __future__ import annotations

import itertools

import pytest

from pytest_kernelperf.measure.device import DeviceInfo
from pytest_kernelperf.measure.timing import SamplingPlan, Target, TimingError, collect, make_timer, warm_up


class FakeClock:
    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_collect_stops_when_the_median_is_pinned_down(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pytest_kernelperf.measure.timing.time.perf_counter", FakeClock(0.001))
    samples = collect(
        lambda: [1.0, 1.0001, 0.9999], SamplingPlan(min_samples=10, min_time_s=0.0, max_time_s=100)
    )
    assert 10 <= len(samples) <= 15  # tight samples: stops at the first check past the minimum


def test_collect_stops_at_the_time_budget_when_noisy(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock(0.01)
    monkeypatch.setattr("pytest_kernelperf.measure.timing.time.perf_counter", clock)
    values = itertools.cycle([1.0, 3.0, 0.5, 2.0])
    plan = SamplingPlan(min_samples=5, min_time_s=0.0, max_time_s=1.0, target_ci=1e-6)
    samples = collect(lambda: [next(values)], plan)
    assert clock.now >= 1.0 and len(samples) < 200


def test_collect_never_stops_before_min_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "pytest_kernelperf.measure.timing.time.perf_counter", FakeClock(10.0)
    )  # every batch blows the budget
    samples = collect(lambda: [1.0], SamplingPlan(min_samples=7, max_time_s=0.1))
    assert len(samples) == 7


def test_warm_up_runs_past_a_slow_first_call() -> None:
    calls = []
    warm_up(lambda: calls.append(1), lambda: None, SamplingPlan(warmup_s=0.0))
    assert len(calls) >= 4  # the first call, then at least three settling calls


def test_wall_clock_timer_counts_and_names_its_method() -> None:
    calls = []
    cpu = DeviceInfo(kind="cpu", name="test CPU")
    result = make_timer("auto", cpu).measure(
        Target(lambda: calls.append(1), cpu), SamplingPlan(min_samples=12, max_time_s=0.05, warmup_s=0.0)
    )
    assert result.device_time.method == "wall-clock"
    assert len(result.device_time.samples_ms) >= 12
    assert all(s >= 0 for s in result.device_time.samples_ms)
    assert len(calls) >= 12 + 4


def test_cuda_timers_refuse_a_cpu_device() -> None:
    with pytest.raises(TimingError, match="needs a CUDA device"):
        make_timer("cupti", DeviceInfo(kind="cpu", name="test CPU"))
