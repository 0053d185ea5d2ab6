"""The threads that the revision's code starts in the process that judges it: found, and stopped.

A thread started by an import lives on after it, and could act on the run at any later moment (asleep
for a while, then `os._exit(0)`), or hold the run at exit (a non-daemon thread: the interpreter
waits for it). Found: every thread with Python code running that was not there before the block,
and every thread `_thread.start_new_thread` started meanwhile (one that has not run yet has no
frame to be seen by, and threading.Thread.start waits for its thread to run, this one does not).
Stopped: an exception (`ThreadStopped`, a SystemExit) raised in each as soon as it runs Python code
again, before its next line. One still in a call (asleep) stops when it comes back to Python. One
that catches the exception lives on: it stays known as the revision's (`started_by_revision`), so
that it cannot end the process (containment.py). It is raised once only: raised again, it could
land in threading's own bookkeeping as the thread ends.

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


# threading's own names for them, bound when it was imported (Python 3.13: a joinable thread).
_THREADING_STARTS = ("_start_new_thread", "_start_joinable_thread")
# The threads the revision's code started, for the rest of the process, by ident: each one's
# threading.Thread, or None for one of _thread's own (changed in place: patches.py compares identity).
_STARTED: dict[int, threading.Thread | None] = {}


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
    _STARTED.update(zip(started, threads, strict=True))
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


def started_by_revision() -> bool:
    """Whether the calling thread is one that the revision's code started. Idents are reused: a
    threading.Thread is known by its object, one of _thread's by an ident that no Thread has."""
    ident = threading.get_ident()
    if ident not in _STARTED:
        return False
    now = getattr(threading, "_active", {}).get(ident)
    known = _STARTED[ident]
    return now is known if known is not None else now is None or isinstance(now, threading._DummyThread)


def inherit(by_revision: Callable[[], bool]) -> None:
    """For the rest of the process, a thread started where `by_revision()` holds (a thread of the
    revision's, or its code on the stack) is the revision's too: it registers itself before its
    first line, so that it cannot end the process either (`threading.Thread(target=os._exit)`)."""
    for module, names in ((_thread, _STARTS), (threading, _THREADING_STARTS)):
        for name in names:
            real = getattr(module, name, None)
            if real is not None and not hasattr(real, "__wrapped__"):  # once, a forked copy too
                setattr(module, name, _inheriting(real, by_revision))


def _inheriting(real: Callable[..., Any], by_revision: Callable[[], bool]) -> Callable[..., Any]:
    def start(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return real(_theirs(function) if by_revision() else function, *args, **kwargs)

    start.__wrapped__ = real  # type: ignore[attr-defined]
    return start


def _theirs(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, run in a thread that is known as the revision's from its start."""
    owner = getattr(function, "__self__", None)  # threading.Thread._bootstrap's thread
    known = owner if isinstance(owner, threading.Thread) else None

    def run(*args: Any, **kwargs: Any) -> Any:
        _STARTED[threading.get_ident()] = known
        return function(*args, **kwargs)

    return run


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
