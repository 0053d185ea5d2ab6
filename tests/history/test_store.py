"""The history store: what one run file gives, idempotence, the schema and its upgrades, writers in
parallel, pruning and git."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import subprocess
from pathlib import Path

import pytest

from pytest_kernelperf.history import synthetic_runs as rf
from pytest_kernelperf.history.database import HistoryError
from pytest_kernelperf.history.git import git_info
from pytest_kernelperf.history.rows import SeriesKey
from pytest_kernelperf.history.schema import MIGRATIONS, SCHEMA_VERSION
from pytest_kernelperf.history.store import HistoryStore, load_run_file

from .historykit import with_host_rounds, write_old_history


def test_a_run_gives_one_measurement_per_metric_with_its_evidence(store: HistoryStore) -> None:
    run = rf.run(
        [
            rf.result(
                "tests/test_gelu.py::test_gelu",
                0.5,
                name="gelu",
                rounds=[0.49, 0.5, 0.51],
                kernels=[("triton_poi_fused_gelu_0", "c0de0c0de")],
                autotune={"triton_poi_fused_gelu_0": "BLOCK_SIZE=1024, num_warps=4"},
                nbytes=2_000_000_000,
                reference_ratio=1.25,
                host_ms=0.6,
                artifacts=["profiles/gelu/trace.json"],
            ),
            rf.result("tests/test_gelu.py::test_plain", 0.1),
        ],
        peaks={rf.H200: 4000.0},
    )
    run_id = store.append_run(run, commit="a" * 40, branch="main")

    rows = {(m["test"], m["metric"]): m for m in store.measurements()}
    assert set(rows) == {
        ("tests/test_gelu.py::test_gelu", "device_time"),
        ("tests/test_gelu.py::test_gelu", "host_latency"),
        ("tests/test_gelu.py::test_plain", "device_time"),
    }
    gelu = rows[("tests/test_gelu.py::test_gelu", "device_time")]
    assert gelu["run_id"] == run_id and gelu["commit"] == "a" * 40 and gelu["branch"] == "main"
    assert (gelu["name"], gelu["device"], gelu["cache"]) == ("gelu", rf.H200, "hot")
    assert gelu["level_ms"] == 0.5 and gelu["rounds_ms"] == [0.49, 0.5, 0.51]
    assert gelu["quantiles_ms"] == run["results"][0]["baseline_entry"]["device_time"]["quantiles_ms"]
    assert gelu["kernels"][0]["code"] == "c0de0c0de"
    assert gelu["autotune"] == {"triton_poi_fused_gelu_0": "BLOCK_SIZE=1024, num_warps=4"}
    assert gelu["reference_ratio"] == 1.25
    assert gelu["gb_per_s"] == pytest.approx(4000.0) and gelu["peak_fraction"] == pytest.approx(1.0)
    assert gelu["artifacts"] == ["profiles/gelu/trace.json"]
    host = rows[("tests/test_gelu.py::test_gelu", "host_latency")]
    assert host["level_ms"] == 0.6 and host["rounds_ms"] == [0.6] and host["kernels"] is None
    plain = rows[("tests/test_gelu.py::test_plain", "device_time")]
    assert plain["name"] == "" and plain["rounds_ms"] == [0.1]  # no rounds: the level is the one round
    assert plain["peak_fraction"] is None  # no bytes

    points = store.points()
    (gelu_id,) = (
        sid for sid, key in store.series().items() if key.name == "gelu" and key.metric == "device_time"
    )
    point = points[gelu_id][0]
    assert point.environment["torch"] == "2.13.0" and point.environment["python"] == "3.11.2"
    assert point.value == pytest.approx(0.5)


def test_the_same_run_is_stored_once(store: HistoryStore) -> None:
    run = rf.run([rf.result("t.py::test_a", 1.0)])
    first = store.ingest(run, commit="b" * 40)
    again = store.ingest(json.loads(json.dumps(run)), commit="c" * 40)  # same content, reparsed
    assert first.new and not again.new and again.run_id == first.run_id
    assert store.run_count() == 1 and len(list(store.measurements())) == 1
    other = store.ingest(rf.run([rf.result("t.py::test_a", 1.0)], created="2026-12-01T00:00:01Z"))
    assert other.new and store.run_count() == 2


def test_checked_results_and_null_metrics_are_skipped(store: HistoryStore) -> None:
    checked = rf.result("t.py::test_checked", 1.0)
    checked["device_time"] = None
    checked["verdict"] = "checked"
    assert store.ingest(rf.run([checked, rf.result("t.py::test_b", 2.0)])).measurements == 1


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([], "expected an object, got list"),
        ({"schema": "other"}, "not a pytest-kernelperf run file"),
        ({"schema": "pytest-kernelperf-run", "schema_version": 9, "results": []}, "schema_version 9"),
        (
            {"schema": "pytest-kernelperf-run", "schema_version": 1, "results": {}},
            "at results: expected a list",
        ),
    ],
)
def test_run_files_that_cannot_be_used_are_named(tmp_path: Path, data: object, problem: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(HistoryError, match=problem) as info:
        load_run_file(path)
    assert str(path) in str(info.value)


def test_unreadable_run_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match=r"missing\.json: no such file"):
        load_run_file(tmp_path / "missing.json")
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(HistoryError, match=r"broken\.json at line 1: not valid JSON"):
        load_run_file(tmp_path / "broken.json")


def test_the_database_is_in_wal_mode_at_the_latest_schema(store: HistoryStore) -> None:
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.schema_version == SCHEMA_VERSION == len(MIGRATIONS)


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_an_older_database_is_upgraded_and_keeps_its_runs(tmp_path: Path, version: int) -> None:
    path = tmp_path / "old.sqlite"
    write_old_history(
        path, version, [rf.run([rf.result("t.py::test_a", 1.0), rf.result("t.py::test_b", 2.0)])]
    )
    with HistoryStore(path) as upgraded:
        assert upgraded.schema_version == SCHEMA_VERSION
        assert upgraded.run_count() == 1
        assert upgraded.db.execute("SELECT COUNT(*) FROM analyses").fetchone()[0] == 0
        columns = "SELECT against_commit, against_ms, peak_memory_bytes FROM measurements"
        assert upgraded.db.execute(columns).fetchall()[0] == (None, None, None)
        levels = "SELECT level_ms FROM measurements ORDER BY series_id"  # median_ms before version 7
        assert upgraded.db.execute(levels).fetchall() == [(1.0,), (2.0,)]
        assert upgraded.db.execute("PRAGMA foreign_key_check").fetchall() == []
        assert sorted(k.test for k in upgraded.series().values()) == ["t.py::test_a", "t.py::test_b"]
        assert {len(p) for p in upgraded.points().values()} == {1}
        upgraded.append_run(rf.run([rf.result("t.py::test_a", 1.5)], created="2026-01-02T00:00:00Z"))
        assert upgraded.run_count() == 2


def test_a_database_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(HistoryError, match=r"new\.sqlite: history schema version .* newer"):
        HistoryStore(path)


def test_a_file_that_is_not_a_database_is_named(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not sqlite\n" * 100, encoding="utf-8")
    with pytest.raises(HistoryError, match=r"notes\.txt: not a history database"):
        HistoryStore(path)


def test_prune_keeps_the_newest_runs(store: HistoryStore) -> None:
    for i in range(5):
        store.append_run(rf.run([rf.result(f"t.py::test_{i % 2}", 1.0 + i)], created=rf.created(i)))
    assert store.prune(2) == 3
    assert [r["created"] for r in store.runs()] == [rf.created(3), rf.created(4)]
    assert len(store.series()) == 2
    assert store.prune(1) == 1 and len(store.series()) == 1  # a series left without runs goes too


def _writer(path: str, worker: int, runs: int) -> None:
    with HistoryStore(path) as db:
        for i in range(runs):
            result = rf.result(f"t.py::test_{i % 3}", 1.0 + worker + i / 100)
            db.append_run(
                rf.run([result], created=rf.created(worker * 100 + i)), commit=f"{worker:02d}{i:038d}"
            )


def test_parallel_writers_lose_no_run(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_writer, args=(str(path), w, 10)) for w in range(4)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(60)
    assert [p.exitcode for p in workers] == [0, 0, 0, 0]
    with HistoryStore(path) as db:
        assert db.run_count() == 40
        assert len(list(db.measurements())) == 40
        assert db.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_git_info_reads_commit_and_branch(tmp_path: Path) -> None:
    assert git_info(tmp_path) is None
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@example.com"

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
            text=True,
            env={**env, "PATH": "/usr/bin:/bin"},
        ).stdout.strip()

    git("init", "-q", "-b", "trunk")
    git("commit", "-q", "--allow-empty", "-m", "first")
    head = git("rev-parse", "HEAD")
    assert git_info(tmp_path) == (head, "trunk")
    git("checkout", "-q", "--detach")
    assert git_info(tmp_path) == (head, None)


def test_points_follow_the_runs_creation_time_not_the_order_of_import(store: HistoryStore) -> None:
    for i in (2, 0, 1):  # CI jobs finishing out of order
        store.append_run(rf.run([rf.result("t.py::test_a", 1.0 + i)], created=rf.created(i)))
    ((_, points),) = store.points().items()
    assert [p.level_ms for p in points] == [1.0, 2.0, 3.0]
    assert [p.value for p in points] == [1.0, 2.0, 3.0] and points[0].rounds() == (1.0,)


def test_recent_rounds_keep_the_matching_runs_since_a_date_newest_last(store: HistoryStore) -> None:
    def one(i: int, *, verdict: str = "same", method: str = "cupti", cache: str = "hot") -> None:
        result = rf.result("t.py::t", 0.05, rounds=[0.05 + i * 1e-6] * 3, cache=cache)
        result["verdict"] = verdict
        result["device_time"]["method"] = method
        store.append_run(rf.run([result], created=rf.created(i)))

    for i in range(6):
        one(i)
    one(6, verdict="slower")  # a regression's own run
    one(7, method="cuda-graph")  # another timer
    one(8, cache="cold")  # another series
    one(9)
    key = SeriesKey("t.py::t", "", rf.H200, "hot", "device_time")
    found = store.recent_rounds(key, method="cupti", verdict="same", since=rf.created(2), limit=3)
    assert [rounds[0] for rounds in found] == pytest.approx([0.050004, 0.050005, 0.050009])


def test_another_programs_database_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "app.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE users (id INTEGER)")
    with pytest.raises(
        HistoryError, match=r"app\.sqlite: an SQLite database of something else \(tables: users\)"
    ):
        HistoryStore(path)
    with sqlite3.connect(path) as db:
        assert [row[0] for row in db.execute("SELECT name FROM sqlite_master")] == ["users"]
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_a_reader_leaves_an_empty_file_empty(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite"
    path.touch()
    with pytest.raises(HistoryError, match="an empty file, not a history database yet"):
        HistoryStore(path, create=False)
    assert path.stat().st_size == 0
    with HistoryStore(path) as store:  # a writer makes it one
        assert store.runs() == []


def test_host_latency_keeps_the_rounds_of_the_entry_the_run_would_record(store: HistoryStore) -> None:
    result = with_host_rounds(rf.result("t.py::t", 0.05, rounds=[0.05] * 3, host_ms=0.08))
    store.append_run(rf.run([result]))
    (sid,) = [sid for sid, key in store.series().items() if key.metric == "host_latency"]
    (point,) = store.points(sid)[sid]
    assert point.rounds() == (0.079, 0.08, 0.081)


def test_the_peak_device_memory_of_a_call_is_kept_and_exported(store: HistoryStore) -> None:
    store.append_run(
        rf.run([rf.result("t.py::test_a", 1.0, peak_memory_bytes=64 << 20), rf.result("t.py::test_b", 1.0)])
    )
    rows = {m["test"]: m for m in store.measurements() if m["metric"] == "device_time"}
    assert rows["t.py::test_a"]["peak_memory_bytes"] == 64 << 20
    assert rows["t.py::test_b"]["peak_memory_bytes"] is None


def test_a_runs_nsight_compute_counters_are_kept_per_series_and_run(store: HistoryStore) -> None:
    from pytest_kernelperf.history import counters
    from pytest_kernelperf.model.counters import KernelCounters

    run = rf.run([rf.result("t.py::test_a", 1.0)])
    metrics = {"dram_read_bytes": 64.0, "occupancy_pct": 62.0}
    run["results"][0]["baseline_entry"]["counters"] = [{"name": "add", "launches": 1, "metrics": metrics}]
    stored = store.ingest(run)
    ((series_id,),) = store.db.execute("SELECT id FROM series WHERE metric = 'device_time'").fetchall()
    assert counters.read(store.db, series_id) == {stored.run_id: (KernelCounters("add", 1, metrics),)}
