"""Progress on long steps: a step longer than the threshold says what it is doing while it runs and
how long it took, on a fresh line, outside the test's captured output, from the main process only.
The threshold (5 s) is lowered through KERNELPERF_PROGRESS_AFTER, so no test waits 5 s."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from conftest import SUBPROCESS_ARGS, Project, seed_peak_cache

from pytest_kernelperf.plugins import progress
from pytest_kernelperf.plugins.progress import AFTER_VARIABLE, Progress

# test_slow's first call takes a while (a compile, say); test_quick's nothing. Both print.
SLOW_FIRST_CALL = """
import time

import torch

calls = []

def slow(x):
    calls.append(1)
    if len(calls) == 1:
        time.sleep(0.25)
    return x * 2

def test_slow(kernel_bench):
    print("the test's own output")
    kernel_bench(slow, torch.ones(8), reference=lambda x: x + x)

def test_quick(kernel_bench):
    kernel_bench(lambda x: x * 2, torch.ones(8), reference=lambda x: x + x)
"""
FIRST_CALL = "first call of test_kernels.py::test_slow (compile, JIT, autotune)"

# A timed kernel whose every call takes 0.3 s, under the scripted timer.
SLOW_TIMED = """
import time

import torch

def slow(x):
    time.sleep(0.3)
    return x * 2

slow.fake_ms = 1.0

def test_slow(kernel_bench):
    kernel_bench(slow, torch.ones(8), reference=lambda x: x + x)

def test_plain():
    pass
"""


def test_a_slow_first_call_is_said_while_it_runs_and_timed(project: Project) -> None:
    project.monkeypatch.setenv(AFTER_VARIABLE, "0.02")
    project.module(SLOW_FIRST_CALL)
    result = project.run("-q", "-rP")
    result.assert_outcomes(passed=2)
    lines = result.stdout.lines
    started = lines.index(f"kernelperf: {FIRST_CALL} ...")
    done = next(i for i, line in enumerate(lines) if line.startswith(f"kernelperf: {FIRST_CALL} ... "))
    assert started < done and re.fullmatch(r".* \.\.\. [0-9]+\.[0-9] s", lines[done])
    assert not any("test_quick" in line for line in lines if line.startswith("kernelperf:"))
    # Each on a line of its own, the progress dots around them; the test's own output stays in its
    # captured section, and no progress line went there.
    assert all(line.startswith("kernelperf: ") for line in lines[started : done + 1])
    assert any(line.startswith(".") and "[100%]" in line for line in lines[done:])
    captured = result.stdout.str().split("Captured stdout call", 1)[1]
    assert "the test's own output" in captured and "kernelperf: first call" not in captured


def test_steps_shorter_than_the_threshold_say_nothing(project: Project) -> None:
    project.monkeypatch.delenv(AFTER_VARIABLE, raising=False)
    project.module(SLOW_FIRST_CALL)  # 0.25 s, under the default 5 s
    result = project.run("-q")
    result.assert_outcomes(passed=2)
    assert not [line for line in result.stdout.lines if " ..." in line]


# A module that takes a while to import (an extension built at import time) and a fixture that
# takes a while to set up (one built in a fixture); the second test also captures with capsys.
SLOW_IMPORT_AND_SETUP = """
import time

import pytest
import torch

time.sleep(0.1)

@pytest.fixture
def built():
    time.sleep(0.1)
    return lambda x: x * 2

def kernel(x):
    return x * 2

kernel.fake_ms = 1.0

def test_built(kernel_bench, built):
    kernel_bench(kernel, torch.ones(8), reference=built)

def test_captured(kernel_bench, built, capsys):
    print("captured by capsys")
    kernel_bench(kernel, torch.ones(8), name="again", reference=built)
    assert capsys.readouterr().out == "captured by capsys\\n"
