"""The sequential paired gate's statistics (verdict/sequential.py), simulated: many seeded sequences
of pair log ratios, each run through the gate as a run draws them (looked at after every pair from
the planned ones on, stopped where a look settles or at the budget). Vectorised; no pytest run."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

from pytest_kernelperf.model.result import PairsStopped, Verdict
from pytest_kernelperf.verdict.judgement import JudgementContext, judge_pair
from pytest_kernelperf.verdict.sequential import VERDICTS, half_widths, replay

PLANNED = 5
SLOWER, SAME = VERDICTS.index(Verdict.SLOWER), VERDICTS.index(Verdict.SAME)


def sequences(
    count: int, pairs: int, mean: float, sd: float, seed: int, tails: str = "normal"
) -> NDArray[np.float64]:
    """`count` sequences of `pairs` log ratios around `mean`: normal, Student t with 3 degrees of
    freedom (scaled to the SD), or normal with 5% of the pairs hit by an outlier 5 SDs off."""
    rng = np.random.default_rng(seed)
    if tails == "t3":
        noise = rng.standard_t(3, (count, pairs)) / math.sqrt(3)
    elif tails == "outliers":
        noise = rng.normal(size=(count, pairs)) + 5 * rng.choice([-1, 1], (count, pairs)) * (
            rng.random((count, pairs)) < 0.05
        )
    else:
        noise = rng.normal(size=(count, pairs))
    return mean + sd * noise


def naive_slower(x: NDArray[np.float64], level: float) -> NDArray[np.bool_]:
    """The foil: a fixed-sample one-sided t test at `level`, repeated after every pair from the
    planned ones on, stopped at its first `slower` (threshold 0): whether each sequence ever
    reads slower."""
    n = np.arange(1, x.shape[1] + 1)
    mean = np.cumsum(x, axis=1) / n
    sd = np.sqrt(np.maximum(np.cumsum(x * x, axis=1) - n * mean**2, 0) / np.maximum(n - 1, 1))
    critical = stats.t.ppf(1 - level, np.maximum(n - 1, 1))
    looked: NDArray[np.bool_] = mean - critical * sd / np.sqrt(n) > 0
    looked[:, : PLANNED - 1] = False
    return np.asarray(looked.any(axis=1), dtype=bool)


@pytest.mark.parametrize("tails", ["normal", "t3", "outliers"])
def test_no_change_reads_slower_in_fewer_than_alpha_under_optional_stopping(tails: str) -> None:
    """A/A, looked at after every one of 200 pairs, at threshold 0 (the hardest: `slower` needs only
    the interval above no change) and level 0.05: the gate reads `slower` in fewer than 5% of 4000
    sequences, with heavy tails too; the naive test looked at as often exceeds 5% several times."""
    x = sequences(4000, 200, 0.0, 0.01, seed=11, tails=tails)
    codes, _ = replay(x, level=0.05, threshold=0.0, planned=PLANNED)
    gate = float(np.mean(codes == SLOWER))
    naive = float(np.mean(naive_slower(x, 0.05)))
    assert gate < 0.05, gate
    assert naive > 0.15, naive  # the simulation can see an error beyond the level


def test_at_the_threshold_same_is_read_in_at_most_the_pass_level() -> None:
    """A kernel exactly at +0.5%: `same` claims the pairs rule that out, which holds at 95%."""
    x = sequences(4000, 320, math.log1p(0.005), 0.005, seed=12)
    codes, _ = replay(x, level=0.01 / 40, threshold=0.005, planned=PLANNED)
    assert np.mean(codes == SAME) < 0.05
    assert not np.any(codes == SLOWER)


@pytest.mark.parametrize(("sd", "budget", "caught"), [(0.01, 320, 0.95), (0.02, 1000, 0.95)])
def test_a_one_percent_slowdown_is_caught_within_the_budget(sd: float, budget: int, caught: float) -> None:
    """+1% at alpha 0.01 over 40 judgements, threshold 0.5%, pairs 1% or 2% apart: `slower` in at
    least 95% of 2000 sequences within 320 (1000) pairs; `same` (ruled out at 95% from +0.5% on)
    in under 1%."""
    x = sequences(2000, budget, math.log1p(0.01), sd, seed=13)
    codes, _ = replay(x, level=0.01 / 40, threshold=0.005, planned=PLANNED)
    assert np.mean(codes == SLOWER) >= caught
    assert np.mean(codes == SAME) < 0.01


def test_unchanged_quiet_kernels_stop_early_and_read_same() -> None:
    """A/A, pairs 0.3% apart (a quiet kernel on an H200): `same` in every sequence, after a median of
    at most 8 pairs of the 320 allowed; pairs 1% apart need more, and still stop well before."""
    quiet_codes, quiet_pairs = replay(
        sequences(2000, 320, 0.0, 0.003, seed=14), level=0.01 / 40, threshold=0.005, planned=PLANNED
    )
    assert np.all(quiet_codes == SAME)
    assert np.median(quiet_pairs) <= 8
    noisy_codes, noisy_pairs = replay(
        sequences(2000, 320, 0.0, 0.01, seed=14), level=0.01 / 40, threshold=0.005, planned=PLANNED
    )
    assert np.mean(noisy_codes == SAME) > 0.99
    assert np.median(noisy_pairs) < 60


def test_the_live_judgement_agrees_with_the_replay_at_every_prefix() -> None:
    """judge_pair at each prefix (what a run does after each pair) gives the replay's verdict where
    the replay stopped, and settles nowhere before it."""
    context = JudgementContext(threshold=0.005, alpha=0.01, host_threshold=0.1, planned_judgements=40)
    x = sequences(20, 120, math.log1p(0.008), 0.006, seed=15)
    codes, pairs = replay(x, level=0.01 / 40, threshold=0.005, planned=PLANNED)
    for row, code, stop in zip(x, codes, pairs, strict=True):
        base = [1.0] * len(row)
        current = list(np.exp(row))
        looks = [judge_pair(current[:n], base[:n], context) for n in range(PLANNED, int(stop) + 1)]
        stops = [look.sequential.stopped if look.sequential else None for look in looks]
        assert PairsStopped.DECIDED not in stops[:-1]
        assert looks[-1].verdict is VERDICTS[int(code)]


def test_the_interval_holds_its_level_at_every_look_at_once() -> None:
    """The time-uniform coverage itself: with normal pairs, the interval at 0.05 misses the true mean
    at some look of 500 in fewer than 5% of 4000 sequences; the half-width shrinks as sqrt(log n / n)."""
    x = sequences(4000, 500, 0.002, 0.01, seed=16)
    n = np.arange(1, 501)
    mean = np.cumsum(x, axis=1) / n
    squares = np.maximum(np.cumsum(x * x, axis=1) - n * mean**2, 0)
    missed = (np.abs(mean - 0.002) > half_widths(n, squares, 0.05)).any(axis=1)
    assert np.mean(missed) < 0.05
    expected = half_widths(np.array([50, 200]), np.array([49, 199]) * 1e-4, 0.05)
    assert expected[1] < expected[0] / 1.7
