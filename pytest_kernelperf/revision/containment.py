"""What the revision's code may not do to the process that judges it: end it, or outlive the run.

The revision's modules are imported into the judging process, so whatever their import does to the
process would decide the run: `os._exit(0)` would end it with status 0 and no report, an exit
handler that calls `os._exit(0)` would turn a failed run green. Four guards, each for what the
others cannot see:

* `probe.import_returns` imports each module first in a forked copy of this process (probe.py): an
  import that ends the copy by any means (a C library's `exit`, a signal) or runs past the time
  limit is refused before this process imports it.
* `no_process_exit`, while the revision's module is imported here: `os._exit` and the `os.exec*`
  family (and posix's own) raise `ProcessExitRefused` instead, and so does `atexit.register` called from the
  revision's files. Libraries the import pulls in may still register their own exit handlers.
* `armed.nothing_left_armed`, around the same import: what it leaves behind to act later (signal
  handlers and timers, shutdown hooks, threads, a changed pytest or plugin) is undone and refused.
* `reassert_exit_status`: should exit handlers have been registered during such an import some
  other way than those the guard saw, or a thread it started still run, the run ends, after its
  reports, with its own exit status before any of them can change it.

No pytest here, no torch: the standard library only.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, ClassVar

from pytest_kernelperf.revision import threads

# What ends or replaces the process: the os module's own (os.execl and friends call os.execv).
_ENDINGS = tuple(
    name
    for name in ("_exit", "execv", "execve", "execl", "execle", "execlp", "execlpe", "execvp", "execvpe")
    if hasattr(os, name)
)
# What else ends the process, or may, from whichever thread calls it (os.kill: when it signals this
# process or its group).
_MORE_ENDINGS = ("abort", "kill", "killpg")


class ProcessExitRefused(BaseException):
    """The revision's code tried to end or replace the process, or to register an exit handler.

    A BaseException, like SystemExit: an `except Exception` in the revision's code does not swallow it.
    """


_EXIT = os._exit  # the process's own, taken before any guard replaces it


class _State:
    """Changed in place, never rebound: armed.py puts back any attribute rebound while the
    revision's code runs, and a guard may run inside another's block (an import in a first call)."""

    # How many exit handlers each of the revision's imports registered that no guard saw (C code, a
    # saved reference to atexit.register): the run's exit status is re-asserted before they run.
    unseen_exit_handlers: ClassVar[list[int]] = []
    # Threads the revision's imports started, told to stop but still in a call then (armed.py).
    running_threads: ClassVar[list[int]] = []
    # The folders of the revisions' files (no_process_exit's `own_files`).
    revision_files: ClassVar[list[Path]] = []
    # Whether each code file (co_filename) is one of the revisions': asked on every thread start.
    revision_file: ClassVar[dict[str, bool]] = {}
    # The process whose endings are refused to the revision's code, once guarded (_guard_endings).
    guarded_pid: ClassVar[list[int]] = []


def _caller_file(depth: int) -> Path | None:
    """The resolved file of the code `depth` frames up, or None."""
    frame = sys._getframe(depth + 1)
    try:
        return Path(frame.f_code.co_filename).resolve()
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def no_process_exit(what: str, own_files: Path) -> Iterator[None]:
    """For the length of the block (an import or the first call of `what`, whose files lie under
    `own_files`): the process cannot be ended or replaced, and the revision's files cannot
    register exit handlers.
    A forked child (multiprocessing's) still ends as it means to: only this process is guarded."""
    pid = os.getpid()
    _guard_endings(own_files)
    saved: dict[str, Callable[..., Any]] = {name: getattr(os, name) for name in _ENDINGS}
    # The same functions under the C module's own name (os's are posix's on Linux and macOS).
    native = sys.modules.get("posix") or sys.modules.get("nt")
    native_saved = {name: getattr(native, name) for name in _ENDINGS if hasattr(native, name)}
    register = atexit.register

    def refusing(name: str) -> Callable[..., Any]:
        real = saved[name]

        def refuse(*args: Any, **kwargs: Any) -> Any:
            if os.getpid() != pid:
                return real(*args, **kwargs)
            raise ProcessExitRefused(
                f"{what} called os.{name}: the revision's code may not end or replace the process "
                "that judges it"
            )

        return refuse

    def guarded_register(func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Callable[..., Any]:
        caller = _caller_file(1)
        if os.getpid() == pid and caller is not None and caller.is_relative_to(own_files):
            raise ProcessExitRefused(
                f"{what} registers an exit handler (atexit.register({getattr(func, '__name__', func)!s})): "
                "the revision's code may not run when the run ends"
            )
        seen[0] += 1
        return register(func, *args, **kwargs)

    seen = [0]
    before = atexit._ncallbacks()
    for name in _ENDINGS:
        setattr(os, name, refusing(name))
        if name in native_saved:
            setattr(native, name, getattr(os, name))
    atexit.register = guarded_register
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(os, name, value)
        for name, value in native_saved.items():
            setattr(native, name, value)
        atexit.register = register
        unseen = atexit._ncallbacks() - before - seen[0]
        if unseen > 0:
            _State.unseen_exit_handlers.append(unseen)
    if unseen > 0:
        raise ProcessExitRefused(
            f"{what} registered {unseen} exit handler(s) past atexit.register: the revision's code "
            "may not run when the run ends (the run's exit status is kept)"
        )


def _guard_endings(own_files: Path) -> None:
    """For the rest of the process: what ends it refuses a thread the revision's code started
    (threads.py) and a call with the revision's code on its stack, where no_process_exit's block
    has ended. Such a thread can outlive every guard (it catches ThreadStopped) and end the run
    with exit status 0 long after; anyone else's call ends the process as it always did."""
    if own_files not in _State.revision_files:
        _State.revision_files.append(own_files)
        _State.revision_file.clear()
    if _State.guarded_pid == [os.getpid()]:
        return
    _State.guarded_pid[:] = [os.getpid()]
    threads.inherit(lambda: os.getpid() in _State.guarded_pid and _by_the_revision())
    native = sys.modules.get("posix") or sys.modules.get("nt")
    places: list[tuple[ModuleType | None, str]] = [
        *((module, name) for module in (os, native) for name in (*_ENDINGS, *_MORE_ENDINGS)),
        *((module, "raise_signal") for module in (signal, sys.modules.get("_signal"))),
    ]
    for module, name in places:
        real = getattr(module, name, None)
        # Already wrapped in a forked copy of a guarded process.
        if module is not None and real is not None and not hasattr(real, "__wrapped__"):
            setattr(module, name, _refused_to_the_revision(f"{module.__name__}.{name}", real))


def _refused_to_the_revision(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def ending(*args: Any, **kwargs: Any) -> Any:
        if _ends_this_process(name, args) and os.getpid() in _State.guarded_pid and _by_the_revision():
            raise ProcessExitRefused(
                f"the revision's code called {name} once its guard had ended: it may not end the "
                "process that judges it"
            )
        return real(*args, **kwargs)

    ending.__wrapped__ = real  # type: ignore[attr-defined]
    return ending


def _ends_this_process(name: str, args: tuple[Any, ...]) -> bool:
    """os.kill and os.killpg end it only when they signal it (signal 0 sends none)."""
    if name.endswith(".kill") or name.endswith(".killpg"):
        target, number = (*args, None, None)[:2]
        if number == 0 or not isinstance(target, int):
            return False
        if name.endswith(".killpg"):
            return target in (0, os.getpgrp())
        return target == os.getpid() or target <= 0  # 0 and below: a process group, every process
    return True


def _by_the_revision() -> bool:
    """Whether the calling thread is one the revision's code started, or the call came through
    the revision's own files."""
    if threads.started_by_revision():
        return True
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        if _is_revision_file(frame.f_code.co_filename):
            return True
        frame = frame.f_back
    return False


def _is_revision_file(name: str) -> bool:
    known = _State.revision_file.get(name)
    if known is None:
        try:
            path = Path(name).resolve()
        except (OSError, ValueError):
            path = Path(name)
        known = _State.revision_file[name] = any(path.is_relative_to(f) for f in _State.revision_files)
    return known


def keep_exit_status_from(threads: list[int]) -> None:
    """The revision's code started these threads, which could not be stopped yet: while one of
    them runs, the run ends with its own exit status (reassert_exit_status)."""
    _State.running_threads.extend(threads)


def reassert_exit_status(status: int) -> None:
    """Where the revision's imports registered exit handlers no guard saw, or started a thread that
    still runs: end the process with `status` (the run's) before they can act. The hook runs first
    at shutdown, before the interpreter waits for threads and runs any exit handler (threading's
    shutdown hooks run before atexit's, the last registered first); those are skipped."""
    running = set(sys._current_frames())
    if _State.unseen_exit_handlers or any(ident in running for ident in _State.running_threads):
        register = getattr(threading, "_register_atexit", atexit.register)
        register(_exit_now, status)


def _exit_now(status: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    _EXIT(status)
