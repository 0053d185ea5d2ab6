"""Verdicts in a pytest run: strict mode, throttled rounds, schema-1 baselines and the run's level."""

from __future__ import annotations

import json
import textwrap

import pytest
from conftest import Project

THROTTLED = """
import os

import torch

def kernel(x):
    return x * 2

kernel.fake_ms = float(os.environ.get("FAKE_MS", "1.0"))
if os.environ.get("THROTTLE"):
    kernel.fake_throttle = ("software power cap",)
    kernel.fake_clock_mhz = int(os.environ["THROTTLE"])

def test_kernel(kernel_bench):
    kernel_bench(kernel, torch.ones(64))
"""


def throttled_run(project: Project, *args: str, ms: float, clock_mhz: int = 1650) -> object:
    project.monkeypatch.setenv("THROTTLE", str(clock_mhz))
    return project.run("--kernelperf", "--kernelperf-json=run.json", "-W", "always", *args, ms=ms)


def test_throttling_that_could_explain_the_change_is_unreliable_and_never_silent(project: Project) -> None:
    project.module(THROTTLED)
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    result = throttled_run(project, ms=1.2)
    result.assert_outcomes(passed=1)  # type: ignore[attr-defined]
    result.stdout.fnmatch_lines(  # type: ignore[attr-defined]
        [
            "*KernelperfWarning: test_kernels.py::test_kernel: unreliable +20.0%: not judged; see the notes "
            "under the kernelperf table",
            "*kernel *unreliable +20.0% [[]*]",
            "[[]*] GPU throttled in 5 rounds (software power cap, clocks account for up to 20.0%): a change "
            "of +20.0% may be the clock's",
        ]
    )
    data = json.loads((project.pytester.path / "run.json").read_text())
    timing = data["results"][0]["device_time"]
    assert data["results"][0]["verdict"] == "unreliable"
    assert timing["throttled_rounds"] == 10
    assert timing["throttling"]["reasons"] == ["software power cap"] and timing["throttling"]["rounds"] == 5
    assert timing["throttling"]["clock_drop"] == pytest.approx(330 / 1980)


def test_throttling_without_a_clock_drop_leaves_a_slowdown_judged(project: Project) -> None:
    # A heavy kernel at the power cap in every process, its clock where it always is: a verdict.
    project.module(THROTTLED)
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    result = throttled_run(project, ms=1.2, clock_mhz=1980)
    result.assert_outcomes(failed=1)  # type: ignore[attr-defined]
    result.stdout.fnmatch_lines(  # type: ignore[attr-defined]
        ["*GPU throttled in 10 rounds (software power cap, no clock drop recorded), which cannot explain*"]
    )


def test_a_kernel_at_the_power_cap_is_judged_on_time_adjusted_for_the_clock(project: Project) -> None:
    # Recorded at the cap at 1980 MHz; judged at the cap at 1545 MHz (1980/1545 = 1.28, taken at the
    # bound 1.15): 0.2 x log(1.15) = 2.8% of the time is the clock's.
    project.module(THROTTLED)
    project.monkeypatch.setenv("THROTTLE", "1980")
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    unchanged = throttled_run(project, "-v", ms=1.02, clock_mhz=1545)
    unchanged.assert_outcomes(passed=1)  # type: ignore[attr-defined]
    # With the adjustment's own uncertainty the test cannot see 10%: undetermined, not same.
    unchanged.stdout.fnmatch_lines(  # type: ignore[attr-defined]
        [
            "*PASSED (undetermined -0.8% adjusted for the clock (time +2.0%))*",
            "*-0.8%~*undetermined*",
            "~ test_kernels.py::test_kernel: -0.8% adjusted for the clock (time +2.0%)",
        ]
    )
    data = json.loads((project.pytester.path / "run.json").read_text())
    comparison = data["results"][0]["comparison"]
    assert data["results"][0]["verdict"] == "undetermined"
    assert comparison["time_ratio"] == pytest.approx(1.02, rel=1e-3)
    assert comparison["ratio"] == pytest.approx(1.02 / 1.15**0.2, rel=1e-3)
    assert (
        "GPU throttled in 5 rounds (software power cap), as the baseline's rounds were"
        in comparison["reason"]
    )
    # +15% in time is beyond what the drop explains: the drop is not excused, the time is judged.
    slowed = throttled_run(project, ms=1.15, clock_mhz=1545)
    slowed.assert_outcomes(failed=1)  # type: ignore[attr-defined]
    slowed.stdout.fnmatch_lines(  # type: ignore[attr-defined]
        ["*1.15 ms vs baseline 1 ms (+15.0%, beyond the 0.5% threshold)*"]
    )
    assert "beyond what the clock drop explains: judged on time" in slowed.stdout.str()  # type: ignore[attr-defined]


