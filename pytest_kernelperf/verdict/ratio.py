"""Ratio to a reference timed in the same run: portable across hardware, no baseline needed.

`kernel_bench(fn, x, reference=ref, max_ratio=1.1)` times fn and ref in interleaved rounds (round i
of fn, then round i of ref) with the same timer, and fails when fn is significantly more than 1.1x
the reference. Judged by the same round model as baselines (verdict/judge.py), as a paired test:
the log ratio of each pair of rounds against log(max_ratio), so that drift shared by neighbouring
rounds cancels. Pure logic: no torch, no pytest.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, TypedDict

from pytest_kernelperf.model.result import RatioCheck
from pytest_kernelperf.verdict import noise
from pytest_kernelperf.verdict.judge import paired_test
from pytest_kernelperf.verdict.prior import NoisePrior

if TYPE_CHECKING:
    from typing import Unpack


def validate_max_ratio(value: object) -> float:
    """max_ratio as a float; ValueError saying what is wrong and what is expected."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"max_ratio must be a number such as 1.1, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"max_ratio must be a finite number greater than 0 (e.g. 1.1), got {value!r}")
    return number


class _Limit(TypedDict):
    max_ratio: float
    alpha: float


class RatioOptions(_Limit, total=False):
    """What check_ratio() is told beside the two functions' rounds: the limit and level (always),
    the reference's samples, the device, Bonferroni's m and the noise prior."""

    reference_samples_ms: tuple[float, ...]
    device: str
    planned_judgements: int
    prior: NoisePrior | None


def check_ratio(
    rounds_ms: tuple[float, ...],
    method: str,
    reference_rounds_ms: tuple[float, ...],
    reference_method: str,
    **options: Unpack[RatioOptions],
) -> RatioCheck:
    """fn's rounds against its reference's, paired round by round."""
    max_ratio, alpha = options["max_ratio"], options["alpha"]
    reference_samples_ms = options.get("reference_samples_ms", ())
    device, planned_judgements = options.get("device", ""), options.get("planned_judgements", 1)
    prior = options.get("prior")
    reference_level = noise.geometric_mean(reference_rounds_ms)
    common = {
        "method": reference_method,
        "reference_level_ms": reference_level,
        "reference_round_range_ms": (min(reference_rounds_ms), max(reference_rounds_ms)),
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
