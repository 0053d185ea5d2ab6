"""The sequential paired gate of --kernelperf-against: pairs are drawn until the verdict is decided
at the threshold, or the kernel's budget is spent, and the error stays controlled however the
stopping falls. Pure logic: no torch, no pytest (numpy, imported on first use).

The statistic. Each pair gives one log ratio x_i (this code's round over REF's, timed in turn in one
process), taken as independent draws of N(mu, sigma^2), both unknown. For a candidate mu0, Lai's
(1976) scale-invariant mixture

    M_n(mu0) = sqrt(c / (n + c)) * (1 - S^2 / ((n + c) V)) ^ (-n / 2),
    S = sum(x_i - mu0), V = sum((x_i - mu0)^2),

is the likelihood ratio of the x_i's maximal invariant under scaling, with the effect size
(mu - mu0) / sigma mixed over N(0, 1/c), against none: a nonnegative martingale with M_1 = 1 under
mu = mu0, whatever sigma. By Ville's inequality it reaches 1 / level at some n with probability at
most `level`, so {mu0 : M_n(mu0) < 1 / level} covers mu at every n at once, and so at any stopping
time, the data's own or the budget's. Solved for mu0 it is mean +- half-width, Q the squared
deviations from the mean:

    q = 1 - (level^2 c / (n + c)) ^ (1 / n),  half-width^2 = q (n + c) Q / (n (n - q (n + c))),

unbounded while n <= q (n + c).

The verdict, from two such sequences: the alarm interval at the judgement's level alpha / m
(verdict/judgement.py) and the pass interval at 1 - POWER (5%).

* slower: the alarm interval lies beyond log(1 + threshold): significantly slower beyond the
  threshold. A kernel no slower than the threshold reads `slower` in at most alpha / m of runs;
* faster: mirrored, below -log(1 + threshold);
* same: the pass interval's upper end lies below log(1 + threshold): the pairs rule out a slowdown
  beyond the threshold. A kernel slower than that reads `same` in at most 5% of runs;
* otherwise undetermined, with the pass interval's half-width: the change these pairs could see.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_kernelperf.model.result import POWER, Comparison, PairsStopped, SequentialPairs, Verdict

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

MODEL = "confidence sequence on the mean log ratio of pairs (Lai's t mixture)"
# c, the mixture's precision on the effect size: at 0.5 the alarm interval at alpha 0.01 over 40
# judgements (2.5e-4) is finite from 8 pairs and the pass interval from 5 (the planned rounds);
# from 10 to 320 pairs their half-widths are within 7% and 15% of the narrowest any c from 0.25 to
# 16 gives: the alarm's 1.0 sigma at 30 pairs and 0.49 sigma at 100 (a t interval fixed in advance:
# 0.72 and 0.36 sigma, valid only if looked at once).
MIXTURE_PRECISION = 0.5
PASS_LEVEL = 1 - POWER
# The verdict of each code decisions() gives.
VERDICTS = (Verdict.UNDETERMINED, Verdict.SAME, Verdict.SLOWER, Verdict.FASTER)
PAIRED_REMEDY = "more pairs (--kernelperf-pair-seconds, --kernelperf-max-rounds) or a quieter machine"


def half_widths(pairs: ArrayLike, squares: ArrayLike, level: float) -> NDArray[np.float64]:
    """The confidence sequence's half-widths at `level` after `pairs` log ratios whose squared
    deviations from their mean sum to `squares` (numbers, or arrays of one shape); inf where it is
    unbounded."""
    import numpy as np

    n = np.asarray(pairs, dtype=float)
    c = MIXTURE_PRECISION
    with np.errstate(divide="ignore", invalid="ignore"):
        q = -np.expm1(np.log(level**2 * c / (n + c)) / n)
        room = n - q * (n + c)
        width = np.sqrt(q * (n + c) * np.asarray(squares, dtype=float) / (n * room))
    return np.where(room > 0, width, np.inf)


def decisions(
    estimate: ArrayLike, alarm: ArrayLike, passing: ArrayLike, threshold: float
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Per look, the verdict's code (an index into VERDICTS) and whether it settles the drawing."""
    import numpy as np

    mean, alarm, passing = (np.asarray(a, dtype=float) for a in (estimate, alarm, passing))
    limit = math.log1p(threshold)
    slower = mean - alarm > limit
    faster = mean + alarm < -limit
    same = mean + passing < limit
    chosen = [VERDICTS.index(v) for v in (Verdict.SLOWER, Verdict.FASTER, Verdict.SAME)]
    codes = np.select([slower, faster, same], chosen, VERDICTS.index(Verdict.UNDETERMINED))
    # A kernel whose mean lies beyond the threshold the faster way keeps drawing while `faster` may
    # still be decided: a sped-up kernel reads `faster`, not a bare `same`.
    return codes, slower | faster | (same & (mean > -limit))


