"""`--kernelperf-against REF`: REF resolved when the run starts, its files exported once by the main
process (its xdist workers and isolated children are told where, through the environment; a process
on its own exports on the first kernel_bench call that needs them), and removed when the run ends,
Ctrl-C included. A process killed outright (SIGKILL, SIGTERM, a
cancelled CI job) cannot clean up: its export is removed by the next run that finds it.

A run whose REF cannot be exported at all ends at once with exit status 2 and the reason: no call
could be compared, and a run of `incomparable`s must not pass as if it had been. Only a process the
run itself started (an xdist worker, an isolated child) takes the main process's export from the
environment, and only an export that a process above it made of that very commit: a folder named
in the environment of the main process is never taken for REF's code."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_kernelperf.model.result import Found
from pytest_kernelperf.revision.containment import reassert_exit_status
from pytest_kernelperf.revision.loader import Lookup, RevisionCode
from pytest_kernelperf.revision.source import Revision, RevisionError, export, resolve

PREFIX = "kernelperf-against-"  # then the exporting process's id: kernelperf-against-1234-<random>
# The main process's export, "<commit>:<folder>", for the workers and children it starts.
SHARED = "KERNELPERF_AGAINST_TREE"
STAMP = "commit"  # beside the export's tree: the commit it holds


def against_revision(
    ref: str, rootdir: Path, *, limit_s: float | None = None, started_by_run: bool = False
) -> AgainstRevision:
    """REF resolved in the repository holding `rootdir`; a usage error naming the option if it
    cannot be. `started_by_run`: this process is a worker or child of the run (it may take the
    main process's export); `limit_s`: --kernelperf-against-timeout."""
    try:
        revision = resolve(rootdir, ref)
    except RevisionError as exc:
        raise pytest.UsageError(f"pytest-kernelperf: --kernelperf-against: {exc}") from None
    return AgainstRevision(revision, rootdir, limit_s=limit_s, started_by_run=started_by_run)


class AgainstRevision:
    """fn's counterpart at the revision, for the tests under `rootdir`; a pytest plugin object
    (registered by plugin.py) that keeps the run's exit status from the revision's code."""

    def __init__(
        self, revision: Revision, rootdir: Path, *, limit_s: float | None = None, started_by_run: bool = False
    ) -> None:
        self.revision = revision
        self._rootdir = rootdir
        self._limit_s = limit_s
        self._started_by_run = started_by_run
        self._folder: Path | None = None
        self._code: RevisionCode | str | None = None  # str: why the revision could not be exported
        self._session: pytest.Session | None = None
        self._stop: str | None = None  # why the run ends before any test (share)

    def find(self, fn: Callable[..., Any], test_module: Path) -> Lookup:
        """fn's counterpart; `test_module` is the test file's path relative to the rootdir."""
        code = self._revision_code()
        if isinstance(code, str):
            return Lookup(Found.UNLOADABLE, reason=code)
        return code.find(fn, self._rootdir / test_module)

    def share(self) -> None:
        """Export now, and name the export in the environment, so that the xdist workers and
        isolated children this process starts use it instead of exporting their own. A revision
        that cannot be exported ends the run (exit status 2, the reason on stderr), and so does
        Ctrl-C while it is exported, saying so."""
        described = f"{self.revision.ref!r} ({self.revision.short})"
        try:
            code = self._revision_code()
        except KeyboardInterrupt:
            self.close()
            self._stop = (
                f"pytest-kernelperf: interrupted while exporting {described} for --kernelperf-against "
                "(its partial export removed): no test was run"
            )
            return
        if isinstance(code, str):
            self._stop = (
                f"pytest-kernelperf: --kernelperf-against {described}: its code cannot be loaded, so "
                f"nothing can be compared with it: {code}"
            )
        elif self._folder is not None:
            os.environ[SHARED] = f"{self.revision.commit}:{code.base_top}"

    def _revision_code(self) -> RevisionCode | str:
        """The revision's code, exported once (or the main process's export); or, every time
        after a failed export, why."""
        if self._code is None:
            commit, _, shared = os.environ.get(SHARED, "").partition(":")
            if self._started_by_run and commit == self.revision.commit and _made_above(Path(shared), commit):
                self._code = self._loaded(Path(shared))
                return self._code
            remove_stale_exports()
            self._folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
            try:
                tree = export(self.revision, self._folder / "tree")
                (self._folder / STAMP).write_text(self.revision.commit + "\n")
            except (RevisionError, OSError) as exc:
                self.close()
                self._code = str(exc) if isinstance(exc, RevisionError) else f"cannot export: {exc}"
            else:
                self._code = self._loaded(tree)
        return self._code

    def _loaded(self, tree: Path) -> RevisionCode:
        return RevisionCode(
            self.revision.top,
            tree,
            self.revision.describe(),
            limit_s=self._limit_s,
            say=self._say,
            run=lambda: self._session.config if self._session is not None else None,
        )

    def _say(self, line: str) -> None:
        """A line on the terminal's stderr, past pytest's capturing (the process ends right after)."""
        config = self._session.config if self._session is not None else None
        capture = config.pluginmanager.get_plugin("capturemanager") if config is not None else None
        if capture is not None:
            capture.suspend_global_capture(in_=False)
            fixture = getattr(capture, "_capture_fixture", None)
            if fixture is not None:
                fixture._suspend()
        sys.stderr.write(f"\n{line}\n")
        sys.stderr.flush()

    # -- pytest hooks --------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)  # before xdist starts its workers
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._session = session
        if self._stop is not None:  # exit status 2 (INTERRUPTED: nothing was run), the reason on stderr
            pytest.exit(self._stop, returncode=pytest.ExitCode.INTERRUPTED)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._session is not None:
            reassert_exit_status(int(self._session.exitstatus))

    def close(self) -> None:
        """Remove the exported files (the revision's modules stay loaded until the process ends)."""
        if self._folder is not None:
            if os.environ.get(SHARED, "").startswith(f"{self.revision.commit}:{self._folder}"):
                del os.environ[SHARED]
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def remove_stale_exports(folder: Path | None = None) -> None:
    """Remove the exports of processes that no longer run (killed before they could clean up)."""
    for path in Path(folder or tempfile.gettempdir()).glob(f"{PREFIX}*"):
        pid = path.name.removeprefix(PREFIX).partition("-")[0]
        if pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def _made_above(tree: Path, commit: str) -> bool:
    """Whether `tree` is an export of `commit` made by a process above this one (the run's main
    process, or the xdist worker that started this child): `<PREFIX><pid>-*/tree` with its stamp."""
    folder = tree.parent
    pid = folder.name.removeprefix(PREFIX).partition("-")[0]
    if tree.name != "tree" or not folder.name.startswith(PREFIX) or not pid.isdigit():
        return False
    if int(pid) not in _ancestors() or not tree.is_dir():
        return False
    try:
        return (folder / STAMP).read_text().strip() == commit
    except OSError:
        return False


def _ancestors() -> list[int]:
    """The ids of the processes above this one, nearest first (where /proc tells; else the parent)."""
    found = [os.getppid()]
    while found[-1] > 1 and len(found) < 64:
        try:
            stat = Path(f"/proc/{found[-1]}/stat").read_text()
        except OSError:
            break
        parent = int(stat.rpartition(")")[2].split()[1])  # after "(name)": state, then the parent
        if parent in found or parent < 1:
            break
        found.append(parent)
    return found


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    with contextlib.suppress(PermissionError):  # another user's process: it runs
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
    return True
