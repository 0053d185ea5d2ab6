"""The result of one `kernel_bench` call, and its parts: the verdict, the comparison with the
baseline and its evidence, the throttling seen, the ratio to a reference, the device memory check,
and the seconds of the call's phases.

What reports render and what baselines are made of. verdict/ makes the comparisons (judge.py,
ratio.py); results/ writes and renders the results.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from pytest_kernelperf.model.baseline import (
    BaselineEntry,
    clock_of,
    entry_test_id,
    split_nodeid,
    throttle_reasons_of,
)
from pytest_kernelperf.model.call import CompileContext

POWER = 0.95  # the detection probability the smallest detectable change is quoted at
MEMORY_FLOOR_BYTES = 1 << 20  # device memory growth below this never fails, whatever the threshold
# The phases of one kernel_bench call, in the order they happen (`CallCost`'s fields but `total`).
CALL_PHASES = ("context", "first_call", "warmup", "rounds", "memory", "profile", "judge", "baseline_io")
# Seconds are kept to the microsecond: far below any phase worth a look, and short files.
SECOND_DIGITS = 6


class Verdict(str, enum.Enum):
    SAME = "same"
    SLOWER = "slower"
    FASTER = "faster"
    NEW = "new"  # no baseline for this device and mode
    INCOMPARABLE = "incomparable"  # a baseline exists but was measured another way
    UNRELIABLE = "unreliable"  # the measurement itself cannot be trusted (throttling)
    UNDETERMINED = "undetermined"  # judged, but the test could not see a change that matters
    CHECKED = "checked"  # correctness only, no timing
    MISMATCH = "mismatch"  # the output differs from the reference's: not timed

    def __str__(self) -> str:
        return self.value


# Verdicts that are not a judgement of speed: under --kernelperf-strict each fails its test.
NOT_JUDGED = (Verdict.NEW, Verdict.INCOMPARABLE, Verdict.UNRELIABLE, Verdict.UNDETERMINED)
# The verdicts that judge a speed.
JUDGEMENTS = (Verdict.SAME, Verdict.FASTER, Verdict.SLOWER)
# How the note of a call measured again begins (kernel_bench writes it, the summary finds it).
MEASURED_TWICE = "measured twice: "
# How the note of a call undetermined run after run begins (kernel_bench writes it, the summary finds it).
NOT_GATED = "not gated: "


@dataclass(frozen=True)
class Reading:
    """One measurement of a call that was measured twice, judged on its own rounds; the result's
    verdict judges both measurements' rounds pooled."""

    verdict: Verdict
    ratio: float | None
    rounds: int

    def describe(self) -> str:
        change = f"{self.ratio - 1:+.1%}" if self.ratio is not None else "?"
        return f"{change} ({self.verdict}, {self.rounds} rounds)"


# NVML's reason for a clock held down by the board's power limit (measure/health.py reads it): a
# heavy kernel's usual state, not an accident of one run.
POWER_CAP = "software power cap"


