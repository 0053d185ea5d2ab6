"""Where a run's time goes: the seconds of each phase of a kernel_bench call, and of the run.

GPU time is what a team pays for; most of a run is not the measurement itself but start-up,
compilation, warm-up, profiling and file I/O. Each `kernel_bench` call keeps a `Clock` of its
phases (measure/clock.py; `CallCost`, per result, in model/result.py); the session keeps one for
the run (`RunCost`). Both go into the run
JSON (`cost_s`) and, with `--kernelperf-durations=N`, onto the terminal with the figure that sums
up a run's cost: seconds of wall time per judged measurement.

The warm-up is inside the timer (measure/timing.py), which reports its seconds to the clock active
around the measurement (measure/clock.py). Pure: no pytest, no torch.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from pytest_kernelperf.measure.clock import Clock
from pytest_kernelperf.model.result import CALL_PHASES, SECOND_DIGITS, CallCost, rounded_seconds

CALL_TITLES = {
    "context": "context",
    "first_call": "first call",
    "warmup": "warm-up",
    "rounds": "rounds",
    "memory": "memory",
    "profile": "profile",
    "judge": "judge",
    "baseline_io": "baseline I/O",
}
# The phases of a run outside the tests, in order (`RunCost`'s fields but `total`).
RUN_PHASES = (
    "startup",
    "collection",
    "tests",
    "recording_processes",
    "baseline_writes",
    "peak_bandwidth",
    "reports",
)
RUN_TITLES = {
    "startup": "start-up",
    "collection": "collection",
    "tests": "tests",
    "recording_processes": "recording processes",
    "baseline_writes": "baseline writes",
    "peak_bandwidth": "peak bandwidth",
    "reports": "reports",
}


def add_up(costs: Iterable[CallCost]) -> CallCost:
    """Several calls' costs, phase by phase."""
    sums = dict.fromkeys((f.name for f in fields(CallCost)), 0.0)
    for cost in costs:
        for name in sums:
            sums[name] += getattr(cost, name)
    return CallCost(**{name: round(value, SECOND_DIGITS) for name, value in sums.items()})


@dataclass(frozen=True)
class RunCost:
    """Seconds of a run, by phase; `total` is the wall time from the process's start to the moment
    the figures were taken. Under pytest-xdist these are the controller's: its workers' collection
    runs alongside, within `tests`; waiting for them to start and to end is in no phase, and the
    durations line shows it as `other`."""

    startup: float = 0.0  # process start to the session's start: interpreter, imports, plugins
    collection: float = 0.0
    tests: float = 0.0  # from the end of collection to the end of the session: every test
    recording_processes: float = 0.0  # --kernelperf-record-processes: the later processes
    baseline_writes: float = 0.0
    peak_bandwidth: float = 0.0  # the copy bandwidth, measured (or read from its cache)
    reports: float = 0.0  # report files, the run history, the terminal table
    total: float = 0.0

    def phases(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in RUN_PHASES}


class RunClock(Clock):
    """The run's clock, started at the process's start (not at the plugin's import)."""

    def __init__(self) -> None:
        super().__init__(began=time.perf_counter() - process_age())

    def run_cost(self) -> RunCost:
        phases = {name: rounded_seconds(self.seconds.get(name, 0.0)) for name in RUN_PHASES}
        return RunCost(
            **phases, total=max(rounded_seconds(self.elapsed()), round(sum(phases.values()), SECOND_DIGITS))
        )


def process_age(proc: Path = Path("/proc")) -> float:
    """Seconds since this process started, from /proc (Linux): the kernel's start time of the
    process against the system's uptime, to the clock tick (10 ms). Where /proc cannot tell, the
    seconds since this module was imported, which pytest does while it loads its plugins."""
    try:
        stat = (proc / "self" / "stat").read_text(encoding="ascii")
        uptime = float((proc / "uptime").read_text(encoding="ascii").split()[0])
        # The command name (field 2) may hold spaces and parentheses: fields after the last ")".
        started_ticks = int(stat.rsplit(")", 1)[1].split()[19])
        age = uptime - started_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.perf_counter() - _IMPORTED
    return age if 0 <= age < 7 * 24 * 3600 else time.perf_counter() - _IMPORTED


_IMPORTED = time.perf_counter()


# --- the terminal: --kernelperf-durations -----------------------------------------------------


@dataclass(frozen=True)
class CostOfTest:
    """What one test spent in its kernel_bench calls, and its own duration where pytest told it."""

    nodeid: str
    calls: CallCost
    count: int  # kernel_bench calls
    duration: float | None = None  # setup + call + teardown, from pytest's reports


def by_test(
    costs: Iterable[tuple[str, CallCost]], durations: Mapping[str, float] | None = None
) -> list[CostOfTest]:
    """Per test, its calls' costs added up; most expensive first (by its own duration where known,
    else by its calls' total)."""
    grouped: dict[str, list[CallCost]] = {}
    for nodeid, cost in costs:
        grouped.setdefault(nodeid, []).append(cost)
    durations = durations or {}
    tests = [
        CostOfTest(nodeid, add_up(calls), len(calls), durations.get(nodeid))
        for nodeid, calls in grouped.items()
    ]
    return sorted(tests, key=lambda t: (-(t.duration if t.duration is not None else t.calls.total), t.nodeid))


