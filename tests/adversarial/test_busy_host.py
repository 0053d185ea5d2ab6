"""A loaded host: unchanged code on a busy CPU read `slower` by hundreds of percent, and a baseline
whose rounds spread 27x was recorded without a word. A verdict the host made meaningless is
`unreliable` with the reason, and a baseline recorded that way says so as it is written. The
load is scripted (ScriptedTimer's `fake_load`): the machine running these tests decides nothing."""

from __future__ import annotations

import pytest
from conftest import Project, scripted_conftest

from pytest_kernelperf.model.baseline import BaselineEntry, MetricRecord
from pytest_kernelperf.model.result import Verdict
from pytest_kernelperf.verdict.busy_host import BUSY_LOAD_PER_CORE, ROUND_SPREAD_LIMIT, host_timed
from pytest_kernelperf.verdict.judge import Rounds, judge
from pytest_kernelperf.verdict.judgement import JudgementContext, Measured, judge_measurement

MODULE = """
import os

import torch

def kernel(x):
    return x * 2

kernel.fake_ms = float(os.environ.get("FAKE_MS", "1.0"))
kernel.fake_load = float(os.environ["FAKE_LOAD"]) if "FAKE_LOAD" in os.environ else None

def test_kernel(kernel_bench):
    kernel_bench(kernel, torch.linspace(-3, 3, 64), reference=lambda x: x + x)
"""

# A round-to-round SD at which this seed's rounds spread far beyond ROUND_SPREAD_LIMIT.
WILD_ROUNDS = scripted_conftest(round_sd=1.0, seed=3)


@pytest.fixture
def loaded(project: Project) -> Project:
    project.module(MODULE)
    project.monkeypatch.delenv("FAKE_LOAD", raising=False)
    return project


def test_a_slower_reading_on_a_busy_host_is_unreliable_not_slower(loaded: Project) -> None:
    loaded.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    loaded.monkeypatch.setenv("FAKE_LOAD", "1.8")

    result = loaded.run("--kernelperf", ms=5.0)

    result.assert_outcomes(passed=1, warnings=1)
    out = result.stdout.str()
    assert "performance regression" not in out
    # One line warned, pointing at the table's note, which says why.
    warned = "test_kernels.py::test_kernel: unreliable +400.0%: not judged; see the notes under the"
    assert warned in out
    assert "the host was busy (load 1.8 per core, beyond 1)" in out
    strict = loaded.run("--kernelperf", "--kernelperf-strict", ms=5.0)
    strict.assert_outcomes(failed=1)  # --kernelperf-strict fails it, as every unjudged verdict


def test_a_busy_host_leaves_a_same_verdict_as_it_is(loaded: Project) -> None:
    loaded.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    loaded.monkeypatch.setenv("FAKE_LOAD", "1.8")

    result = loaded.run("--kernelperf", "-v")

    result.assert_outcomes(passed=1)
    assert "the host was busy" not in result.stdout.str()


def test_a_quiet_host_still_fails_a_slower_call(loaded: Project) -> None:
    loaded.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    loaded.monkeypatch.setenv("FAKE_LOAD", str(BUSY_LOAD_PER_CORE))  # at the bar, not beyond it

    loaded.run("--kernelperf", ms=5.0).assert_outcomes(failed=1)


def test_a_baseline_recorded_on_a_busy_host_says_so(loaded: Project) -> None:
    loaded.monkeypatch.setenv("FAKE_LOAD", "1.8")

    result = loaded.run("--kernelperf-update-baselines")

    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        ["*test_kernels.py::test_kernel recorded as a baseline, but the host was busy (load 1.8 per core*"]
    )
    assert loaded.baseline_file.exists()  # recorded all the same: the warning says what to do


def test_a_baseline_whose_rounds_spread_wildly_says_so_and_judges_nothing(loaded: Project) -> None:
    loaded.pytester.makeconftest(WILD_ROUNDS)

    update = loaded.run("--kernelperf-update-baselines")

    update.assert_outcomes(passed=1, warnings=1)
    update.stdout.fnmatch_lines(
        ["*recorded as a baseline, but its rounds lie *x apart (* to * ms), beyond 4x*"]
    )
    loaded.pytester.makeconftest(scripted_conftest())
    result = loaded.run("--kernelperf", ms=5.0)
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*test_kernel: unreliable *: not judged; see the notes under the kernelperf table",
            "*the baseline's rounds lie *x apart*recorded on a busy host*",
        ]
    )


def _rounds(method: str, level: float) -> Rounds:
    return Rounds(method, tuple(level * (1 + 0.001 * i) for i in range(8)))


def test_a_device_time_is_not_made_unreliable_by_cpu_load() -> None:
    assert not host_timed("cupti", "cuda") and not host_timed("cuda-graph", "cuda")
    assert host_timed("cuda-event", "cuda") and host_timed("wall-clock", "cpu")
    record = MetricRecord("cupti", 2.0, (2.0, 2.0), 8, (2.0,), rounds_ms=_rounds("cupti", 2.0).rounds_ms)
    base = MetricRecord("cupti", 1.0, (1.0, 1.0), 8, (1.0,), rounds_ms=_rounds("cupti", 1.0).rounds_ms)
    entry = BaselineEntry(device_time=base, recorded="2026-12-04T00:00:00Z")
    context = JudgementContext(threshold=0.05, alpha=0.01, host_threshold=0.1)
    on_gpu, _ = judge_measurement(
        Measured(record, host_timed=False), entry, context, device="gpu", host_load=3.0
    )
    on_host, _ = judge_measurement(
        Measured(record, host_timed=True), entry, context, device="gpu", host_load=3.0
    )
    assert on_gpu.verdict is Verdict.SLOWER
    assert on_host.verdict is Verdict.UNRELIABLE


def test_rounds_spread_make_any_judged_verdict_unreliable() -> None:
    wide = Rounds("cupti", (1.0, 1.1, 1.0, ROUND_SPREAD_LIMIT * 1.01, 1.05))
    narrow = _rounds("cupti", 1.0)
    for current, baseline in ((wide, narrow), (narrow, wide)):
        comparison = judge(current, baseline, device="gpu", threshold=0.05, alpha=0.01)
        assert comparison.verdict is Verdict.UNRELIABLE
        assert f"beyond {ROUND_SPREAD_LIMIT:g}x" in comparison.reason
    assert judge(narrow, narrow, device="gpu", threshold=0.05, alpha=0.01).verdict is Verdict.SAME


def test_rounds_far_apart_do_not_hide_a_slowdown_every_one_of_them_shows() -> None:
    # Every round at least 4.75x the baseline's slowest: a regression that also made the kernel erratic.
    erratic = Rounds("cupti", (4.75, 6.0, 9.0, 14.0, 22.7))
    comparison = judge(erratic, _rounds("cupti", 1.0), device="gpu", threshold=0.005, alpha=0.01)
    assert comparison.verdict is Verdict.SLOWER
