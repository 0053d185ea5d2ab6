"""The one judge: is this measurement slower, faster or the same as its baseline?

Used by kernel_bench, by saved-run compare (`python -m pytest_kernelperf compare`) and by the
studies that re-judge recorded data. Pure logic: no torch, no pytest.

The model. A measurement is R rounds (each its own warm-up and sampling window) and each round
gives one location (the midmean of its samples). On a GPU the level a round lands on is re-drawn
every round, so the rounds, not the samples, carry the noise that matters. The judge compares the
mean log round location of this run with the baseline's:

* difference d = mean(log current rounds) - mean(log baseline rounds); ratio = exp(d);
* noise: the kernel's pooled within-set round SD, shrunk toward a prior SD (empirical Bayes:
  s^2 = (nu0 s0^2 + nu s_own^2) / (nu0 + nu)), plus the between-process part of two processes'
  levels (by size class, or learnt from the kernel's past runs in the history);
* Student t with nu0 + nu degrees of freedom, one-sided, at the per-judgement level alpha / m,
  m being the number of judgements the run plans (Bonferroni: alpha is the suite's false-alarm rate);
* "slower" needs that evidence AND the ratio beyond the practical floor `threshold`.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pytest_kernelperf.verdict import noise

MODEL = "t test on log round locations"
POWER = 0.95  # the detection probability the smallest detectable change is quoted at
# A throttled measurement may still be judged when throttling cannot explain the change: a clock
# drop of x% slows a kernel by at most about x/(1-x), never by 2x.
THROTTLE_LIMIT_RATIO = 2.0
THROTTLE_MARGIN = 3.0  # "a wide margin": the change must exceed 3x what the clock drop explains
UPDATE_HINT = "re-record it with `pytest --kernelperf-update-baselines`"


class Verdict(str, enum.Enum):
    SAME = "same"
    SLOWER = "slower"
    FASTER = "faster"
    NEW = "new"  # no baseline for this device and mode
    INCOMPARABLE = "incomparable"  # a baseline exists but was measured another way
    UNRELIABLE = "unreliable"  # the measurement itself cannot be trusted (throttling)
    CHECKED = "checked"  # correctness only, no timing
    MISMATCH = "mismatch"  # the output differs from the reference's: not timed

    def __str__(self) -> str:
        return self.value


# Verdicts that are not a judgement of speed: under --kernelperf-strict each fails its test.
NOT_JUDGED = (Verdict.NEW, Verdict.INCOMPARABLE, Verdict.UNRELIABLE)


@dataclass(frozen=True)
class Rounds:
    """One side of a comparison: a method and its per-round locations (ms per call)."""

    method: str
    rounds_ms: tuple[float, ...]
    legacy: bool = False  # a schema-1 baseline entry: its median stands in as one round

    @classmethod
    def stored(cls, method: str, rounds_ms: Sequence[float], median_ms: float) -> Rounds:
        """A stored measurement (baseline entry): a schema-1 entry has no rounds, and its median
        stands in as one round, judged with the prior's noise."""
        if rounds_ms:
            return cls(method, tuple(rounds_ms))
        return cls(method, (median_ms,), legacy=True)

    @property
    def level_ms(self) -> float:
        """The figure judged: the (geometric) mean of the rounds."""
        return noise.geometric_mean(self.rounds_ms)


