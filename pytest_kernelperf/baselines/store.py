"""The session's view of the baseline files: where each entry lives, and the update at the end.

Reads each file once, stages the entries a run measured, and at the end merges them into their
files (entries of tests that did not run are kept), each file replaced atomically. Never writes a
file it cannot read, and never writes after an interrupted run, unless asked to by name: both would
lose entries that this machine cannot measure again. No pytest, no torch.
"""

from __future__ import annotations

import errno
import hashlib
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pytest_kernelperf.atomic import remove_stale_temporaries, write_atomic
from pytest_kernelperf.baselines import processes
from pytest_kernelperf.baselines.schema import as_stored, rounded
from pytest_kernelperf.baselines.yaml_io import REPAIR, BaselineError, UnwritableEntry, dump, read
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey, MetricRecord
from pytest_kernelperf.model.counters import BY_KEY, KernelCounters
from pytest_kernelperf.model.result import MEMORY_FLOOR_BYTES
from pytest_kernelperf.profiling.ncu_diff import moved

WRITE_INTERRUPTED_OPTION = "--kernelperf-write-interrupted"

# --- where entries live ------------------------------------------------------------------------

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def file_for(baseline_dir: Path, module: str) -> Path:
    """The baseline file of a test module given by its path relative to the rootdir.

    The module path comes from the test's node id, which a conftest or a test outside the rootdir can
    make odd (`..`, absolute, characters a file system refuses): every part is made safe, so the
    result always lies inside `baseline_dir`. A part that had to change gets a short hash of its
    original spelling, so that two modules never share a file (`test_é.py` and `test_ü.py`).
    """
    # An absolute path (a test outside the rootdir) keeps its "/" as a part: /abs/t.py != abs/t.py.
    given = [p for p in PurePosixPath(module.replace("\\", "/")).parts if p not in ("", ".")]
    parts = []
    for index, part in enumerate(given):
        last = index == len(given) - 1
        stem = part[:-3] if last and part.endswith(".py") else part
        safe = {"..": "_up", "/": "_root"}.get(part) or _UNSAFE.sub("_", stem)
        if safe != stem or safe.startswith("."):
            digest = hashlib.sha256(stem.encode("utf-8", "surrogatepass")).hexdigest()[:8]
            safe = f"{safe.lstrip('.') or '_'}-{digest}"
        parts.append(safe)
    if not parts:
        parts = ["_"]
    parts[-1] += ".yaml"
    return baseline_dir.joinpath(*parts)


# --- the session's view of all baseline files --------------------------------------------------


@dataclass(frozen=True)
class FileUpdate:
    """What an update did to one file."""

    path: Path
    added: tuple[EntryKey, ...]
    changed: tuple[EntryKey, ...]
    unchanged: int  # entries re-measured within noise: the old entry and its date were kept
    kept: int  # entries of tests that did not run, left as they were
    replaced_unreadable: str | None = None  # the error of a bad file replaced on request
    removed: tuple[EntryKey, ...] = ()  # unused entries pruned on request
    error: str | None = None  # why the file was not written (it was left as it was)

    @classmethod
    def refused(cls, path: Path, error: str) -> FileUpdate:
        """A file left as it was, and why."""
        return cls(path, added=(), changed=(), unchanged=0, kept=0, error=error)


