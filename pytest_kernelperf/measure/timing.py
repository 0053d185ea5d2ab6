"""Timer backends, warm-up and rounds of sampling.

Every backend answers one question, "how long does one call take?", as rounds of samples in
milliseconds (each round its own warm-up and sampling window, summarised by its midmean), and names
its method; a baseline is only compared with a measurement of the same
method. torch is imported inside functions so that loading the plugin never imports it.

Methods:
  wall-clock  monotonic host clock around each call (synchronized on CUDA); the CPU backend.
  cuda-event  CUDA events around each call, synchronized after it: host latency per call, the
              launch path included (what a caller waiting for the result sees).
  cuda-graph  CUDA graph replay of K back-to-back calls divided by K: device time with the launch
              cost amortised.
  cupti       the device's own kernel durations (CUPTI records through the autograd profiler), summed per
              call: the ground truth for device time, also for 1 us kernels.
  auto        per-call host latency with cuda-event, and device time with cupti, falling back to
              cuda-graph and then cuda-event (each fallback noted in the result).
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any, Protocol

from pytest_kernelperf.measure import health as health_mod
from pytest_kernelperf.measure import host_load
from pytest_kernelperf.measure.clock import note
from pytest_kernelperf.measure.placement import Placements
from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.verdict import noise, stats

if TYPE_CHECKING:
    import torch

# A graph replay long enough that event resolution (~0.5 us) and replay launch stop mattering.
_GRAPH_REPLAY_S = 2e-3
_MAX_GRAPH_CALLS = 256
# Batches of about this long between checks of the round's time budget.
_BATCH_S = 0.005
# The share of each round that auto spends on host latency; the rest goes to device time.
_HOST_SHARE = 0.25
# Pause before re-measuring a throttled round: long enough for a power-cap excursion to pass.
_THROTTLE_PAUSE_S = 0.05


class TimingError(RuntimeError):
    """The measurement could not be made (as opposed to a kernel that raised)."""


@dataclass(frozen=True, kw_only=True)
class SamplingPlan:
    """A measurement is `rounds` rounds; each round warms up, then samples until it has at least
    `min_samples` samples and `min_time_s` seconds, for at most `max_time_s` seconds.

    The first round warms up for `warmup_s` (it pays compilation and autotuning); later rounds only
    for `round_warmup_s`, enough to start a fresh sampling window on a warm kernel. There is no
    early stop on the round's own precision: the noise that decides a verdict is the level a round
    lands on, which more samples in the same round do not average away.

    The fields that options set have no default here: a run's plan comes from `Settings.plan()`,
    which holds the options' one default each (settings.OPTIONS); tests and studies start from it
    too (`pytest_kernelperf.testing.sampling_plan`).
    """

    min_samples: int
    min_time_s: float
    max_time_s: float
    warmup_s: float
    rounds: int
    cache: str
    # A kernel whose rounds (each its own placement) disagree gets more rounds, up to `max_rounds`,
    # until the standard error of its level is at most `target_se` (relative). None: `rounds` only.
    max_rounds: int | None
    target_se: float
    round_warmup_s: float = 0.003
    max_samples: int = 100_000
    prefer_method: str | None = None  # the baseline's method, so that auto stays comparable
    warm: bool = False  # first-call costs already paid (e.g. interleaved rounds): short warm-up only
    # The round SD (relative) the kernel's baseline showed: rounds that happen to agree (a
    # placement-sensitive kernel landing on good placements five times) do not stop the draw early.
    known_round_sd: float = 0.0

    def scaled(self, share: float) -> SamplingPlan:
        return replace(self, min_time_s=self.min_time_s * share, max_time_s=self.max_time_s * share)

    def warm_up_s(self, round_index: int) -> float:
        return self.round_warmup_s if self.warm or round_index > 0 else self.warmup_s

    def wants_more(self, locations_ms: Sequence[float]) -> bool:
        """Whether the rounds so far leave the level less certain than `target_se`: then another
        round (another placement) is drawn, up to `max_rounds`."""
        if len(locations_ms) < self.rounds:
            return True
        if self.max_rounds is None or len(locations_ms) >= self.max_rounds:
            return False
        own = noise.level_standard_error(locations_ms)
        known = self.known_round_sd / math.sqrt(len(locations_ms))
        return max(own, known) > self.target_se


@dataclass(frozen=True)
class Metric:
    """Samples of one quantity, measured one way, in rounds."""

    method: str
    samples_ms: tuple[float, ...]  # every round's samples, in order
    rounds_ms: tuple[float, ...] = ()  # per-round location (midmean); empty: one round of all samples
    resolution_ms: float | None = None  # the smallest step between distinct samples (timer tick)

    @classmethod
    def of_rounds(cls, method: str, rounds: Sequence[Sequence[float]]) -> Metric:
        samples = tuple(v for one in rounds for v in one)
        return cls(
            method,
            samples,
            tuple(noise.midmean(one) for one in rounds),
            noise.resolution(samples),
        )

    @property
    def round_locations_ms(self) -> tuple[float, ...]:
        return self.rounds_ms or (noise.midmean(self.samples_ms),)

    @property
    def level_ms(self) -> float:
        """The figure judged: the geometric mean of the round locations."""
        return noise.geometric_mean(self.round_locations_ms)

    @cached_property
    def summary(self) -> stats.Summary:
        return stats.summarize(self.samples_ms)


@dataclass(frozen=True)
class Timing:
    device_time: Metric
    host_latency: Metric | None = None
    notes: tuple[str, ...] = ()
    health: health_mod.Health | None = None
    wall_s: float = 0.0
    throttled_rounds: int = 0  # rounds NVML called throttled (re-measured where the budget allowed)
    host_load: float | None = None  # the host's load average per core after the rounds (None: unread)


def merge_rounds(timings: Sequence[Timing]) -> Timing:
    """One measurement from single-round measurements (interleaved rounds of two kernels)."""
    first = timings[0]

    def merged(metrics: Sequence[Metric | None]) -> Metric | None:
        present = [m for m in metrics if m is not None]
        if not present or len(present) != len(metrics):
            return None
        steps = [m.resolution_ms for m in present if m.resolution_ms is not None]
        return Metric(
            present[0].method,
            tuple(v for m in present for v in m.samples_ms),
            tuple(r for m in present for r in m.round_locations_ms),
            min(steps) if steps else None,
        )

    device = merged([t.device_time for t in timings])
    assert device is not None
    healths = [t.health for t in timings if t.health is not None]
    return Timing(
        device_time=device,
        host_latency=merged([t.host_latency for t in timings]),
        notes=tuple(dict.fromkeys(n for t in timings for n in t.notes)),
        health=health_mod.combine(healths) if healths else first.health,
        wall_s=sum(t.wall_s for t in timings),
        throttled_rounds=sum(t.throttled_rounds for t in timings),
        host_load=max((t.host_load for t in timings if t.host_load is not None), default=None),
    )


@dataclass(frozen=True)
class Target:
    """What to time: a closure making one call, and where it runs."""

    call: Callable[[], object]
    device: DeviceInfo
    label: str = ""
    fn: Callable[..., object] | None = None  # the user's function, for timers that inspect it
    # Run before every call, outside what is timed: restores the inputs of an in-place kernel.
    prepare: Callable[[], object] | None = None
    # Draws each round's memory placement (measure/placement.py); None: the process's placement.
    placements: Placements | None = None


@contextmanager
def placed(target: Target, own_pool: bool = True) -> Iterator[Target]:
    """The target as one round runs it: at a fresh placement when it has placements."""
    if target.placements is None:
        yield target
        return
    with target.placements.draw(own_pool) as here:
        yield replace(target, call=here.call, prepare=here.prepare)


class Timer(Protocol):
    def measure(self, target: Target, plan: SamplingPlan) -> Timing: ...


def collect(batch: Callable[[], Sequence[float]], plan: SamplingPlan) -> list[float]:
    """Draw batches of samples for one round: at least min_samples and min_time, at most max_time."""
    samples: list[float] = []
    start = time.perf_counter()
    while True:
        samples.extend(batch())
        elapsed = time.perf_counter() - start
        if len(samples) >= plan.max_samples or elapsed >= plan.max_time_s:
            break
        if len(samples) >= plan.min_samples and elapsed >= plan.min_time_s:
            break
    return samples


@dataclass(frozen=True)
class RoundSamples:
    device_ms: list[float]
    host_ms: list[float] | None = None


def run_rounds(
    plan: SamplingPlan, device_index: int | None, one_round: Callable[[int], RoundSamples]
) -> tuple[list[RoundSamples], health_mod.Health | None, int]:
    """`plan.rounds` rounds, NVML read around each. A throttled round is discarded and measured
    again after a pause, at most `plan.rounds` times in all; past that, throttled rounds are kept
    and the health says so. Returns the rounds kept, their health and the throttled-round count."""
    kept: list[RoundSamples] = []
    readings: list[health_mod.Health] = []
    throttled = 0
    attempt = 0
    while plan.wants_more([noise.midmean(r.device_ms) for r in kept]):
        start = health_mod.read(device_index)
        samples = one_round(attempt)
        end = health_mod.read(device_index)
        attempt += 1
        reading = health_mod.Health(start, end) if start and end else None
        if reading is not None and reading.throttled:
            throttled += 1
            if throttled <= plan.rounds:  # at most as many re-measurements as planned rounds
                time.sleep(_THROTTLE_PAUSE_S)
                continue
        kept.append(samples)
        if reading is not None:
            readings.append(reading)
    return kept, health_mod.combine(readings) if readings else None, throttled


def _cuda_rounds(
    target: Target, plan: SamplingPlan, one_round: Callable[[int], RoundSamples]
) -> tuple[list[RoundSamples], health_mod.Health | None, int]:
    """run_rounds on CUDA, guarded against recompiles; a cold-cache flush buffer is made before the
    rounds (inside one, it would pin that round's pool for the process), and the last round's memory
    is given back as soon as the rounds are over."""
    if plan.cache == "cold":
        _l2_flush(target.device.index)
    rounds = run_rounds(plan, target.device.index, _without_recompile(one_round))
    if target.placements is not None:
        target.placements.release()
    return rounds


def warm_up(call: Callable[[], object], sync: Callable[[], None], warmup_s: float) -> float:
    """Run until first-call costs (compilation, autotuning, module loading) are gone.

    Returns the settled host time of one call in seconds, used to size batches. The first call
    may take seconds (torch.compile) and is never a sample; after it, calls continue for at least
    `warmup_s` and until the last call is no slower than 1.5x the fastest seen (still settling),
    for at most 20x `warmup_s`. Its seconds go to the cost clock of the call being measured.
    """
    began = time.perf_counter()
    call()
    sync()
    times: list[float] = []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - t0)
        elapsed = time.perf_counter() - start
        settled = times[-1] <= 1.5 * min(times) or elapsed >= 20 * warmup_s
        if len(times) >= 3 and elapsed >= warmup_s and settled:
            break
    note("warmup", time.perf_counter() - began)
    return stats.quantile(sorted(times[-3:]), 0.5)


def _batch_size(per_call_s: float, cap: int = 1000, budget_s: float = _BATCH_S) -> int:
    return max(1, min(cap, int(budget_s / max(per_call_s, 1e-7))))


# --- CPU ---------------------------------------------------------------------------------------


class WallClockTimer:
    method = "wall-clock"

    def measure(self, target: Target, plan: SamplingPlan) -> Timing:
        sync = _synchronizer(target.device)
        began = time.perf_counter()

        def one_round(index: int) -> RoundSamples:
            with placed(target) as here:
                per_call = warm_up(_prepared(here), sync, plan.warm_up_s(index))
                call, before, size = here.call, here.prepare, _batch_size(per_call)
                return RoundSamples(collect(lambda: _wall_batch(call, sync, size, before), plan))

        kept, _, _ = run_rounds(plan, None, one_round)
        metric = Metric.of_rounds(self.method, [r.device_ms for r in kept])
        return Timing(
            device_time=metric, wall_s=time.perf_counter() - began, host_load=host_load.load_per_core()
        )


def _wall_batch(
    call: Callable[[], object],
    sync: Callable[[], None],
    count: int,
    before: Callable[[], object] | None = None,
) -> list[float]:
    out = []
    for _ in range(count):
        if before is not None:
            before()
            sync()
        t0 = time.perf_counter_ns()
        call()
        sync()
        out.append((time.perf_counter_ns() - t0) / 1e6)
    return out


def _synchronizer(device: DeviceInfo) -> Callable[[], None]:
    if device.kind != "cuda":
        return lambda: None
    import torch

    return torch.cuda.synchronize


# --- CUDA --------------------------------------------------------------------------------------


class L2Flush:
    """Evicts the L2 cache between trials for cold-cache timing.

    Sized from the device's own L2 (twice it, so that no line of the kernel's inputs survives),
    not a fixed 256 MB: on a 60 MB L2 a fixed buffer wastes time, on a future larger L2 it would
    leave data behind.
    """

    def __init__(self, index: int | None) -> None:
        import torch

        props = torch.cuda.get_device_properties(index if index is not None else 0)
        self.bytes = 2 * int(props.L2_cache_size)
        self._buffer = torch.empty(self.bytes, dtype=torch.uint8, device=f"cuda:{index or 0}")

    def __call__(self) -> None:
        self._buffer.zero_()


@cache
def _l2_flush(index: int | None) -> L2Flush:
    """One flush buffer per device and process: made once, not once per round."""
    return L2Flush(index)


def _flusher(target: Target, plan: SamplingPlan) -> Callable[[], None] | None:
    """What runs before every timed call, outside its timing: the L2 flush of a cold-cache
    measurement, then the target's own preparation (restoring an in-place kernel's inputs)."""
    steps = [
        step
        for step in (_l2_flush(target.device.index) if plan.cache == "cold" else None, target.prepare)
        if step
    ]
    if not steps:
        return None

    def before() -> None:
        for step in steps:
            step()

    return before


def _prepared(target: Target) -> Callable[[], object]:
    """The call as warm-up runs it: after the target's preparation, so an in-place kernel warms up
    on the same values it is timed on."""
    prepare, call = target.prepare, target.call
    if prepare is None:
        return call

    def prepared_call() -> object:
        prepare()
        return call()

    return prepared_call


Batch = Callable[[], list[float]]


class _CudaTimer:
    """A CUDA timer: rounds of warm-up and sampling, with NVML read around each round. Subclasses
    say how to sample (`sampler`: set up per round, e.g. a graph capture, then called per batch)."""

    method = ""
    own_pool = True  # each round's allocations come from a pool of its own (measure/placement.py)

    def sampler(self, target: Target, plan: SamplingPlan, per_call_s: float) -> Batch:
        raise NotImplementedError

    def measure(self, target: Target, plan: SamplingPlan) -> Timing:
        import torch

        began = time.perf_counter()

        def one_round(index: int) -> RoundSamples:
            with placed(target, self.own_pool) as here:
                per_call = warm_up(_prepared(here), torch.cuda.synchronize, plan.warm_up_s(index))
                return RoundSamples(collect(self.sampler(here, plan, per_call), plan))

        kept, health, throttled = _cuda_rounds(target, plan, one_round)
        return Timing(
            Metric.of_rounds(self.method, [r.device_ms for r in kept]),
            health=health,
            wall_s=time.perf_counter() - began,
            throttled_rounds=throttled,
            host_load=host_load.load_per_core(),
        )


class CudaEventTimer(_CudaTimer):
    """Host latency per call: events around each call, then a synchronize, like a waiting caller."""

    method = "cuda-event"

    def sampler(self, target: Target, plan: SamplingPlan, per_call_s: float) -> Batch:
        import torch

        flush = _flusher(target, plan)
        # Batches of half the window: a 5 ms batch would stretch a 2.5 ms host window to 5 ms.
        count = _batch_size(per_call_s, cap=200, budget_s=min(_BATCH_S, plan.min_time_s / 2))
        pairs = [
            (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(count)
        ]

        def batch() -> list[float]:
            for start, end in pairs:
                if flush is not None:
                    flush()
                start.record()
                target.call()
                end.record()
                torch.cuda.synchronize()
            return [start.elapsed_time(end) for start, end in pairs]

        return batch


class CudaGraphTimer(_CudaTimer):
    """Device time with the launch cost amortised: replays of a graph of K back-to-back calls."""

    method = "cuda-graph"
    own_pool = False  # a capture allocates from the graph's own pool

    def sampler(self, target: Target, plan: SamplingPlan, per_call_s: float) -> Batch:
        import torch

        flush = _flusher(target, plan)
        # Cold cache or restored inputs: one call per replay, so that each call is prepared.
        calls = 1 if flush is not None else min(_MAX_GRAPH_CALLS, math.ceil(_GRAPH_REPLAY_S / per_call_s))
        graph = capture_graph(target.call, calls)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        graph.replay()
        torch.cuda.synchronize()
        replays = _batch_size(per_call_s * calls, cap=100)

        def batch() -> list[float]:
            out = []
            for _ in range(replays):
                if flush is not None:
                    flush()
                start.record()
                graph.replay()
                end.record()
                end.synchronize()
                out.append(start.elapsed_time(end) / calls)
            return out

        return batch


def capture_graph(call: Callable[[], object], calls: int) -> torch.cuda.CUDAGraph:
    """Capture `calls` back-to-back calls into one graph; TimingError if the code can't be captured."""
    import torch

    # Warm up on a side stream first, as torch's graph docs require: lazy initialisation (cuBLAS
    # workspaces, allocator pools) must not happen inside the capture.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            call()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    pool = torch.cuda.graph_pool_handle()  # named here: after a failed capture graph.pool() refuses
    try:
        with torch.cuda.graph(graph, pool=pool):
            for _ in range(calls):
                call()
    except Exception as exc:
        torch.cuda.synchronize()
        _stop_routing_to_failed_capture(pool)
        _reset_generators_after_failed_capture()
        raise TimingError(f"CUDA graph capture failed: {type(exc).__name__}: {exc}".strip()) from exc
    return graph


