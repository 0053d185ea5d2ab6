"""Progress on long steps: a step that runs longer than a few seconds says so while it runs, and how
long it took, on pytest's terminal.

A run that sits silent for a minute looks hung: a kernel's first call compiling, JIT-building or
autotuning, a CUDA extension built while a test module is imported or a fixture set up, the
peak-bandwidth measurement, later recording processes. Each such step runs inside `step(what)`:
after `KERNELPERF_PROGRESS_AFTER` seconds (default 5) of it, a timer thread writes
`kernelperf: <what> ...` on a fresh line; when the step ends, `kernelperf: <what> ... 12.3 s`.
A step shorter than that writes nothing.

Only the main process writes (plugin.py enables it there): an xdist worker's or an isolated child's
output is not the user's terminal. Under pytest-xdist the controller says instead which of its
workers' tests has run longer than the threshold, and how long it took. Lines go through pytest's
terminal reporter on a fresh line (`ensure_newline`, so never inside the progress dots) with output
capturing suspended for the line, so a test's own captured output stays captured and the line
reaches the terminal. The timer thread writes only while its step runs (a lock orders it against
the step's end, which comes before pytest suspends capturing at the end of the collector or test
phase), and nothing is written once the session has ended. While the line is written, output the
test itself writes at that instant is not captured: the one race of writing during a test.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

AFTER_VARIABLE = "KERNELPERF_PROGRESS_AFTER"
CAPTURE_FIXTURES = frozenset({"capsys", "capsysbinary", "capfd", "capfdbinary", "capteesys"})
DEFAULT_AFTER_S = 5.0


def threshold() -> float:
    """Seconds of a step before it is announced: KERNELPERF_PROGRESS_AFTER, else 5; infinity (never
    announce) for `inf` or a wait longer than a timer thread can (threading.TIMEOUT_MAX)."""
    try:
        value = float(os.environ.get(AFTER_VARIABLE, DEFAULT_AFTER_S))
    except ValueError:
        return DEFAULT_AFTER_S
    if not value >= 0:  # negative or nan
        return DEFAULT_AFTER_S
    return math.inf if value >= threading.TIMEOUT_MAX else value


class _Step:
    def __init__(self, what: str) -> None:
        self.what = what
        self.began = time.monotonic()
        self.announced = False
        self.finished = False
        self.timer: threading.Timer | None = None


class Progress:
    """Lines about long steps on the terminal of the main process; a pytest plugin object (its hooks
    watch test modules' imports in timed runs and the setup of tests that use kernel_bench)."""

    def __init__(self, config: pytest.Config, *, enabled: bool) -> None:
        self.config = config
        self.enabled = enabled
        self.after = threshold()
        self.timed_run = False  # set by the session: module imports are watched in timed runs only
        self._lock = threading.Lock()
        self._closed = False
        self._timers: set[threading.Timer] = set()
        self._remote: dict[str, list[_Step]] = {}  # under xdist: the workers' tests running

    @contextlib.contextmanager
    def step(self, what: str, *, announce: bool = False, watch: bool = True) -> Iterator[None]:
        """Run the block as a step named `what`: announced after the threshold (at once with
        `announce`; never while it runs without `watch`), and its duration written when it ends if
        it was announced or took longer."""
        state = self._begin(what, announce=announce, watch=watch)
        try:
            yield
        finally:
            if state is not None:
                self._end(state)

    def _begin(self, what: str, *, announce: bool = False, watch: bool = True) -> _Step | None:
        """A step begun: announced at once, or by a timer after the threshold; None when nothing
        is written (not the main process, or after the session)."""
        if not self.enabled or self._closed:
            return None
        state = _Step(what)
        if announce:
            self._started(state)
        elif watch and math.isfinite(self.after):
            state.timer = threading.Timer(self.after, self._started, (state,))
            state.timer.daemon = True
            with self._lock:
                self._timers.add(state.timer)
            state.timer.start()
        return state

    def _end(self, state: _Step) -> None:
        """The step's end: its duration written if it was announced or took the threshold."""
        if state.timer is not None:
            state.timer.cancel()
        with self._lock:
            if state.timer is not None:
                self._timers.discard(state.timer)
            state.finished = True
            spent = time.monotonic() - state.began
            if state.announced or spent >= self.after:
                self._write(f"kernelperf: {state.what} ... {_duration(spent)}")

    def _started(self, state: _Step) -> None:
        with self._lock:
            if state.finished:
                return
            state.announced = True
            self._write(f"kernelperf: {state.what} ...")

    def _write(self, line: str) -> None:
        """One line on the terminal, on a fresh line, outside any capturing; the caller holds the lock."""
        if self._closed:
            return
        manager = self.config.pluginmanager
        reporter = manager.get_plugin("terminalreporter")
        if reporter is None or self.config.getoption("verbose") < -1:  # -qq: only the summary
            return
        capture = manager.get_plugin("capturemanager")
        suspended = capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()
        with suspended:
            reporter.ensure_newline()  # ends a line of progress dots
            writer = getattr(reporter, "_tw", None)
            if getattr(writer, "width_of_current_line", 0):  # "collecting ... " and the like
                reporter.line("")
            reporter.write_line(line)
            reporter.flush()

    def close(self) -> None:
        """No line after this: pending announcements are cancelled."""
        with self._lock:
            self._closed = True
            for timer in self._timers:
                timer.cancel()
            self._timers.clear()

    # -- pytest hooks: steps outside kernel_bench ----------------------------------------------

    # Both wrappers run inside pytest's capturing of the collector or the test (trylast: innermost),
    # so a step always ends, waiting for a line being written, before pytest suspends capturing and
    # reads what was captured.

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Any:
        """Importing a test module: where a CUDA extension built at import time spends its minute."""
        if not (self.timed_run and isinstance(collector, pytest.Module)):
            return (yield)
        with self.step(f"importing {collector.nodeid} (collection)"):
            return (yield)

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Any:
        """Setting up a test that uses kernel_bench: its fixtures may build or compile kernels. A
        test that also captures with capsys or capfd has its capturing set up by the main thread
        meanwhile: its setup is timed, but not announced from the timer thread."""
        names = getattr(item, "fixturenames", ())
        if "kernel_bench" not in names:
            return (yield)
        with self.step(f"setting up {item.nodeid}", watch=not CAPTURE_FIXTURES.intersection(names)):
            return (yield)

    # -- under pytest-xdist, on the controller: its workers' tests --------------------------------

    # A worker's own steps cannot reach this terminal, so the controller says which of their tests
    # runs long, by name, from the start and end of each test that the workers report. Its main
    # thread waits for those reports meanwhile; a line may land beside one of its result lines.

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        if self.timed_run and self.config.pluginmanager.has_plugin("dsession"):
            state = self._begin(f"{nodeid} (on an xdist worker)")
            if state is not None:  # `--dist each` runs one test on every worker at once
                self._remote.setdefault(nodeid, []).append(state)

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        running = self._remote.get(nodeid)
        if running:
            self._end(running.pop(0))
            if not running:
                del self._remote[nodeid]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A worker that crashed sends no end of its test, only this report (phase "???"): it
        ends one of the test's entries, as an end would (under `--dist each` another worker may
        still run the same test)."""
        if report.when == "???":  # type: ignore[comparison-overlap]
            self.pytest_runtest_logfinish(report.nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        """After the end of the session's work (the peak bandwidth and recording processes are steps
        of it, written from the main thread): nothing more."""
        self.close()

    def pytest_unconfigure(self) -> None:
        self.close()


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 100 else f"{seconds:.0f} s"