"""


def test_slow_imports_and_fixtures_are_said_in_a_timed_run(project: Project) -> None:
    project.monkeypatch.setenv(AFTER_VARIABLE, "0.02")
    project.module(SLOW_IMPORT_AND_SETUP)
    seed_peak_cache(project.pytester.path)  # the peak is read, not measured: no step of its own
    result = project.run("--kernelperf")
    result.assert_outcomes(passed=2)
    lines = result.stdout.lines
    assert "kernelperf: importing test_kernels.py (collection) ..." in lines
    assert "kernelperf: setting up test_kernels.py::test_built ..." in lines
    # capsys is set up on the main thread meanwhile: timed, not announced while it runs.
    assert "kernelperf: setting up test_kernels.py::test_captured ..." not in lines
    said = [line for line in lines if line.startswith("kernelperf: ") and line.endswith(" s")]
    assert [line.split(" ... ")[0] for line in said] == [
        "kernelperf: importing test_kernels.py (collection)",
        "kernelperf: setting up test_kernels.py::test_built",
        "kernelperf: setting up test_kernels.py::test_captured",
    ]
    # Capturing was left as pytest had it: its own lines and the table reached the terminal.
    result.stdout.fnmatch_lines(["collected 2 items", "*= kernelperf =*", "kernelperf: 2 new"])


@pytest.mark.slow
def test_under_xdist_the_controller_says_which_workers_test_runs_long(project: Project) -> None:
    project.monkeypatch.setenv(AFTER_VARIABLE, "0.1")
    project.module(SLOW_TIMED)
    seed_peak_cache(project.pytester.path)
    result = project.pytester.runpytest_subprocess(*SUBPROCESS_ARGS, "--kernelperf", "-n", "2", "-q")
    result.assert_outcomes(passed=2)
    text = result.stdout.str()
    assert "kernelperf: first call" not in text  # the workers' own steps never reach the terminal
    assert re.search(
        r"^kernelperf: test_kernels\.py::test_slow \(on an xdist worker\) \.\.\. [0-9.]+ s$", text, re.M
    )


class FakeReporter:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.newlines = 0

    def ensure_newline(self) -> None:
        self.newlines += 1

    def write_line(self, line: str) -> None:
        self.lines.append(line)

    def line(self, text: str) -> None:
        self.lines.append(text)

    def flush(self) -> None:
        pass


class FakeConfig:
    """What Progress reads of pytest's config: its plugins and the verbosity."""

    def __init__(self, reporter: FakeReporter) -> None:
        self.pluginmanager = self
        self.reporter = reporter

    def get_plugin(self, name: str) -> Any:
        return self.reporter if name == "terminalreporter" else None

    def getoption(self, name: str) -> int:
        return 0

    def has_plugin(self, name: str) -> bool:
        return name == "dsession" and self.distributed

    distributed = False


def wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "the announcement never came"
        time.sleep(0.005)


def make(
    monkeypatch: pytest.MonkeyPatch, after: str, *, enabled: bool = True
) -> tuple[Progress, FakeReporter]:
    monkeypatch.setenv(AFTER_VARIABLE, after)
    reporter = FakeReporter()
    return Progress(FakeConfig(reporter), enabled=enabled), reporter  # type: ignore[arg-type]


def test_a_long_step_is_announced_then_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    watch, reporter = make(monkeypatch, "0.01")
    with watch.step("compiling x"):
        wait_for(lambda: bool(reporter.lines))  # the timer thread said it while the step ran
    assert reporter.lines[0] == "kernelperf: compiling x ..."
    assert re.fullmatch(r"kernelperf: compiling x \.\.\. [0-9.]+ s", reporter.lines[1])
    assert reporter.newlines == 2  # each on a fresh line


def test_a_short_step_is_never_announced(monkeypatch: pytest.MonkeyPatch) -> None:
    watch, reporter = make(monkeypatch, "0.05")
    with watch.step("quick"):
        pass
    time.sleep(0.1)  # past the threshold: the timer was cancelled
    assert reporter.lines == [] and not [t for t in threading.enumerate() if isinstance(t, threading.Timer)]


def test_nothing_is_written_once_the_session_has_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    watch, reporter = make(monkeypatch, "0.05")
    with watch.step("cut short"):
        watch.close()  # the session ends while a step runs
        time.sleep(0.1)
    with watch.step("after the end", announce=True):
        pass
    assert reporter.lines == []


