"""A bound on how long one call of the revision's code may run (--kernelperf-against-timeout).

A hanging kernel at the revision would otherwise hold the run until CI kills it. The counterpart's
first call (the one that compiles it and whose answer is compared) runs inside `TimeLimit`: once it
has run `limit_s` seconds, a SIGINT is sent to the main thread, and the handler installed for the
block raises `RevisionTimeout` there, which the caller records as the reason the pair is not
compared. Python code and interruptible waits stop at once; native code (a device synchronize that
never returns) stops only when it comes back to Python. One that has not after a second `limit_s`
cannot be stopped at all: the process then ends with exit status 2 and a line on stderr saying
which call hung, rather than hang without end or pass.

Only in the main thread (signal handlers live there, and pytest runs tests there) of a system with
`signal.pthread_kill` (not Windows); elsewhere the call is not bounded. No pytest here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

# The process's own exit, taken before any guard (containment.py) replaces os._exit for a call.
_EXIT = os._exit


def _to_stderr(line: str) -> None:
    sys.stderr.write(f"\n{line}\n")
    sys.stderr.flush()


class RevisionTimeout(BaseException):
    """The revision's code ran past the time limit. A BaseException: the revision's own
    `except Exception` does not swallow it."""


class TimeLimit:
    """A context manager bounding its block to `limit_s` seconds (None or 0: unbounded)."""

    def __init__(self, what: str, limit_s: float | None, say: Callable[[str], None] | None = None) -> None:
        self.what = what
        self.limit_s = limit_s or None
        self._say = say or _to_stderr  # the last line before the process ends: past any capturing
        self.fired = False
        self._lock = threading.Lock()
        self._done = False
        self._timers: list[threading.Timer] = []
        self._previous: Any = None
        self._armed = False

    def __enter__(self) -> TimeLimit:
        if (
            self.limit_s is None
            or threading.current_thread() is not threading.main_thread()
            or not hasattr(signal, "pthread_kill")  # Windows
        ):
            return self
        self._previous = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, self._interrupted)
        self._armed = True
        self._start(self.limit_s, self._fire)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        with self._lock:
            self._done = True
        for timer in self._timers:
            timer.cancel()
        if self._armed:
            signal.signal(signal.SIGINT, self._previous)

    def threads(self) -> list[threading.Thread]:
        """The timer threads of the limit, started while its block runs (not the block's own)."""
        return list(self._timers)

    def _start(self, seconds: float, then: Any) -> None:
        timer = threading.Timer(seconds, then)
        timer.daemon = True
        self._timers.append(timer)
        timer.start()

    def _message(self) -> str:
        return f"{self.what} did not return within {self.limit_s:g} s (--kernelperf-against-timeout)"

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.fired = True
            assert self.limit_s is not None
            self._start(self.limit_s, self._give_up)
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    def _give_up(self) -> None:
        with self._lock:
            if self._done:
                return
            with contextlib.suppress(Exception):
                self._say(
                    f"pytest-kernelperf: {self._message()} and could not be stopped (it did not come "
                    "back to Python): the run ends here, exit status 2"
                )
            _EXIT(2)

    def _interrupted(self, number: int, frame: FrameType | None) -> Any:
        if self.fired:
            raise RevisionTimeout(self._message())
        previous = self._previous
        if callable(previous):  # a Ctrl-C of the user's: as it was without the limit
            return previous(number, frame)
        if previous == signal.SIG_IGN:
            return None
        raise KeyboardInterrupt
