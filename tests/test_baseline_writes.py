"""Updates never leave a half-written file, a stray temporary file, or a traceback.

Covers Ctrl-C and SIGKILL in the middle of a write, a folder that cannot be written, stale temporary
files of killed writers, and where files of odd module paths go.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from baseline_samples import sample_entries, sample_text
from conftest import Project

from pytest_kernelperf import atomic, baselines
from pytest_kernelperf.atomic import write_atomic
from pytest_kernelperf.baselines import yaml_io
from pytest_kernelperf.baselines.store import BaselineStore, file_for
from pytest_kernelperf.baselines.yaml_io import read
from pytest_kernelperf.model.baseline import EntryKey

ROOT = Path(baselines.__file__).resolve().parent.parent
OLD = "schema_version: 1\nentries: {}\nend: true\n"


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if atomic.TEMPORARY_MARK in p.name)


# --- Ctrl-C ------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["os.fsync", "os.replace"])
def test_ctrl_c_during_a_write_keeps_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(OLD)

    def interrupt(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, where.split(".")[1], interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, sample_text())
    monkeypatch.undo()
    assert path.read_text() == OLD
    assert leftovers(tmp_path) == []


# --- SIGKILL -----------------------------------------------------------------------------------

# A writer that stops for good once the new text is in its temporary file, before the rename.
KILLED_WRITER = """
import os, sys, time
from pathlib import Path
from pytest_kernelperf import atomic

if sys.argv[2] == "named":
    atomic._write_unnamed = lambda folder, name, data: False
real_fsync = os.fsync
def stall(fd):
    real_fsync(fd)
    print("written", flush=True)
    time.sleep(600)