@dataclass(frozen=True)
class Throttling:
    """NVML said the GPU held its clock down during rounds that could not be re-measured."""

    reasons: tuple[str, ...]
    clock_drop: float | None = None  # fraction the SM clock fell within the measurement (None: no drop)
    rounds: int = 0  # throttled rounds kept
    lowest_clock_mhz: int | None = None  # the lowest SM clock read around the rounds kept
    baseline_clock_mhz: int | None = None  # the SM clock the baseline recorded
    clock_mhz: int | None = None  # this measurement's SM clock: the median read after each round kept
    # The throttle reasons the baseline's own rounds ran under (None: not recorded, an older entry).
    baseline_reasons: tuple[str, ...] | None = None

    def with_baseline(self, environment: dict[str, str] | None) -> Throttling:
        """This throttling set against another baseline's recorded clock and reasons (None: none)."""
        found = environment or {}
        return replace(self, baseline_clock_mhz=clock_of(found), baseline_reasons=throttle_reasons_of(found))

    def at_power_cap(self) -> bool:
        """Whether the software power cap held the clock down in this measurement and its baseline."""
        return POWER_CAP in self.reasons and self.as_in_baseline()

    def as_in_baseline(self) -> bool:
        """Whether the baseline ran under every reason this measurement did (a heavy kernel at the
        software power cap in both): then the cap is the kernel's normal state, not this run's."""
        return self.baseline_reasons is not None and set(self.reasons) <= set(self.baseline_reasons)

    def clock_ratio(self) -> float | None:
        """The baseline's clock over this measurement's, where both are known: the factor by which a
        clock-bound kernel's time moves with the clock alone. A kernel at the power cap in its baseline
        too reads about 1, however far the clock sits below its peak."""
        if self.clock_mhz and self.baseline_clock_mhz:
            return self.baseline_clock_mhz / self.clock_mhz
        return None

    def clock_slowdown(self) -> float | None:
        """The slowdown the recorded clocks account for: against the baseline's clock where it is
        known, else the drop within this measurement (or its lowest clock against the baseline's);
        None where no clock fell."""
        ratio = self.clock_ratio()
        if ratio is not None:
            return ratio - 1 if ratio > 1 else None
        found = []
        if self.clock_drop is not None and 0 < self.clock_drop < 1:
            found.append(self.clock_drop / (1 - self.clock_drop))
        if (
            self.lowest_clock_mhz
            and self.baseline_clock_mhz
            and self.lowest_clock_mhz < self.baseline_clock_mhz
        ):
            found.append(self.baseline_clock_mhz / self.lowest_clock_mhz - 1)
        return max(found) if found else None

    def describe(self, clocks_explain: bool = True) -> str:
        """What throttled, and (`clocks_explain`) the most the clocks could account for."""
        slowdown = self.clock_slowdown()
        clocks = ""
        if clocks_explain:
            clocks = f", clocks account for up to {slowdown:.1%}" if slowdown else ", no clock drop recorded"
        kept = f" in {self.rounds} round{'s' if self.rounds != 1 else ''}" if self.rounds else ""
        return f"GPU throttled{kept} ({', '.join(self.reasons)}{clocks})"


class PairsStopped(str, enum.Enum):
    """Why the sequential paired gate (--kernelperf-against) drew no more pairs."""

    DECIDED = "decided"  # the verdict was decided at the threshold
    BUDGET = "budget"  # the kernel's measuring reached --kernelperf-pair-seconds
    MOST_PAIRS = "most pairs"  # --kernelperf-max-rounds x the planned rounds

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class SequentialPairs:
    """How the sequential paired gate ended (verdict/sequential.py): why it stopped, and its pass
    interval (at 1 - POWER, valid however the stopping fell) on the ratio: its upper end and its
    half-width, relative, the size of change these pairs could see."""

    stopped: PairsStopped
    upper: float  # the ratio's pass bound: slower than this is ruled out
    resolution: float


