"""The three judgements of one saved run agree: the pytest run that wrote it, `compare` of it against
the update run that recorded its baselines, and bisect's judge of the same two run files."""

from __future__ import annotations

import textwrap
from dataclasses import replace

from conftest import Project
from reportkit import KERNELS, RATIO, setup, times

from pytest_kernelperf.history import bisect
from pytest_kernelperf.model.result import BenchResult, Verdict
from pytest_kernelperf.results import runfile, saved_runs
from pytest_kernelperf.settings import DEFAULTS
from pytest_kernelperf.verdict.judgement import Failure, failures


def test_the_run_compare_and_bisect_give_the_same_verdicts_on_one_saved_run(project: Project) -> None:
    setup(project, KERNELS + textwrap.dedent(RATIO))
    # Baselines for everything but param d; test_ratio exceeds its max_ratio in every run.
    times(project, slow=2.0)
    update = project.run(
        "--kernelperf-update-baselines",
        "--deselect",
        "test_kernels.py::test_param[d]",
        "--kernelperf-json=old.json",
    )
    update.assert_outcomes(passed=4, failed=1, deselected=1)
    # b 4x slower, c 2x faster, "first" 0.3% slower (within the 0.5% floor): the run fails b and the
    # ratio.
    times(project, b=4.0, c=0.5, first=1.003, slow=2.0)
    run = project.run("--kernelperf", "--kernelperf-json=new.json")
    run.assert_outcomes(passed=4, failed=2)
    reports = run.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
    failed = {r.nodeid for r in reports if r.failed}
    folder = project.pytester.path
    old, new = runfile.load(folder / "old.json"), runfile.load(folder / "new.json")

    in_run = {saved_runs.key_of(r): r for r in new.results}
    compared = {saved_runs.key_of(r): r for r in saved_runs.compare_runs(old, new).results}
    bisected = bisect.judge_against(old, new, threshold=DEFAULTS["threshold"])

    # The pytest run: its failed tests are those `failures` names.
    assert {r.nodeid for r in in_run.values() if failures(r)} == failed
    assert {str(f) for r in in_run.values() for f in failures(r)} == {"slower", "max_ratio"}
    # compare: every verdict, comparison and failure as in the run.
    assert compared.keys() == in_run.keys()
    for key, result in in_run.items():
        again = compared[key]
        assert_same_judgement(again, result, key)
        assert again.comparison is not None and result.comparison is not None
        assert again.comparison.planned_judgements == result.comparison.planned_judgements, key
        assert failures(again) == failures(result), key
    # bisect: the same verdict on every result GOOD (the update run) also has, and a step that is bad
    # for the slower result only (a max_ratio is the code's own, not a change against GOOD).
    in_both = {
        (r.nodeid, r.name or "", r.device, r.cache): r for r in new.results if r.verdict is not Verdict.NEW
    }
    assert bisected.keys() == in_both.keys()
    for key, judged in bisected.items():
        result = in_both[key]
        assert_same_judgement(judged, result, key)
        wanted = [f for f in failures(result) if f is not Failure.MAX_RATIO]
        assert failures(judged) == wanted, key
    assert {r.verdict for r in in_run.values()} == {Verdict.SAME, Verdict.SLOWER, Verdict.FASTER, Verdict.NEW}
    status, lines = bisect.judge(old, new, 0.05)
    assert status == 1
    assert [line.split()[1] for line in lines if line.startswith("slower")] == [
        "test_kernels.py::test_param[b]"
    ]
    # A threshold of 0 (a marker's) is kept by compare, not replaced by the run's default.
    zero = replace(
        new,
        results=tuple(
            replace(r, comparison=replace(r.comparison, threshold=0.0)) if r.comparison else r
            for r in new.results
        ),
    )
    thresholds = {
        r.comparison.threshold for r in saved_runs.compare_runs(old, zero).results if r.comparison is not None
    }
    assert thresholds == {0.0}


def assert_same_judgement(judged: BenchResult, result: BenchResult, key: object) -> None:
    """The same verdict, ratio and p-value as the pytest run's."""
    assert judged.verdict is result.verdict, key
    assert judged.comparison is not None and result.comparison is not None
    assert judged.comparison.ratio == result.comparison.ratio, key
    assert judged.comparison.p_value == result.comparison.p_value, key