@dataclass(frozen=True)
class Look:
    """The pairs so far: how many, their mean log ratio and SD, the half-widths of the alarm and
    pass intervals, and the always-valid p-value of no change (1 / M_n(0), at most 1)."""

    pairs: int
    mean: float
    sd: float
    alarm: float
    passing: float
    p_value: float

    @classmethod
    def of(cls, log_ratios: Sequence[float], level: float) -> Look:
        n = len(log_ratios)
        if n == 0:
            raise ValueError("a paired judgement needs at least one pair")
        mean = math.fsum(log_ratios) / n
        squares = math.fsum((x - mean) ** 2 for x in log_ratios)
        spread = squares + n * mean**2  # V at mu0 = 0
        shrink = (n * mean) ** 2 / ((n + MIXTURE_PRECISION) * spread) if spread > 0 else 0.0
        log_m = 0.5 * math.log(MIXTURE_PRECISION / (n + MIXTURE_PRECISION)) - n / 2 * math.log1p(-shrink)
        return cls(
            pairs=n,
            mean=mean,
            sd=math.sqrt(squares / (n - 1)) if n > 1 else math.nan,
            alarm=float(half_widths(n, squares, level)),
            passing=float(half_widths(n, squares, PASS_LEVEL)),
            p_value=min(1.0, math.exp(-log_m)),
        )

    def verdict(self, threshold: float) -> tuple[Verdict, bool]:
        """The verdict these pairs give, and whether it settles the drawing."""
        codes, settles = decisions(self.mean, self.alarm, self.passing, threshold)
        return VERDICTS[int(codes)], bool(settles)


def log_ratios(current_ms: Sequence[float], base_ms: Sequence[float]) -> list[float]:
    if len(current_ms) != len(base_ms):
        raise ValueError("a paired judgement needs as many rounds of this code as of its counterpart")
    return [math.log(a / b) for a, b in zip(current_ms, base_ms, strict=True)]


def judge_pairs(
    current_ms: Sequence[float],
    base_ms: Sequence[float],
    *,
    threshold: float,
    alpha: float,
    planned_judgements: int = 1,
    unsettled: PairsStopped = PairsStopped.BUDGET,
) -> Comparison:
    """The verdict on rounds paired with another version's, timed in turn in one process, at the
    last pair drawn; `unsettled`: why the drawing stopped if these pairs decide nothing."""
    planned = max(1, planned_judgements)
    level = alpha / planned
    look = Look.of(log_ratios(current_ms, base_ms), level)
    verdict, settled = look.verdict(threshold)
    stopped = PairsStopped.DECIDED if settled else unsettled
    ratio = math.exp(look.mean)
    return Comparison(
        verdict,
        ratio=ratio,
        p_value=look.p_value,
        reason=_reason(look, verdict, stopped, threshold),
        ratio_ci=(
            (math.exp(look.mean - look.alarm), math.exp(look.mean + look.alarm))
            if math.isfinite(look.alarm)
            else None  # too few pairs to bound it
        ),
        level=level,
        noise_sd=look.sd / math.sqrt(2) if look.pairs > 1 else None,
        noise_source=f"{look.pairs} paired rounds",
        rounds=look.pairs,
        baseline_rounds=look.pairs,
        threshold=threshold,
        alpha=alpha,
        planned_judgements=planned,
        sequential=SequentialPairs(stopped, math.exp(look.mean + look.passing), math.expm1(look.passing)),
    )


_STOPPED = {
    PairsStopped.DECIDED: "decided",
    PairsStopped.BUDGET: "its budget spent (--kernelperf-pair-seconds)",
    PairsStopped.MOST_PAIRS: "at the most pairs (--kernelperf-max-rounds x the planned)",
}


def _reason(look: Look, verdict: Verdict, stopped: PairsStopped, threshold: float) -> str:
    """What the verdict rests on, for the table and the message: the pairs, why they stopped, and
    the bound that decided (or the size of change they could see)."""
    drawn = f"{look.pairs} pair{'s' * (look.pairs != 1)}, {_STOPPED[stopped]}"
    limit = f"the {threshold:.1%} threshold"
    if verdict is Verdict.SLOWER:
        return f"{drawn}: at least {math.expm1(look.mean - look.alarm):+.1%}, beyond {limit}"
    if verdict is Verdict.FASTER:
        return f"{drawn}: at least {-math.expm1(look.mean + look.alarm):.1%} faster, beyond {limit}"
    if verdict is Verdict.SAME:
        return f"{drawn}: at most {math.expm1(look.mean + look.passing):+.1%}, within {limit}"
    if math.isinf(look.passing):
        seen = "too few to bound the change"
    else:
        low, high = (math.expm1(look.mean + side * look.passing) for side in (-1, 1))
        seen = f"{math.expm1(look.mean):+.1%}, {POWER:.0%} interval {low:+.1%} to {high:+.1%}"
    return (
        f"±{math.expm1(look.passing):.1%} after {drawn}: {seen}, neither within nor beyond {limit}; "
        f"for a verdict: {PAIRED_REMEDY}"
    )


def replay(
    log_ratios: ArrayLike, level: float, threshold: float, planned: int = 1
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The gate run over each row of `log_ratios` (sequences x pairs, in the order drawn), as a run
    draws them: looked at from the `planned` pair on, stopped where a look settles or at the row's
    last pair (the budget). Per row, the verdict's code (VERDICTS) and the pairs drawn."""
    import numpy as np

    x = np.atleast_2d(np.asarray(log_ratios, dtype=float))
    n = np.arange(1, x.shape[1] + 1)
    mean = np.cumsum(x, axis=1) / n
    squares = np.maximum(np.cumsum(x * x, axis=1) - n * mean**2, 0.0)
    codes, settles = decisions(
        mean, half_widths(n, squares, level), half_widths(n, squares, PASS_LEVEL), threshold
    )
    settles[:, : max(planned, 1) - 1] = False
    settles[:, -1] = True
    stop = np.argmax(settles, axis=1)
    rows: Any = np.arange(x.shape[0])
    return codes[rows, stop], stop + 1
