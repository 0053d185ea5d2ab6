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


def test_the_binomial_and_t_quantiles_from_scipy_special_are_scipy_stats_own() -> None:
    """The judge and the median's interval use scipy.special (a third of scipy.stats's import
    time); their figures are scipy.stats's."""
    import math

    from scipy import stats as scipy_stats

    from pytest_kernelperf.verdict.judge import _t_test
    from pytest_kernelperf.verdict.stats import binomial_half_ppf

    for n in [*range(3, 200), 1000, 12345]:
        for confidence in (0.5, 0.9, 0.95, 0.99):
            tail = (1 - confidence) / 2
            assert binomial_half_ppf(tail, n) == int(scipy_stats.binom.ppf(tail, n, 0.5)), (n, confidence)
    for df in (1.0, 4.0, 37.3, 200.0):
        for d in (-0.02, 0.0, 0.013):
            test = _t_test(d, 0.004, df, 0.001, 0.003, "")
            t = d / 0.004
            assert math.isclose(test.p_slower, scipy_stats.t.sf(t, df), rel_tol=1e-9, abs_tol=1e-15)
            assert math.isclose(test.p_faster, scipy_stats.t.cdf(t, df), rel_tol=1e-9, abs_tol=1e-15)
            critical = scipy_stats.t.ppf(1 - 0.001, df)
            assert math.isclose(test.ratio_ci[1], math.exp(d + critical * 0.004), rel_tol=1e-9)