def _stop_routing_to_failed_capture(pool: tuple[int, int]) -> None:
    """A capture that fails at its end leaves the allocator routing to the graph's pool as if still
    capturing; the next memory pool given back (each round's placement gives one back) then aborts
    the process on an internal assertion that no capture is underway."""
    import torch

    end = getattr(torch._C, "_cuda_endAllocateToPool", None)
    if end is None:
        return
    with suppress(RuntimeError):  # not routing to it: the capture ended cleanly after all
        end(torch.cuda.current_device(), pool)


def _reset_generators_after_failed_capture() -> None:
    """A capture that fails at its end leaves torch's CUDA RNG believing it is still capturing, and
    every later torch.randn on the GPU raises "Offset increment outside graph capture". A capture
    that succeeds runs the generators' epilogue and puts them back."""
    import torch

    scratch = torch.zeros(1, device="cuda")
    graph = torch.cuda.CUDAGraph()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.cuda.graph(graph):
            scratch.add_(1)
    torch.cuda.synchronize()


class CuptiTimer(_CudaTimer):
    """The device's own kernel durations, through the autograd profiler's CUPTI records.

    Each call's sample is the sum of the durations of the device activities (kernels, memcpy,
    memset) it launched. Gaps between kernels are not device work and are not counted, which is
    why this is the only method that reaches the kernel time of 1 us kernels.
    """

    method = "cupti"

    def __init__(self) -> None:
        # Device activities per call and per preparation, counted once per measurement: a fresh
        # placement each round does not change what the call launches.
        self._counts: tuple[int, int] | None = None

    def measure(self, target: Target, plan: SamplingPlan) -> Timing:
        self._counts = None
        return super().measure(target, plan)

    def sampler(self, target: Target, plan: SamplingPlan, per_call_s: float) -> Batch:
        flush = _flusher(target, plan)
        if self._counts is None:
            self._counts = (
                len(profile_device_activity(target.call, 1)),
                len(profile_device_activity(flush, 1)) if flush is not None else 0,
            )
        per_call_events, before_events = self._counts
        if per_call_events == 0:
            raise TimingError(
                "the profiler recorded no device activity (CUPTI blocked or unavailable, "
                "or the call launched no GPU work)"
            )
        # One profiler session per batch costs milliseconds: make batches long enough to fill most
        # of a round, so that a round is one or two sessions.
        calls = max(plan.min_samples, min(500, int(plan.min_time_s / max(per_call_s, 1e-7))))

        def batch() -> list[float]:
            durations = profile_device_activity(target.call, calls, flush)
            stride = per_call_events + before_events
            if len(durations) != calls * stride:
                raise TimingError(
                    f"the call launched a varying number of device activities "
                    f"({len(durations)} for {calls} calls, {per_call_events} expected each)"
                )
            skip = before_events  # what ran before each call (flush, restore) leads it
            return [sum(durations[i * stride + skip : (i + 1) * stride]) / 1e3 for i in range(calls)]

        return batch


