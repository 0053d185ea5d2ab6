"""Where a run's time goes: the seconds of each phase of a kernel_bench call, and of the run.

GPU time is what a team pays for; most of a run is not the measurement itself but start-up,
compilation, warm-up, profiling and file I/O. Each `kernel_bench` call keeps a `Clock` of its
phases (`CallCost`, per result); the session keeps one for the run (`RunCost`). Both go into the run
JSON (`cost_s`) and, with `--kernelperf-durations=N`, onto the terminal with the figure that sums
up a run's cost: seconds of wall time per judged measurement.

The warm-up is inside the timer (measure/timing.py), which the pytest_kernelperf_make_timer hook
may replace: `warm_up` reports its seconds to the clock active around the measurement (`note`), and
the rest of the measurement counts as rounds. Pure: no pytest, no torch.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

# The phases of one kernel_bench call, in the order they happen (`CallCost`'s fields but `total`).
CALL_PHASES = ("context", "first_call", "warmup", "rounds", "memory", "profile", "judge", "baseline_io")
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
# Seconds are kept to the microsecond: far below any phase worth a look, and short files.
_DIGITS = 6


class Clock:
    """Seconds per phase, added up: one per kernel_bench call, and one per run."""

    def __init__(self, began: float | None = None) -> None:
        self.began = time.perf_counter() if began is None else began
        self.seconds: dict[str, float] = {}

    def add(self, phase: str, seconds: float) -> None:
        self.seconds[phase] = self.seconds.get(phase, 0.0) + max(0.0, seconds)

    @contextlib.contextmanager
    def phase(self, name: str, *, less: Sequence[str] = ()) -> Iterator[None]:
        """Time the block as `name`, less what the phases `less` gained inside it meanwhile (the
        warm-up inside a measurement, which `note` reports)."""
        before = sum(self.seconds.get(inner, 0.0) for inner in less)
        began = time.perf_counter()
        try:
            yield
        finally:
            inner = sum(self.seconds.get(inner, 0.0) for inner in less) - before
            self.add(name, time.perf_counter() - began - inner)

    def elapsed(self) -> float:
        return time.perf_counter() - self.began

    def call_cost(self) -> CallCost:
        """The phases so far, and the call's wall time up to now as its total."""
        return CallCost.of(self.seconds, self.elapsed())


_ACTIVE: contextvars.ContextVar[Clock | None] = contextvars.ContextVar("kernelperf_clock", default=None)


@contextlib.contextmanager
def active(clock: Clock) -> Iterator[Clock]:
    """Make `clock` the one `note` adds to while the block runs (a measurement of a call)."""
    token = _ACTIVE.set(clock)
    try:
        yield clock
    finally:
        _ACTIVE.reset(token)


def note(phase: str, seconds: float) -> None:
    """Seconds of a phase spent deep inside a measurement (warm-up), for the active clock if any."""
    clock = _ACTIVE.get()
    if clock is not None:
        clock.add(phase, seconds)


def _rounded(seconds: float) -> float:
    return round(max(0.0, seconds), _DIGITS)


@dataclass(frozen=True)
class CallCost:
    """Seconds of one kernel_bench call, by phase; `total` is the call's wall time, from its start
    to its return, and the phases add up to at most it (the rest: argument checks, input snapshots,
    bookkeeping)."""

    context: float = 0.0  # the call's context: a fresh torch.compile context, autotuners watched
    first_call: float = 0.0  # the first call of fn and the reference check: compile, JIT, autotune
    warmup: float = 0.0  # warm-up before each round (the first round's pays what the first call left)
    rounds: float = 0.0  # sampling the rounds (and drawing their memory placements)
    memory: float = 0.0  # the dedicated call that measures peak device memory (CUDA)
    profile: float = 0.0  # torch.profiler runs after the timing (inventory, explanation, artefacts)
    judge: float = 0.0  # verdicts and statistics (the first read of the run's baselines: the prior)
    baseline_io: float = 0.0  # reading this call's baseline entry, staging the new one
    total: float = 0.0

    @classmethod
    def of(cls, seconds: Mapping[str, float], total: float) -> CallCost:
        phases = {name: _rounded(seconds.get(name, 0.0)) for name in CALL_PHASES}
        return cls(**phases, total=max(_rounded(total), round(sum(phases.values()), _DIGITS)))

    def phases(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in CALL_PHASES}

    @property
    def other(self) -> float:
        return max(0.0, self.total - sum(self.phases().values()))


def add_up(costs: Iterable[CallCost]) -> CallCost:
    """Several calls' costs, phase by phase."""
    sums = dict.fromkeys((f.name for f in fields(CallCost)), 0.0)
    for cost in costs:
        for name in sums:
            sums[name] += getattr(cost, name)
    return CallCost(**{name: round(value, _DIGITS) for name, value in sums.items()})


@dataclass(frozen=True)
class RunCost:
    """Seconds of a run, by phase; `total` is the wall time from the process's start to the moment
    the figures were taken. Under pytest-xdist these are the controller's: its workers' start-up and
    collection run alongside, within `tests`."""

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
        phases = {name: _rounded(self.seconds.get(name, 0.0)) for name in RUN_PHASES}
        return RunCost(**phases, total=max(_rounded(self.elapsed()), round(sum(phases.values()), _DIGITS)))


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
    tests: Sequence[CostOfTest], run: RunCost, *, top: int, judged: int, timed: int
) -> list[str]:
    """The `--kernelperf-durations=N` section: the N most expensive tests with their phase split
    (all of them for N = 0), the run's phases and the kernel_bench phases over all calls, and the
    seconds per judged measurement."""
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
    lines.append(f"run: {_seconds(run.total)} s wall: " + (", ".join(listed) if listed else "nothing timed"))
    if tests:
        spent = [f"{CALL_TITLES[name]} {_seconds(value)}" for name, value in calls.phases().items()]
        lines.append(
            f"kernel_bench calls: {_seconds(calls.total)} s in {sum(t.count for t in tests)} calls: "
            + ", ".join(spent)
            + f", other {_seconds(calls.other)}"
        )
    lines.append(judged_figure(run.total, judged, timed))
    return lines


def _seconds(value: float) -> str:
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"