class BaselineStore:
    """Reads baseline files once each, stages new entries, and writes them merged at the end.

    `replace_unreadable`: an update may replace a file it cannot read (its entries are lost), as
    asked for with --kernelperf-replace-unreadable; otherwise such a file is left alone.
    """

    def __init__(self, folder: Path, *, replace_unreadable: bool = False) -> None:
        self.folder = folder
        self.replace_unreadable = replace_unreadable
        self._read: dict[Path, dict[EntryKey, BaselineEntry] | BaselineError] = {}
        self._staged: dict[Path, dict[EntryKey, BaselineEntry]] = {}
        self._used: dict[Path, set[EntryKey]] = {}

    def path_for(self, module: str) -> Path:
        return file_for(self.folder, module)

    def entries(self, path: Path) -> dict[EntryKey, BaselineEntry]:
        """The file's entries; raises its BaselineError (every time it is asked, for every test)."""
        if path not in self._read:
            try:
                self._read[path] = read(path)
            except BaselineError as exc:
                self._read[path] = exc
        found = self._read[path]
        if isinstance(found, BaselineError):
            raise found
        return found

    def suite(self) -> list[tuple[Path, EntryKey, BaselineEntry]]:
        """Every readable entry of every baseline file under the folder: the suite a judgement
        belongs to, whichever of its tests a run selects. Unreadable files are left out (their
        tests fail with their error)."""
        found: list[tuple[Path, EntryKey, BaselineEntry]] = []
        for path in sorted(self.folder.rglob("*.yaml")) if self.folder.is_dir() else []:
            try:
                entries = self.entries(path)
            except BaselineError:
                continue
            found.extend((path, key, entry) for key, entry in entries.items())
        return found

    def lookup(self, path: Path, key: EntryKey) -> BaselineEntry | None:
        self._used.setdefault(path, set()).add(key)
        return self.entries(path).get(key)

    def stage(self, path: Path, key: EntryKey, entry: BaselineEntry) -> None:
        self._staged.setdefault(path, {})[key] = as_stored(entry)

    def stage_process(self, path: Path, key: EntryKey, entry: BaselineEntry) -> None:
        """Stage `entry`, measured by a later recording process, as one more process of the entry
        staged for `key`. Where the first process staged none (it refused an occasion, or did not
        measure the call), the later one's is left out: alone, it would replace the stored entry."""
        staged = self._staged.get(path, {}).get(key)
        if staged is not None:
            self.stage(path, key, processes.combine(staged, entry))

    def unstage(self, path: Path, key: EntryKey) -> None:
        """Drop the entry staged for `key`: the update leaves the stored one (if any) as it is."""
        staged = self._staged.get(path, {})
        staged.pop(key, None)
        if not staged:
            self._staged.pop(path, None)  # nothing left to write there: no file created

    @property
    def staged(self) -> dict[Path, dict[EntryKey, BaselineEntry]]:
        return self._staged

    def commit(
        self,
        *,
        interrupted: bool = False,
        write_interrupted: bool = False,
        remove: Mapping[Path, Collection[str]] | None = None,
    ) -> list[FileUpdate]:
        """The end of an update: write the staged entries, unless the run was interrupted.

        An interrupted run (Ctrl-C) measured some tests and not others, possibly mid-measurement:
        not a trustworthy measurement, so nothing is written unless `write_interrupted` (the user
        asked for it); each file says what was not written.
        """
        if interrupted and not write_interrupted:
            return [
                FileUpdate.refused(
                    path,
                    f"the run was interrupted: {len(entries)} measured "
                    f"{'entry' if len(entries) == 1 else 'entries'} not written "
                    f"({', '.join(sorted({key.test for key in entries}))}); run the update again, or "
                    f"write what an interrupted run measured with {WRITE_INTERRUPTED_OPTION}",
                )
                for path, entries in sorted(self._staged.items())
                if entries
            ]
        return self.write(remove=remove)

    def write(self, remove: Mapping[Path, Collection[str]] | None = None) -> list[FileUpdate]:
        """Merge staged entries into their files, atomically; entries of tests that did not run stay.

        `remove` names, per file, test ids whose entries go (unused entries, pruned on request).
        A file that cannot be written, or read, is reported in its FileUpdate's `error`, and the
        others are still written: each file is replaced whole or not at all.
        """
        remove = remove or {}
        remove_stale_temporaries(self.folder)  # leftovers of killed writers, anywhere below
        updates = []
        for path in sorted(set(self._staged) | {p for p, tests in remove.items() if tests}):
            updates.append(self._write_file(path, self._staged.get(path, {}), set(remove.get(path, ()))))
        return updates

    def _write_file(self, path: Path, new: dict[EntryKey, BaselineEntry], gone: set[str]) -> FileUpdate:
        replaced = None
        try:
            old = read(path)
        except BaselineError as exc:
            if not self.replace_unreadable:
                return FileUpdate.refused(
                    path,
                    f"it cannot be read ({_where(exc)}{exc.problem}), and rewriting it would lose "
                    f"its other entries; {REPAIR.replace('FILE', str(path))}; "
                    f"{len(new)} measured {'entry' if len(new) == 1 else 'entries'} not written",
                )
            old, replaced = {}, exc.problem
        merged, added, changed, unchanged, removed = merge(old, new, gone)
        error = None
        try:
            _write_if_changed(path, dump(merged))
        except UnwritableEntry as exc:
            error = f"{exc}; the old file was left as it was"
        except OSError as exc:
            error = _describe_os_error(exc, path)
        return FileUpdate(
            path,
            added,
            changed,
            unchanged=unchanged,
            kept=len(set(old) - set(new) - set(removed)),
            replaced_unreadable=replaced,
            removed=removed,
            error=error,
        )


def merge(
    old: Mapping[EntryKey, BaselineEntry], new: Mapping[EntryKey, BaselineEntry], gone: Collection[str] = ()
) -> tuple[
    dict[EntryKey, BaselineEntry], tuple[EntryKey, ...], tuple[EntryKey, ...], int, tuple[EntryKey, ...]
]:
    """(merged entries, added, changed, number unchanged, removed) of an update of one file.

    A re-measurement within noise of its old entry, of the same call, keeps the old entry, date
    included: no diff without a change. Entries of tests in `gone` that were not re-measured are
    removed.
    """
    removed = tuple(sorted((k for k in old if k.test in gone and k not in new), key=_order))
    same = {k for k in new if k in old and within_noise(old[k], new[k]) and same_call(old[k], new[k])}
    merged = {k: v for k, v in old.items() if k not in removed}
    merged.update({k: v for k, v in new.items() if k not in same})
    added = tuple(sorted((k for k in new if k not in old), key=_order))
    changed = tuple(sorted((k for k in new if k in old and k not in same), key=_order))
    return merged, added, changed, len(same), removed


