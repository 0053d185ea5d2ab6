"""The end-of-run table, its colours, the verdict in -v lines, and the one-line total."""

from __future__ import annotations

import re

from conftest import Project
from reportkit import mixed_verdicts, setup, times

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
            "    Method  Time (ms)  Rounds*Baseline*Change*GB/s*% peak*Verdict",
            "    a       1 * 1-1 * 1 * +0.0%  *  same",
            "    b       4 * 4-4 * 1 * +300.0%  *  slower",
            "    c       0.5 * 0.5-0.5 * 1 * -50.0%  *  faster",
            "    d       1 * new",
            "  test_named (Test CPU, scripted, hot cache)",
            "    Method  Time (ms)*GB/s*TFLOP/s*",
            "    first   1 *8.[34]*  8%*same",
            "    second  1 *16.[78]*  17%*1.07*same",
            "* bytes inferred from the input and output tensors*",
            "new: no baseline for this device and cache mode*",
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
