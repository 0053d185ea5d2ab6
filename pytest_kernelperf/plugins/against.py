"""`--kernelperf-against REF`: REF resolved when the run starts, its files exported on the first
kernel_bench call that needs them (each process its own copy: xdist workers, isolated children),
and removed when the run ends, Ctrl-C included."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_kernelperf.revision.loader import Lookup, RevisionCode
from pytest_kernelperf.revision.source import Revision, export


class AgainstRevision:
    """fn's counterpart at the revision, for the tests under `rootdir`."""

    def __init__(self, revision: Revision, rootdir: Path) -> None:
        self.revision = revision
        self._rootdir = rootdir
        self._folder: Path | None = None
        self._code: RevisionCode | None = None

    def find(self, fn: Callable[..., Any], test_module: Path) -> Lookup:
        """fn's counterpart; `test_module` is the test file's path relative to the rootdir."""
        return self._revision_code().find(fn, self._rootdir / test_module)

    def _revision_code(self) -> RevisionCode:
        if self._code is None:
            self._folder = Path(tempfile.mkdtemp(prefix=f"kernelperf-{self.revision.short}-"))
            tree = export(self.revision, self._folder / "tree")
            self._code = RevisionCode(self.revision.top, tree, self.revision.describe())
        return self._code

    def close(self) -> None:
        """Remove the exported files (the revision's modules stay loaded until the process ends)."""
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
