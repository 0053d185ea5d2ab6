"""What a measurement's samples and rounds say: each round's location, the timer's step, a level and
its standard error, and the built-in noise values by size class.

A measurement is several rounds, each a fresh warm-up, sampling window and memory placement. On an
H200 the level a round lands on is drawn afresh every time (SD of a round's location 0.7-0.8% for a
2.2 us kernel, 0.08-0.09% for a 130 us one, docs/results/verdicts.md), while samples inside a round
mostly keep their level; so the variances that decide a verdict are the round-to-round one and the
process-to-process one, which verdict/prior.py estimates per kernel. The built-in values here are
the shape of its priors over kernel sizes, and stand where a baseline set gives too little to fit.
Pure module: no torch, no pytest.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pytest_kernelperf.model.names import HOST_PATH_METHODS

# Between-process component of a measurement's level (relative SD), by per-call time: added to the
# noise of the difference of two measurements made in different processes, since a baseline comes
# from one process and each run is another. A process's rounds cannot see it. Measured on one H200
# (2026-12-01, docs/results/aa_sequential.md): 21 processes of the real-kernel suite, one at a time;
# per kernel, the SD of a process's level beyond what its rounds explain. Each value is the upper
# quartile of its class over the first 14 processes, rounded up to 0.05% (0.32%, 0.28%, 0.12%; the
# largest kernel 0.43%, 0.44%, 0.13%); the other 7 processes checked them. Processes timing on one GPU
# at the same time moved far more (up to 5.7%): docs/measurement.md#calibration.
PROCESS_LEVEL_SD: tuple[tuple[float, float], ...] = (
    # (upper bound of the class in ms, relative SD)
    (1e-2, 0.0035),
    (1e-1, 0.003),
    (math.inf, 0.0015),
)


# Between-occasion component (relative SD), by per-call time: an occasion is one machine at one
# sitting (a CI job, a recording session). Processes run back to back on one machine share its state
# (clocks, temperature, the driver's and allocator's warm state), so the spread among a baseline's
# recording processes cannot see it, and a run on another occasion differs from the baseline by it
# twice (once for each side's occasion). It is the value with one recording occasion, and the prior a
# kernel's own occasions are shrunk toward (verdict/occasions.py). Chosen as the smallest per class
# with no false `slower` on the A/A runs of the ten H200s with 3-process baselines (verdict studies
# 2026-12-01, -02, -02b, -03d and power-capped -03b: 1473 judgements; studies/occasion_loko.py,
# docs/results/occasion_loko_2026-12-04.txt). Held out by kernel on those cards (each kernel judged at
# the value the rule picks on the others): 3 false `slower` in 1473 (95% upper 5.3 per 1000), all the
# torch transpose after memory churn, for which the others pick 0.35% at 100 us-1 ms; |z*| > 3 in 8
# where N(0,1) gives 4. Held out by card, the one-process cards (verdict studies -03, -03c, power-
# capped -03: 661 judgements) read 6 false `slower` at these values (the NVRTC SAXPY, the transpose).
# A second occasion simulated from those runs would pick 0.25% / 0.35%: not taken, since it came
# minutes after the recording, in the session of the runs it was judged by.
OCCASION_LEVEL_SD: tuple[tuple[float, float], ...] = (
    # (upper bound of the class in ms, relative SD)
    (1e-2, 0.0),
    (1e-1, 0.002),
    (math.inf, 0.005),
)
# Its weight in degrees of freedom. Occasion offsets differ from kernel to kernel more than one SD
# allows (on those cards 7 of 40 kernels carried most of them), so the values are set by the tail,
# which the bulk then over-covers (SD of z* 0.8-0.9); a kernel's own history scales them down.
OCCASION_DF = 30.0


def occasion_level_sd(level_ms: float, method: str = "cupti") -> float:
    """The between-occasion SD (relative) of a measurement taking `level_ms` per call; host clocks'
    process term already spans far more than any occasion moves them."""
    if method in HOST_PATH_METHODS:
        return 0.0
    return next(sd for upper, sd in OCCASION_LEVEL_SD if level_ms < upper)


# Host clocks (CUDA events around each call, the wall clock) time the launch path and the host's
# scheduler: on the same H200 A/A study the host latency of one process against another's had a log
# ratio SD of 0.41 (ratios 0.13 to 1.73), so a host-latency warning needs a change beyond that.
HOST_PROCESS_LEVEL_SD = 0.3


# A kernel's between-process noise is also learnt from its past runs in the run history: its newest
# HISTORY_MAX_RUNS runs judged against its current baseline, from HISTORY_MIN_RUNS runs on.
HISTORY_MIN_RUNS = 5
HISTORY_MAX_RUNS = 40


def process_level_sd(level_ms: float, method: str = "cupti") -> float:
    """The between-process SD (relative) of a measurement taking `level_ms` per call."""
    if method in HOST_PATH_METHODS:
        return HOST_PROCESS_LEVEL_SD
    return next(sd for upper, sd in PROCESS_LEVEL_SD if level_ms < upper)


# No timer repeats a level exactly from round to round; a pooled SD below this (rounds identical to
# the stored digits, or a fake timer) would make every difference infinitely significant.
MIN_ROUND_SD = 0.0001


@dataclass(frozen=True)
class SizeClass:
    """A decade of per-call time (lower bound inclusive), in milliseconds."""

    low_ms: float
    high_ms: float

    @property
    def label(self) -> str:
        return f"{_time_label(self.low_ms)}-{_time_label(self.high_ms)}"


def _time_label(ms: float) -> str:
    if ms < 1e-3:
        return f"{ms * 1e6:g} ns"
    if ms < 1:
        return f"{ms * 1e3:g} us"
    if ms < 1e3:
        return f"{ms:g} ms"
    return f"{ms / 1e3:g} s"


def size_class(level_ms: float) -> SizeClass:
    decade = math.floor(math.log10(level_ms)) if level_ms > 0 else -6
    return SizeClass(10.0**decade, 10.0 ** (decade + 1))


# Built-in round-to-round relative SD by size class, for device-time methods. Measured on one
# H200 (Triton GELU): 0.70-0.83% at 2.2 us, 0.079-0.094% at 130 us. The values are rounded up
# (conservative: a larger SD misses small slowdowns rather than raising false alarms); classes
# without data carry a guess, marked so, to be measured on the H200.
BUILTIN_ROUND_SD: tuple[tuple[float, float, str], ...] = (
    # (upper bound of the class in ms, relative SD, provenance)
    (1e-3, 0.02, "guess: sub-microsecond kernels sit a few timer ticks long"),
    (1e-2, 0.008, "measured 0.70-0.83% (SD of round medians) at 2.2 us"),
    (1e-1, 0.0025, "guess between the 2.2 us and 130 us measurements"),
    (1.0, 0.0012, "measured 0.079-0.094% at 130 us"),
    (10.0, 0.002, "guess: not measured yet"),
    (math.inf, 0.004, "guess: not measured yet"),
)
# Host-side clocks (model/names.py HOST_PATH_METHODS: the wall clock, CUDA events around each call)
# include the launch path and the host's scheduler: a few percent from round to round on a shared
# machine.
BUILTIN_HOST_ROUND_SD = 0.03


def builtin_round_sd(level_ms: float, method: str) -> float:
    if method in HOST_PATH_METHODS:
        return BUILTIN_HOST_ROUND_SD
    for upper, sd, _ in BUILTIN_ROUND_SD:
        if level_ms < upper:
            return sd
    raise AssertionError("the last class is unbounded")


def midmean(values: Sequence[float]) -> float:
    """Mean of the middle half (25% trimmed each side): robust to outliers like a median, but a
    mix of neighbouring timer ticks moves it smoothly where a median jumps a whole tick."""
    if not values:
        raise ValueError("midmean of no values")
    ordered = sorted(values)
    cut = len(ordered) // 4
    middle = ordered[cut : len(ordered) - cut]
    return math.fsum(middle) / len(middle)


# CUPTI timestamps jitter by about a nanosecond around their tick (32 ns on an H200): values this
# close are one tick's.
_TICK_JITTER_MS = 3e-6
# The samples sit on a lattice when at least this share of the gaps between neighbouring clusters of
# values are whole multiples of the smallest one (within the jitter).
_LATTICE_SHARE = 0.9


def resolution(values: Iterable[float]) -> float | None:
    """The timer's step as the samples show it (ms), or None when they show none.

    Values within a nanosecond or so of each other are one tick read with jitter: they are merged,
    and the step is the smallest gap between the merged values, provided the other gaps are whole
    multiples of it. On an H200, CUPTI's samples 0.000960, 0.000991, 0.000992, 0.000993 ms give
    0.000032 ms (the 32 ns tick), not the 1 ns of their jitter. Where the values form no lattice
    (a host clock), the smallest gap between distinct values is the best estimate there is."""
    distinct = sorted({round(v, 9) for v in values})
    if len(distinct) < 2:
        return None
    centres = [distinct[0]]
    members = [[distinct[0]]]
    for value in distinct[1:]:
        if value - members[-1][-1] <= _TICK_JITTER_MS:
            members[-1].append(value)
            centres[-1] = math.fsum(members[-1]) / len(members[-1])
        else:
            members.append([value])
            centres.append(value)
    gaps = [b - a for a, b in itertools.pairwise(centres)]
    smallest = [b - a for a, b in itertools.pairwise(distinct) if b - a > 1e-9]
    if not gaps:
        return min(smallest) if smallest else None
    step = min(gaps)
    for _ in range(3):  # refit the step to all gaps: the smallest alone carries two readings' jitter
        multiples = [max(1, round(g / step)) for g in gaps]
        step = math.fsum(gaps) / sum(multiples)
    on_lattice = sum(abs(g - m * step) <= 2 * _TICK_JITTER_MS for g, m in zip(gaps, multiples, strict=True))
    if len(members) < len(distinct) and on_lattice >= _LATTICE_SHARE * len(gaps):
        return step
    return min(smallest) if smallest else None


# Rounds each at its own memory placement that spread more than this (relative SD, and 4x the
# size class's round noise) show a kernel whose time depends on where its buffers land.
PLACEMENT_SD = 0.02


def placement_sensitive(rounds_ms: Sequence[float], method: str) -> bool:
    """Whether rounds drawn at fresh placements spread beyond what rounds of one placement do."""
    squares, df = log_sum_of_squares(rounds_ms)
    if df < 2:
        return False
    limit = max(PLACEMENT_SD, 4 * builtin_round_sd(geometric_mean(rounds_ms), method))
    return math.sqrt(squares / df) > limit


def level_standard_error(rounds_ms: Sequence[float]) -> float:
    """The relative standard error of a level (the mean log of its rounds); 0 with one round."""
    squares, df = log_sum_of_squares(rounds_ms)
    return math.sqrt(squares / df / len(rounds_ms)) if df else 0.0


def geometric_mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("mean of no rounds")
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def log_sum_of_squares(rounds_ms: Sequence[float]) -> tuple[float, int]:
    """(sum of squared deviations of log round locations from their mean, degrees of freedom)."""
    if len(rounds_ms) < 2:
        return 0.0, 0
    logs = [math.log(v) for v in rounds_ms]
    mean = math.fsum(logs) / len(logs)
    return math.fsum((x - mean) ** 2 for x in logs), len(logs) - 1
