"""The whole cycle a user goes through: update, compare, regress, fix, wrong answer, new, strict."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import Project

from pytest_kernelperf.call.judged import _measured_twice
from pytest_kernelperf.model.result import BenchResult, Comparison, Reading, Verdict


def test_update_writes_a_baseline_then_unchanged_passes(project: Project) -> None:
    project.module()
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    text = project.baseline_file.read_text()
    assert "test_kernel:" in text and "method: scripted" in text
    for _ in range(3):  # an unchanged kernel passes every time
        result = project.run("--kernelperf")
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["*1 same*"])


def test_four_times_slower_fails_with_regression(project: Project) -> None:
    project.module()
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    result = project.run("--kernelperf", ms=4.0)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*performance regression in test_kernels.py::test_kernel*"
            "4* ms vs baseline * ms (+300.0%, beyond the 0.5% threshold)*",
            "*evidence: ratio 4.0000 (98% CI *-*); p=* against level 0.01 (alpha 0.01 over 1 judgement); "
            "round noise SD *; smallest detectable slowdown *; this run's 10 rounds *",
            "*baselines*test_kernels.yaml*",
            "*pytest --kernelperf-update-baselines*",
        ]
    )


def test_faster_passes_and_is_reported_faster(project: Project) -> None:
    project.module()
    project.run("--kernelperf-update-baselines")
    result = project.run("--kernelperf", ms=0.5)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*-50.*%*faster*", "*1 faster*"])


def test_slowdown_within_the_practical_floor_is_same(project: Project) -> None:
    project.module()
    project.run("--kernelperf-update-baselines")
    result = project.run("--kernelperf", ms=1.003)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*same*"])


def test_fixed_after_update(project: Project) -> None:
    project.module()
    project.run("--kernelperf-update-baselines")
    project.run("--kernelperf", ms=4.0).assert_outcomes(failed=1)
    project.run("--kernelperf-update-baselines", ms=4.0).assert_outcomes(passed=1)
    project.run("--kernelperf", ms=4.0).assert_outcomes(passed=1)


def test_wrong_answer_fails_with_mismatch_without_any_flag(project: Project) -> None:
    project.module()
    result = project.run(scale=1.01)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*mismatch in output: * of 64 elements * differ*max abs error*max rel error 0.01*"]
    )
    assert not project.baseline_file.exists()


def test_missing_baseline_passes_as_new(project: Project) -> None:
    project.module()
    result = project.run("--kernelperf")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*new*", "*1 new*"])
    assert not project.baseline_file.exists()


def test_strict_fails_on_missing_baseline(project: Project) -> None:
    project.module()
    result = project.run("--kernelperf", "--kernelperf-strict")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no baseline for test_kernels.py::test_kernel*--kernelperf-strict*"])


def test_update_keeps_entries_of_tests_that_did_not_run(project: Project) -> None:
    project.module(
        """
        import torch
        def kernel(x):
            return x * 2
        kernel.fake_ms = 1.0
        def test_one(kernel_bench):
            kernel_bench(kernel, torch.ones(4))
        def test_two(kernel_bench):
            kernel_bench(kernel, torch.ones(4))
        """
    )
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=2)
    before = project.baseline_file.read_text()
    result = project.run("--kernelperf-update-baselines", "-k", "test_one")
    result.stdout.fnmatch_lines(["*test_kernels.yaml: 0 added, 0 changed, 1 unchanged, 1 kept*"])
    after = project.baseline_file.read_text()
    assert "test_two:" in after
    assert before == after  # same figures: not a byte changed


# A kernel 20% slower in its first measurement of the process only (FAKE_FIRST_MS), as a level that
# wanders for a fraction of a second would read.
WANDERING_ONCE = """
import os

import torch

def kernel(x):
    return x * 2

kernel.fake_ms = [float(os.environ.get("FAKE_FIRST_MS", "1.0")), float(os.environ.get("FAKE_MS", "1.0"))]

def test_kernel(kernel_bench):
    kernel_bench(kernel, torch.linspace(-3, 3, 64), reference=lambda x: x + x)
"""


def _recorded_then_slower_once(project: Project, monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    """`module`'s baseline recorded, then its first measurement in a process made 20% slower."""
    project.module(module)
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("FAKE_FIRST_MS", "1.2")


def _only_result(project: Project) -> dict[str, Any]:
    """The one result of the run JSON the last run wrote to run.json."""
    (entry,) = json.loads((project.pytester.path / "run.json").read_text())["results"]
    return dict(entry)


