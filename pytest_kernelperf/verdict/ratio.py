"""Ratio to a reference timed in the same run: portable across hardware, no baseline needed.

`kernel_bench(fn, x, reference=ref, max_ratio=1.1)` times fn and ref in interleaved rounds (round i
of fn, then round i of ref) with the same timer, and fails when fn is significantly more than 1.1x
the reference. Judged by the same round model as baselines (verdict/judge.py), as a paired test:
the log ratio of each pair of rounds against log(max_ratio), so that drift shared by neighbouring
rounds cancels. Pure logic: no torch, no pytest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pytest_kernelperf.verdict import noise
from pytest_kernelperf.verdict.judge import paired_test
from pytest_kernelperf.verdict.prior import NoisePrior

RATIO_HINT = "Speed up the kernel, or raise max_ratio= in the kernel_bench call if the limit is too tight."


@dataclass(frozen=True)
class RatioCheck:
    """fn against its reference, both timed in this run (times per call, in milliseconds)."""

    method: str  # the reference's timing method
    reference_median_ms: float  # the reference's level: the geometric mean of its rounds
    reference_ci_ms: tuple[float, float]  # the range of the reference's rounds
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


def validate_max_ratio(value: object) -> float:
    """max_ratio as a float; ValueError saying what is wrong and what is expected."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"max_ratio must be a number such as 1.1, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"max_ratio must be a finite number greater than 0 (e.g. 1.1), got {value!r}")
    return number


def check_ratio(
    rounds_ms: tuple[float, ...],
    method: str,
    reference_rounds_ms: tuple[float, ...],
    reference_method: str,
    *,
    max_ratio: float,
    alpha: float,
    reference_samples_ms: tuple[float, ...] = (),
    device: str = "",
    planned_judgements: int = 1,
    prior: NoisePrior | None = None,
) -> RatioCheck:
    """fn's rounds against its reference's, paired round by round."""
    reference_level = noise.geometric_mean(reference_rounds_ms)
    common = {
        "method": reference_method,
        "reference_median_ms": reference_level,
        "reference_ci_ms": (min(reference_rounds_ms), max(reference_rounds_ms)),
        "reference_samples_ms": reference_samples_ms,
        "max_ratio": max_ratio,
        "alpha": alpha,
        "reference_rounds_ms": reference_rounds_ms,
    }
    if method != reference_method:
        # Different methods measure different things (device time vs launch path): no verdict.
        ratio = noise.geometric_mean(rounds_ms) / reference_level
        return RatioCheck(
            ratio=ratio,
            p_value=None,
            exceeded=False,
            reason=f"not compared: fn timed with {method}, reference with {reference_method}",
            **common,  # type: ignore[arg-type]
        )
    level = alpha / max(1, planned_judgements)
    test = paired_test(rounds_ms, reference_rounds_ms, device, method, max_ratio, level, prior)
    exceeded = test.ratio > max_ratio and test.p_slower < level
    reason = (
        ""
        if exceeded
        else "within max_ratio"
        if test.ratio <= max_ratio
        else "beyond max_ratio, not significant"
    )
    return RatioCheck(
        ratio=test.ratio,
        p_value=test.p_slower,
        exceeded=exceeded,
        reason=reason,
        ratio_ci=test.ratio_ci,
        level=level,
        noise_sd=test.sd,
        noise_source=test.source,
        **common,  # type: ignore[arg-type]
    )


def ratio_message(label: str, device: str, median_ms: float, check: RatioCheck) -> str:
    return (
        f"ratio to reference exceeded in {label} on {device}: {median_ms:.4g} ms is "
        f"{check.ratio:#.3g}x the reference's {check.reference_median_ms:.4g} ms "
        f"(max_ratio {check.max_ratio:g}).\n"
        f"  evidence: {check.evidence()}; both timed in this run with {check.method}, rounds interleaved.\n"
        f"  {RATIO_HINT}"
    )
