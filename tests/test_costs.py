"""Where a run's time goes: the phases of each kernel_bench call and of the run, in the JSON and with
--kernelperf-durations. Times are real but never asserted as speeds: only that every phase is
present and non-negative, and that the parts add up to at most their whole."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Project

from pytest_kernelperf.measure.clock import Clock, active
from pytest_kernelperf.measure.timing import Target, WallClockTimer, warm_up
from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.model.result import CALL_PHASES, CallCost
from pytest_kernelperf.results import cost, runfile
from pytest_kernelperf.results.cost import RUN_PHASES, CostOfTest, RunCost
from pytest_kernelperf.settings import SettingsError, resolve
from pytest_kernelperf.testing import sampling_plan

# Two tests, three kernel_bench calls; the second test also checks without timing.
MODULE = """
import torch

def kernel(x):
    return x * 2

kernel.fake_ms = 1.0

def test_one(kernel_bench):
    kernel_bench(kernel, torch.ones(64), reference=lambda x: x + x)

def test_two(kernel_bench):
    kernel_bench(kernel, torch.ones(32), name="a")
    kernel_bench(kernel, torch.ones(16), name="b")
"""

SLACK = 1e-6  # the file keeps seconds to the microsecond


def check_call_cost(data: dict[str, Any]) -> None:
    assert set(data) == {*CALL_PHASES, "total"}
    assert all(isinstance(v, float) and v >= 0 for v in data.values()), data
    assert sum(data[p] for p in CALL_PHASES) <= data["total"] + SLACK


def test_the_json_holds_the_seconds_of_every_call_and_of_the_run(project: Project) -> None:
    project.module(MODULE)
    project.run("--kernelperf-update-baselines", "--kernelperf-json=update.json").assert_outcomes(passed=2)
    result = project.run("--kernelperf", "--kernelperf-json=run.json")
    result.assert_outcomes(passed=2)
    assert "kernelperf durations" not in result.stdout.str()  # only when asked for
    path = project.pytester.path / "run.json"
    data = json.loads(path.read_text())

    results = data["results"]
    assert len(results) == 3
    for item in results:
        check_call_cost(item["cost_s"])
        assert item["cost_s"]["first_call"] > 0  # fn and its reference ran once before the timing
        assert item["cost_s"]["rounds"] > 0
    run = data["cost_s"]
    assert set(run) == {*RUN_PHASES, "total", "calls", "judged_measurements", "timed_measurements"} | {
        "per_judged_measurement"
    }
    assert all(run[p] >= 0 for p in RUN_PHASES)
    assert sum(run[p] for p in RUN_PHASES) <= run["total"] + SLACK
    assert run["startup"] > 0 and run["collection"] > 0 and run["tests"] > 0
    # The calls ran during the tests, one after another: their seconds lie within the tests'.
    check_call_cost(run["calls"])
    assert run["calls"]["total"] == pytest.approx(sum(r["cost_s"]["total"] for r in results), abs=1e-5)
    assert run["calls"]["total"] <= run["tests"] + SLACK
    assert run["judged_measurements"] == run["timed_measurements"] == 3
    assert run["per_judged_measurement"] == pytest.approx(run["total"] / 3)
    # Read back exactly (the derived figures are recomputed from the rest).
    assert runfile.loads(runfile.dumps(runfile.load(path))) == runfile.load(path)

    update = json.loads((project.pytester.path / "update.json").read_text())["cost_s"]
    assert update["judged_measurements"] == 0 and update["per_judged_measurement"] is None
    assert update["baseline_writes"] > 0


def test_durations_print_the_most_expensive_tests_and_the_run(project: Project) -> None:
    project.module(MODULE)
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=2)
    result = project.run("--kernelperf", "--kernelperf-durations=1")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*= kernelperf durations =*",
            "the slowest 1 of 2 tests using kernel_bench (seconds; first call = *",
            "duration  calls  context  first call  warm-up  rounds  memory  profile  judge  baseline I/O  "
            "other  test",
            "* test_kernels.py::test_*",
            "run: * s wall: start-up *, collection *, tests *, peak bandwidth *",
            "kernel_bench calls: * s in 3 calls: context *, first call *, warm-up *, rounds *",
            "* s per judged measurement (* s wall / 3 judged)",
        ]
    )
    everything = project.run("--kernelperf", "--kernelperf-durations=0")
    everything.stdout.fnmatch_lines(["the 2 of 2 tests using kernel_bench *"])


def test_durations_take_a_count() -> None:
    settings = resolve({"durations": "0"}, {}, rootdir=Path("."))
    assert settings.durations == 0
    assert resolve({}, {"durations": "5"}, rootdir=Path(".")).durations == 5
    with pytest.raises(SettingsError, match=r"--kernelperf-durations: expected 0 or more"):
        resolve({"durations": "-1"}, {}, rootdir=Path("."))
    with pytest.raises(SettingsError, match=r"kernelperf_durations in .*: expected a whole number"):
        resolve({}, {"durations": "all"}, rootdir=Path("."))


def test_the_warm_up_inside_a_measurement_is_told_apart_from_its_rounds() -> None:
    # The built-in timer's warm-up runs at least its planned seconds; the rest is the rounds.
    plan = sampling_plan(min_samples=3, min_time_s=0.001, max_time_s=0.002, warmup_s=0.01, rounds=2)
    clock = Clock()
    with clock.phase("rounds", less=("warmup",)), active(clock):
        WallClockTimer().measure(Target(lambda: sum(range(100)), DeviceInfo("cpu", "cpu")), plan)
    assert clock.seconds["warmup"] >= plan.warmup_s
    assert clock.seconds["rounds"] > 0
    # Outside a measurement, a warm-up is noted nowhere.
    warm_up(lambda: None, lambda: None, 0.001)
    assert Clock().seconds == {}


def test_a_phase_less_its_inner_phases() -> None:
    clock = Clock()
    with clock.phase("outer", less=("inner",)), clock.phase("inner"):
        time.sleep(0.002)
    assert clock.seconds["inner"] >= 0.002
    assert 0 <= clock.seconds["outer"] < clock.seconds["inner"]  # the sleep is the inner phase's only
    assert clock.seconds["outer"] + clock.seconds["inner"] <= clock.elapsed()


def test_a_call_cost_never_adds_up_to_more_than_its_total() -> None:
    # Each phase is rounded on its own: the total is raised to their sum rather than fall below it.
    made = CallCost.of({"first_call": 0.1234564, "rounds": 0.2000004}, 0.3234565)
    assert sum(made.phases().values()) <= made.total
    assert made.other == pytest.approx(0.0, abs=1e-6)
    assert cost.add_up([made, made]).first_call == pytest.approx(2 * made.first_call)


def test_the_process_start_comes_from_proc(tmp_path: Path) -> None:
    ticks = os.sysconf("SC_CLK_TCK")
    (tmp_path / "self").mkdir()
    # A command name with spaces and parentheses: the fields after the last ")" count.
    fields = ["S"] + ["0"] * 18 + [str(100 * ticks)] + ["0"] * 10
    (tmp_path / "self" / "stat").write_text(f"4242 (py (test) x) {' '.join(fields)}\n")
    (tmp_path / "uptime").write_text("112.50 200.00\n")
    assert cost.process_age(tmp_path) == pytest.approx(12.5)
    (tmp_path / "uptime").unlink()  # /proc cannot tell: the seconds since the module's import
    assert 0 <= cost.process_age(tmp_path) < 7 * 24 * 3600


def test_duration_lines_list_the_tests_and_the_run() -> None:
    one = CallCost(context=0.5, first_call=3.0, rounds=1.0, total=5.0)
    tests = cost.by_test([("t.py::slow", one), ("t.py::slow", one), ("t.py::quick", CallCost(total=0.5))])
    assert [t.nodeid for t in tests] == ["t.py::slow", "t.py::quick"]
    assert tests[0] == CostOfTest("t.py::slow", cost.add_up([one, one]), 2)
    run = RunCost(startup=2.0, collection=1.0, tests=11.0, peak_bandwidth=0.5, total=15.0)
    lines = cost.duration_lines(tests, run, top=1, judged=3, timed=4)
    assert lines[0].startswith("the slowest 1 of 2 tests")
    cells = "-  2  1.00  6.00  0.00  2.00  0.00  0.00  0.00  0.00  1.00  t.py::slow"
    assert lines[2].split() == cells.split()
    assert lines[3] == (
        "run: 15.00 s wall: start-up 2.00, collection 1.00, tests 11.00, peak bandwidth 0.50, other 0.50"
    )
    assert lines[-1] == "5 s per judged measurement (15.0 s wall / 3 judged)"
    assert (
        cost.judged_figure(15.0, 0, 4) == "3.75 s per timed measurement (15.0 s wall / 4 timed, none judged)"
    )


def test_an_updates_recording_processes_are_listed_with_their_phases() -> None:
    first = cost.ProcessCost(
        1, 18, 62.0, RunCost(4.2, 3.1, 54.7, total=70.0), CallCost(profile=30.5, rounds=8.0)
    )
    later = cost.ProcessCost(
        2, 18, 14.0, RunCost(4.0, 3.0, 6.5, total=13.6), CallCost(first_call=1.5, rounds=4.0)
    )
    lost = cost.ProcessCost(3, 2, 3.0, None, CallCost())  # handed nothing back
    lines = cost.recording_lines([first, later, lost])
    assert lines[0].startswith("recording processes (seconds; process 1 is this one")
    assert lines[1].split()[:6] == ["process", "recorded", "wall", "start-up", "collection", "tests"]
    first_cells = "1 18 62.00 4.20 3.10 54.70 0.00 0.00 0.00 8.00 0.00 30.50 0.00 0.00"
    later_cells = "2 18 14.00 4.00 3.00 6.50 0.00 1.50 0.00 4.00 0.00 0.00 0.00 0.00"
    assert lines[2].split() == first_cells.split() and lines[3].split() == later_cells.split()
    assert lines[4].split()[:6] == ["3", "2", "3.00", "-", "-", "-"]
    assert cost.recording_lines([first]) == []  # one process: the run's own lines say it all


def test_a_package_compiled_from_source_is_named_when_python_writes_no_bytecode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util
    import py_compile
    import sys

    from pytest_kernelperf.plugins import costs

    source = tmp_path / "bulky_package.py"
    source.write_text("VALUE = 1\n")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "bulky_package", raising=False)
    monkeypatch.setattr(cost, "BYTECODE_PACKAGES", ("bulky_package", "not_installed"))
    # Found without importing it (an xdist controller imports no torch); then imported.
    assert costs.uncached_packages() == ["bulky_package"] and "bulky_package" not in sys.modules
    __import__("bulky_package")
    assert costs.uncached_packages() == ["bulky_package"]
    note = cost.bytecode_note(sys.dont_write_bytecode, costs.uncached_packages())
    assert note is not None and "bulky_package has none cached" in note
    assert "PYTHONDONTWRITEBYTECODE" in note
    # With its bytecode in the cache, or with Python writing bytecode, nothing is said.
    py_compile.compile(str(source), cfile=importlib.util.cache_from_source(str(source)))
    assert costs.uncached_packages() == []
    assert cost.bytecode_note(False, ["torch"]) is None
    lines = cost.duration_lines([], RunCost(total=1.0), top=0, judged=0, timed=0, notes=[note])
    assert lines[-1] == f"note: {note}"