def test_a_transient_slowdown_passes_judged_on_both_measurements_pooled(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    # +20% in the first measurement, -17% in the second: pooled, the level has not moved.
    _recorded_then_slower_once(project, monkeypatch, WANDERING_ONCE)
    result = project.run("--kernelperf", "--kernelperf-json=run.json", ms=1 / 1.2)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "test_kernels.py::test_kernel: measured twice: +20.0% (slower, 5 rounds), then -16.7% (faster, "
            "5 rounds); judged on both pooled: +0.0%",
            "  (undetermined)",  # wrapped within the table's width
            "*1 undetermined*",
        ]
    )
    entry = _only_result(project)
    # Rounds 20% apart leave the pooled level too uncertain to call "same": the test could not tell.
    assert entry["verdict"] == "undetermined"
    readings = entry["device_time"]["readings"]
    assert [r["verdict"] for r in readings] == ["slower", "faster"]
    assert [r["rounds"] for r in readings] == [5, 5]
    assert readings[0]["ratio"] == pytest.approx(1.2, rel=1e-3)
    assert len(entry["device_time"]["rounds_ms"]) == 10  # both measurements' rounds are kept
    # Under --kernelperf-strict a verdict that could not tell fails its test, saying why.
    strict = project.run("--kernelperf", "--kernelperf-strict", ms=1 / 1.2)
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(
        [
            "*UNDETERMINED: test_kernels.py::test_kernel on * +0.0%, undetermined ±*%: undetermined: "
            "the smallest slowdown this test could detect (the ± of its verdict) is beyond 10%, the most "
            "a `same` may leave unseen (4x the 0.5% threshold that fails a test, at least 10%); for a "
            "verdict: more rounds*--kernelperf-strict fails every verdict*"
        ]
    )


def test_a_slower_then_faster_reading_is_not_judged_faster(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A level that read +30%, then -30%, is noise: neither reading alone decides.
    _recorded_then_slower_once(project, monkeypatch, WANDERING_ONCE)
    monkeypatch.setenv("FAKE_FIRST_MS", "1.3")
    project.run("--kernelperf", "--kernelperf-json=run.json", ms=0.7).assert_outcomes(passed=1)
    entry = _only_result(project)
    assert entry["verdict"] != "faster"
    assert [r["verdict"] for r in entry["device_time"]["readings"]] == ["slower", "faster"]


def test_a_slowdown_measured_again_fails_with_both_readings(project: Project) -> None:
    project.module()
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    result = project.run("--kernelperf", "--kernelperf-json=run.json", ms=1.2)
    result.assert_outcomes(failed=1)
    entry = _only_result(project)
    assert entry["verdict"] == "slower"
    assert (
        "measured twice: +20.0% (slower, 5 rounds), then +20.0% (slower, 5 rounds); judged on both "
        "pooled: +20.0% (slower)"
    ) in entry["notes"]
    assert [r["verdict"] for r in entry["device_time"]["readings"]] == ["slower", "slower"]


def test_an_update_records_its_one_measurement_without_measuring_again(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    _recorded_then_slower_once(project, monkeypatch, WANDERING_ONCE)
    project.run("--kernelperf-update-baselines", "--kernelperf-json=run.json").assert_outcomes(passed=1)
    entry = _only_result(project)
    assert entry["device_time"]["median_ms"] == pytest.approx(1.2, rel=1e-3)
    assert not any("measured twice" in note for note in entry["notes"])
    assert entry["device_time"]["readings"] == []


def test_the_note_of_a_call_measured_twice_gives_each_reading_and_the_pooled_verdict() -> None:
    readings = (Reading(Verdict.SLOWER, 1.2, 5), Reading(Verdict.UNRELIABLE, 1.2, 5))
    pooled = BenchResult(
        "t.py::test", None, "gpu", Verdict.SLOWER, comparison=Comparison(Verdict.SLOWER, 1.2)
    )
    assert _measured_twice(readings, pooled) == (
        "measured twice: +20.0% (slower, 5 rounds), then +20.0% (unreliable, 5 rounds); judged on both "
        "pooled: +20.0% (slower)"
    )


# The same, checked against its reference with max_ratio: timed alternating with the reference, each
# round is a measurement of its own, so the first five rounds are the first measurement.
WANDERING_ONCE_WITH_MAX_RATIO = """
import os

import torch

def kernel(x):
    return x * 2

first = float(os.environ.get("FAKE_FIRST_MS", "0.6"))
kernel.fake_ms = [first] * 5 + [0.6]

def reference(x):
    return x + x

reference.fake_ms = 0.5

def test_kernel(kernel_bench):
    kernel_bench(kernel, torch.linspace(-3, 3, 64), reference=reference, max_ratio=1.5)
"""


def test_max_ratio_is_checked_on_the_measurement_that_decides(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Rounds 2.4x, then 1.2x the reference's: the ratio is checked on both measurements pooled, as
    # the verdict is (their level +41% on the baseline's: slower); pooled, 1.7x is not significantly
    # beyond max_ratio=1.5 with rounds that far apart.
    _recorded_then_slower_once(project, monkeypatch, WANDERING_ONCE_WITH_MAX_RATIO)
    result = project.run("--kernelperf", "--kernelperf-json=run.json")
    result.assert_outcomes(failed=1)
    entry = _only_result(project)
    assert entry["verdict"] == "slower"
    assert entry["reference"]["ratio"] == pytest.approx((2.4 * 1.2) ** 0.5, rel=1e-3)
    assert not entry["reference"]["exceeded"]
