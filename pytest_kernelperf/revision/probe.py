"""An import of the revision's code tried first in a forked copy of this process.

The copy runs the very import the judging process would run (the same modules loaded, the same
loader) and reports through a pipe that it returned; it never writes to the terminal and always
ends with `os._exit`, so none of this process's buffers or exit handlers run twice. An import that
ends the copy before it reports (`os._exit` from C, a signal, `exec`), or that has not returned
within the time limit, is refused: the judging process never runs it. An import that raises in the
copy is left to the judging process, whose own import says why (a CUDA context cannot be used in a
forked copy, so a module that touches the device at import may raise there and not here).

Where `os.fork` does not exist (Windows) nothing is probed: the in-process guards still hold.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
import warnings
from collections.abc import Callable

from pytest_kernelperf.revision.armed import own_fork

RETURNED = b"returned\n"


def import_returns(what: str, run_import: Callable[[], object], limit_s: float | None) -> str | None:
    """None when `run_import`, run in a forked copy of this process, returns (or raises) within
    `limit_s` seconds (None: no limit); else why the import of `what` is refused."""
    if not hasattr(os, "fork"):
        return None
    read, write = os.pipe()
    with warnings.catch_warnings(), own_fork():  # Python 3.12 warns of fork in a process with threads
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the copy: report, then end without running anything of the parent's
        os.close(read)
        status = 0
        try:
            quiet = os.open(os.devnull, os.O_WRONLY)
            os.dup2(quiet, 1)
            os.dup2(quiet, 2)
            with contextlib.suppress(BaseException):
                run_import()
            os.write(write, RETURNED)
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(write)
    try:
        answer, timed_out = _read(read, limit_s)
    except BaseException:  # Ctrl-C while waiting: the copy goes too
        _stop(pid)
        raise
    finally:
        os.close(read)
    if timed_out:
        _stop(pid)
        return f"importing {what} did not return within {limit_s:g} s (--kernelperf-against-timeout)"
    _, status = os.waitpid(pid, 0)
    if answer == RETURNED:
        return None
    return f"importing {what} ended the process ({_ended(status)}) before it returned"


def _read(fd: int, limit_s: float | None) -> tuple[bytes, bool]:
    """What the copy wrote until it closed the pipe; (…, True) when the limit passed first."""
    deadline = None if limit_s is None else time.monotonic() + limit_s
    answer = b""
    while True:
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            return answer, True
        chunk = os.read(fd, 4096)
        if not chunk:
            return answer, False
        answer += chunk


def _stop(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        return f"signal {signal.Signals(number).name if number in signal.valid_signals() else number}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