def judged_figure(total_s: float, judged: int, timed: int) -> str:
    """ "0.31 s per judged measurement (12.4 s wall / 40 judged measurements)"."""
    if judged:
        return f"{total_s / judged:.3g} s per judged measurement ({total_s:.1f} s wall / {judged} judged)"
    if timed:
        return (
            f"{total_s / timed:.3g} s per timed measurement ({total_s:.1f} s wall / {timed} timed, "
            "none judged)"
        )
    return f"no timed measurements ({total_s:.1f} s wall)"


def duration_lines(
    tests: Sequence[CostOfTest],
    run: RunCost,
    *,
    top: int,
    judged: int,
    timed: int,
    notes: Sequence[str] = (),
) -> list[str]:
    """The `--kernelperf-durations=N` section: the N most expensive tests with their phase split
    (all of them for N = 0), the run's phases and the kernel_bench phases over all calls, the
    seconds per judged measurement, and `notes` on what made the run dearer than it need be."""
    shown = list(tests) if top == 0 else list(tests)[:top]
    lines: list[str] = []
    if shown:
        lines.append(
            f"{'the' if top == 0 or top >= len(tests) else 'the slowest'} {len(shown)} of {len(tests)} "
            "tests using kernel_bench (seconds; first call = fn and the reference run once: compile, "
            "JIT, autotune):"
        )
        headers = ("duration", "calls", *(CALL_TITLES[p] for p in CALL_PHASES), "other")
        rows = [
            (
                _seconds(t.duration) if t.duration is not None else "-",
                str(t.count),
                *(_seconds(v) for v in t.calls.phases().values()),
                _seconds(t.calls.other),
            )
            for t in shown
        ]
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
        lines.append("  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True)) + "  test")
        for row, test in zip(rows, shown, strict=True):
            lines.append("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) + "  " + test.nodeid)
    calls = add_up(t.calls for t in tests)
    listed = [f"{RUN_TITLES[name]} {_seconds(value)}" for name, value in run.phases().items() if value]
    # What no phase holds: under pytest-xdist, the wait for the workers to start and to end.
    other = run.total - sum(run.phases().values())
    if other >= 0.05:
        listed.append(f"other {_seconds(other)}")
    lines.append(f"run: {_seconds(run.total)} s wall: " + (", ".join(listed) if listed else "nothing timed"))
    if tests:
        spent = [f"{CALL_TITLES[name]} {_seconds(value)}" for name, value in calls.phases().items()]
        lines.append(
            f"kernel_bench calls: {_seconds(calls.total)} s in {sum(t.count for t in tests)} calls: "
            + ", ".join(spent)
            + f", other {_seconds(calls.other)}"
        )
    lines.append(judged_figure(run.total, judged, timed))
    lines.extend(f"note: {note}" for note in notes)
    return lines


@dataclass(frozen=True)
class ProcessCost:
    """One recording process of an update (--kernelperf-record-processes): its number (1: the main
    process), the tests it recorded, its wall time, the seconds of its own run phases (None where
    it handed none back) and of its kernel_bench calls, added up."""

    number: int
    tests: int
    wall_s: float
    run: RunCost | None
    calls: CallCost


# The run phases of a recording process shown beside its calls' phases.
PROCESS_PHASES = ("startup", "collection", "tests")


def recording_lines(processes: Sequence[ProcessCost]) -> list[str]:
    """The durations section's table of an update's recording processes: per process, the tests it
    recorded, its wall time, its start-up, collection and tests, and its kernel_bench calls' phases
    ("-": not known)."""
    if len(processes) < 2:
        return []
    headers = (
        "process",
        "recorded",
        "wall",
        *(RUN_TITLES[p] for p in PROCESS_PHASES),
        *(CALL_TITLES[p] for p in CALL_PHASES),
    )
    rows = [
        (
            str(process.number),
            str(process.tests),
            _seconds(process.wall_s),
            *(_seconds(getattr(process.run, p)) if process.run is not None else "-" for p in PROCESS_PHASES),
            *(_seconds(v) for v in process.calls.phases().values()),
        )
        for process in processes
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    return [
        "recording processes (seconds; process 1 is this one, its wall without the others'):",
        *("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in [headers, *rows]),
    ]


# The large pure-Python packages a kernel test imports in every process. Without their bytecode cached
# each process compiles them from source: importing torch and torch._dynamo took 10.4 s that way on
# the two-core CI machine against 3.8 s from the cache, and a cProfile of a warm 40-measurement run on
# an H200 (whose image sets PYTHONDONTWRITEBYTECODE) found 9.9 s of its 35 s in compile().
BYTECODE_PACKAGES = ("torch", "triton")


def bytecode_note(dont_write_bytecode: bool, uncached: Sequence[str]) -> str | None:
    """What the durations section says when Python writes no bytecode and the packages in
    `uncached` have none cached: every process importing them compiles them from source; None
    otherwise."""
    if not dont_write_bytecode or not uncached:
        return None
    return (
        f"Python writes no bytecode here (PYTHONDONTWRITEBYTECODE or -B) and {' and '.join(uncached)} "
        "has none cached, so every process that imports it compiles it from source: seconds of "
        "start-up and first calls in every run. Unset it in the CI image (with PYTHONPYCACHEPREFIX "
        "at a writable folder where the packages' own are read-only)"
    )


def _seconds(value: float) -> str:
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"