@dataclass(frozen=True)
class Throttling:
    """NVML said the GPU held its clock down during rounds that could not be re-measured."""

    reasons: tuple[str, ...]
    clock_drop: float | None = None  # fraction the SM clock fell (None: not known)
    rounds: int = 0  # throttled rounds kept

    def explains(self, ratio: float) -> bool:
        """Whether throttling could account for a change of this ratio."""
        if ratio > THROTTLE_LIMIT_RATIO or ratio < 1 / THROTTLE_LIMIT_RATIO:
            return False
        if self.clock_drop is None or self.clock_drop <= 0:
            return True  # a power cap dips between readings: assume the worst short of 2x
        slowdown = self.clock_drop / (1 - self.clock_drop) if self.clock_drop < 1 else math.inf
        return abs(ratio - 1) <= THROTTLE_MARGIN * slowdown

    def describe(self) -> str:
        drop = f", SM clock down {self.clock_drop:.1%}" if self.clock_drop else ""
        kept = f" in {self.rounds} round{'s' if self.rounds != 1 else ''}" if self.rounds else ""
        return f"GPU throttled{kept} ({', '.join(self.reasons)}{drop})"


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

    @property
    def change_pct(self) -> float | None:
        return None if self.ratio is None else (self.ratio - 1) * 100

    def evidence(self) -> str:
        """What a reviewer needs to check the verdict: the ratio's interval, the p-value and the level
        it was held to, the noise and where it came from, and the smallest change this test sees."""
        if self.p_value is None or self.level is None:
            return self.reason
        parts = []
        if self.ratio_ci is not None and self.ratio is not None:
            confidence = 1 - 2 * self.level
            parts.append(
                f"ratio {self.ratio:.4f} ({_confidence(confidence)} CI {self.ratio_ci[0]:.4f}-"
                f"{self.ratio_ci[1]:.4f})"
            )
        parts.append(
            f"p={self.p_value:.2g} against level {self.level:.2g} "
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


def judge(
    current: Rounds,
    baseline: Rounds | None,
    *,
    device: str,
    threshold: float,
    alpha: float,
    planned_judgements: int = 1,
    prior: noise.NoisePrior | None = None,
    throttling: Throttling | None = None,
    baseline_name: str = "baseline",
    history: Sequence[Sequence[float]] | None = None,
) -> Comparison:
    """The verdict on `current` against `baseline` (see the module docstring for the model).
    `history`: the rounds of this kernel's past runs (oldest first), to learn its between-process
    noise from."""
    planned = max(1, planned_judgements)
    if baseline is None:
        return Comparison(
            Verdict.NEW,
            reason=f"no {baseline_name} for this device and cache mode",
            threshold=threshold,
            alpha=alpha,
            planned_judgements=planned,
        )
    if baseline.method != current.method:
        return Comparison(
            Verdict.INCOMPARABLE,
            reason=f"{baseline_name} measured with {baseline.method}, this run with {current.method}",
            threshold=threshold,
            alpha=alpha,
            planned_judgements=planned,
        )
    test = round_test(
        current.rounds_ms, baseline.rounds_ms, device, current.method, alpha / planned, prior, history
    )
    notes = []
    if baseline.legacy:
        notes.append(
            f"the {baseline_name} predates rounds (schema 1): its median was judged as a single round "
            f"with the prior noise; {UPDATE_HINT}"
        )
    ratio = test.ratio
    slower = test.p_slower < test.level and ratio > 1 + threshold
    faster = test.p_faster < test.level and ratio < 1 / (1 + threshold)
    verdict = Verdict.SLOWER if slower else Verdict.FASTER if faster else Verdict.SAME
    if throttling is not None:
        # A lower clock only ever makes a run look slower: it cannot hide a slowdown, so only a
        # "slower" that the clock drop could explain is left unjudged.
        if verdict is Verdict.SLOWER and throttling.explains(ratio):
            verdict = Verdict.UNRELIABLE
            notes.insert(0, f"{throttling.describe()}: a change of {ratio - 1:+.1%} may be the clock's")
        elif verdict is Verdict.SLOWER:
            notes.insert(0, f"{throttling.describe()}, which cannot explain a change of {ratio - 1:+.1%}")
        else:
            notes.insert(0, f"{throttling.describe()}; no slowdown despite it")
    elif verdict is Verdict.SAME and ratio > 1 + threshold:
        notes.append("beyond the threshold, not significant")
    return Comparison(
        verdict,
        ratio=ratio,
        p_value=test.p_faster if ratio < 1 else test.p_slower,
        reason="; ".join(notes),
        ratio_ci=test.ratio_ci,
        level=test.level,
        noise_sd=test.sd,
        noise_source=test.source,
        process_sd=test.process.sd if test.process else None,
        process_source=test.process.source if test.process else "",
        detectable=max(test.detectable, threshold),
        rounds=len(current.rounds_ms),
        baseline_rounds=len(baseline.rounds_ms),
        threshold=threshold,
        alpha=alpha,
        planned_judgements=planned,
    )


@dataclass(frozen=True)
class RoundTest:
    ratio: float
    ratio_ci: tuple[float, float]
    p_slower: float
    p_faster: float
    level: float
    sd: float  # round-to-round relative SD used
    df: float
    source: str
    detectable: float  # smallest relative slowdown detected with POWER
    process: noise.ProcessSD | None = None  # the between-process part, when the test has one


def round_test(
    current_ms: Sequence[float],
    baseline_ms: Sequence[float],
    device: str,
    method: str,
    level: float,
    prior: noise.NoisePrior | None = None,
    history: Sequence[Sequence[float]] | None = None,
) -> RoundTest:
    """Two-sample t test of log round locations with a shrunk, pooled SD, plus the between-process
    part of two processes' levels."""
    if not current_ms or not baseline_ms:
        raise ValueError("a comparison needs at least one round on each side")
    baseline_level = noise.geometric_mean(baseline_ms)
    d = math.log(noise.geometric_mean(current_ms) / baseline_level)
    own_squares, own_df = (
        a + b
        for a, b in zip(
            noise.log_sum_of_squares(current_ms), noise.log_sum_of_squares(baseline_ms), strict=True
        )
    )
    base_prior = (prior or noise.NoisePrior()).for_kernel(device, method, baseline_level)
    df = base_prior.df + own_df
    variance = (base_prior.df * base_prior.sd**2 + own_squares) / df
    process = noise.process_noise(baseline_level, method, history)
    se = math.sqrt(variance * (1 / len(current_ms) + 1 / len(baseline_ms)) + 2 * process.sd**2)
    source = (
        f"this kernel's {len(current_ms) + len(baseline_ms)} rounds, shrunk toward {base_prior.source}"
        if own_df
        else base_prior.source
    )
    return replace(_t_test(d, se, df, level, math.sqrt(variance), source), process=process)


def _t_test(d: float, se: float, df: float, level: float, sd: float, source: str) -> RoundTest:
    from scipy import stats as scipy_stats  # imported on first use: the plugin loads in every run

    t = d / se
    critical = float(scipy_stats.t.ppf(1 - level, df))
    power = float(scipy_stats.t.ppf(POWER, df))
    return RoundTest(
        ratio=math.exp(d),
        ratio_ci=(math.exp(d - critical * se), math.exp(d + critical * se)),
        p_slower=float(scipy_stats.t.sf(t, df)),
        p_faster=float(scipy_stats.t.cdf(t, df)),
        level=level,
        sd=sd,
        df=df,
        source=source,
        detectable=math.exp((critical + power) * se) - 1,
    )


def paired_test(
    fn_ms: Sequence[float],
    reference_ms: Sequence[float],
    device: str,
    method: str,
    limit: float,
    level: float,
    prior: noise.NoisePrior | None = None,
) -> RoundTest:
    """Paired t test of log(fn round / reference round) against log(limit): rounds interleaved in one
    run share their drift, so the pairing removes it. The noise of one log ratio is shrunk toward
    twice the prior's round variance (two independent round levels)."""
    if len(fn_ms) != len(reference_ms) or not fn_ms:
        raise ValueError("a paired test needs as many rounds of fn as of its reference, at least one")
    diffs = [math.log(a / b) for a, b in zip(fn_ms, reference_ms, strict=True)]
    mean = math.fsum(diffs) / len(diffs)
    own_squares = math.fsum((x - mean) ** 2 for x in diffs)
    own_df = len(diffs) - 1
    base_prior = (prior or noise.NoisePrior()).for_kernel(device, method, noise.geometric_mean(reference_ms))
    df = base_prior.df + own_df
    variance = (base_prior.df * 2 * base_prior.sd**2 + own_squares) / df
    se = math.sqrt(variance / len(diffs))
    source = f"{len(diffs)} paired rounds, shrunk toward {base_prior.source}" if own_df else base_prior.source
    test = _t_test(mean - math.log(limit), se, df, level, math.sqrt(variance / 2), source)
    # _t_test saw the difference from the limit; report the ratio itself.
    return RoundTest(
        ratio=math.exp(mean),
        ratio_ci=(test.ratio_ci[0] * limit, test.ratio_ci[1] * limit),
        p_slower=test.p_slower,
        p_faster=test.p_faster,
        level=level,
        sd=test.sd,
        df=df,
        source=source,
        detectable=test.detectable,
    )


_THRESHOLD = re.compile(r"^\s*(?P<num>[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(?P<pct>%?)\s*$")
_EXPECTED = "expected a fraction such as 0.05 or a percentage such as 5%"


def _number(value: object) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{_EXPECTED}, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    match = _THRESHOLD.match(str(value))
    if not match:
        raise ValueError(f"{_EXPECTED}, got {value!r}")
    return float(match["num"]) / (100 if match["pct"] else 1)


def parse_threshold(value: object) -> float:
    """A relative change from a fraction (0.05) or a percentage ("5%"). Changes of 100% and more are
    allowed: threshold 2.0 ("200%") fails only a kernel more than 3x slower."""
    number = _number(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"a threshold must be 0 or more (0.005, 5%, 2.0 for 3x slower), got {value!r}")
    return number


def parse_fraction(value: object) -> float:
    """A probability or fraction strictly between 0 and 1, as 0.01 or "1%"."""
    number = _number(value)
    if not math.isfinite(number) or not 0 < number < 1:
        raise ValueError(f"must lie strictly between 0 and 1 (0% and 100%), got {value!r}")
    return number