def test_strict_fails_unreliable_incomparable_and_new(project: Project) -> None:
    project.module(THROTTLED)
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    result = throttled_run(project, "--kernelperf-strict", ms=1.2)
    result.assert_outcomes(failed=1)  # type: ignore[attr-defined]
    result.stdout.fnmatch_lines(  # type: ignore[attr-defined]
        ["*UNRELIABLE*not judged*--kernelperf-strict fails every verdict that is not a judgement*"]
    )
    project.monkeypatch.delenv("THROTTLE")
    baseline = project.baseline_file.read_text().replace("method: scripted", "method: cupti")
    project.baseline_file.write_text(baseline)
    incomparable = project.run("--kernelperf", "--kernelperf-strict")
    incomparable.assert_outcomes(failed=1)
    incomparable.stdout.fnmatch_lines(["*not compared (incomparable): baseline measured with cupti*"])
    project.baseline_file.unlink()
    new = project.run("--kernelperf", "--kernelperf-strict")
    new.assert_outcomes(failed=1)
    new.stdout.fnmatch_lines(["*no baseline for test_kernels.py::test_kernel*--kernelperf-strict*"])


def test_throttling_cannot_hide_a_change_beyond_2x(project: Project) -> None:
    project.module(THROTTLED)
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    result = throttled_run(project, ms=8.6)
    result.assert_outcomes(failed=1)  # type: ignore[attr-defined]
    result.stdout.fnmatch_lines(  # type: ignore[attr-defined]
        [
            "*performance regression*(+760.0%*",
            "*GPU throttled in 10 rounds (software power cap, clocks account for up to 20.0%), which cannot*",
        ]
    )


SCHEMA_1 = """\
schema_version: 1
entries:
  test_kernel:
    {device}:
      hot:
        device_time: {{ci_ms: [0.99, 1.01], median_ms: 1.0, method: scripted, n: 50,
          quantiles_ms: [0.99, 1.0, 1.01]}}
        environment: {{}}
        recorded: '2026-11-30T00:00:00Z'
  test_gone:
    {device}:
      hot:
        device_time: {{ci_ms: [1.99, 2.01], median_ms: 2.0, method: scripted, n: 50,
          quantiles_ms: [1.99, 2.0, 2.01]}}
        environment: {{}}
        recorded: '2026-11-30T00:00:00Z'
end: true
"""


def test_a_schema_1_baseline_is_judged_as_one_round_and_an_update_writes_schema_3(project: Project) -> None:
    project.module()
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    device = next(
        line.strip().rstrip(":")
        for line in project.baseline_file.read_text().splitlines()
        if line.startswith("    ")
    )
    project.baseline_file.write_text(textwrap.dedent(SCHEMA_1.format(device=device)))
    result = project.run("--kernelperf", "--kernelperf-json=run.json", ms=1.0)
    result.assert_outcomes(passed=1)
    comparison = json.loads((project.pytester.path / "run.json").read_text())["results"][0]["comparison"]
    assert comparison["verdict"] == "same" and comparison["baseline_rounds"] == 1
    assert "predates rounds (schema 1)" in comparison["reason"]
    assert "built-in prior" in comparison["noise_source"]
    slower = project.run("--kernelperf", ms=1.5)
    slower.assert_outcomes(failed=1)
    slower.stdout.fnmatch_lines(["*vs baseline 1 ms (+50.0%*", "*predates rounds (schema 1)*"])
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    text = project.baseline_file.read_text()
    assert "schema_version: 3" in text and text.count("rounds_ms:") == 1  # test_gone keeps no rounds
    # test_gone's level is its median, and says so under the level's name.
    assert "test_gone:" in text and "median_ms: 2.0" in text and "level_ms: 2.0" in text


TWO_TESTS = """
import os

import torch

def kernel(x):
    return x * 2

kernel.fake_ms = 1.0

def test_one(kernel_bench):
    kernel_bench(kernel, torch.ones(64), name="a")
    kernel_bench(kernel, torch.ones(64), name="b")

def test_two(kernel_bench):
    kernel_bench(kernel, torch.ones(64))
"""


def test_the_level_is_alpha_over_the_suites_entries_whichever_tests_run(project: Project) -> None:
    project.module(TWO_TESTS)
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=2)
    project.run("--kernelperf", "--kernelperf-json=all.json").assert_outcomes(passed=2)
    project.run("--kernelperf", "-k", "test_two", "--kernelperf-json=one.json").assert_outcomes(passed=1)
    every = json.loads((project.pytester.path / "all.json").read_text())["results"]
    assert {r["comparison"]["planned_judgements"] for r in every} == {3}
    assert every[0]["comparison"]["level"] == 0.01 / 3
    only = json.loads((project.pytester.path / "one.json").read_text())["results"]
    # Re-run alone, test_two is judged at the level it had in the full run, not at m = 1.
    assert only[0]["comparison"]["planned_judgements"] == 3
    assert only[0]["comparison"]["level"] == every[-1]["comparison"]["level"]


def test_a_test_picked_by_node_id_counts_the_other_modules_entries_too(project: Project) -> None:
    project.module(TWO_TESTS)
    project.module(TWO_TESTS, name="test_more")
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=4)
    project.run("--kernelperf", "test_more.py::test_two", "--kernelperf-json=one.json").assert_outcomes(
        passed=1
    )
    only = json.loads((project.pytester.path / "one.json").read_text())["results"]
    assert only[0]["comparison"]["planned_judgements"] == 6
