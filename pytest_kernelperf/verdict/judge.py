"""Verdicts: is this measurement slower, faster or the same as its baseline?

Pure logic over samples; no torch, no pytest. A verdict needs two things at once:

* the ratio of medians beyond the threshold (the size of change that matters to the user), and
* a one-sided Mann-Whitney U test at level `alpha` (that the change is not noise).

Mann-Whitney is used because GPU and CPU timings are skewed and have outliers; a rank test makes no
normality assumption and one preempted trial cannot swing it. The threshold guards against the
opposite error: with hundreds of samples a rank test calls a 0.1% process-to-process drift
"significant", and across many kernels a p-value alone would raise a false alarm on every run.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_kernelperf.verdict import stats

TEST_NAME = "one-sided Mann-Whitney U"


class Verdict(str, enum.Enum):
    SAME = "same"
    SLOWER = "slower"
    FASTER = "faster"
    NEW = "new"  # no baseline for this device and mode
    INCOMPARABLE = "incomparable"  # a baseline exists but was measured another way
    UNRELIABLE = "unreliable"  # the measurement itself cannot be trusted (throttling, noise)
    CHECKED = "checked"  # correctness only, no timing
    MISMATCH = "mismatch"  # the output differs from the reference's: not timed

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Comparison:
    verdict: Verdict
    ratio: float | None = None  # current median / baseline median
    p_value: float | None = None
    threshold: float | None = None
    alpha: float | None = None
    reason: str = ""

    @property
    def change_pct(self) -> float | None:
        return None if self.ratio is None else (self.ratio - 1) * 100

    def evidence(self) -> str:
        """One line a reviewer can check: the test, its p-value and the level it was held to."""
        if self.p_value is None:
            return self.reason
        return f"{TEST_NAME}: p={self.p_value:.2g} (alpha={self.alpha:g})"


def compare(
    current_ms: Sequence[float],
    baseline_ms: Sequence[float],
    *,
    threshold: float,
    alpha: float,
) -> Comparison:
    """Compare current samples with a baseline's stored samples (or quantiles)."""
    ratio = stats.summarize(current_ms).median_ms / stats.summarize(baseline_ms).median_ms

    def verdict(kind: Verdict, p_value: float | None = None, reason: str = "") -> Comparison:
        return Comparison(kind, ratio, p_value, threshold, alpha, reason)

    if ratio > 1 + threshold:
        p = stats.p_greater(current_ms, baseline_ms)
        return (
            verdict(Verdict.SLOWER, p)
            if p < alpha
            else verdict(Verdict.SAME, p, "beyond threshold, not significant")
        )
    if ratio < 1 - threshold:
        p = stats.p_less(current_ms, baseline_ms)
        return (
            verdict(Verdict.FASTER, p)
            if p < alpha
            else verdict(Verdict.SAME, p, "beyond threshold, not significant")
        )
    return verdict(Verdict.SAME, reason="within threshold")


def compare_measured(
    method: str,
    current_ms: Sequence[float],
    baseline_method: str,
    baseline_ms: Sequence[float],
    *,
    threshold: float,
    alpha: float,
    baseline_name: str = "baseline",
) -> Comparison:
    """`compare`, but only between measurements of one method: INCOMPARABLE otherwise."""
    if baseline_method != method:
        return Comparison(
            Verdict.INCOMPARABLE,
            threshold=threshold,
            alpha=alpha,
            reason=f"{baseline_name} measured with {baseline_method}, this run with {method}",
        )
    return compare(current_ms, baseline_ms, threshold=threshold, alpha=alpha)


_THRESHOLD = re.compile(r"^\s*(?P<num>[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(?P<pct>%?)\s*$")


def parse_threshold(value: object) -> float:
    """A relative threshold from a fraction (0.05) or a percentage ("5%")."""
    if isinstance(value, bool):
        raise ValueError(f"expected a fraction such as 0.05 or a percentage such as 5%, got {value!r}")
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        match = _THRESHOLD.match(str(value))
        if not match:
            raise ValueError(f"expected a fraction such as 0.05 or a percentage such as 5%, got {value!r}")
        number = float(match["num"]) / (100 if match["pct"] else 1)
    if not math.isfinite(number) or not 0 < number < 1:
        raise ValueError(f"a threshold must lie strictly between 0 and 1 (0% and 100%), got {value!r}")
    return number