os.fsync = stall
atomic.write_atomic(Path(sys.argv[1]), "schema_version: 1\\nentries: {}\\nend: true\\n# new\\n" * 500)
"""


def kill_mid_write(path: Path, mode: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(KILLED_WRITER), str(path), mode],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "written"
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    assert writer.returncode == -signal.SIGKILL


def unnamed_files_work(folder: Path) -> bool:
    probe = folder / ".probe.0.1.tmp"
    ok = atomic._write_unnamed(folder, probe, b"x")
    if ok:
        probe.unlink()
    return ok


def test_sigkill_mid_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    if not unnamed_files_work(tmp_path):
        pytest.skip("no O_TMPFILE with linkat through /proc here; the named-file test covers this system")
    path = tmp_path / "t.yaml"
    path.write_text(OLD)
    kill_mid_write(path, "unnamed")
    assert path.read_text() == OLD
    assert leftovers(tmp_path) == []


def test_sigkill_mid_write_with_named_temporary_is_cleaned_by_the_next_write(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(OLD)
    kill_mid_write(path, "named")
    assert path.read_text() == OLD  # the old file is intact
    stale = leftovers(tmp_path)
    assert len(stale) == 1 and stale[0].startswith(".t.yaml.")
    write_atomic(path, sample_text())  # the next update
    assert leftovers(tmp_path) == []
    assert read(path) == sample_entries()


def test_temporaries_of_running_writers_and_other_files_are_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    running = tmp_path / f".t.yaml.kernelperf-tmp-{os.getppid()}-abcd1234"  # our parent: alive
    unrelated = tmp_path / "notes.tmp"
    for keep in (running, unrelated):
        keep.write_text("x")
    write_atomic(path, OLD)
    assert running.exists() and unrelated.exists()


def test_any_write_removes_dead_writers_temporaries_of_other_files_too(tmp_path: Path) -> None:
    dead = tmp_path / ".u.yaml.kernelperf-tmp-999999999-abcd1234"  # another file's, writer gone
    old = tmp_path / f".v.yaml.kernelperf-tmp-{os.getppid()}-abcd1234"  # alive pid, but long past
    dead.write_text("x")
    old.write_text("x")
    os.utime(old, (0, 0))  # a write takes milliseconds: an hour-old temporary is a leftover
    write_atomic(tmp_path / "t.yaml", OLD)
    assert not dead.exists() and not old.exists()


def test_an_update_cleans_stale_temporaries_anywhere_under_the_baseline_folder(tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    stale = nested / ".test_x.yaml.kernelperf-tmp-999999999-abcd1234"
    stale.write_text("x")
    store, _ = store_with_one_entry(tmp_path)
    store.write()
    assert not stale.exists()


def test_temporaries_match_the_documented_gitignore_line(tmp_path: Path) -> None:
    import fnmatch

    name = atomic.temporary_for(tmp_path / "test_gelu.yaml").name
    assert fnmatch.fnmatch(name, atomic.GITIGNORE_LINE) and atomic.GITIGNORE_LINE == ".*.kernelperf-tmp-*"
    assert atomic.GITIGNORE_LINE in (ROOT.parent / "docs" / "ci.md").read_text()


# --- folders that cannot be written --------------------------------------------------------------


def store_with_one_entry(folder: Path) -> tuple[BaselineStore, Path]:
    store = BaselineStore(folder)
    key, entry = next(iter(sample_entries().items()))
    path = folder / "test_k.yaml"
    store.stage(path, key, entry)
    return store, path


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes to read-only folders")
def test_read_only_folder_gives_a_clear_error_and_keeps_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "baselines"
    folder.mkdir()
    store, path = store_with_one_entry(folder)
    path.write_text(OLD)
    folder.chmod(0o555)
    try:
        [update] = store.write()
    finally:
        folder.chmod(0o755)
    assert update.error is not None
    assert "Permission denied" in update.error and "read-only" in update.error
    assert path.read_text() == OLD
    assert leftovers(folder) == []


@pytest.mark.parametrize(
    ("errno_name", "hint"),
    [("EACCES", "read-only"), ("EROFS", "read-only"), ("ENOSPC", "disk is full")],
)
def test_write_failure_is_reported_per_file_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, errno_name: str, hint: str
) -> None:
    import errno

    store, path = store_with_one_entry(tmp_path)
    other = tmp_path / "test_other.yaml"
    key, entry = next(iter(sample_entries().items()))
    store.stage(other, key, entry)
    path.write_text(OLD)
    real_open = os.open

    def refuse(file: object, flags: int, *args: object, **kwargs: object) -> int:
        if str(file).startswith(str(tmp_path / ".test_k.yaml.")) or (
            str(file) == str(tmp_path) and flags & getattr(os, "O_TMPFILE", 0)
        ):
            code = getattr(errno, errno_name)
            raise OSError(code, os.strerror(code), str(file))
        return real_open(file, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refuse)
    monkeypatch.setattr(atomic, "_write_unnamed", lambda folder, name, data: False)
    updates = {u.path.name: u for u in store.write()}
    assert updates["test_k.yaml"].error is not None and hint in updates["test_k.yaml"].error
    assert str(tmp_path) in updates["test_k.yaml"].error
    assert path.read_text() == OLD
    assert updates["test_other.yaml"].error is None  # the other file was still written
    assert read(other) == {key: entry}


def test_file_where_the_folder_should_be(tmp_path: Path) -> None:
    blocker = tmp_path / "baselines"
    blocker.write_text("not a folder")
    store, _ = store_with_one_entry(blocker / "sub")
    [update] = store.write()
    assert update.error is not None and "a file stands where a folder should be" in update.error


def test_unchanged_file_is_not_rewritten(tmp_path: Path) -> None:
    store, path = store_with_one_entry(tmp_path)
    [first] = store.write()
    before = path.stat()
    [second] = store.write()  # the same figures again
    after = path.stat()
    assert first.added and not second.added and second.unchanged == 1
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)


UNREADABLE = "schema_version: 1\nentries:\n  a: 1\n  a: 2\nend: true\n"


def test_update_leaves_an_unreadable_file_alone_and_says_how_to_repair_it(tmp_path: Path) -> None:
    store, path = store_with_one_entry(tmp_path)
    path.write_text(UNREADABLE)
    [update] = store.write()
    assert path.read_text() == UNREADABLE
    assert update.error is not None and update.replaced_unreadable is None
    assert "line 4: " in update.error and "duplicate key" in update.error
    assert f"git checkout -- {path}" in update.error and "--kernelperf-replace-unreadable" in update.error
    assert "1 measured entry not written" in update.error


def test_update_replaces_an_unreadable_file_only_when_asked_and_says_so(tmp_path: Path) -> None:
    _, path = store_with_one_entry(tmp_path)
    store = BaselineStore(tmp_path, replace_unreadable=True)
    key, entry = next(iter(sample_entries().items()))
    store.stage(path, key, entry)
    path.write_text(UNREADABLE)
    [update] = store.write()
    assert update.replaced_unreadable is not None and "duplicate key" in update.replaced_unreadable
    assert update.error is None and len(read(path)) == 1


def test_prune_removes_only_the_named_tests(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    write_atomic(path, sample_text())
    store = BaselineStore(tmp_path)
    gone = "test_gelu[triton]"
    [update] = store.write(remove={path: {gone, "test_not_there"}})
    assert {k.test for k in update.removed} == {gone}
    assert update.kept == len(sample_entries()) - 2
    assert {k.test for k in read(path)} == {k.test for k in sample_entries()} - {gone}


# --- where files go ------------------------------------------------------------------------------

MODULES = [
    "test_x.py",
    "tests/gpu/test_x.py",
    "../outside/test_x.py",
    "../../../../etc/passwd",
    "/abs/test_x.py",
    "tests/test_é.py",
    "tests/test_ü.py",
    "tests/test_a b.py",
    "tests/te*st.py",
    "c:\\tests\\test_x.py",
    ".hidden/test_x.py",
    "..",
    "",
]


@pytest.mark.parametrize("module", MODULES)
def test_baseline_file_stays_inside_the_folder(tmp_path: Path, module: str) -> None:
    folder = tmp_path / "baselines"
    path = file_for(folder, module)
    assert path.resolve().is_relative_to(folder.resolve())
    assert path.suffix == ".yaml"
    write_atomic(path, OLD)
    assert path.read_text() == OLD


def test_distinct_modules_get_distinct_files(tmp_path: Path) -> None:
    paths = [file_for(tmp_path, module) for module in MODULES]
    assert len(set(paths)) == len(paths)


def test_ordinary_module_paths_keep_their_names(tmp_path: Path) -> None:
    assert file_for(tmp_path, "tests/gpu/test_gelu.py") == tmp_path / "tests" / "gpu" / "test_gelu.yaml"


def test_odd_test_ids_round_trip(tmp_path: Path) -> None:
    ids = [
        "t[a/b]",
        "t[../../x]",
        "t[a::b]::name",
        "t[*]",
        "t[é ü 漢]",
        "t[\\x00]",
        "t[#: -]",
        "- t",
        "x" * 300,
    ]
    entry = next(iter(sample_entries().values()))
    entries = {EntryKey(test, "NVIDIA H200", "hot"): entry for test in ids}
    path = tmp_path / "t.yaml"
    write_atomic(path, yaml_io.dump(entries))
    assert read(path) == entries
    assert [p.name for p in tmp_path.iterdir()] == ["t.yaml"]


# --- interrupted updates ---------------------------------------------------------------------------

SIX_TESTS = """
import os

