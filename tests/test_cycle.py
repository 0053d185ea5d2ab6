"""The whole cycle a user goes through: update, compare, regress, fix, wrong answer, new, strict."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from conftest import Project

from pytest_kernelperf.call.judged import _measured_twice
from pytest_kernelperf.model.result import BenchResult, Comparison, Verdict


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
            "4* ms vs baseline * ms (+300.0%, practical floor 0.5%)*",
            "*evidence: ratio 4.0000 (98% CI *-*); p=* against level 0.01 (alpha 0.01 over 1 judgement); "
            "round noise SD *; smallest detectable slowdown *; this run's 5 rounds *",
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


def test_a_slower_first_measurement_not_slower_again_passes_judged_on_the_second(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    _recorded_then_slower_once(project, monkeypatch, WANDERING_ONCE)
    result = project.run("--kernelperf", "--kernelperf-json=run.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "test_kernels.py::test_kernel: measured twice: +20.0% (slower), then +0.0% (same: not confirmed*",
            "*1 same*",
        ]
    )
    entry = _only_result(project)
    assert entry["verdict"] == "same"
    note = "measured twice: +20.0% (slower), then +0.0% (same: not confirmed, judged on the second)"
    assert note in entry["notes"]


def test_a_slowdown_measured_again_fails_with_both_readings(project: Project) -> None:
    project.module()
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    result = project.run("--kernelperf", "--kernelperf-json=run.json", ms=1.2)
    result.assert_outcomes(failed=1)
    entry = _only_result(project)
    assert entry["verdict"] == "slower"
    assert "measured twice: +20.0% (slower), then +20.0% (slower: confirmed)" in entry["notes"]


def test_an_update_records_its_one_measurement_without_measuring_again(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    _recorded_then_slower_once(project, monkeypatch, WANDERING_ONCE)
    project.run("--kernelperf-update-baselines", "--kernelperf-json=run.json").assert_outcomes(passed=1)
    entry = _only_result(project)
    assert entry["device_time"]["median_ms"] == pytest.approx(1.2, rel=1e-3)
    assert not any("measured twice" in note for note in entry["notes"])


def test_a_second_measurement_that_is_no_judgement_leaves_the_first_verdict() -> None:
    first = BenchResult("t.py::test", None, "gpu", Verdict.SLOWER, comparison=Comparison(Verdict.SLOWER, 1.2))
    throttled = Comparison(Verdict.UNRELIABLE, 1.2, reason="GPU throttled (software power cap)")
    second = replace(first, verdict=Verdict.UNRELIABLE, comparison=throttled)
    assert _measured_twice(first, second) == (
        "measured twice: +20.0% (slower), then +20.0% (unreliable, GPU throttled (software power cap): "
        "the first measurement's verdict stands)"
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
    _recorded_then_slower_once(project, monkeypatch, WANDERING_ONCE_WITH_MAX_RATIO)
    result = project.run("--kernelperf", "--kernelperf-json=run.json")
    result.assert_outcomes(passed=1)
    entry = _only_result(project)
    assert entry["verdict"] == "same"
    assert entry["reference"]["ratio"] == pytest.approx(1.2, rel=1e-3)
