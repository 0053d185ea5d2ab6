"""Atomic file writes, the clean-up of temporaries that killed writers leave behind, and the
artefacts' folder made so that git leaves it alone.

A file is replaced whole or not at all: the new text goes to a temporary file in the same folder,
which is then renamed over the old one. Temporaries have one recognizable name,
`.<name>.kernelperf-tmp-<pid>-<random>`, so that `.gitignore` can hold one line for them
(`.*.kernelperf-tmp-*`) and any later write can tell a dead writer's leftovers from a live one's.
No pytest, no torch.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import time
from pathlib import Path

TEMPORARY_MARK = ".kernelperf-tmp-"
GITIGNORE_LINE = f".*{TEMPORARY_MARK}*"
# A write takes milliseconds: a temporary this old is a leftover even if its pid was reused since.
STALE_AFTER_S = 60.0
_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.kernelperf-tmp-(?P<pid>[0-9]+)-[0-9a-f]+$")


IGNORE_EVERYTHING = (
    "# Made by pytest-kernelperf: its artefacts (profiles, traces, peaks) are not for git.\n*\n"
)


def make_ignored_folder(folder: Path) -> None:
    """Make `folder` with a `.gitignore` of `*` in it, as pytest makes `.pytest_cache/`, so that
    git leaves the artefacts alone wherever the folder is. A folder that exists is left as it is
    (whether it is ignored is then its owner's choice). One that cannot be made is left to the
    writers that need it, which say so."""
    if folder.exists():
        return
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / ".gitignore", IGNORE_EVERYTHING)


def temporary_for(path: Path) -> Path:
    return path.parent / f".{path.name}{TEMPORARY_MARK}{os.getpid()}-{os.urandom(4).hex()}"


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` all at once: readers see the old file or the new, never half.

    The new text goes to a temporary file in the same folder, which is then renamed over the old
    one. Where the system allows it (Linux O_TMPFILE, and linkat through /proc), the temporary
    file has no name until it is complete, so a process killed while writing (SIGKILL, power loss)
    leaves nothing behind. Elsewhere it is named `.<name>.kernelperf-tmp-<pid>-<random>`: removed on
    any exception, Ctrl-C included, and, when its writer was killed, by the next write to the folder.
    Raises OSError naming the path where the folder cannot be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent, recursive=False)
    data = text.encode("utf-8")
    tmp = temporary_for(path)
    if not _write_unnamed(path.parent, tmp, data):
        handle = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
        try:
            _write_all(handle, data)
        except BaseException:
            os.close(handle)
            _unlink(tmp)
            raise
        os.close(handle)
    try:
        os.replace(tmp, path)
    except BaseException:  # also KeyboardInterrupt: never leave the temporary file behind
        _unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


# File systems (by st_dev) where an unnamed file cannot be given a name: don't try again.
_NO_UNNAMED: set[int] = set()


def _write_unnamed(folder: Path, name: Path, data: bytes) -> bool:
    """Write `data` to an unnamed file in `folder` and name it `name`; False where unsupported."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not Path("/proc/self/fd").is_dir():
        return False
    device = folder.stat().st_dev
    if device in _NO_UNNAMED:
        return False
    try:
        fd = os.open(folder, flag | os.O_WRONLY, 0o666)  # the umask applies, as to any new file
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EROFS, errno.ENOSPC):
            raise  # a real problem of the folder, which a named file would meet as well
        _NO_UNNAMED.add(device)
        return False
    try:
        _write_all(fd, data)
        # The file gets a name only now, complete; a kill in the instant before the rename leaves
        # it for remove_stale_temporaries.
        os.link(f"/proc/self/fd/{fd}", name, follow_symlinks=True)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EROFS, errno.ENOSPC):
            raise
        _NO_UNNAMED.add(device)  # e.g. EXDEV in sandboxes whose /proc links cannot be followed
        return False
    finally:
        os.close(fd)
    return True


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def remove_stale_temporaries(folder: Path, *, recursive: bool = True) -> list[Path]:
    """Remove the temporaries under `folder` whose writer no longer runs, or that are too old to be
    in use; a live writer's file is left alone. Returns what was removed."""
    removed: list[Path] = []
    pattern = f".*{TEMPORARY_MARK}*"
    try:
        candidates = list(folder.rglob(pattern) if recursive else folder.glob(pattern))
    except OSError:
        return removed
    now = time.time()
    for candidate in candidates:
        match = _TEMPORARY.match(candidate.name)
        if not match:
            continue
        try:
            age = now - candidate.lstat().st_mtime
        except OSError:
            continue
        pid = int(match["pid"])
        alive = pid == os.getpid() or _running(pid)
        if alive and age < STALE_AFTER_S:
            continue
        _unlink(candidate)
        removed.append(candidate)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
