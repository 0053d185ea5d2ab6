from __future__ import annotations

import random

import pytest

from pytest_kernelperf.verdict.judge import Verdict, compare, parse_threshold


def samples(center: float, seed: int, n: int = 60, jitter: float = 0.005) -> list[float]:
    rng = random.Random(seed)
    return [center * (1 + rng.gauss(0, jitter)) for _ in range(n)]


@pytest.mark.parametrize(
    ("center", "verdict"),
    [
        (1.0, Verdict.SAME),
        (1.03, Verdict.SAME),
        (1.10, Verdict.SLOWER),
        (4.0, Verdict.SLOWER),
        (0.5, Verdict.FASTER),
    ],
)
def test_verdicts(center: float, verdict: Verdict) -> None:
    result = compare(samples(center, 1), samples(1.0, 2), threshold=0.05, alpha=0.01)
    assert result.verdict is verdict
    assert result.ratio == pytest.approx(center, rel=0.01)


def test_beyond_threshold_but_noise_is_same() -> None:
    # Two medians 8% apart, but samples spread +-50%: the test cannot tell them apart.
    result = compare(
        samples(1.08, 1, n=8, jitter=0.5), samples(1.0, 2, n=8, jitter=0.5), threshold=0.05, alpha=0.01
    )
    assert result.verdict is Verdict.SAME
    assert result.reason == "beyond threshold, not significant"
    assert result.p_value is not None and result.p_value >= 0.01


def test_evidence_names_the_test() -> None:
    result = compare(samples(2.0, 1), samples(1.0, 2), threshold=0.05, alpha=0.01)
    assert "Mann-Whitney U: p=" in result.evidence()
    assert result.change_pct == pytest.approx(100, rel=0.02)


@pytest.mark.parametrize(
    ("text", "value"), [("0.05", 0.05), ("5%", 0.05), (" 12.5 % ", 0.125), (0.2, 0.2), ("1e-2", 0.01)]
)
def test_parse_threshold(text: object, value: float) -> None:
    assert parse_threshold(text) == pytest.approx(value)


@pytest.mark.parametrize("bad", ["abc", "0", "-5%", "150%", "1", True, "nan", ""])
def test_parse_threshold_rejects(bad: object) -> None:
    with pytest.raises(ValueError, match=r"threshold|fraction"):
        parse_threshold(bad)


def test_measurements_of_different_methods_are_not_compared() -> None:
    from pytest_kernelperf.verdict.judge import compare_measured

    result = compare_measured(
        "cupti",
        samples(4.0, 1),
        "cuda-graph",
        samples(1.0, 2),
        threshold=0.05,
        alpha=0.01,
        baseline_name="old.json",
    )
    assert result.verdict is Verdict.INCOMPARABLE and result.ratio is None
    assert result.reason == "old.json measured with cuda-graph, this run with cupti"
    same_method = compare_measured(
        "cupti", samples(4.0, 1), "cupti", samples(1.0, 2), threshold=0.05, alpha=0.01
    )
    assert same_method.verdict is Verdict.SLOWER