@dataclass(frozen=True)
class Comparison:
    """A verdict and the evidence for it. Relative figures are fractions (0.01 = 1%)."""

    verdict: Verdict
    ratio: float | None = None  # current level / baseline level
    p_value: float | None = None  # one-sided, in the direction of the change
    threshold: float | None = None  # the practical floor
    alpha: float | None = None  # the suite's false-alarm rate
    reason: str = ""
    ratio_ci: tuple[float, float] | None = None  # at confidence 1 - 2 * level
    level: float | None = None  # per-judgement level: alpha / planned_judgements
    planned_judgements: int | None = None
    noise_sd: float | None = None  # round-to-round SD used, relative
    noise_source: str = ""
    process_sd: float | None = None  # between-process SD used, relative
    process_source: str = ""
    detectable: float | None = None  # smallest slowdown caught with POWER at this level
    rounds: int | None = None  # this run's rounds
    baseline_rounds: int | None = None
    # The ratio of times where `ratio` is that of times adjusted for the clock (a kernel at the power
    # cap in run and baseline, verdict/judge.py); None where the two are one.
    time_ratio: float | None = None
    sequential: SequentialPairs | None = None  # the paired gate's stop (--kernelperf-against)

    @property
    def change_pct(self) -> float | None:
        return None if self.ratio is None else (self.ratio - 1) * 100

    def resolution(self) -> float | None:
        """What a `same` (or `undetermined`) could see: its smallest detectable slowdown, where that
        lies beyond the threshold; None where the verdict saw the threshold itself, or judged a
        change. A `same` at 4% promises "not more than about 4% slower", not the 0.5% the threshold
        says, and a reader must be told."""
        if self.verdict not in (Verdict.SAME, Verdict.UNDETERMINED) or self.detectable is None:
            return None
        if self.threshold is not None and self.detectable <= self.threshold:
            return None
        return self.detectable

    @property
    def adjusted_for_clock(self) -> bool:
        """Whether the judged change is the time's adjusted for the clock (not where a clock drop
        was judged but not excused: verdict/judge.py)."""
        return self.time_ratio is not None and self.time_ratio != self.ratio

    @property
    def time_change_pct(self) -> float | None:
        """The time's change where the judged one is adjusted for the clock, else None."""
        return (self.time_ratio - 1) * 100 if self.adjusted_for_clock and self.time_ratio else None

    def change(self) -> str:
        """The judged change as a reader sees it: "+5.1%", or "+0.7% adjusted for the clock (time +5.8%)"."""
        if self.ratio is None:
            return "?"
        if not self.adjusted_for_clock or self.time_ratio is None:
            return f"{self.ratio - 1:+.1%}"
        return f"{self.ratio - 1:+.1%} adjusted for the clock (time {self.time_ratio - 1:+.1%})"

    def evidence(self) -> str:
        """What a reviewer needs to check the verdict: the ratio's interval, the p-value and the level
        it was held to, the noise and where it came from, and the smallest change this test sees."""
        if self.p_value is None or self.level is None:
            return self.reason
        parts = []
        sequential = self.sequential
        if self.ratio_ci is not None and self.ratio is not None:
            # The paired gate's interval is two-sided at the level, and holds at every pair drawn.
            confidence = 1 - self.level if sequential else 1 - 2 * self.level
            kind = "always-valid interval" if sequential else "CI"
            parts.append(
                f"ratio {self.ratio:.4f} ({_confidence(confidence)} {kind} {self.ratio_ci[0]:.4f}-"
                f"{self.ratio_ci[1]:.4f})"
            )
        # The pairs drawn and why they stopped are in the reason; too few pairs bound nothing.
        if sequential is not None and math.isfinite(sequential.upper):
            parts.append(
                f"slower than {sequential.upper:.4f} ruled out at {POWER:.0%} (±{sequential.resolution:.2%})"
            )
        parts.append(
            f"{'always-valid ' if sequential else ''}p={self.p_value:.2g} against level {self.level:.2g} "
            f"(alpha {self.alpha:g} over {self.planned_judgements} judgement"
            f"{'s' if self.planned_judgements != 1 else ''})"
        )
        if self.noise_sd is not None:
            parts.append(f"round noise SD {self.noise_sd:.2%} ({self.noise_source})")
        if self.process_sd is not None:
            parts.append(f"between-process SD {self.process_sd:.2%} ({self.process_source})")
        if self.detectable is not None:
            parts.append(f"smallest detectable slowdown {self.detectable:.2%} at {POWER:.0%} power")
        text = "; ".join(parts)
        return f"{text}; {self.reason}" if self.reason else text


def _confidence(level: float) -> str:
    text = f"{level * 100:.4f}".rstrip("0").rstrip(".")
    return f"{text}%"


@dataclass(frozen=True)
class RatioCheck:
    """fn against its reference, both timed in this run (times per call, in milliseconds)."""

    method: str  # the reference's timing method
    reference_level_ms: float  # the reference's level: the geometric mean of its rounds
    reference_round_range_ms: tuple[float, float]  # the lowest and highest of the reference's rounds
    reference_samples_ms: tuple[float, ...]
    ratio: float  # fn level / reference level (geometric mean of the paired round ratios)
    max_ratio: float
    p_value: float | None  # one-sided, that fn/max_ratio is slower than the reference
    alpha: float
    exceeded: bool  # fails the test
    reason: str = ""
    reference_rounds_ms: tuple[float, ...] = ()
    ratio_ci: tuple[float, float] | None = None  # at confidence 1 - 2 * level
    level: float | None = None  # per-judgement level
    noise_sd: float | None = None
    noise_source: str = ""

    def evidence(self) -> str:
        if self.p_value is None or self.level is None:
            return self.reason
        ci = f" (CI {self.ratio_ci[0]:.4f}-{self.ratio_ci[1]:.4f})" if self.ratio_ci else ""
        text = (
            f"paired {len(self.reference_rounds_ms)} rounds: ratio {self.ratio:.4f}{ci}, "
            f"p={self.p_value:.2g} that it exceeds {self.max_ratio:g}, against level {self.level:.2g}; "
            f"round noise SD {self.noise_sd or 0:.2%} ({self.noise_source})"
        )
        return f"{text}; {self.reason}" if self.reason else text

    def describe(self) -> str:
        """Short form for tables: 1.02x <= 1.1."""
        return f"{self.ratio:#.3g}x {'>' if self.ratio > self.max_ratio else '<='} {self.max_ratio:g}"


