"""The end-of-run table, its colours, the verdict in -v lines, and the one-line total."""

from __future__ import annotations

import re

from conftest import Project
from reportkit import mixed_verdicts, setup, times

from pytest_kernelperf.model.result import BenchResult, Comparison, Verdict
from pytest_kernelperf.results import render

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_table_grouped_by_module_and_test_with_one_line_total(project: Project) -> None:
    mixed_verdicts(project)
    result = project.run("--kernelperf", "--color=no")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*= kernelperf =*",
            "test_kernels.py",
            "  test_param (Test CPU, scripted, hot cache)",
            "    Method  Time (ms)  Rounds (ms)*Baseline*Change*GB/s*% peak*Verdict",
            "    a       1 * 1-1 * 1 * +0.0%  *  same ±3.6%",
            "    b       4 * 4-4 * 1 * +300.0%  *  slower +300.0%",
            "    c       0.5 * 0.5-0.5 * 1 * -50.0%  *  faster -50.0%",
            "    d       1 * new [[]1]",
            "  test_named (Test CPU, scripted, hot cache)",
            "    Method  Time (ms)*GB/s*TFLOP/s*",
            "    first   1 *8.[34]*  8%*same ±3.6%",
            "    second  1 *16.[78]*  17%*1.07*same ±3.6%",
            "* bytes inferred from the input and output tensors*",
            "[[]1] new: no baseline for this device and cache mode*",
            "kernelperf: 3 same, 1 slower, 1 faster, 1 new",
        ]
    )
    # GB/s of the named call with bytes= given carries no "inferred" star; the other does.
    assert re.search(r"first .* 8\.[34]\d*\* ", result.stdout.str())
    assert re.search(r"second .* 16\.[78]\d* ", result.stdout.str())


def test_colour_marks_slower_and_faster_cells_when_asked(project: Project) -> None:
    mixed_verdicts(project)
    coloured = project.run("--kernelperf", "--color=yes").stdout.str()
    assert re.search(r"\x1b\[31m\x1b\[1m\+3\d\d\.\d%", coloured), "the slower change is bold red"
    assert re.search(r"\x1b\[32m-50\.\d%", coloured), "the faster change is green"
    assert re.search(r"\x1b\[31m\x1b\[1mslower", coloured)
    plain = project.run("--kernelperf", "--color=no").stdout.str()
    assert not ANSI.search(plain)
    assert "slower" in plain


def test_verbose_lines_carry_verdict_and_change(project: Project) -> None:
    mixed_verdicts(project)
    result = project.run("--kernelperf", "-v", "--color=no")
    result.stdout.fnmatch_lines(
        [
            "*test_param?a? PASSED (same *%)*",
            "*test_param?b? FAILED (slower +3*%)*",
            "*test_param?c? PASSED (faster -50.*%)*",
            "*test_param?d? PASSED (new)*",
            "*test_named PASSED (first: same *%; second: same *%)*",
        ]
    )
    # Without -v the progress letters stay the usual ones.
    quiet = project.run("--kernelperf", "--color=no")
    quiet.stdout.fnmatch_lines(["test_kernels.py .F...*"])


def test_checked_only_run_lists_checked_results(project: Project) -> None:
    setup(project)
    times(project)
    result = project.run("-v", "--color=no")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["*test_param?a? PASSED (checked)*", "kernelperf: 6 checked"])


def _judged(test: str, verdict: Verdict, level_ms: float, detectable: float) -> BenchResult:
    comparison = Comparison(verdict, ratio=1.0, threshold=0.005, detectable=detectable)
    return BenchResult(
        f"t.py::{test}",
        None,
        "gpu",
        verdict,
        level_ms=level_ms,
        baseline_level_ms=level_ms,
        comparison=comparison,
    )


def test_a_same_shows_what_it_could_see_where_that_is_beyond_the_threshold() -> None:
    assert render.verdict_text(_judged("test_a", Verdict.SAME, 0.2, 0.041)) == "same ±4.1%"
    assert render.verdict_text(_judged("test_a", Verdict.SAME, 0.2, 0.004)) == "same ±0.5%"  # the threshold
    assert render.verdict_text(_judged("test_a", Verdict.SLOWER, 0.2, 0.041)) == "slower +0.0%"


def test_the_summary_says_per_size_class_what_the_run_could_detect_and_what_was_not_gated() -> None:
    results = [
        _judged("test_small", Verdict.SAME, 0.002, 0.02),
        _judged("test_mid", Verdict.SAME, 0.3, 0.03),
        _judged("test_big", Verdict.SAME, 0.5, 0.05),
        _judged("test_blind", Verdict.UNDETERMINED, 0.4, 0.12),
    ]
    assert render.resolution_lines(results) == [
        "smallest slowdown this run could detect (95% power; threshold 0.5%, undetermined beyond 10%): "
        "1 us-10 us: 1 call, median 2%, worst 2%; 100 us-1 ms: 3 calls, median 5%, worst 12%",
        "not gated: 1 undetermined (t.py::test_blind)",
    ]


def test_an_undetermined_call_is_named_as_not_gated_even_where_no_resolution_is_known() -> None:
    blind = BenchResult(
        "t.py::test_pair",
        None,
        "gpu",
        Verdict.UNDETERMINED,
        level_ms=0.1,
        comparison=Comparison(Verdict.UNDETERMINED, ratio=1.0, threshold=0.005),
    )
    assert render.resolution_lines([blind]) == ["not gated: 1 undetermined (t.py::test_pair)"]
