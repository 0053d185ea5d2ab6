"""Re-judging recorded rounds (studies/resample.py, the studies' support for the package's judge),
on made-up data."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest

# studies/ is not part of the package: it is imported from the checkout (appended, so that nothing
# the path already finds is found anew there).
sys.path.append(str(Path(__file__).resolve().parents[1]))

from studies.resample import Measurement, every_baseline, simulate


def made_up(processes: int, variants: dict[str, float], round_sd: float = 0.002) -> list[Measurement]:
    rng = random.Random(7)
    out = []
    for process in range(processes):
        for size, level in (("small", 0.0022), ("large", 0.13)):
            for variant, slowdown in variants.items():
                rounds = tuple(level * (1 + slowdown) * math.exp(rng.gauss(0, round_sd)) for _ in range(5))
                out.append(Measurement(process, size, variant, rounds))
    return out


def test_every_baseline_judges_each_pair_of_processes() -> None:
    variants = {"A/A": 0.0, "+1%": 0.01, "+10%": 0.10}
    tallies = {(t.kernel, t.variant): t for t in every_baseline(made_up(4, variants), (0.03, 0.05))}
    assert len(tallies) == 6 and all(t.pairs == 12 for t in tallies.values())
    assert tallies[("small", "A/A")].slower == {0.03: 0, 0.05: 0}
    assert tallies[("large", "+1%")].slower == {0.03: 0, 0.05: 0}  # under the practical floor
    assert tallies[("large", "+10%")].slower == {0.03: 12, 0.05: 12}
    assert tallies[("small", "+10%")].rate(0.05) == 1.0


def test_rows_without_rounds_count_their_samples_as_one_round() -> None:
    row = {"process": 3, "size": "small", "variant": "A/A", "samples_ms": [1.0, 1.0, 2.0, 1.0, 50.0]}
    assert Measurement.from_row(row) == Measurement(3, "small", "A/A", (pytest.approx(4 / 3),))  # type: ignore[arg-type]
    with_rounds = {**row, "rounds_ms": [1.0, 1.1]}
    assert Measurement.from_row(with_rounds).rounds_ms == (1.0, 1.1)


def pools(sd: float, level: float, kernels: int = 4, per_kernel: int = 40) -> dict[str, list[float]]:
    rng = random.Random(3)
    return {f"k{i}": [level * math.exp(rng.gauss(0, sd)) for _ in range(per_kernel)] for i in range(kernels)}


def test_simulation_gives_false_alarms_under_the_level_and_power_at_10_percent() -> None:
    results = simulate(
        pools(0.007, 0.0022),
        (0.0, 0.10),  # a 2.2 us kernel's class allows 1% between processes: 3% is not detectable
        trials=300,
        rounds=5,
        baseline_rounds=8,
        threshold=0.005,
        alpha=0.01,
        suite_size=200,
    )
    unchanged = [r for r in results if r.slowdown == 0.0]
    slowed = [r for r in results if r.slowdown == 0.10]
    assert len(unchanged) == len(slowed) == 4
    assert sum(r.slower for r in unchanged) <= 1  # level 5e-5 over 1200 draws
    assert min(r.rate for r in slowed) >= 0.9


def test_simulation_needs_enough_rounds_per_kernel() -> None:
    with pytest.raises(ValueError, match=r"at least 13 measured rounds \(5 \+ 8\); too few for: k0"):
        simulate(
            {"k0": [1.0] * 12},
            (0.0,),
            trials=1,
            rounds=5,
            baseline_rounds=8,
            threshold=0.005,
            alpha=0.01,
            suite_size=1,
        )
