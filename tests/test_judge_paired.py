"""The paired judgement of --kernelperf-against: rounds of this code against rounds of another
revision's, timed alternately in one process. Deterministic rounds; no pytest run."""

from __future__ import annotations

import math
import random

import pytest

from pytest_kernelperf.model.result import Comparison, Verdict
from pytest_kernelperf.verdict.judge import judge_paired
from pytest_kernelperf.verdict.judgement import JudgementContext, pairs_needed


def paired_rounds(ratio: float, pairs: int, pair_sd: float, seed: int) -> tuple[list[float], list[float]]:
    """Rounds whose level moves by a shared amount per pair (drift, placement) plus a small
    independent part: the pairing must cancel the shared part."""
    rng = random.Random(seed)
    base, current = [], []
    for _ in range(pairs):
        shared = math.exp(rng.gauss(0, 0.05))  # 5% from pair to pair, the same for both sides
        base.append(0.02 * shared * math.exp(rng.gauss(0, pair_sd)))
        current.append(0.02 * ratio * shared * math.exp(rng.gauss(0, pair_sd)))
    return current, base


def judge(current: list[float], base: list[float], threshold: float = 0.005, planned: int = 1) -> Comparison:
    return judge_paired(
        current,
        base,
        device="GPU",
        method="cupti",
        threshold=threshold,
        alpha=0.01,
        planned_judgements=planned,
    )


def test_a_shared_drift_cancels_and_a_small_slowdown_is_seen() -> None:
    """5% of shared movement between pairs hides nothing: +2% with 0.2% of independent noise."""
    current, base = paired_rounds(1.02, pairs=8, pair_sd=0.002, seed=1)
    comparison = judge(current, base)
    assert comparison.verdict is Verdict.SLOWER
    assert comparison.ratio == pytest.approx(1.02, rel=0.003)
    assert comparison.ratio_ci is not None and comparison.ratio_ci[0] < 1.02 < comparison.ratio_ci[1]
    assert comparison.rounds == comparison.baseline_rounds == 8
    assert comparison.process_sd is None  # both sides share the process


def test_the_same_code_is_the_same_in_nearly_every_judgement() -> None:
    """A/A: at alpha 0.01 over 200 judgements (level 5e-5 each), no "slower" in 400 of them."""
    verdicts = [
        judge(*paired_rounds(1.0, pairs=5, pair_sd=0.003, seed=seed), planned=200).verdict
        for seed in range(400)
    ]
    assert verdicts.count(Verdict.SLOWER) == 0
    assert verdicts.count(Verdict.FASTER) == 0


def test_a_change_below_the_threshold_is_not_slower_however_certain() -> None:
    current, base = paired_rounds(1.003, pairs=20, pair_sd=0.0005, seed=3)
    comparison = judge(current, base, threshold=0.005)
    assert comparison.verdict is Verdict.SAME
    assert comparison.p_value is not None and comparison.p_value < 1e-6


def test_faster_is_said_and_the_rounds_must_pair() -> None:
    current, base = paired_rounds(0.95, pairs=5, pair_sd=0.002, seed=4)
    assert judge(current, base).verdict is Verdict.FASTER
    with pytest.raises(ValueError, match="as many rounds"):
        judge(current, base[:-1])


def context(threshold: float = 0.005, planned: int = 1) -> JudgementContext:
    return JudgementContext(threshold=threshold, alpha=0.01, host_threshold=0.1, planned_judgements=planned)


def needed(current: list[float], base: list[float], threshold: float = 0.005, most: int = 30) -> int:
    return pairs_needed(current, base, context(threshold), device="GPU", method="cupti", most=most)


def test_noisy_pairs_need_more_and_quiet_ones_do_not() -> None:
    """Five pairs 1% apart cannot detect +1% at the suite's level; five 0.05% apart can."""
    noisy = paired_rounds(1.0, 5, 0.01, seed=3)
    quiet = paired_rounds(1.0, 5, 0.0005, seed=3)
    assert needed(*noisy) > 5 and needed(*quiet) == 5
    assert needed(*noisy, most=12) <= 12  # never beyond the cap
    # Pairs enough of the noisy kind need no more, and a larger threshold is met sooner.
    assert needed(*paired_rounds(1.0, 200, 0.01, seed=3), most=400) == 200
    assert needed(*noisy, threshold=0.05) == 5
    # With nothing of their own to go by (one pair), or a threshold of 0, as many as allowed.
    assert needed(*paired_rounds(1.0, 1, 0.0005, seed=3)) == 30
    assert needed(*noisy, threshold=0.0) == 30


def test_how_many_pairs_are_drawn_does_not_depend_on_the_ratio() -> None:
    """The number goes by the pairs' spread alone: it cannot steer the verdict."""
    for seed in range(20):
        current, base = paired_rounds(1.0, 5, 0.003, seed=seed)
        for ratio in (0.9, 1.01, 1.2):
            assert needed([c * ratio for c in current], base) == needed(current, base)


def test_pairs_that_cannot_tell_ask_for_more_pairs() -> None:
    """Pairs 20% apart, five of them: `undetermined`, and the remedy is pairs, not the paired mode."""
    comparison = judge(*paired_rounds(1.0, pairs=5, pair_sd=0.2, seed=3))
    assert comparison.verdict is Verdict.UNDETERMINED
    assert "more pairs (--kernelperf-pair-seconds" in comparison.reason
    assert "--kernelperf-against" not in comparison.reason
