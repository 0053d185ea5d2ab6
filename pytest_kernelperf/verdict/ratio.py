"""Ratio to a reference timed in the same run: portable across hardware, no baseline needed.

`kernel_bench(fn, x, reference=ref, max_ratio=1.1)` times `ref` with the same timer and sampling
plan right after `fn`, and fails when fn's median is more than 1.1x the reference's. Pure logic over
samples: no torch, no pytest.

Like the baseline verdict, failing needs both the size (the median ratio beyond `max_ratio`) and
the evidence (a one-sided Mann-Whitney U test, at level `alpha`, that fn's samples divided by
`max_ratio` still tend to be larger than the reference's): two noisy sequential measurements of
kernels that sit right at the limit must not fail at random.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pytest_kernelperf.verdict import stats
from pytest_kernelperf.verdict.judge import TEST_NAME

RATIO_HINT = "Speed up the kernel, or raise max_ratio= in the kernel_bench call if the limit is too tight."


@dataclass(frozen=True)
class RatioCheck:
    """fn against its reference, both timed in this run (times per call, in milliseconds)."""

    method: str  # the reference's timing method
    reference_median_ms: float
    reference_ci_ms: tuple[float, float]
    reference_samples_ms: tuple[float, ...]
    ratio: float  # fn median / reference median
    max_ratio: float
    p_value: float | None  # None when the ratio is within max_ratio (no test needed)
    alpha: float
    exceeded: bool  # fails the test
    reason: str = ""

    def evidence(self) -> str:
        if self.p_value is None:
            return self.reason
        return (
            f"{TEST_NAME} that fn/{self.max_ratio:g} is slower than the reference: "
            f"p={self.p_value:.2g} (alpha={self.alpha:g})"
        )

    def describe(self) -> str:
        """Short form for tables: 1.02x <= 1.1."""
        return f"{self.ratio:#.3g}x {'>' if self.ratio > self.max_ratio else '<='} {self.max_ratio:g}"


def validate_max_ratio(value: object) -> float:
    """max_ratio as a float; ValueError saying what is wrong and what is expected."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"max_ratio must be a number such as 1.1, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"max_ratio must be a finite number greater than 0 (e.g. 1.1), got {value!r}")
    return number


def check_ratio(
    samples_ms: tuple[float, ...],
    method: str,
    reference_samples_ms: tuple[float, ...],
    reference_method: str,
    *,
    max_ratio: float,
    alpha: float,
) -> RatioCheck:
    current = stats.summarize(samples_ms)
    reference = stats.summarize(reference_samples_ms)
    ratio = current.median_ms / reference.median_ms

    def result(exceeded: bool, p_value: float | None, reason: str) -> RatioCheck:
        return RatioCheck(
            method=reference_method,
            reference_median_ms=reference.median_ms,
            reference_ci_ms=(reference.ci_low_ms, reference.ci_high_ms),
            reference_samples_ms=reference_samples_ms,
            ratio=ratio,
            max_ratio=max_ratio,
            p_value=p_value,
            alpha=alpha,
            exceeded=exceeded,
            reason=reason,
        )

    if method != reference_method:
        # Different methods measure different things (device time vs launch path): no verdict.
        return result(False, None, f"not compared: fn timed with {method}, reference with {reference_method}")
    if ratio <= max_ratio:
        return result(False, None, "within max_ratio")
    p = stats.p_greater([s / max_ratio for s in samples_ms], reference_samples_ms)
    if p < alpha:
        return result(True, p, "")
    return result(False, p, "beyond max_ratio, not significant")


def ratio_message(label: str, device: str, median_ms: float, check: RatioCheck) -> str:
    low, high = check.reference_ci_ms
    return (
        f"ratio to reference exceeded in {label} on {device}: median {median_ms:.4g} ms is "
        f"{check.ratio:#.3g}x the reference's {check.reference_median_ms:.4g} ms "
        f"(max_ratio {check.max_ratio:g}).\n"
        f"  evidence: {check.evidence()}; reference 95% CI {low:.4g}-{high:.4g} ms over "
        f"{len(check.reference_samples_ms)} samples; both timed in this run with {check.method}.\n"
        f"  {RATIO_HINT}"
    )
