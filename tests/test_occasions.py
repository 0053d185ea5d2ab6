"""The stored judge's occasion term per kernel (verdict/occasions.py): the class value with one
recording occasion, the kernel's own occasions' spread shrunk toward it with several, and the
baselines whose recording processes say they need occasions."""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

import pytest

from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey, MetricRecord
from pytest_kernelperf.model.result import Comparison
from pytest_kernelperf.results import render
from pytest_kernelperf.verdict import noise, occasions
from pytest_kernelperf.verdict.judge import Rounds, judge

DEVICE = "NVIDIA H200"
LEVEL = 0.13  # a 130 us kernel
CLASS_SD = noise.occasion_level_sd(LEVEL)


def recorded(occasion_levels: list[list[float]], sd: float = 0.0009, per: int = 8, seed: int = 1) -> Rounds:
    """A baseline whose occasions each ran processes at the given levels (ms), `per` rounds each
    with round noise `sd`."""
    rng = random.Random(seed)
    values: list[float] = []
    for levels in occasion_levels:
        for level in levels:
            values += [level * math.exp(rng.gauss(0, sd)) for _ in range(per)]
    counts = [len(levels) for levels in occasion_levels]
    return Rounds(
        "cupti",
        tuple(values),
        process_rounds=(per,) * sum(counts) if sum(counts) > 1 else (),
        occasion_processes=tuple(counts) if len(counts) > 1 else (),
    )


def judged(baseline: Rounds, ratio: float = 1.0) -> Comparison:
    current = recorded([[LEVEL * ratio]], seed=9)
    return judge(current, baseline, device=DEVICE, threshold=0.005, alpha=0.01, planned_judgements=40)


def tau_of(comparison: Comparison) -> float:
    found = re.search(r"plus ([0-9.]+)% between occasions", comparison.process_source)
    assert found, comparison.process_source
    return float(found[1]) / 100


def test_one_recording_occasion_takes_the_class_value() -> None:
    result = judged(recorded([[LEVEL, LEVEL * 1.001, LEVEL * 0.999]]))
    assert f"plus {CLASS_SD:.2%} between occasions (1 recording occasion)" in result.process_source
    term = occasions.occasion_term([[(LEVEL,) * 8]], LEVEL, "cupti", 1e-6, 1e-6)
    assert term.variance == CLASS_SD**2 and term.df == noise.OCCASION_DF


def test_occasions_that_agree_shrink_the_term_below_the_class_value() -> None:
    agreeing = recorded([[LEVEL, LEVEL]] * 3)
    result = judged(agreeing)
    assert tau_of(result) < CLASS_SD
    assert (
        f"between occasions (3 recording occasions, shrunk toward {CLASS_SD:.2%} for 100 us-1 ms kernels)"
        in result.process_source
    )
    # Three occasions also leave a third of one occasion's offset in the baseline, not all of it.
    one_occasion = judged(recorded([[LEVEL] * 6]))
    assert result.detectable is not None and one_occasion.detectable is not None
    assert result.detectable < 0.9 * one_occasion.detectable


def test_an_occasion_offset_widens_the_term_beyond_the_class_value() -> None:
    offset = recorded([[LEVEL, LEVEL], [LEVEL, LEVEL], [LEVEL * 1.03, LEVEL * 1.03]])
    result = judged(offset)
    assert tau_of(result) > CLASS_SD
    agreeing = judged(recorded([[LEVEL, LEVEL]] * 3))
    assert result.detectable is not None and agreeing.detectable is not None
    assert result.detectable > agreeing.detectable
    # The offset is the occasions', not the processes': those of one occasion agree.
    assert result.process_sd is not None and agreeing.process_sd is not None
    assert result.process_sd == pytest.approx(agreeing.process_sd, rel=0.2)


def test_processes_of_different_occasions_do_not_widen_the_between_process_term() -> None:
    levels = [[LEVEL, LEVEL], [LEVEL * 1.02, LEVEL * 1.02]]
    as_occasions = judged(recorded(levels))
    as_processes = judged(recorded([levels[0] + levels[1]]))
    assert as_occasions.process_sd is not None and as_processes.process_sd is not None
    assert as_occasions.process_sd < 0.5 * as_processes.process_sd


