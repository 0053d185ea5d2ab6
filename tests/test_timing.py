"""The sampling loop and warm-up, with fake batches and fake clocks (no real timing asserted)."""

from __future__ import annotations

import pytest
from conftest import fresh_interpreter

from pytest_kernelperf.measure import health, timing
from pytest_kernelperf.measure.timing import Target, TimingError, collect, make_timer, warm_up
from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.testing import sampling_plan


class FakeClock:
    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_a_round_stops_once_it_has_min_samples_and_min_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # No early stop on the round's own precision: tight samples run to min_time like noisy ones.
    clock = FakeClock(0.001)
    monkeypatch.setattr("pytest_kernelperf.measure.timing.time.perf_counter", clock)
    plan = sampling_plan(min_samples=10, min_time_s=0.05, max_time_s=100)
    samples = collect(lambda: [1.0, 1.0001, 0.9999], plan)
    assert len(samples) >= 10 and 0.05 <= clock.now <= 0.06


def test_a_round_stops_at_its_time_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock(0.01)
    monkeypatch.setattr("pytest_kernelperf.measure.timing.time.perf_counter", clock)
    plan = sampling_plan(min_samples=10_000, min_time_s=0.0, max_time_s=1.0)
    samples = collect(lambda: [1.0], plan)
    assert clock.now >= 1.0 and len(samples) < 200


def test_a_round_stops_at_its_budget_even_before_min_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every batch blows the budget: a slow kernel's round is bounded by max_time.
    monkeypatch.setattr("pytest_kernelperf.measure.timing.time.perf_counter", FakeClock(10.0))
    samples = collect(lambda: [1.0], sampling_plan(min_samples=7, max_time_s=0.1))
    assert len(samples) == 1


def test_rounds_get_their_own_warm_up_and_locations() -> None:
    calls = []
    cpu = DeviceInfo(kind="cpu", name="test CPU")
    plan = sampling_plan(
        min_samples=5, min_time_s=0.0, max_time_s=0.01, warmup_s=0.0, round_warmup_s=0.0, rounds=3
    )
    result = make_timer("wall-clock", cpu).measure(Target(lambda: calls.append(1), cpu), plan)
    metric = result.device_time
    assert len(metric.rounds_ms) == 3 and len(metric.samples_ms) >= 15
    assert len(calls) >= 3 * (5 + 4)  # every round warms up: a first call and three settling calls
    assert metric.level_ms > 0 and result.throttled_rounds == 0


def test_warm_up_runs_past_a_slow_first_call() -> None:
    calls = []
    warm_up(lambda: calls.append(1), lambda: None, 0.0)
    assert len(calls) >= 4  # the first call, then at least three settling calls


def test_wall_clock_timer_counts_and_names_its_method() -> None:
    calls = []
    cpu = DeviceInfo(kind="cpu", name="test CPU")
    result = make_timer("auto", cpu).measure(
        Target(lambda: calls.append(1), cpu),
        sampling_plan(min_samples=12, max_time_s=0.05, warmup_s=0.0, rounds=1),
    )
    assert result.device_time.method == "wall-clock"
    assert len(result.device_time.samples_ms) >= 12
    assert all(s >= 0 for s in result.device_time.samples_ms)
    assert len(calls) >= 12 + 4


def test_cuda_timers_refuse_a_cpu_device() -> None:
    with pytest.raises(TimingError, match="needs a CUDA device"):
        make_timer("cupti", DeviceInfo(kind="cpu", name="test CPU"))


def reading(*reasons: str, clock: int = 1980) -> health.HealthReading:
    return health.HealthReading(sm_clock_mhz=clock, temperature_c=60, throttle_reasons=reasons)


