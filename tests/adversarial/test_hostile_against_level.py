"""The paired mode's level alpha / m: m counts the kernel_bench tests a full run judges, not the
plain unit tests beside them, and not only those that -k, -m or a node id select."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SUBPROCESS_ARGS
from test_against import repo, results, run

__all__ = ["repo"]  # the fixture: a repository with test_ops.py's two kernel tests

# Fifty tests that never call kernel_bench, in a module of their own.
PLAIN = """
import pytest

@pytest.mark.parametrize("number", range(50))
def test_plain(number):
    assert number >= 0
"""


def judgements(pytester: pytest.Pytester) -> dict[str, int]:
    return {name: found["comparison"]["planned_judgements"] for name, found in results(pytester).items()}


def test_plain_tests_and_a_selection_leave_the_paired_level_as_the_full_runs(
    pytester: pytest.Pytester, repo: Path
) -> None:
    (repo / "test_plain.py").write_text(PLAIN)
    run(pytester, "--kernelperf-against", "HEAD").assert_outcomes(passed=52)
    assert judgements(pytester) == {"test_double": 2, "test_steady": 2}  # not 52
    run(pytester, "--kernelperf-against", "HEAD", "-k", "double").assert_outcomes(passed=1)
    assert judgements(pytester) == {"test_double": 2}  # not 1: -k deselects after collection


def test_a_node_id_counts_its_own_tests_and_the_suites_stored_entries(
    pytester: pytest.Pytester, repo: Path
) -> None:
    (repo / "test_plain.py").write_text(PLAIN)
    # Without baselines, a node id that collects one test can only count that test.
    run(pytester, "--kernelperf-against", "HEAD", "test_ops.py::test_double").assert_outcomes(passed=1)
    assert judgements(pytester) == {"test_double": 1}
    # With them, the tests it did not collect count through their stored entries.
    pytester.runpytest("-p", "no:cacheprovider", "--kernelperf-update-baselines").assert_outcomes(passed=52)
    run(pytester, "--kernelperf-against", "HEAD", "test_ops.py::test_double").assert_outcomes(passed=1)
    assert judgements(pytester) == {"test_double": 2}


@pytest.mark.slow  # xdist workers are processes of their own
def test_xdist_workers_count_as_a_plain_run(pytester: pytest.Pytester, repo: Path) -> None:
    (repo / "test_plain.py").write_text(PLAIN)
    result = pytester.runpytest_subprocess(
        *SUBPROCESS_ARGS,
        "-n",
        "2",
        "--kernelperf-against",
        "HEAD",
        "--kernelperf-json=run.json",
        "-k",
        "double",
    )
    result.assert_outcomes(passed=1)
    assert judgements(pytester) == {"test_double": 2}
