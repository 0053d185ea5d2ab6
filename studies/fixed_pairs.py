"""The paired rule that the sequential gate (pytest_kernelperf/verdict/sequential.py) replaced: the
planned pairs topped up once, by their spread, to as many as detect twice the threshold with 95%
power within --kernelperf-pair-seconds, then one paired t test at alpha / m with `slower` needing
the ratio beyond the threshold. Kept to compare the gate with (studies/sequential_gate_study.py) and
for the studies that measured it (studies/against_study.py, pair_seconds_bootstrap.py,
paired_draw_simulation.py)."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_kernelperf.model.result import Comparison, Verdict
from pytest_kernelperf.verdict.judge import _verdict, paired_test, undetermined
from pytest_kernelperf.verdict.judgement import JudgementContext
from pytest_kernelperf.verdict.prior import NoisePrior
from pytest_kernelperf.verdict.sequential import PAIRED_REMEDY

# After the planned rounds, the pairs were topped up once to as many as could detect this many times
# the threshold (1% at the default 0.5%) with the judge's power.
PAIRED_DETECT_FLOORS = 2.0


def judge_paired(
    current_ms: Sequence[float],
    base_ms: Sequence[float],
    *,
    device: str,
    method: str,
    threshold: float,
    alpha: float,
    planned_judgements: int = 1,
    prior: NoisePrior | None = None,
) -> Comparison:
    """The paired t test of the pairs' log ratios against no change, the variance shrunk toward the
    prior's: `slower` needs the evidence at alpha / m AND the ratio beyond the threshold."""
    planned = max(1, planned_judgements)
    test = paired_test(current_ms, base_ms, device, method, 1.0, alpha / planned, prior)
    verdict = _verdict(test, threshold)
    beyond = verdict is Verdict.SAME and test.ratio > 1 + threshold
    verdict, note = undetermined(verdict, test.detectable, threshold, PAIRED_REMEDY)
    reasons = ["beyond the threshold, not significant"] if beyond else []
    return Comparison(
        verdict,
        ratio=test.ratio,
        p_value=test.p_faster if test.ratio < 1 else test.p_slower,
        reason="; ".join([*reasons, note] if note else reasons),
        ratio_ci=test.ratio_ci,
        level=test.level,
        noise_sd=test.sd,
        noise_source=test.source,
        detectable=max(test.detectable, threshold),
        rounds=len(current_ms),
        baseline_rounds=len(base_ms),
        threshold=threshold,
        alpha=alpha,
        planned_judgements=planned,
    )


def judge_pair(
    current_ms: Sequence[float],
    base_ms: Sequence[float],
    context: JudgementContext,
    *,
    device: str,
    method: str,
) -> Comparison:
    """judge_paired at a judgement context's threshold and level."""
    return judge_paired(
        current_ms,
        base_ms,
        device=device,
        method=method,
        threshold=context.threshold,
        alpha=context.alpha,
        planned_judgements=context.planned_judgements,
        prior=context.prior,
    )


def pairs_needed(
    current_ms: Sequence[float],
    base_ms: Sequence[float],
    context: JudgementContext,
    *,
    device: str,
    method: str,
    most: int,
) -> int:
    """How many pairs in all (at least those given, at most `most`) would detect
    PAIRED_DETECT_FLOORS x the threshold, by the pairs given (detectable shrinks as one over the
    square root of the pairs): decided once, from the planned pairs' spread, never their ratio."""
    have = len(current_ms)
    if have >= most:
        return have
    detectable = judge_pair(current_ms, base_ms, context, device=device, method=method).detectable
    target = PAIRED_DETECT_FLOORS * context.threshold
    if detectable is None or detectable <= target:
        return have
    if target <= 0 or have < 2 or not math.isfinite(detectable):
        return most
    wanted = math.ceil(have * (math.log1p(detectable) / math.log1p(target)) ** 2)
    return max(have, min(most, wanted))