def test_a_process_that_does_not_write_says_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    watch, reporter = make(monkeypatch, "0", enabled=False)  # an xdist worker, an isolated child
    with watch.step("anything", announce=True):
        time.sleep(0.01)
    assert reporter.lines == []


def test_the_threshold_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(AFTER_VARIABLE, "1.5")
    assert progress.threshold() == 1.5
    for bad in ("soon", "-1"):
        monkeypatch.setenv(AFTER_VARIABLE, bad)
        assert progress.threshold() == progress.DEFAULT_AFTER_S
    monkeypatch.delenv(AFTER_VARIABLE)
    assert progress.threshold() == 5.0


@pytest.mark.slow
def test_an_isolated_test_running_long_is_said_by_its_parent(project: Project) -> None:
    project.monkeypatch.setenv(AFTER_VARIABLE, "0.02")
    project.module(SLOW_FIRST_CALL)
    seed_peak_cache(project.pytester.path)
    result = project.pytester.runpytest_subprocess(*SUBPROCESS_ARGS, "--kernelperf-isolate", "-q")
    result.assert_outcomes(passed=2)
    lines = result.stdout.lines
    assert "kernelperf: test_kernels.py::test_slow in a fresh process ..." in lines
    assert any(
        re.fullmatch(r"kernelperf: test_kernels.py::test_slow in a fresh process \.\.\. [0-9.]+ s", x)
        for x in lines
    )
    assert "kernelperf: first call" not in result.stdout.str()  # the child says nothing itself


def xdist_controller(monkeypatch: pytest.MonkeyPatch, after: str) -> tuple[Progress, FakeReporter]:
    """Progress as the controller of a pytest-xdist run that times kernels sees it."""
    watch, reporter = make(monkeypatch, after)
    watch.config.distributed = True  # type: ignore[attr-defined]
    watch.timed_run = True
    return watch, reporter


def test_the_xdist_controller_announces_a_workers_long_test_and_times_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    watch, reporter = xdist_controller(monkeypatch, "0.01")
    watch.pytest_runtest_logstart("test_k.py::test_long")
    wait_for(lambda: bool(reporter.lines))
    assert reporter.lines == ["kernelperf: test_k.py::test_long (on an xdist worker) ..."]
    watch.pytest_runtest_logfinish("test_k.py::test_long")
    assert re.fullmatch(
        r"kernelperf: test_k\.py::test_long \(on an xdist worker\) \.\.\. [0-9.]+ s", reporter.lines[-1]
    )
    # A test that ends before the threshold says nothing; nor does a run that is not distributed.
    watch.after = 60.0
    watch.pytest_runtest_logstart("test_k.py::test_short")
    watch.pytest_runtest_logfinish("test_k.py::test_short")
    watch.config.distributed = False  # type: ignore[attr-defined]
    watch.pytest_runtest_logstart("test_k.py::test_plain")
    assert len(reporter.lines) == 2 and not watch._remote


def test_a_crashed_workers_test_and_a_test_on_two_workers_leave_nothing_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    watch, reporter = xdist_controller(monkeypatch, "60")
    # `--dist each`: the same test on two workers; each end ends one.
    watch.pytest_runtest_logstart("test_k.py::test_each")
    watch.pytest_runtest_logstart("test_k.py::test_each")
    watch.pytest_runtest_logfinish("test_k.py::test_each")
    assert len(watch._remote["test_k.py::test_each"]) == 1
    watch.pytest_runtest_logfinish("test_k.py::test_each")
    # A worker that crashed: xdist sends only a report of phase "???" for its test; under
    # `--dist each` the same test may still run on another worker.
    watch.pytest_runtest_logstart("test_k.py::test_crash")
    watch.pytest_runtest_logstart("test_k.py::test_crash")
    phase: Any = "???"
    crash = pytest.TestReport(
        "test_k.py::test_crash", ("test_k.py", None, ""), {}, "failed", "crashed", phase
    )
    watch.pytest_runtest_logreport(crash)
    assert len(watch._remote["test_k.py::test_crash"]) == 1
    watch.pytest_runtest_logreport(crash)
    assert not watch._remote and not watch._timers and reporter.lines == []
