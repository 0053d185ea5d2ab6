"""Where each test is defined and how it ended, as pytest reported it, for the run file (`tests`):
what a pull request's check run annotates (a failing test's file and line, its failure's text).

Taken from the test reports in the process that writes the run file: a plain run's own, the ones
pytest-xdist's workers send to the controller, and those isolated children's parents replay, so
every role sees every test the same way.
"""

from __future__ import annotations

import pytest

from pytest_kernelperf.results.runfile import MAX_MESSAGE_CHARS, ReportedTest

# The worse outcome wins when a test's phases differ: a passed call with a failed teardown is an error.
_RANK = {"passed": 0, "skipped": 1, "error": 2, "failed": 3}
_FAILED = "Failed: "  # what pytest.fail's exception adds before the message


class Outcomes:
    def __init__(self) -> None:
        self._tests: dict[str, ReportedTest] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        outcome = _outcome(report)
        known = self._tests.get(report.nodeid)
        if known is not None and _RANK[known.outcome] >= _RANK[outcome]:
            return
        file, line, _ = report.location
        self._tests[report.nodeid] = ReportedTest(
            file=file,
            line=line + 1 if line is not None else None,  # pytest counts from 0
            outcome=outcome,
            message=_message(report) if outcome in ("failed", "error") else "",
        )

    def not_passed(self) -> dict[str, str]:
        """The tests that did not pass, each with its outcome ("failed", "error", "skipped")."""
        return {nodeid: test.outcome for nodeid, test in self._tests.items() if test.outcome != "passed"}

    def kept(self, with_results: set[str]) -> dict[str, ReportedTest]:
        """The tests the run file keeps: those with a kernel_bench result, and every failure."""
        return {
            nodeid: test
            for nodeid, test in self._tests.items()
            if nodeid in with_results or test.outcome in ("failed", "error")
        }


def _outcome(report: pytest.TestReport) -> str:
    if report.failed:
        return "failed" if report.when == "call" else "error"
    return "skipped" if report.skipped else "passed"


def _message(report: pytest.TestReport) -> str:
    """The failure's own text: a kernel_bench failure's message as written, an exception's last
    line (pytest's crash line) rather than its whole traceback."""
    longrepr = report.longrepr
    crash = getattr(longrepr, "reprcrash", None)
    text = str(getattr(crash, "message", "") or longrepr or "").removeprefix(_FAILED)
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 1] + "…"
    return text
