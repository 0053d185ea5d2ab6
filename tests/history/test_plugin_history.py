"""`--kernelperf-history`: every timed run lands in the history database, with its results."""

from __future__ import annotations

from conftest import Project

from pytest_kernelperf.history.store import HistoryStore


def test_each_timed_run_is_appended_and_a_check_only_run_is_not(project: Project) -> None:
    project.module()
    database = project.pytester.path / "history.sqlite"
    flag = f"--kernelperf-history={database}"
    project.run(flag, "--kernelperf-update-baselines").assert_outcomes(passed=1)
    project.run(flag, "--kernelperf").assert_outcomes(passed=1)
    project.run(flag).assert_outcomes(passed=1)  # checks only: nothing timed, nothing stored
    with HistoryStore(database, create=False) as store:
        assert len(store.runs()) == 2
        assert len(store.series()) >= 1
