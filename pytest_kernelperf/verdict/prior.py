"""Empirical-Bayes priors for a kernel's two noises, fitted to the baseline set it is judged with.

Two variances decide a judgement: how far a round's level moves inside one process (the round
variance; each round is its own warm-up, sampling window and memory placement), and how far a
process's level moves beyond its rounds (the between-process variance). A kernel's own estimate of
each rests on few degrees of freedom (its rounds; its recording processes and past runs), so each
is shrunk toward a prior fitted to all the entries of the baseline set, the way limma's moderated t
treats gene variances (Smyth 2004, Stat. Appl. Genet. Mol. Biol. 3:3): each entry's variance is
scaled by its size class's built-in value (which gives the prior its shape over kernel sizes), and
the scale and the weight of the prior (its degrees of freedom) are fitted to how much those scaled
variances differ from each other. Kernels that agree earn the prior a large weight; kernels that
differ ten-fold leave it a few degrees of freedom, and each is judged mostly on its own data. With
too few entries, the built-in class values stand, with a fixed weight. Pure module: no torch, no
pytest.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_kernelperf.model.baseline import split_by_counts
from pytest_kernelperf.model.names import HOST_PATH_METHODS
from pytest_kernelperf.verdict import noise

# A fit needs this many entries with an estimate; fewer leave the built-in values.
MIN_FIT_ENTRIES = 5
# The built-in values' weights (degrees of freedom) where no fit stands in for them: the round
# noise table is old and coarse (a weak prior); the between-process class values were measured on
# an A/A of 21 processes (docs/results/aa_sequential.md) and kept p-values calibrated at this weight
# against a 10-run history.
BUILTIN_ROUND_DF = 4.0
BUILTIN_PROCESS_DF = 8.0


@dataclass(frozen=True)
class PriorSD:
    """A prior for a relative SD (log units), its weight in degrees of freedom, and its source."""

    sd: float
    df: float
    source: str


@dataclass(frozen=True)
class Fit:
    """A scaled inverse-chi-square prior: scale (a multiple of the class value, squared) and weight."""

    scale: float
    df: float
    entries: int


def fit_variances(variances: Sequence[float], dfs: Sequence[float]) -> Fit | None:
    """limma's moment fit of a scaled inverse-chi-square prior to sample variances with their
    degrees of freedom (Smyth 2004, section 6.2); None with fewer than MIN_FIT_ENTRIES usable ones.
    The prior's weight is capped at the degrees of freedom of all the entries together: a prior is
    never worth more than the data it was fitted to."""
    from scipy.special import digamma, polygamma

    pairs = [(v, d) for v, d in zip(variances, dfs, strict=True) if d > 0 and v > 0 and math.isfinite(v)]
    if len(pairs) < MIN_FIT_ENTRIES:
        return None
    logs = [math.log(v) - float(digamma(d / 2)) + math.log(d / 2) for v, d in pairs]
    mean = math.fsum(logs) / len(logs)
    spread = math.fsum((x - mean) ** 2 for x in logs) / (len(logs) - 1)
    spread -= math.fsum(float(polygamma(1, d / 2)) for _, d in pairs) / len(pairs)
    total_df = math.fsum(d for _, d in pairs)
    if spread <= 0:
        return Fit(math.exp(mean), total_df, len(pairs))
    df = min(2 * _trigamma_inverse(spread), total_df)
    return Fit(math.exp(mean + float(digamma(df / 2)) - math.log(df / 2)), df, len(pairs))


def _trigamma_inverse(x: float) -> float:
    """y with trigamma(y) = x, by Newton's method from limma's starting point."""
    from scipy.special import polygamma

    if x > 1e7:
        return 1 / math.sqrt(x)
    if x < 1e-6:
        return 1 / x
    y = 0.5 + 1 / x
    for _ in range(50):
        tri = float(polygamma(1, y))
        step = tri * (1 - tri / x) / float(polygamma(2, y))
        y += step
        if -step / y < 1e-8:
            break
    return y


def groups(rounds_ms: Sequence[float], process_rounds: Sequence[int]) -> list[tuple[float, ...]]:
    """The rounds of each process that measured an entry (one process where counts are absent)."""
    return [tuple(part) for part in split_by_counts(rounds_ms, process_rounds)]


def within_variance(parts: Sequence[Sequence[float]]) -> tuple[float, int]:
    """The round variance pooled over processes (log units) and its degrees of freedom."""
    squares, df = 0.0, 0
    for part in parts:
        s, d = noise.log_sum_of_squares(part)
        squares, df = squares + s, df + d
    return (squares / df if df else 0.0), df


def by_occasion(
    parts: Sequence[Sequence[float]], occasion_processes: Sequence[int] = ()
) -> list[list[Sequence[float]]]:
    """The processes (each its rounds) of each recording occasion, in order (one occasion where
    counts are absent)."""
    return [list(occasion) for occasion in split_by_counts(parts, occasion_processes)]


def log_level(rounds_ms: Sequence[float]) -> float:
    """A process's level: the mean log of its rounds."""
    return math.fsum(math.log(v) for v in rounds_ms) / len(rounds_ms)