def test_the_occasions_weigh_in_the_level_as_their_processes_do() -> None:
    assert occasions.level_weight(()) == 1.0
    assert occasions.level_weight((2, 2, 2)) == pytest.approx(1 / 3)
    assert occasions.level_weight((3, 1)) == pytest.approx((9 + 1) / 16)


def spread_processes(level: float, own_sd: float, occasion_processes: tuple[int, ...] = ()) -> Rounds:
    """Three processes whose levels have SD `own_sd` exactly (log units), each of identical rounds."""
    values = tuple(level * math.exp(step * own_sd) for step in (-1, 0, 1) for _ in range(8))
    return Rounds("cupti", values, process_rounds=(8, 8, 8), occasion_processes=occasion_processes)


def test_recording_processes_far_beyond_their_class_value_need_occasions() -> None:
    level = 0.05  # 10-100 us: processes move 0.30% by the class value
    class_sd = noise.process_level_sd(level)
    offset = occasions.needs_occasions(spread_processes(level, 4 * class_sd))
    assert offset is not None and offset.own_sd == pytest.approx(4 * class_sd)
    assert offset.excess == "4.0x the 0.30% of 10 us-100 us kernels"
    # Twice the class value is within what the class lets three processes show (p 0.02).
    assert occasions.needs_occasions(spread_processes(level, 2 * class_sd)) is None
    # A second occasion is the remedy: its baseline is not flagged again.
    assert occasions.needs_occasions(spread_processes(level, 4 * class_sd, (2, 1))) is None
    host = Rounds("cuda-event", spread_processes(level, 0.05).rounds_ms, process_rounds=(8, 8, 8))
    assert occasions.needs_occasions(host) is None  # a host clock's process term spans it


def test_a_judgement_against_such_a_baseline_says_it_needs_occasions() -> None:
    """The NVRTC SAXPY held in L2 (12 us): its recording processes 6% apart, its rounds quiet."""
    saxpy = Rounds("cupti", (0.0119,) * 8 + (0.0126,) * 8 + (0.0122,) * 8, process_rounds=(8, 8, 8))
    settings = {"device": DEVICE, "threshold": 0.005, "alpha": 0.01, "planned_judgements": 40}
    result = judge(Rounds("cupti", (0.0122,) * 5), saxpy, **settings)  # type: ignore[arg-type]
    assert (
        "needs occasions: its 3 recording processes sit 2.87% apart beyond their rounds, 9.6x the 0.30%"
        in result.reason
    )
    assert "record it again on another day or machine with --kernelperf-update-baselines" in result.reason
    assert "--kernelperf-add-occasion" in result.reason
    quiet = Rounds("cupti", (0.0122,) * 24, process_rounds=(8, 8, 8))
    assert "needs occasions" not in judge(Rounds("cupti", (0.0122,) * 5), quiet, **settings).reason  # type: ignore[arg-type]


def entry(baseline: Rounds) -> BaselineEntry:
    rounds = baseline.rounds_ms
    low, high = min(rounds), max(rounds)
    record = MetricRecord(
        "cupti",
        sorted(rounds)[len(rounds) // 2],
        (low, high),
        100,
        (low, high),
        rounds,
        None,
        baseline.process_rounds,
    )
    return BaselineEntry(record, "2026-12-04")


def test_the_update_summary_names_the_entries_that_need_occasions() -> None:
    path = Path("baselines/test_k.yaml")
    staged = {
        path: {
            EntryKey("test_saxpy::nvrtc", DEVICE, "hot"): entry(spread_processes(0.012, 0.02)),
            EntryKey("test_quiet", DEVICE, "hot"): entry(spread_processes(0.012, 0.0005)),
        }
    }
    (line,) = render.needs_occasions_lines(staged)
    assert line.startswith("needs occasions: 1 entry whose recording processes disagree far beyond")
    assert (
        "test_saxpy::nvrtc on NVIDIA H200 (3 processes 2.00% apart, 6.7x the 0.30% of 10 us-100 us kernels)"
        in line
    )
    assert "test_quiet" not in line
    assert line.endswith(f"recorded again {occasions.ADD_OCCASION}")
    assert "--kernelperf-add-occasion" in occasions.ADD_OCCASION
    assert render.needs_occasions_lines({path: {}}) == []