def test_a_throttled_round_is_measured_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # Round attempts 0 and 2 run throttled (NVML read before and after each attempt).
    script = iter(
        [
            reading("software power cap"),
            reading(),
            reading(),
            reading(),
            reading("software power cap", clock=1700),
        ]
        + [reading()] * 20
    )
    monkeypatch.setattr(health, "read", lambda index: next(script))
    monkeypatch.setattr("pytest_kernelperf.measure.timing.time.sleep", lambda seconds: None)
    attempts: list[int] = []

    def one_round(index: int) -> timing.RoundSamples:
        attempts.append(index)
        return timing.RoundSamples([float(index)])

    kept, seen, throttled = timing.run_rounds(sampling_plan(rounds=3, max_rounds=None), 0, one_round)
    assert attempts == [0, 1, 2, 3, 4] and [r.device_ms for r in kept] == [[1.0], [3.0], [4.0]]
    assert throttled == 2
    assert seen is not None and seen.throttled == () and seen.throttled_rounds == 0


def test_throttled_rounds_are_kept_once_the_extra_budget_is_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health, "read", lambda index: reading("hardware slowdown", clock=1500))
    monkeypatch.setattr("pytest_kernelperf.measure.timing.time.sleep", lambda seconds: None)
    kept, seen, throttled = timing.run_rounds(
        sampling_plan(rounds=2), 0, lambda i: timing.RoundSamples([1.0])
    )
    assert len(kept) == 2 and throttled == 4  # two rounds, then two re-measurements: the bound is R extra
    assert seen is not None and seen.throttled == ("hardware slowdown",) and seen.throttled_rounds == 2