def within_noise(old: BaselineEntry, new: BaselineEntry) -> bool:
    """Whether `new` measures what `old` did, with figures inside each other's noise.

    Same method, environment and kernels (names, launches, generated code), peak device memory
    within 1 MiB, each median inside the other's 95% confidence interval, and each level (the
    rounds' geometric mean, what verdicts judge) inside the other's range of rounds, for device time
    and host latency alike. Anything else is a change worth a diff line: an entry without rounds
    (schema 1), or without the peak memory a run now measures, is replaced by one with them.
    """
    if old.environment != new.environment or _kernel_shape(old) != _kernel_shape(new):
        return False
    if not _memory_within_noise(old.peak_memory_bytes, new.peak_memory_bytes):
        return False
    if not _metric_within_noise(old.device_time, new.device_time):
        return False
    if (old.host_latency is None) != (new.host_latency is None):
        return False
    return old.host_latency is None or (
        new.host_latency is not None and _metric_within_noise(old.host_latency, new.host_latency)
    )


def same_call(old: BaselineEntry, new: BaselineEntry) -> bool:
    """Whether `new` records what `old` does about the call beside its figures: the same inputs,
    compile context and autotuner choices (None: the call had none), and counters that moved
    within their noise bands. Counters this run did not read (no --kernelperf-ncu) are no change:
    the old ones stay with the old entry."""
    if (old.inputs, old.compile_context, old.autotune) != (new.inputs, new.compile_context, new.autotune):
        return False
    return new.counters is None or (
        old.counters is not None and _counters_within_noise(old.counters, new.counters)
    )


def _counters_within_noise(old: tuple[KernelCounters, ...], new: tuple[KernelCounters, ...]) -> bool:
    """The same kernels, launched as often, with the same counters read, none moved beyond its band."""
    before = {k.name: k for k in old}
    if sorted(before) != sorted(k.name for k in new):
        return False
    for kernel in new:
        was = before[kernel.name]
        if was.launches != kernel.launches or set(was.values) != set(kernel.values):
            return False
        if any(moved(BY_KEY[key], was.values[key], value) for key, value in kernel.values.items()):
            return False
    return True


def _memory_within_noise(old: int | None, new: int | None) -> bool:
    """Peak device memory is nearly deterministic: the same figure to the allocator's wobble (the
    floor below which a growth never fails). An entry without one gets it written."""
    if old is None or new is None:
        return old is None and new is None
    return abs(old - new) <= MEMORY_FLOOR_BYTES


def _metric_within_noise(old: MetricRecord, new: MetricRecord) -> bool:
    return (
        old.method == new.method
        # Another shape of recording (more processes, another occasion) is news, whatever the figures.
        and (old.process_rounds, old.occasion_processes) == (new.process_rounds, new.occasion_processes)
        and old.ci_ms[0] <= new.median_ms <= old.ci_ms[1]
        and new.ci_ms[0] <= old.median_ms <= new.ci_ms[1]
        and _rounds_within_noise(old, new)
    )


def _rounds_within_noise(old: MetricRecord, new: MetricRecord) -> bool:
    """The rounds decide verdicts, so medians that agree do not make an entry unchanged: each level
    must lie within the other's rounds (to the six digits a file keeps: a geometric mean of equal
    rounds may differ from them in its last bit)."""
    if not (old.rounds_ms and new.rounds_ms):
        return not (old.rounds_ms or new.rounds_ms)

    def inside(level_ms: float, rounds_ms: tuple[float, ...]) -> bool:
        return min(rounds_ms) <= rounded(level_ms) <= max(rounds_ms)

    return inside(new.level_ms, old.rounds_ms) and inside(old.level_ms, new.rounds_ms)


def _kernel_shape(entry: BaselineEntry) -> tuple[tuple[str, int, str | None], ...] | None:
    if entry.kernels is None:
        return None
    return tuple(sorted((k.name, k.launches, k.code) for k in entry.kernels))


def _where(exc: BaselineError) -> str:
    return f"line {exc.line}: " if exc.line else ""


def _write_if_changed(path: Path, text: str) -> None:
    """Write unless the file already holds exactly `text` (no new mtime, no write permission needed)."""
    try:
        if path.read_bytes() == text.encode("utf-8"):
            return
    except OSError:
        pass
    write_atomic(path, text)


def _describe_os_error(exc: OSError, path: Path) -> str:
    reason = exc.strerror or str(exc)
    where = exc.filename or path
    read_only = "is the folder read-only? make it writable or choose another with --kernelperf-baseline-dir"
    hint = {
        errno.EACCES: read_only,
        errno.EPERM: read_only,
        errno.EROFS: "the file system is read-only; choose another folder with --kernelperf-baseline-dir",
        errno.ENOSPC: "the disk is full",
        errno.ENOTDIR: "a file stands where a folder should be",
        errno.EEXIST: "a file stands where a folder should be",
    }.get(exc.errno or 0, "")
    return f"{reason}: {where}" + (f" ({hint})" if hint else "") + "; the old file was left as it was"


def _order(key: EntryKey) -> tuple[str, str, str]:
    return key.test, key.device, key.cache
