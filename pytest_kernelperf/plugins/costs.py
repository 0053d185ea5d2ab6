"""Where the run's time goes, as pytest hooks: the run's clock through start-up, collection and the
tests, each test's duration from pytest's reports, and the `--kernelperf-durations=N` section.

The phases after the tests (recording processes, baseline writes, the peak bandwidth, reports) are
timed where they happen (run.py, reporting.py) on the same clock, `KernelperfSession.clock`; each
kernel_bench call times its own phases (kernel_bench.py). The figures are results/cost.py's.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Generator, Sequence

import pytest

from pytest_kernelperf.plugins.session import KernelperfSession
from pytest_kernelperf.results import cost
from pytest_kernelperf.results.runfile import measurement_counts


class RunCosts:
    def __init__(self, session: KernelperfSession) -> None:
        self.session = session
        self.durations: dict[str, float] = {}  # node id -> setup + call + teardown, in seconds
        self._tests_began: float | None = None

    @property
    def clock(self) -> cost.RunClock:
        return self.session.clock

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self) -> None:
        self.clock.add("startup", self.clock.elapsed())

    @pytest.hookimpl(wrapper=True)
    def pytest_collection(self) -> Generator[None, object, object]:
        try:
            with self.clock.phase("collection"):
                return (yield)
        finally:
            self._tests_began = time.perf_counter()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        """Before the end of the session's work (run.py): the tests are over."""
        if self._tests_began is not None:
            self.clock.add("tests", time.perf_counter() - self._tests_began)
            self._tests_began = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.durations[report.nodeid] = self.durations.get(report.nodeid, 0.0) + report.duration

    def lines(self, top: int, processes: Sequence[cost.ProcessCost] = ()) -> list[str]:
        """The --kernelperf-durations section: the `top` most expensive tests (0: all) that used
        kernel_bench, with the phases of their calls, the run's phases and the seconds per judged
        measurement; in an update, each recording process's phases (`processes`)."""
        results = self.session.results
        tests = cost.by_test(((r.nodeid, r.cost) for r in results if r.cost is not None), self.durations)
        judged, timed = measurement_counts(results)
        note = cost.bytecode_note(sys.dont_write_bytecode, uncached_packages())
        lines = cost.duration_lines(
            tests, self.clock.run_cost(), top=top, judged=judged, timed=timed, notes=[note] if note else []
        )
        return lines + cost.recording_lines(processes)


def uncached_packages() -> list[str]:
    """The packages of cost.BYTECODE_PACKAGES installed here whose bytecode is not in the cache
    (sys.pycache_prefix included): a process importing one compiles it from source. Found without
    importing them: an xdist controller imports no torch, its workers do."""
    uncached = []
    for name in cost.BYTECODE_PACKAGES:
        loaded = sys.modules.get(name)
        try:
            spec = loaded.__spec__ if loaded is not None else importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        source = spec.origin if spec is not None else None
        if source and source.endswith(".py") and not os.path.exists(importlib.util.cache_from_source(source)):
            uncached.append(name)
    return uncached