def test_rounds_that_disagree_get_more_rounds_until_the_level_is_known(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(health, "read", lambda index: None)
    # A bimodal kernel: every fourth placement is 1.8x slower.
    levels = [1.8 if i % 4 == 3 else 1.0 for i in range(100)]
    plan = sampling_plan(rounds=5, max_rounds=30, target_se=0.005)
    kept, _, _ = timing.run_rounds(plan, 0, lambda i: timing.RoundSamples([levels[i]] * 4))
    assert len(kept) == 30  # its standard error stays above 0.5%: the cap decides

    loose = sampling_plan(rounds=5, max_rounds=30, target_se=0.1)
    kept, _, _ = timing.run_rounds(loose, 0, lambda i: timing.RoundSamples([levels[i]] * 4))
    assert 5 < len(kept) < 30  # more rounds, then stopped once the level is known to 10%


def test_rounds_that_agree_are_not_extended(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health, "read", lambda index: None)
    plan = sampling_plan(rounds=5, max_rounds=30, target_se=0.005)
    kept, _, _ = timing.run_rounds(plan, 0, lambda i: timing.RoundSamples([1.0 + 0.001 * (i % 2)] * 4))
    assert len(kept) == 5
    fixed = sampling_plan(rounds=5, max_rounds=None, target_se=0.005)
    kept, _, _ = timing.run_rounds(fixed, 0, lambda i: timing.RoundSamples([1.0 + (i % 2)] * 4))
    assert len(kept) == 5  # no placements, no extension


def test_rounds_that_happen_to_agree_go_on_when_the_baseline_spread(monkeypatch: pytest.MonkeyPatch) -> None:
    # A placement-sensitive kernel that landed on good placements five times: its baseline's rounds
    # spread 20%, so five agreeing rounds do not say its level is known.
    monkeypatch.setattr(health, "read", lambda index: None)
    plan = sampling_plan(rounds=5, max_rounds=30, target_se=0.005, known_round_sd=0.2)
    kept, _, _ = timing.run_rounds(plan, 0, lambda i: timing.RoundSamples([1.0] * 4))
    assert len(kept) == 30
    quiet = sampling_plan(rounds=5, max_rounds=30, target_se=0.005, known_round_sd=0.002)
    kept, _, _ = timing.run_rounds(quiet, 0, lambda i: timing.RoundSamples([1.0] * 4))
    assert len(kept) == 5


@pytest.mark.slow  # a fresh interpreter importing torch: seconds on two cores
def test_timing_leaves_torch_dynamo_unimported_when_nothing_was_compiled() -> None:
    # Importing torch._dynamo to guard against recompiles cost a run's first measurement seconds.
    probe = (
        "import sys, torch\n"
        "from pytest_kernelperf.measure.timing import _no_recompile\n"
        "with _no_recompile():\n"
        "    torch.ones(3) * 2\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    assert fresh_interpreter(probe) == ["False"]


@pytest.mark.slow
def test_a_recompile_during_timing_is_an_error() -> None:
    import torch

    doubled = torch.compile(lambda x: x * 2, backend="eager", dynamic=False)
    doubled(torch.ones(4))
    with pytest.raises(TimingError, match="recompiled during timing"), timing._no_recompile():
        doubled(torch.ones(5))


@pytest.mark.slow  # a fresh interpreter, so that torch._dynamo is first imported inside a round
def test_a_call_that_first_compiles_inside_a_round_is_guarded_from_the_next_round() -> None:
    probe = (
        "import torch\n"
        "from pytest_kernelperf.measure.timing import TimingError, _without_recompile\n"
        "def one_round(index):\n"
        "    global doubled\n"
        "    if index == 0:\n"
        "        doubled = torch.compile(lambda x: x * 2, backend='eager', dynamic=False)\n"
        "        doubled(torch.ones(4))\n"
        "    else:\n"
        "        doubled(torch.ones(5))\n"
        "guarded = _without_recompile(one_round)\n"
        "guarded(0)\n"
        "try:\n"
        "    guarded(1)\n"
        "except TimingError as exc:\n"
        "    print('caught', 'recompiled during timing' in str(exc))\n"
    )
    assert fresh_interpreter(probe) == ["caught", "True"]


class RawEvent:
    """A profiler session's raw (Kineto) event, as torch's `_KinetoEvent` answers."""

    def __init__(self, start_ns: int, end_ns: int, device: bool, annotation: bool = False) -> None:
        from torch.autograd import DeviceType  # type: ignore[attr-defined]

        self._start, self._end, self._annotation = start_ns, end_ns, annotation
        self._type = DeviceType.CUDA if device else DeviceType.CPU

    def start_ns(self) -> int:
        return self._start

    def end_ns(self) -> int:
        return self._end

    def device_type(self) -> object:
        return self._type

    def is_user_annotation(self) -> bool:
        return self._annotation


class HiddenEvent(RawEvent):
    def is_hidden_event(self) -> bool:
        return True


def test_device_durations_are_the_device_work_among_raw_events_in_launch_order() -> None:
    events = [
        RawEvent(5_000, 7_500, device=True),  # the second kernel, listed first
        RawEvent(0, 100_000, device=False),  # a CPU-side launch
        RawEvent(1_000, 9_000, device=True, annotation=True),  # a compiled graph's span: not work
        HiddenEvent(2_000, 2_500, device=True),
        RawEvent(1_000, 2_000, device=True),
    ]
    assert timing.device_durations_us(events) == [1.0, 2.5]


def test_host_latency_batches_fit_in_half_the_window() -> None:
    assert timing._batch_size(1e-4, cap=200, budget_s=0.00125) == 12
    assert timing._batch_size(1e-5, cap=200) == 200  # 5 ms batches, capped
    assert timing._batch_size(0.01, cap=200, budget_s=0.00125) == 1


def test_a_cuda_measurement_gives_its_last_rounds_memory_back(monkeypatch: pytest.MonkeyPatch) -> None:
    released: list[str] = []

    class Places:
        def release(self) -> None:
            released.append("released")

    monkeypatch.setattr(health, "read", lambda index: None)
    cuda = DeviceInfo(kind="cuda", name="fake GPU", index=0)
    target = Target(lambda: None, cuda, placements=Places())  # type: ignore[arg-type]
    kept, _, _ = timing._cuda_rounds(
        target, sampling_plan(rounds=3), lambda index: timing.RoundSamples([1.0, 1.0])
    )
    assert len(kept) == 3 and released == ["released"]
