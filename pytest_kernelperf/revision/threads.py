"""The threads that the revision's code starts in the process that judges it: found, and stopped.

A thread started by an import lives on after it, and could act on the run at any later moment (asleep
for a while, then `os._exit(0)`), or hold the run at exit (a non-daemon thread: the interpreter
waits for it). Found: every thread with Python code running that was not there before the block,
and every thread `_thread.start_new_thread` started meanwhile (one that has not run yet has no
frame to be seen by, and threading.Thread.start waits for its thread to run, this one does not).
Stopped: an exception (`ThreadStopped`, a SystemExit) raised in each as soon as it runs Python code
again, before its next line. One still in a call (asleep) stops when it comes back to Python.

No pytest here, no torch: the standard library only.
"""

from __future__ import annotations

import _thread
import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

# How long the threads are given to stop before they are said to be still running.
STOP_WAIT_S = 0.2
# _thread's functions that start a thread and return its ident (start_joinable_thread: Python 3.13).
_STARTS = tuple(
    name for name in ("start_new_thread", "start_new", "start_joinable_thread") if hasattr(_thread, name)
)


class ThreadStopped(SystemExit):
    """Raised in a thread the revision's code started. A SystemExit: the thread ends without a
    traceback (the default threading.excepthook says nothing of one)."""


def running() -> set[int]:
    """The threads now running Python code, by ident."""
    return set(sys._current_frames())


@contextlib.contextmanager
def raw_starts_recorded() -> Iterator[list[int]]:
    """The idents of the threads that _thread's own functions start during the block."""
    started: list[int] = []
    saved = {name: getattr(_thread, name) for name in _STARTS}

    def recording(real: Callable[..., Any]) -> Callable[..., Any]:
        def start(*args: Any, **kwargs: Any) -> Any:
            result = real(*args, **kwargs)
            ident = getattr(result, "ident", result)  # 3.13's returns a handle
            if isinstance(ident, int):
                started.append(ident)
            return result

        return start

    for name, real in saved.items():
        setattr(_thread, name, recording(real))
    try:
        yield started
    finally:
        for name, real in saved.items():
            setattr(_thread, name, real)


def stop(started: list[int]) -> tuple[list[str], list[int]]:
    """Stop the threads `started`: what they were, and those still in a call after STOP_WAIT_S."""
    if not started:
        return [], []
    threads = [getattr(threading, "_active", {}).get(ident) for ident in started]
    names = [t.name if t is not None else "one of _thread.start_new_thread" for t in threads]
    for thread in threads:  # its end is said by the refusal, not by an excepthook (pytest's reports it)
        if thread is not None and hasattr(thread, "_invoke_excepthook"):
            thread._invoke_excepthook = lambda thread: None
    deadline = time.monotonic() + STOP_WAIT_S
    unreached = list(started)  # a thread not yet running has no state to raise the exception in
    while True:
        unreached = [ident for ident in unreached if not _raise_in(ident)]
        still = [ident for ident in started if ident in unreached or ident in running()]
        if not still or time.monotonic() >= deadline:
            return [f"started {counted(started)} ({', '.join(names)})"], still
        time.sleep(0.005)


def _raise_in(ident: int) -> bool:
    """ThreadStopped raised in thread `ident` once it runs Python code; False where it has no
    thread state yet, or where this Python cannot (no ctypes, not CPython)."""
    try:
        import ctypes

        found = ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(ident), ctypes.py_object(ThreadStopped)
        )
    except Exception:
        return False
    return bool(found)


def counted(idents: list[int]) -> str:
    return "a thread" if len(idents) == 1 else f"{len(idents)} threads"
