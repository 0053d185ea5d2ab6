"""`--kernelperf-history`: every timed run lands in the history database, with its results."""

from __future__ import annotations

from conftest import SCRIPTED_CONFTEST, Project, scripted_conftest

from pytest_kernelperf.history.store import HistoryStore
from pytest_kernelperf.verdict.judgement import PERSISTENT_UNDETERMINED_RUNS


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


DEVICE_FROM_ENVIRONMENT = """
import os

from pytest_kernelperf.model.device import DeviceInfo

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_device_info(config, kind):
    return DeviceInfo(kind="cpu", name=os.environ["FAKE_DEVICE"], environment={})
"""

TIMED_REFERENCE = """
import os

import torch

def kernel(x):
    return x * 2

kernel.fake_ms = float(os.environ["FAKE_MS"])

def reference(x):
    return x + x

reference.fake_ms = 1.0

def test_kernel(kernel_bench):
    kernel_bench(kernel, torch.ones(64), reference=reference, max_ratio=100)
"""


def test_a_new_result_is_set_beside_other_devices_figures(project: Project) -> None:
    project.pytester.makeconftest(SCRIPTED_CONFTEST + DEVICE_FROM_ENVIRONMENT)
    project.module(TIMED_REFERENCE)
    flag = f"--kernelperf-history={project.pytester.path / 'history.sqlite'}"
    project.monkeypatch.setenv("FAKE_DEVICE", "Old GPU")
    first = project.run(flag, "--kernelperf", ms=2.0)
    first.assert_outcomes(passed=1)
    assert "is new on Old GPU" not in first.stdout.str()  # nothing to set it beside yet
    project.monkeypatch.setenv("FAKE_DEVICE", "New GPU")
    second = project.run(flag, "--kernelperf", ms=3.0)
    second.assert_outcomes(passed=1)
    second.stdout.fnmatch_lines(
        [
            "kernelperf: test_kernels.py::test_kernel is new on New GPU: "
            "3.00x the reference here; 2.00x on Old GPU"
        ]
    )
    cold = project.run(flag, "--kernelperf", "--kernelperf-cache=cold", ms=5.0)
    cold.assert_outcomes(passed=1)
    assert "is new on New GPU" not in cold.stdout.str()  # no cold figure on another device yet


def test_a_kernels_past_runs_in_the_history_set_its_between_process_noise(project: Project) -> None:
    import json

    from pytest_kernelperf.verdict.noise import HISTORY_MIN_RUNS

    project.module()
    flag = f"--kernelperf-history={project.pytester.path / 'history.sqlite'}"
    report = project.pytester.path / "run.json"
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)

    def process_source(run: int) -> str:
        # Each run a little different: the history stores identical runs once.
        ms = 1.0 + run * 1e-5
        project.run(flag, "--kernelperf", f"--kernelperf-json={report}", ms=ms).assert_outcomes(passed=1)
        (result,) = json.loads(report.read_text())["results"]
        return str(result["comparison"]["process_source"])

    assert process_source(0).startswith("0.15% built in for 1 ms-10 ms kernels; plus 0.50% between occasions")
    for run in range(1, HISTORY_MIN_RUNS):
        process_source(run)
    learnt = process_source(HISTORY_MIN_RUNS)
    assert f"both scaled by {HISTORY_MIN_RUNS} past runs" in learnt
    # A regression's own failing runs do not widen the noise it is judged against: it keeps failing
    # (at a strict alpha, where a history widened by them would let a 5% slowdown pass).
    for _ in range(2):
        project.run(flag, "--kernelperf", "--kernelperf-alpha=0.0001", ms=1.05).assert_outcomes(failed=1)


def test_a_call_undetermined_run_after_run_is_named_as_not_gated(project: Project) -> None:
    # Rounds 30% apart: every run undetermined against the baseline.
    project.pytester.makeconftest(scripted_conftest(round_sd=0.3))
    project.module()
    flag = f"--kernelperf-history={project.pytester.path / 'history.sqlite'}"
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    for run in range(PERSISTENT_UNDETERMINED_RUNS):
        result = project.run(flag, "--kernelperf")
        result.assert_outcomes(passed=1)
        text = result.stdout.str()
        assert "not gated: 1 undetermined" in text
        last = run == PERSISTENT_UNDETERMINED_RUNS - 1
        assert (
            f"undetermined in its last {PERSISTENT_UNDETERMINED_RUNS} runs of the history" in text
        ) is last