def level_variance(
    parts: Sequence[Sequence[float]], occasion_processes: Sequence[int] = ()
) -> tuple[float, int] | None:
    """The variance of the processes' levels (mean log round) about their occasion's mean, pooled
    over occasions, and its degrees of freedom (processes less occasions); None without two
    processes in one occasion. It holds the between-process variance plus the round variance over
    the rounds; processes of different occasions also differ by how far the occasions moved, which
    verdict/occasions.py estimates apart."""
    squares, df = 0.0, 0
    for occasion in by_occasion(parts, occasion_processes):
        means = [log_level(part) for part in occasion]
        grand = math.fsum(means) / len(means)
        squares += math.fsum((m - grand) ** 2 for m in means)
        df += len(means) - 1
    return (squares / df, df) if df else None


@dataclass
class NoisePrior:
    """The priors of a baseline set, per device and method: round noise and between-process noise.

    Built by the session from the baseline entries it has read (`add` each entry's rounds, grouped
    by recording process), or by saved-run compare from a run's entries. Fitted once per device and
    method, on first use.
    """

    _rounds: dict[tuple[str, str], list[tuple[float, int]]] = field(default_factory=dict)
    _levels: dict[tuple[str, str], list[tuple[float, int]]] = field(default_factory=dict)
    _fits: dict[tuple[str, str, str], Fit | None] = field(default_factory=dict)

    def add(
        self,
        device: str,
        method: str,
        rounds_ms: Sequence[float],
        process_rounds: Sequence[int] = (),
        occasion_processes: Sequence[int] = (),
    ) -> None:
        if not rounds_ms or not all(v > 0 and math.isfinite(v) for v in rounds_ms):
            return
        parts = groups(rounds_ms, process_rounds)
        level = noise.geometric_mean(rounds_ms)
        variance, df = within_variance(parts)
        if df:
            scale = noise.builtin_round_sd(level, method) ** 2
            self._rounds.setdefault((device, method), []).append((variance / scale, df))
        spread = level_variance(parts, occasion_processes)
        if spread is not None:
            scale = noise.process_level_sd(level, method) ** 2
            self._levels.setdefault((device, method), []).append((spread[0] / scale, spread[1]))
        self._fits.clear()

    def _fit(self, kind: str, device: str, method: str) -> Fit | None:
        key = (kind, device, method)
        if key not in self._fits:
            found = (self._rounds if kind == "rounds" else self._levels).get((device, method), [])
            self._fits[key] = fit_variances([v for v, _ in found], [d for _, d in found])
        return self._fits[key]

    def for_kernel(self, device: str, method: str, level_ms: float) -> PriorSD:
        """The prior for a kernel's round-to-round SD."""
        builtin = noise.builtin_round_sd(level_ms, method)
        fit = self._fit("rounds", device, method)
        if fit is None:
            label = noise.size_class(level_ms).label
            return PriorSD(builtin, BUILTIN_ROUND_DF, f"built-in prior for {label} kernels")
        sd = max(math.sqrt(fit.scale) * builtin, noise.MIN_ROUND_SD)
        return PriorSD(sd, fit.df, f"{sd:.2g} fitted to {fit.entries} entries on {device} ({fit.df:.3g} df)")

    def for_process(self, device: str, method: str, level_ms: float) -> PriorSD:
        """The prior for a kernel's between-process SD (its level from one process to the next)."""
        builtin = noise.process_level_sd(level_ms, method)
        fit = self._fit("levels", device, method)
        if fit is None:
            label = (
                "host clocks"
                if method in HOST_PATH_METHODS
                else f"{noise.size_class(level_ms).label} kernels"
            )
            return PriorSD(builtin, BUILTIN_PROCESS_DF, f"{builtin:.2%} built in for {label}")
        sd = math.sqrt(fit.scale) * builtin
        return PriorSD(
            sd,
            fit.df,
            f"{sd:.2%} fitted to {fit.entries} multi-process entries on {device} ({fit.df:.3g} df)",
        )


def history_variance(runs_rounds_ms: Sequence[Sequence[float]]) -> tuple[float, float] | None:
    """A kernel's between-process variance from its past runs (each run's rounds, oldest first) and
    its degrees of freedom, or None with fewer than noise.HISTORY_MIN_RUNS runs.

    The variance of the runs' levels comes from their successive differences (half the mean squared
    difference, von Neumann's estimator) less what the runs' own rounds explain: a step inside the
    history (a 1% change accepted as "same") adds one large difference among many instead of
    splitting the runs into two groups, so it barely widens the noise a later change is judged
    against. Its degrees of freedom are about two thirds of the plain variance's.
    """
    runs = [r for r in runs_rounds_ms if r and all(v > 0 and math.isfinite(v) for v in r)]
    runs = runs[-noise.HISTORY_MAX_RUNS :]
    if len(runs) < noise.HISTORY_MIN_RUNS:
        return None
    means = [math.fsum(math.log(v) for v in r) / len(r) for r in runs]
    steps = [(b - a) ** 2 for a, b in itertools.pairwise(means)]
    successive = math.fsum(steps) / (2 * len(steps))
    within = [variance / len(r) for r in runs for variance, df in [within_variance([r])] if df]
    explained = math.fsum(within) / len(within) if within else 0.0
    return max(0.0, successive - explained), HISTORY_EFFICIENCY * (len(runs) - 1)


# The successive-difference estimator's efficiency against the plain variance for independent draws.
HISTORY_EFFICIENCY = 2 / 3
