"""Statistics on lists of timings in milliseconds.

Pure functions over floats: no torch, no pytest. Timings are skewed to the right (a preempted trial
is a large outlier), so everything here is rank based: medians, quantiles and order-statistic
confidence intervals, for summaries and plots. Verdicts are made on rounds (verdict/judge.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95
# A baseline keeps this many evenly spaced quantiles of its samples: enough to see the distribution's
# shape in plots and studies, few enough that a baseline file stays readable in review.
STORED_QUANTILES = 32


@dataclass(frozen=True)
class Summary:
    """Robust summary of one set of samples (milliseconds)."""

    n: int
    median_ms: float
    ci_low_ms: float
    ci_high_ms: float
    q1_ms: float
    q3_ms: float
    min_ms: float
    max_ms: float


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default) of already sorted values."""
    if not sorted_values:
        raise ValueError("quantile of no samples")
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def median_ci(sorted_values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Distribution-free confidence interval of the median from order statistics.

    The number of samples below the true median is Binomial(n, 1/2), so the order statistics at
    that distribution's quantiles bracket the median with the requested coverage whatever the
    shape of the timing distribution.
    """
    n = len(sorted_values)
    if n == 0:
        raise ValueError("confidence interval of no samples")
    if n < 3:
        return sorted_values[0], sorted_values[-1]
    tail = (1 - confidence) / 2
    # The binomial's quantile: the count j with P(B < j) <= tail; x_(j) (1-based) is the lower
    # bound, and the interval is symmetric in rank.
    lo = max(binomial_half_ppf(tail, n) - 1, 0)
    return sorted_values[lo], sorted_values[n - 1 - lo]


def binomial_half_ppf(q: float, n: int) -> int:
    """The q-quantile of Binomial(n, 1/2): the least k with P(B <= k) >= q (scipy.stats.binom.ppf),
    from scipy.special's distribution function, whose import costs a third of scipy.stats's."""
    from scipy.special import bdtr  # imported on first use: the plugin loads in every pytest run

    low, high = 0, n
    while low < high:
        middle = (low + high) // 2
        if bdtr(middle, n, 0.5) >= q:
            high = middle
        else:
            low = middle + 1
    return low


def summarize(samples_ms: Sequence[float]) -> Summary:
    if not samples_ms:
        raise ValueError("no samples to summarize")
    values = sorted(samples_ms)
    low, high = median_ci(values)
    return Summary(
        n=len(values),
        median_ms=quantile(values, 0.5),
        ci_low_ms=low,
        ci_high_ms=high,
        q1_ms=quantile(values, 0.25),
        q3_ms=quantile(values, 0.75),
        min_ms=values[0],
        max_ms=values[-1],
    )


def compress(samples_ms: Sequence[float], count: int = STORED_QUANTILES) -> list[float]:
    """The smallest and largest sample with evenly spaced quantiles between them, standing in for
    the samples in a stored baseline.

    The extremes are kept so that every figure made of the samples (each round's midmean, their
    mean) lies within the stored range, which lets a reader refuse an edited entry whose rounds do
    not; the inner quantiles sit at mid-points ((i + 0.5) / (count - 2)).
    """
    values = sorted(samples_ms)
    if len(values) <= count:
        return values
    inner = count - 2
    return [values[0], *(quantile(values, (i + 0.5) / inner) for i in range(inner)), values[-1]]
