"""The clock of a kernel_bench call's phases, and of a run's (results/cost.py adds them up).

The warm-up is inside the timer (timing.py), which the pytest_kernelperf_make_timer hook may
replace: `warm_up` reports its seconds to the clock active around the measurement (`note`), and
the rest of the measurement counts as rounds. Pure: no pytest, no torch.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator, Sequence

from pytest_kernelperf.model.result import CallCost


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