import pytest
import torch

def kernel(x):
    return x * 2
kernel.fake_ms = float(os.environ.get("FAKE_MS", "1.0"))

@pytest.mark.parametrize("i", range(6))
def test_six(kernel_bench, i):
    kernel_bench(kernel, torch.ones(8))
    if i == 3 and os.environ.get("INTERRUPT_AT_4") == "1":
        raise KeyboardInterrupt  # what Ctrl-C raises in the test that runs
"""


def interrupted_update(project: Project, *args: str) -> tuple[pytest.RunResult, bytes]:
    project.module(SIX_TESTS)
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=6)
    before = project.baseline_file.read_bytes()
    project.monkeypatch.setenv("INTERRUPT_AT_4", "1")
    project.monkeypatch.setenv("FAKE_MS", "3.0")  # every entry would change
    result = project.pytester.runpytest(
        "-p", "no:cacheprovider", "--kernelperf-update-baselines", *args, no_reraise_ctrlc=True
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    return result, before


def test_an_interrupted_update_writes_nothing_and_says_what(project: Project) -> None:
    result, before = interrupted_update(project)
    assert project.baseline_file.read_bytes() == before
    result.stdout.fnmatch_lines(
        [
            "*test_kernels.yaml: NOT written: the run was interrupted: 4 measured entries not written "
            "(test_six[[]0[]], test_six[[]1[]], test_six[[]2[]], test_six[[]3[]]); run the update again, "
            "or write what an interrupted run measured with --kernelperf-write-interrupted"
        ]
    )


def test_an_interrupted_update_writes_when_asked(project: Project) -> None:
    result, before = interrupted_update(project, "--kernelperf-write-interrupted")
    assert project.baseline_file.read_bytes() != before
    result.stdout.fnmatch_lines(["*test_kernels.yaml: 0 added, 4 changed, 0 unchanged, 2 kept"])


def test_a_store_commit_after_an_interrupt_writes_nothing(tmp_path: Path) -> None:
    store, path = store_with_one_entry(tmp_path)
    [update] = store.commit(interrupted=True)
    assert not path.exists()
    assert (
        update.error is not None and "the run was interrupted: 1 measured entry not written" in update.error
    )
    [update] = store.commit(interrupted=True, write_interrupted=True)
    assert update.error is None and len(read(path)) == 1


# --- re-measurements within noise --------------------------------------------------------------------


def test_a_remeasurement_within_noise_keeps_the_old_entry_and_date(tmp_path: Path) -> None:
    key, entry = next((k, e) for k, e in sample_entries().items() if e.kernels is None)
    path = tmp_path / "t.yaml"
    write_atomic(path, yaml_io.dump({key: entry}))
    before = path.read_bytes()
    record = entry.device_time
    nudged = replace(
        record, median_ms=record.ci_ms[1], quantiles_ms=tuple(q * 1.001 for q in record.quantiles_ms)
    )
    store = BaselineStore(tmp_path)
    store.stage(path, key, replace(entry, device_time=nudged, recorded="2027-01-01T00:00:00Z"))
    [update] = store.write()
    assert (update.changed, update.unchanged) == ((), 1)
    assert path.read_bytes() == before  # old figures, old date: no diff


def test_a_remeasurement_beyond_noise_is_changed(tmp_path: Path) -> None:
    key, entry = next((k, e) for k, e in sample_entries().items() if e.kernels is None)
    path = tmp_path / "t.yaml"
    write_atomic(path, yaml_io.dump({key: entry}))
    record = entry.device_time
    slower = replace(
        record,
        median_ms=record.median_ms * 1.02,
        ci_ms=(record.ci_ms[0] * 1.02, record.ci_ms[1] * 1.02),
        quantiles_ms=tuple(q * 1.02 for q in record.quantiles_ms),
    )
    store = BaselineStore(tmp_path)
    store.stage(path, key, replace(entry, device_time=slower, recorded="2027-01-01T00:00:00Z"))
    [update] = store.write()
    assert (update.changed, update.unchanged) == ((key,), 0)
    assert read(path)[key].recorded == "2027-01-01T00:00:00Z"
