from __future__ import annotations

import random

import pytest

from pytest_kernelperf.verdict import stats


def test_summary_is_robust_to_one_huge_outlier() -> None:
    samples = [1.0 + 0.001 * i for i in range(99)] + [1000.0]
    summary = stats.summarize(samples)
    assert summary.median_ms == pytest.approx(1.0495, abs=1e-3)
    assert summary.ci_low_ms <= summary.median_ms <= summary.ci_high_ms
    assert summary.max_ms == 1000.0 and summary.n == 100


def test_median_ci_covers_the_true_median_at_least_95_percent_of_the_time() -> None:
    rng = random.Random(1)
    true_median = 0.6931471805599453  # of Exp(1)
    trials = 2000
    hits = 0
    for _ in range(trials):
        low, high = stats.median_ci(sorted(rng.expovariate(1.0) for _ in range(41)))
        hits += low <= true_median <= high
    assert hits / trials >= 0.94


def test_median_ci_narrows_with_more_samples() -> None:
    rng = random.Random(2)
    small = stats.summarize([rng.gauss(1, 0.01) for _ in range(20)])
    large = stats.summarize([rng.gauss(1, 0.01) for _ in range(2000)])
    assert large.ci_high_ms - large.ci_low_ms < small.ci_high_ms - small.ci_low_ms


def test_compress_keeps_the_distribution() -> None:
    samples = [float(i) for i in range(1000)]
    kept = stats.compress(samples)
    assert len(kept) == stats.STORED_QUANTILES
    assert kept == sorted(kept)
    assert stats.quantile(kept, 0.5) == pytest.approx(499.5, rel=0.01)
    assert kept[0] == 0.0 and kept[-1] == 999.0  # the extremes: every round lies between them
    assert stats.compress([3.0, 1.0]) == [1.0, 3.0]  # fewer than the count: all of them


def test_no_samples_is_an_error() -> None:
    with pytest.raises(ValueError, match="no samples"):
        stats.summarize([])
