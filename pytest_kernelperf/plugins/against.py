"""`--kernelperf-against REF`: REF resolved when the run starts, its files exported once by the main
process (its xdist workers and isolated children are told where, through the environment; a process
on its own exports on the first kernel_bench call that needs them), and removed when the run ends,
Ctrl-C included. A process killed outright (SIGKILL, SIGTERM, a
cancelled CI job) cannot clean up: its export is removed by the next run that finds it."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_kernelperf.model.result import Found
from pytest_kernelperf.revision.loader import Lookup, RevisionCode
from pytest_kernelperf.revision.source import Revision, RevisionError, export, resolve

PREFIX = "kernelperf-against-"  # then the exporting process's id: kernelperf-against-1234-<random>
# The main process's export, "<commit>:<folder>", for the workers and children it starts.
SHARED = "KERNELPERF_AGAINST_TREE"


def against_revision(ref: str, rootdir: Path) -> AgainstRevision:
    """REF resolved in the repository holding `rootdir`; a usage error naming the option if it
    cannot be."""
    try:
        revision = resolve(rootdir, ref)
    except RevisionError as exc:
        raise pytest.UsageError(f"pytest-kernelperf: --kernelperf-against: {exc}") from None
    return AgainstRevision(revision, rootdir)


class AgainstRevision:
    """fn's counterpart at the revision, for the tests under `rootdir`."""

    def __init__(self, revision: Revision, rootdir: Path) -> None:
        self.revision = revision
        self._rootdir = rootdir
        self._folder: Path | None = None
        self._code: RevisionCode | str | None = None  # str: why the revision could not be exported

    def find(self, fn: Callable[..., Any], test_module: Path) -> Lookup:
        """fn's counterpart; `test_module` is the test file's path relative to the rootdir."""
        code = self._revision_code()
        if isinstance(code, str):
            return Lookup(Found.UNLOADABLE, reason=code)
        return code.find(fn, self._rootdir / test_module)

    def share(self) -> None:
        """Export now, and name the export in the environment, so that the xdist workers and
        isolated children this process starts use it instead of exporting their own."""
        code = self._revision_code()
        if isinstance(code, RevisionCode) and self._folder is not None:
            os.environ[SHARED] = f"{self.revision.commit}:{code.base_top}"

    def _revision_code(self) -> RevisionCode | str:
        """The revision's code, exported once (or the main process's export); or, every time
        after a failed export, why."""
        if self._code is None:
            commit, _, shared = os.environ.get(SHARED, "").partition(":")
            if commit == self.revision.commit and shared and Path(shared).is_dir():
                self._code = RevisionCode(self.revision.top, Path(shared), self.revision.describe())
                return self._code
            remove_stale_exports()
            self._folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
            try:
                tree = export(self.revision, self._folder / "tree")
            except RevisionError as exc:
                self.close()
                self._code = str(exc)
            else:
                self._code = RevisionCode(self.revision.top, tree, self.revision.describe())
        return self._code

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


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    with contextlib.suppress(PermissionError):  # another user's process: it runs
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
    return True
