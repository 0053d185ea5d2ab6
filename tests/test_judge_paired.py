"""The paired judgement of --kernelperf-against: rounds of this code against rounds of another
revision's, timed alternately in one process, judged by the sequential gate at the last pair
(verdict/sequential.py). Deterministic rounds; no pytest run."""

from __future__ import annotations

import math
import random

import pytest

from pytest_kernelperf.model.result import Comparison, PairsStopped, Verdict
from pytest_kernelperf.verdict.judgement import JudgementContext, judge_pair, pairs_settled


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


def context(threshold: float = 0.005, planned: int = 1) -> JudgementContext:
    return JudgementContext(threshold=threshold, alpha=0.01, host_threshold=0.1, planned_judgements=planned)


def judge(
    current: list[float],
    base: list[float],
    threshold: float = 0.005,
    planned: int = 1,
    unsettled: PairsStopped = PairsStopped.BUDGET,
) -> Comparison:
    return judge_pair(current, base, context(threshold, planned), unsettled=unsettled)


def test_a_shared_drift_cancels_and_a_small_slowdown_is_seen() -> None:
    """5% of shared movement between pairs hides nothing: +2% with 0.2% of independent noise."""
    current, base = paired_rounds(1.02, pairs=12, pair_sd=0.002, seed=1)
    comparison = judge(current, base)
    assert comparison.verdict is Verdict.SLOWER
    assert comparison.ratio == pytest.approx(1.02, rel=0.003)
    assert comparison.ratio_ci is not None and 1.005 < comparison.ratio_ci[0] < 1.02 < comparison.ratio_ci[1]
    assert comparison.rounds == comparison.baseline_rounds == 12
    assert comparison.process_sd is None  # both sides share the process
    assert comparison.sequential is not None and comparison.sequential.stopped is PairsStopped.DECIDED
    assert comparison.reason.startswith("12 pairs, decided: at least +")
    assert "beyond the 0.5% threshold" in comparison.reason
    assert "always-valid interval" in comparison.evidence() and "ruled out at 95%" in comparison.evidence()


def test_slower_means_significantly_beyond_the_threshold() -> None:
    """+0.8% clearly above no change but not clearly above +0.5%: not `slower`, and not `same`
    either: the pairs cannot rule out a slowdown beyond the threshold."""
    current, base = paired_rounds(1.008, pairs=12, pair_sd=0.002, seed=2)
    comparison = judge(current, base)
    assert comparison.ratio_ci is not None and comparison.ratio_ci[0] > 1.0  # significant
    assert comparison.ratio_ci[0] < 1.005  # but not beyond the threshold
    assert comparison.verdict is Verdict.UNDETERMINED
    assert not pairs_settled(current, base, context())


def test_the_same_code_reads_same_once_its_pairs_rule_out_the_threshold() -> None:
    """A/A at alpha 0.01 over 200 judgements: no `slower` or `faster` in 400, and 30 pairs 0.3%
    apart rule out +0.5% (the pass bound at 95%) in nearly every one."""
    verdicts = [
        judge(*paired_rounds(1.0, pairs=30, pair_sd=0.003, seed=seed), planned=200).verdict
        for seed in range(400)
    ]
    assert verdicts.count(Verdict.SLOWER) == verdicts.count(Verdict.FASTER) == 0
    assert verdicts.count(Verdict.SAME) >= 390


def test_a_change_below_the_threshold_is_same_however_certain() -> None:
    current, base = paired_rounds(1.003, pairs=20, pair_sd=0.0005, seed=3)
    comparison = judge(current, base, threshold=0.005)
    assert comparison.verdict is Verdict.SAME
    assert comparison.p_value is not None and comparison.p_value < 1e-6  # a real change, within it
    assert comparison.sequential is not None and comparison.sequential.upper < 1.005
    assert "at most +0.4%, within the 0.5% threshold" in comparison.reason


def test_faster_is_said_and_the_rounds_must_pair() -> None:
    current, base = paired_rounds(0.95, pairs=10, pair_sd=0.002, seed=4)
    assert judge(current, base).verdict is Verdict.FASTER
    with pytest.raises(ValueError, match="as many rounds"):
        judge(current, base[:-1])


def test_a_kernel_faster_beyond_the_threshold_draws_on_until_faster_is_decided() -> None:
    """Its pass bound is below the threshold at once, but `same` would hide the speed-up: the
    drawing settles only on `faster`; at the budget it reads `same`."""
    current, base = paired_rounds(0.98, pairs=6, pair_sd=0.002, seed=5)
    early = judge(current, base, planned=200)
    assert early.verdict is Verdict.SAME and not pairs_settled(current, base, context(planned=200))
    assert early.sequential is not None and early.sequential.stopped is PairsStopped.BUDGET
    current, base = paired_rounds(0.98, pairs=14, pair_sd=0.002, seed=5)
    assert judge(current, base, planned=200).verdict is Verdict.FASTER
    assert pairs_settled(current, base, context(planned=200))


def test_quiet_pairs_settle_soon_and_noisy_ones_do_not() -> None:
    assert pairs_settled(*paired_rounds(1.0, 8, 0.0005, seed=3), context())
    assert not pairs_settled(*paired_rounds(1.0, 8, 0.01, seed=3), context())
    assert not pairs_settled(*paired_rounds(1.0, 1, 0.0005, seed=3), context())  # one pair bounds nothing


def test_pairs_that_cannot_tell_say_what_they_could_see_and_ask_for_more_pairs() -> None:
    """Pairs 2% apart, 20 of them: `undetermined ±X%`, X the 95% interval's half-width, and the
    remedy is pairs, not the paired mode."""
    comparison = judge(*paired_rounds(1.0, pairs=20, pair_sd=0.02, seed=3))
    assert comparison.verdict is Verdict.UNDETERMINED
    assert comparison.sequential is not None
    resolution = comparison.sequential.resolution
    assert 0.01 < resolution < 0.05
    assert comparison.reason.startswith(f"±{resolution:.1%} after 20 pairs, its budget spent")
    assert "more pairs (--kernelperf-pair-seconds" in comparison.reason
    assert "--kernelperf-against" not in comparison.reason
    at_cap = judge(*paired_rounds(1.0, pairs=20, pair_sd=0.02, seed=3), unsettled=PairsStopped.MOST_PAIRS)
    assert at_cap.sequential is not None and at_cap.sequential.stopped is PairsStopped.MOST_PAIRS
    assert "at the most pairs (--kernelperf-max-rounds" in at_cap.reason


def test_too_few_pairs_bound_nothing_and_say_so() -> None:
    comparison = judge(*paired_rounds(1.0, pairs=2, pair_sd=0.01, seed=3))
    assert comparison.verdict is Verdict.UNDETERMINED and comparison.ratio_ci is None
    assert comparison.sequential is not None and math.isinf(comparison.sequential.resolution)
    assert "too few to bound the change" in comparison.reason