@contextmanager
def one_cycle_profiler_warning_silenced() -> Iterator[None]:
    """torch.profiler warns that a profiler without a schedule keeps one cycle's events (torch
    2.11 at every start): that one cycle is all kernelperf reads."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
        yield


def profile_device_activity(
    call: Callable[[], object], calls: int, flush: Callable[[], None] | None = None
) -> list[float]:
    """Durations in microseconds of the device activities of `calls` calls, in launch order.

    The autograd profiler that torch.profiler.profile wraps, with the same Kineto (CUPTI) activity:
    torch.profiler.profile looks up `torch._inductor` on entering, which imports the whole compiler
    stack (0.8-1.6 s on an H200 with bytecode cached, 5.5-5.8 s without) in a run that may compile
    nothing (studies/profiler_start.py).
    """
    return device_durations_us(profiled_session(call, calls, flush).kineto_results.events())


def profiled_session(call: Callable[[], object], calls: int, flush: Callable[[], None] | None = None) -> Any:
    """One CUPTI session of `calls` calls (each after `flush`), ended and synchronized: the autograd
    profiler, whose events `device_durations_us` reads."""
    import torch
    from torch.autograd import profiler as autograd_profiler

    torch.cuda.synchronize()
    with autograd_profiler.profile(use_cpu=False, use_device="cuda", use_kineto=True) as prof:
        for _ in range(calls):
            if flush is not None:
                flush()
            call()
        torch.cuda.synchronize()
    return prof


def device_durations_us(events: Sequence[Any]) -> list[float]:
    """The durations of the device work among a profiler session's raw (Kineto) events, in launch
    order. Read raw, not through `prof.function_events`: building torch's FunctionEvents and their
    tree cost 2-36 ms a round on an H200, the most on rounds of a few hundred short calls
    (studies/round_cost.py)."""
    activity = [
        (event.start_ns(), (event.end_ns() - event.start_ns()) / 1e3)
        for event in events
        if _device_work(event.device_type(), event.is_user_annotation())
        and not getattr(event, "is_hidden_event", lambda: False)()
    ]
    activity.sort()
    return [duration for _, duration in activity]


def is_device_activity(event: Any) -> bool:
    """A kernel, memcpy or memset the device ran, from torch.profiler's events."""
    return _device_work(event.device_type, getattr(event, "is_user_annotation", False))


