"""The between-occasion term of a stored-baseline judgement, per kernel where its baseline shows it,
and which kernels need a baseline from more occasions.

An occasion is one machine at one sitting (a CI job, a recording session). Processes run back to
back share it, so a baseline's recording processes cannot see how far a kernel's level moves from
one occasion to the next, and a run on another occasion differs from the baseline by that move
(tau^2 for its own occasion, and the baseline's occasions' mean). With one recording occasion tau
is its size class's (noise.OCCASION_LEVEL_SD). A baseline recorded on several occasions
(`--kernelperf-add-occasion`) shows the kernel's own move: the spread of its occasions' levels
beyond what their processes and rounds explain (K - 1 degrees of freedom), shrunk toward the class
value with noise.OCCASION_DF, as the between-process variance is shrunk toward its prior.
Pure module: no torch, no pytest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from pytest_kernelperf.model.names import HOST_PATH_METHODS
from pytest_kernelperf.verdict import noise
from pytest_kernelperf.verdict import prior as prior_mod

# Where a kernel's baseline needs more occasions: what to do ("record it again " + this).
ADD_OCCASION = "on another day or machine with --kernelperf-update-baselines --kernelperf-add-occasion"


@dataclass(frozen=True)
class OccasionTerm:
    """tau^2 of a judgement (relative, log units), its degrees of freedom, and what it rests on."""

    variance: float
    df: float
    evidence: str  # "1 recording occasion", "3 recording occasions, shrunk toward 0.35% for ..."


def occasion_term(
    occasions: Sequence[Sequence[Sequence[float]]],
    level_ms: float,
    method: str,
    process_variance: float,
    round_variance: float,
) -> OccasionTerm:
    """tau^2 for a kernel at `level_ms` whose baseline holds `occasions` (each its processes' rounds),
    given the between-process and round variances the judgement uses for it."""
    class_sd = noise.occasion_level_sd(level_ms, method)
    count = len(occasions)
    if count < 2 or method in HOST_PATH_METHODS:  # a host clock's process term spans any occasion
        return OccasionTerm(class_sd**2, noise.OCCASION_DF, "1 recording occasion")
    levels = [math.fsum(prior_mod.log_level(p) for p in occasion) / len(occasion) for occasion in occasions]
    grand = math.fsum(levels) / count
    spread = math.fsum((level - grand) ** 2 for level in levels) / (count - 1)
    # An occasion's level varies beyond tau^2 by its processes' part and their rounds' part.
    explained = (
        math.fsum(
            process_variance / len(occasion)
            + round_variance * math.fsum(1 / len(p) for p in occasion) / len(occasion) ** 2
            for occasion in occasions
        )
        / count
    )
    df = noise.OCCASION_DF + count - 1
    variance = max((noise.OCCASION_DF * class_sd**2 + (count - 1) * (spread - explained)) / df, 0.0)
    label = noise.size_class(level_ms).label
    return OccasionTerm(
        variance, df, f"{count} recording occasions, shrunk toward {class_sd:.2%} for {label} kernels"
    )


def level_weight(occasion_processes: Sequence[int]) -> float:
    """How much of one occasion's offset stays in the baseline's level: the sum of the occasions'
    squared weights, each weighing its share of the processes (which weigh alike in the level);
    1/K for K occasions of as many processes each, 1 for one occasion."""
    if not occasion_processes:
        return 1.0
    total = sum(occasion_processes)
    return math.fsum((count / total) ** 2 for count in occasion_processes)


class Recorded(Protocol):
    """What the check reads of a stored measurement (a baseline entry's record, or the judge's Rounds)."""

    @property
    def method(self) -> str: ...
    @property
    def rounds_ms(self) -> tuple[float, ...]: ...
    @property
    def process_rounds(self) -> tuple[int, ...]: ...
    @property
    def occasion_processes(self) -> tuple[int, ...]: ...


# Recording processes "show an offset" where their levels disagree beyond their rounds more than the
# size class's between-process value (noise.PROCESS_LEVEL_SD) would let them but once in this many
# baselines: a chi-square test of the processes' levels with that value taken as known (with 3
# processes, an own SD beyond about 2.6x it). The class value is the upper quartile of its class
# on a 21-process A/A, so the test leans toward silence. Not the fitted prior: fitted to a suite's
# entries on an H200 it carries about 1 degree of freedom (kernels' process terms differ tenfold),
# against which no spread is ever surprising. On the ten H200s with 3-process baselines (286 kernel
# baselines, docs/results/occasion_loko_2026-12-04.txt) it flags 13 (the SAXPYs, compiled MLPs, large
# attentions, the transpose on 2 of 7 cards): none of their 67 A/A judgements has |z*| beyond 3, their
# own processes' spread already widening them. The A/A tail lies in kernels whose recording processes
# agreed (the transpose on the other cards): no check of one occasion can see it, a second can.
NEEDS_OCCASIONS_P = 0.001


@dataclass(frozen=True)
class ProcessOffset:
    """A one-occasion baseline whose recording processes disagree far beyond their rounds."""

    processes: int
    own_sd: float  # the processes' SD beyond what their rounds explain (relative)
    class_sd: float
    size_label: str

    @property
    def excess(self) -> str:
        return f"{self.own_sd / self.class_sd:.1f}x the {self.class_sd:.2%} of {self.size_label} kernels"

    @property
    def note(self) -> str:
        """The judgement's note: what its baseline shows, and the remedy."""
        return (
            f"needs occasions: its {self.processes} recording processes sit {self.own_sd:.2%} apart "
            f"beyond their rounds, {self.excess}; record it again {ADD_OCCASION}"
        )


def needs_occasions(record: Recorded, step_ms: float | None = None) -> ProcessOffset | None:
    """The offset of a device-timed baseline recorded on one occasion whose processes disagree
    beyond NEEDS_OCCASIONS_P (see there), or None. The timer's step, where known, widens what the
    processes may differ by: a level that sits on steps lands within one from process to process."""
    parts = prior_mod.groups(record.rounds_ms, record.process_rounds)
    if len(record.occasion_processes) > 1 or len(parts) < 2 or record.method in HOST_PATH_METHODS:
        return None
    from scipy.special import chdtrc  # the chi-square upper tail; loaded on first use

    level = math.exp(math.fsum(prior_mod.log_level(p) for p in parts) / len(parts))
    round_variance, round_df = prior_mod.within_variance(parts)
    if not round_df:
        round_variance = noise.builtin_round_sd(level, record.method) ** 2
    explained = round_variance * math.fsum(1 / len(p) for p in parts) / len(parts)
    class_sd = noise.process_level_sd(level, record.method)
    expected = class_sd**2 + ((step_ms or 0.0) / level) ** 2 / 12 + explained
    spread = prior_mod.level_variance(parts)
    assert spread is not None  # two processes or more, one occasion
    if float(chdtrc(spread[1], spread[1] * spread[0] / expected)) >= NEEDS_OCCASIONS_P:
        return None
    own = math.sqrt(max(spread[0] - explained, 0.0))
    return ProcessOffset(len(parts), own, class_sd, noise.size_class(level).label)
