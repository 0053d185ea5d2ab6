"""--kernelperf-markdown, the GitHub step summary, and per-test properties in JUnit XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from conftest import Project
from reportkit import KERNELS, RATIO, mixed_verdicts, setup, times


def test_markdown_summary_has_totals_failures_and_one_table_per_test(project: Project) -> None:
    mixed_verdicts(project)
    project.module(KERNELS + RATIO)
    times(project, b=4.0, c=0.5, slow=1.2)
    result = project.run("--kernelperf", "--kernelperf-markdown=reports/summary.md")
    result.stdout.fnmatch_lines(["kernelperf: wrote the markdown to reports/summary.md"])
    text = (project.pytester.path / "reports" / "summary.md").read_text()
    lines = text.splitlines()
    assert lines[0] == "### pytest-kernelperf: 3 same, 1 slower, 1 faster, 2 new"
    assert "**Failing:** `test_kernels.py::test_param[b]`" in lines
    assert "#### `test_kernels.py::test_param (Test CPU, scripted, hot cache)`" in lines
    header = "| Method | Time (ms) | Rounds (ms) | Baseline | Change | GB/s | % peak | Verdict |"
    assert header in lines
    row_b = next(line for line in lines if line.startswith("| b |"))
    assert "| **+300.0%** |" in row_b and row_b.endswith("| **slower +300.0%** |")
    row_c = next(line for line in lines if line.startswith("| c |"))
    assert "| -50.0% | 16.7" in row_c and "\\* | 17% |" in row_c and row_c.endswith("| faster -50.0% |")
    # The ratio to the reference is in its own columns ("&lt;=" renders as "<=").
    assert "| Method | Time (ms) | Rounds (ms) | Ref (ms) | Ratio | GB/s | % peak | Verdict |" in lines
    assert any(line.startswith("| kernel | 1.2") and "| 1.20x &lt;= 1.5 |" in line for line in lines)
    # The notes under the tables, each once: the mark of inferred bytes, then the numbered ones.
    assert "- \\* bytes inferred from the input and output tensors (pass bytes= to state them)" in lines
    new = "- \\[1\\] new: no baseline for this device and cache mode; record one with --kernelperf-update-"
    assert any(line.startswith(new) for line in lines)
    assert sum(line.count("new: no baseline") for line in lines) == 1
    assert sum(line.endswith("| new \\[1\\] |") for line in lines) == 2
    assert "- Test CPU: copy bandwidth 100 GB/s (test)" in lines
    assert "- **Test CPU**: kind cpu, threads 1, torch test" in lines


def test_step_summary_is_appended_when_github_sets_the_variable(project: Project) -> None:
    setup(project)
    times(project)
    summary = project.pytester.path / "step_summary.md"
    summary.write_text("## earlier step\n")
    project.monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    project.run("--kernelperf").assert_outcomes(passed=5)
    text = summary.read_text()
    assert text.startswith("## earlier step\n### pytest-kernelperf: 6 new\n")
    assert "| first |" in text
    project.run("--kernelperf").assert_outcomes(passed=5)
    assert summary.read_text().count("### pytest-kernelperf") == 2  # appended, never replaced


def test_no_step_summary_without_timing_or_with_an_empty_variable(project: Project) -> None:
    setup(project)
    times(project)
    summary = project.pytester.path / "step_summary.md"
    project.monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    project.run().assert_outcomes(passed=5)  # correctness only: nothing worth a summary
    assert not summary.exists()
    project.monkeypatch.setenv("GITHUB_STEP_SUMMARY", "")
    project.run("--kernelperf").assert_outcomes(passed=5)
    assert not summary.exists()


def test_junit_xml_carries_level_baseline_level_change_and_verdict(project: Project) -> None:
    mixed_verdicts(project)
    project.module(KERNELS + RATIO)
    times(project, b=4.0, c=0.5, slow=1.2)
    project.run("--kernelperf", "--junitxml=junit.xml").assert_outcomes(passed=5, failed=1)
    tree = ET.parse(project.pytester.path / "junit.xml")

    def props(name: str) -> dict[str, str]:
        case = next(c for c in tree.iter("testcase") if c.get("name") == name)
        return {p.get("name", ""): p.get("value", "") for p in case.iter("property")}

    slower = props("test_param[b]")
    assert slower["kernelperf.verdict"] == "slower"
    assert float(slower["kernelperf.level_ms"]) > 3.9
    assert abs(float(slower["kernelperf.baseline_level_ms"]) - 1.0) < 0.01
    assert abs(float(slower["kernelperf.change_pct"]) - 300) < 2
    assert slower["kernelperf.method"] == "scripted" and slower["kernelperf.device"] == "Test CPU"
    new = props("test_param[d]")
    assert new["kernelperf.verdict"] == "new" and "kernelperf.baseline_level_ms" not in new
    named = props("test_named")
    assert named["kernelperf.first.verdict"] == named["kernelperf.second.verdict"] == "same"
    assert abs(float(named["kernelperf.second.tflop_per_s"]) - 1.07) < 0.01
    ratio = props("test_ratio")
    assert abs(float(ratio["kernelperf.ratio"]) - 1.2) < 0.02
    assert ratio["kernelperf.max_ratio"] == "1.5" and ratio["kernelperf.max_ratio_exceeded"] == "no"


def test_a_report_that_cannot_be_written_is_said_and_fails_the_run(project: Project) -> None:
    setup(project)
    times(project)
    (project.pytester.path / "taken").write_text("a file, not a folder")
    result = project.run("--kernelperf", "--kernelperf-markdown=taken/summary.md")
    result.assert_outcomes(passed=5)  # the tests themselves passed
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["kernelperf: could not write the markdown to taken/summary.md: *"])