def _device_work(device_type: Any, user_annotation: bool) -> bool:
    """A device-side event that is device work. GPU user annotations (record_function ranges
    mirrored on the device timeline, such as torch.compile's "## Call CompiledFxGraph <hash> ##")
    span kernels rather than being one: summed with them, a compiled function's device time would
    count its kernels twice."""
    from torch.autograd import DeviceType  # type: ignore[attr-defined]

    return bool(device_type == DeviceType.CUDA and not user_annotation)


class AutoTimer:
    """Host latency per call, and device time from the most accurate method that works here."""

    method = "auto"

    def measure(self, target: Target, plan: SamplingPlan) -> Timing:
        if target.device.kind != "cuda":
            return WallClockTimer().measure(target, plan)
        import torch

        began = time.perf_counter()
        notes: list[str] = []
        host_plan, device_plan = plan.scaled(_HOST_SHARE), plan.scaled(1 - _HOST_SHARE)
        device: _DeviceBackend | None = None

        def one_round(index: int) -> RoundSamples:
            nonlocal device
            with placed(target) as here:
                per_call = warm_up(_prepared(here), torch.cuda.synchronize, plan.warm_up_s(index))
                host = collect(CudaEventTimer().sampler(here, host_plan, per_call), host_plan)
                if device is None:
                    device, samples = self._first_device_round(here, device_plan, per_call, notes)
                    return RoundSamples(samples, host)
                return RoundSamples(collect(device.sampler(here, device_plan, per_call), device_plan), host)

        kept, health, throttled = _cuda_rounds(target, plan, one_round)
        assert device is not None
        return Timing(
            device_time=Metric.of_rounds(device.method, [r.device_ms for r in kept]),
            host_latency=Metric.of_rounds(CudaEventTimer.method, [r.host_ms or [] for r in kept]),
            notes=tuple(notes),
            health=health,
            wall_s=time.perf_counter() - began,
            throttled_rounds=throttled,
            host_load=host_load.load_per_core(),
        )

    @staticmethod
    def _first_device_round(
        target: Target, plan: SamplingPlan, per_call_s: float, notes: list[str]
    ) -> tuple[_DeviceBackend, list[float]]:
        """The first backend that can sample here, and its first round's samples."""
        for backend in _device_backends(plan.prefer_method):
            try:
                return backend, collect(backend.sampler(target, plan, per_call_s), plan)
            except TimingError as exc:
                notes.append(f"{backend.method} unavailable ({exc}); fell back")
        raise AssertionError("cuda-event, last in line, raises nothing of its own")