class Found(str, enum.Enum):
    """What `--kernelperf-against` found of fn at the revision (revision/loader.py)."""

    SAME_NAME = "found"  # the revision has the function, under the same module and name
    ABSENT = "absent"  # the revision lacks the module or the name: the function is new
    UNLOADABLE = "unloadable"  # the revision's module cannot be imported, or fn cannot be named
    OUTSIDE = "outside"  # fn is not code of this repository (torch's own): nothing to compare

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class RevisionCheck:
    """fn against the same function at another git revision, both timed in this process in paired
    rounds (`--kernelperf-against REF`); times per call, in milliseconds."""

    revision: str  # how reports name it: "origin/main (1a2b3c4d5e)"
    commit: str
    found: Found
    where: str = ""  # fn's module and name: "example_kernels.gelu:triton_gelu"
    reason: str = ""  # why there is no counterpart to time
    level_ms: float | None = None  # the revision's level: the geometric mean of its rounds
    rounds_ms: tuple[float, ...] = ()
    method: str | None = None
    answers: str = ""  # how the two answers compare: identical, within tolerance, or how they differ

    @property
    def timed(self) -> bool:
        return self.level_ms is not None


def allowed_growth(baseline_bytes: int, threshold: float) -> int:
    """The device memory growth over a baseline that still passes: threshold x baseline, at least
    MEMORY_FLOOR_BYTES."""
    return max(math.ceil(threshold * baseline_bytes), MEMORY_FLOOR_BYTES)


@dataclass(frozen=True)
class MemoryCheck:
    """A call's peak device memory beyond what was allocated before it, and its judgement
    (verdict/memory.py).

    `baseline_bytes` is None when the baseline has no figure (no baseline, an entry recorded before
    memory was measured, or on another device): then nothing is judged.
    """

    peak_bytes: int
    baseline_bytes: int | None = None
    threshold: float = 0.1
    exceeded: bool = False
    # The operators that allocated most in one call now (torch.profiler), found for a failure.
    allocations: tuple[str, ...] = ()

    @property
    def allowed_growth_bytes(self) -> int | None:
        """The growth over the baseline that still passes: threshold x baseline, 1 MiB at least."""
        if self.baseline_bytes is None:
            return None
        return allowed_growth(self.baseline_bytes, self.threshold)

    @property
    def growth_bytes(self) -> int | None:
        return None if self.baseline_bytes is None else self.peak_bytes - self.baseline_bytes

    @property
    def change_pct(self) -> float | None:
        if self.baseline_bytes is None:
            return None
        if self.baseline_bytes == 0:
            return 0.0 if self.peak_bytes == 0 else math.inf
        return (self.peak_bytes / self.baseline_bytes - 1) * 100


def rounded_seconds(seconds: float) -> float:
    return round(max(0.0, seconds), SECOND_DIGITS)


@dataclass(frozen=True)
class CallCost:
    """Seconds of one kernel_bench call, by phase (results/cost.py); `total` is the call's wall time,
    from its start to its return, and the phases add up to at most it (the rest: argument checks,
    input snapshots, bookkeeping)."""

    context: float = 0.0  # the call's context: a fresh torch.compile context, autotuners watched
    first_call: float = 0.0  # the first call of fn and the reference check: compile, JIT, autotune
    warmup: float = 0.0  # warm-up before each round (the first round's pays what the first call left)
    rounds: float = 0.0  # sampling the rounds (and drawing their memory placements)
    memory: float = 0.0  # the dedicated call that measures peak device memory (CUDA)
    profile: float = 0.0  # torch.profiler runs after the timing (inventory, explanation, artefacts)
    judge: float = 0.0  # verdicts and statistics (the first read of the run's baselines: the prior)
    baseline_io: float = 0.0  # reading this call's baseline entry, staging the new one
    total: float = 0.0

    @classmethod
    def of(cls, seconds: Mapping[str, float], total: float) -> CallCost:
        phases = {name: rounded_seconds(seconds.get(name, 0.0)) for name in CALL_PHASES}
        return cls(**phases, total=max(rounded_seconds(total), round(sum(phases.values()), SECOND_DIGITS)))

    def phases(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in CALL_PHASES}

    @property
    def other(self) -> float:
        return max(0.0, self.total - sum(self.phases().values()))