_DeviceBackend = CuptiTimer | CudaGraphTimer | CudaEventTimer


def _device_backends(prefer: str | None) -> list[_DeviceBackend]:
    order: list[_DeviceBackend] = [CuptiTimer(), CudaGraphTimer(), CudaEventTimer()]
    order.sort(key=lambda backend: backend.method != prefer)  # stable: the preferred one first
    return order


def _without_recompile(one_round: Callable[[int], RoundSamples]) -> Callable[[int], RoundSamples]:
    """Each round under _no_recompile, decided afresh: a call that first compiles inside a round
    (torch.compile in its own body, timed without kernel_bench's first call) is guarded from the next."""

    def guarded(index: int) -> RoundSamples:
        with _no_recompile():
            return one_round(index)

    return guarded


@contextmanager
def _no_recompile() -> Iterator[None]:
    """torch.compile recompiling during trials would time the compiler: make it an error.

    Without torch._dynamo imported nothing was compiled (the call's first run came before), and
    set_stance would import it: 3.9 s more in a run's first measurement on a fresh H200
    (studies/first_measurement.py, 2026-12-02), 2.2 s with its bytecode cached on a CPU machine.
    """
    if "torch._dynamo" not in sys.modules:
        yield
        return
    import torch

    set_stance = getattr(torch.compiler, "set_stance", None)
    if set_stance is None:
        yield
        return
    try:
        with set_stance("fail_on_recompile"):
            yield
    except RuntimeError as exc:
        if "recompil" in str(exc).lower():
            raise TimingError(
                "torch.compile recompiled during timing (a guard failed after warm-up: "
                f"a new shape, dtype or Python value?): {exc}"
            ) from exc
        raise


def make_timer(method: str, device: DeviceInfo) -> Timer:
    """The built-in backend for a method name."""
    if method == "auto":
        return AutoTimer()
    if method == "wall-clock":
        return WallClockTimer()
    if device.kind != "cuda":
        raise TimingError(f"timer {method!r} needs a CUDA device; this test runs on {device.name}")
    backends: dict[str, Timer] = {
        "cuda-event": CudaEventTimer(),
        "cuda-graph": CudaGraphTimer(),
        "cupti": CuptiTimer(),
    }
    return backends[method]