@dataclass(frozen=True)
class BenchResult:
    """One timed (or only checked) call. Times are per call, in milliseconds.

    `level_ms`, `samples_ms`, `baseline_level_ms` and `verdict` are about device time; `level_ms`
    and `baseline_level_ms` are the levels judged (the geometric mean of the per-round midmeans, or
    a schema-1 baseline's median), `round_range_ms` the lowest and highest of this run's round
    locations; the `host_*` fields about host latency per call (launch path included), measured
    separately on CUDA so that a slower launch path is seen apart from a slower kernel. A sample
    median is a baseline entry's (`entry.device_time.median_ms`), never the level.
    """

    nodeid: str
    name: str | None
    device: str  # the baseline key: GPU model or CPU model
    verdict: Verdict
    cache: str = "hot"
    method: str | None = None
    level_ms: float | None = None
    samples_ms: tuple[float, ...] = ()
    round_range_ms: tuple[float, float] | None = None
    baseline_level_ms: float | None = None
    comparison: Comparison | None = None
    host_method: str | None = None
    host_level_ms: float | None = None
    host_baseline_level_ms: float | None = None
    host_comparison: Comparison | None = None
    baseline_file: str | None = None
    notes: tuple[str, ...] = ()
    bytes: int | None = None
    flops: int | None = None
    artifacts: tuple[str, ...] = ()
    wall_s: float = 0.0
    device_index: int | None = None  # the CUDA device (index in this process) that measured it
    # Reports: bytes counted from the tensors (no bytes= given), the ratio to a reference timed in
    # the same run (max_ratio=), the lowest and highest of the baseline's rounds (a schema-1 entry:
    # its median's interval), and the baseline entry this measurement
    # makes (exactly what an update writes, so a saved run can record baselines later).
    bytes_inferred: bool = False
    ratio: RatioCheck | None = None
    baseline_round_range_ms: tuple[float, float] | None = None
    entry: BaselineEntry | None = None
    # Rounds: per-round locations of device time, the timer's step, throttled rounds seen (and
    # re-measured where the budget allowed), and the throttling in the rounds kept.
    rounds_ms: tuple[float, ...] = ()
    resolution_ms: float | None = None
    throttled_rounds: int = 0
    throttling: Throttling | None = None
    placements: int = 0  # rounds measured each at its own memory placement (0: the process's)
    # Peak device memory of one call beyond its inputs, judged against the baseline's (None: not
    # measured, e.g. on a CPU), and the seconds of the call's phases (None: from an older run file).
    memory: MemoryCheck | None = None
    cost: CallCost | None = None
    # The same function at another revision, timed beside this one (--kernelperf-against); with it
    # `baseline_level_ms` and `comparison` are the revision's level and the paired judgement.
    against: RevisionCheck | None = None
    # Where the call was measured twice (a first measurement slower or near it): each measurement
    # judged alone, in order; the verdict and rounds above are both measurements' pooled.
    readings: tuple[Reading, ...] = ()
    # What differs between the baseline's environment and this run's ("driver 570 -> 580"); empty:
    # nothing of note; None: no baseline to compare with.
    environment_changes: tuple[str, ...] | None = None
    # The timed callable's name (`gelu`, `Block.forward`): what a report's row calls an unnamed call.
    function: str | None = None

    @property
    def label(self) -> str:
        return self.nodeid if self.name is None else f"{self.nodeid} [{self.name}]"

    @property
    def module(self) -> str:
        """The test module's path: its baseline file is named after it."""
        return split_nodeid(self.nodeid)[0]

    @property
    def test_id(self) -> str:
        """The baseline entry's test id: the node id without the module, then `::name`."""
        return entry_test_id(self.nodeid, self.name)

    @property
    def compile_context(self) -> CompileContext | None:
        """How torch.compile compiled the measured call (None: no compiled code, or not timed);
        carried by `entry`, like the autotuner choices and inputs."""
        return self.entry.compile_context if self.entry is not None else None

    @property
    def peak_memory_bytes(self) -> int | None:
        return self.memory.peak_bytes if self.memory is not None else None

    @property
    def change_pct(self) -> float | None:
        return None if self.comparison is None else self.comparison.change_pct

    @property
    def host_change_pct(self) -> float | None:
        return None if self.host_comparison is None else self.host_comparison.change_pct

    @property
    def throughput(self) -> tuple[float | None, float | None]:
        """(GB/s, TFLOP/s) from the declared bytes and flops, where given."""
        if not self.level_ms:
            return None, None
        seconds = self.level_ms / 1e3
        gbps = self.bytes / seconds / 1e9 if self.bytes else None
        tflops = self.flops / seconds / 1e12 if self.flops else None
        return gbps, tflops
