"""The rows a history stores, pinned: for every synthetic run the tests and studies make, every run
file recorded in the repository (tests/adversarial/data/run.json, the GPU studies' archives under
docs/results/), and the old histories (made at each schema version, and the two recorded on an
H200), the rows stored, or read back, are the ones in tests/history/data/rows_golden.json. The
synthetic runs are pinned as run-file schema 1 wrote them (the form they were pinned in, digests
and all); the same runs in schema 2 give the same rows, apart from the runs' digests.

One figure is apart: a measurement's `value_ms`, whose definition `judged_value` states; every
other column, the runs' digests among them, must be as pinned. Times and rates are compared to 12
significant digits (a rate computed in another order may differ in its last bit); text, JSON text
and whole numbers exactly.

`KERNELPERF_WRITE_GOLDEN=1 pytest tests/history/test_rows_golden.py -m ""` writes the file anew.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from conftest import recorded_runs

from pytest_kernelperf.history import synthetic_runs as rf
from pytest_kernelperf.history.schema import SCHEMA_VERSION
from pytest_kernelperf.history.store import HistoryStore

from .historykit import commit_of, fill, in_schema_1, needs_server, with_host_rounds, write_old_history

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).with_name("data") / "rows_golden.json"
WRITE = os.environ.get("KERNELPERF_WRITE_GOLDEN") == "1"

RUN_COLUMNS = (
    "digest",
    "repository",
    "created",
    "commit_sha",
    "branch",
    "source",
    "plugin_version",
    "mode",
    "environment",
    "devices",
    "peaks",
    "settings",
)
SERIES_COLUMNS = ("repository", "test", "name", "device", "cache", "metric")
MEASUREMENT_COLUMNS = (
    "verdict",
    "method",
    "level_ms",
    "ci_low_ms",
    "ci_high_ms",
    "n",
    "rounds_ms",
    "quantiles_ms",
    "kernels",
    "autotune",
    "reference_ratio",
    "reference_ms",
    "against_commit",
    "against_ms",
    "peak_memory_bytes",
    "bytes",
    "gb_per_s",
    "peak_gb_per_s",
    "peak_fraction",
    "artifacts",
)
COUNTER_COLUMNS = ("kernel", "launches", "counters")


def judged_value(row: Mapping[str, Any]) -> float:
    """What a measurement's `value_ms` is: the level its verdict judged, as the result carries it
    (stored as `level_ms`). Before, it was the arithmetic mean of the rounds; old histories keep
    theirs (the two recorded on an H200 are pinned with it)."""
    return float(row["level_ms"])


# --- the runs ----------------------------------------------------------------------------------------


def _against(result: dict[str, Any], level: float) -> dict[str, Any]:
    result["against"] = {
        "revision": "main (c0ffee0000)",
        "commit": "c0ffee00" * 5,
        "found": "found",
        "where": "kernels:gelu",
        "reason": "",
        "level_ms": level,
        "rounds_ms": [level * 0.999, level, level * 1.001],
        "method": "cupti",
        "answers": "identical",
    }
    return result


def _with_counters(result: dict[str, Any]) -> dict[str, Any]:
    result["baseline_entry"]["counters"] = [
        {"name": "add", "launches": 1, "metrics": {"dram_read_bytes": 64.0, "occupancy_pct": 62.0}},
        {"name": "scale", "launches": 2, "metrics": {"dram_read_bytes": 128.0}},
    ]
    return result


def _checked(result: dict[str, Any]) -> dict[str, Any]:
    result["device_time"] = None
    result["verdict"] = "checked"
    return result


def _without_entry(result: dict[str, Any]) -> dict[str, Any]:
    result["baseline_entry"] = None
    return result


def synthetic_runs() -> dict[str, list[dict[str, Any]]]:
    """Named groups of synthetic runs: each shape `synthetic_runs.result` makes, and the histories
    the tests and studies build from them (in the current run-file schema)."""
    gelu = "tests/test_gelu.py::test_gelu"
    every_shape = rf.result(
        gelu,
        0.5,
        name="gelu",
        rounds=[0.49, 0.5, 0.51],
        kernels=[("triton_poi_fused_gelu_0", "c0de0c0de"), ("triton_red_fused_sum_1", None)],
        autotune={"triton_poi_fused_gelu_0": "BLOCK_SIZE=1024, num_warps=4"},
        nbytes=2_000_000_000,
        reference_ratio=1.25,
        host_ms=0.6,
        artifacts=["profiles/gelu/trace.json"],
        peak_memory_bytes=64 << 20,
    )
    groups: dict[str, list[dict[str, Any]]] = {
        "every shape": [
            rf.run(
                [every_shape, rf.result("tests/test_gelu.py::test_plain", 0.1)],
                peaks={rf.H200: 4000.0},
            )
        ],
        "bytes without a peak": [rf.run([rf.result("t.py::test_a", 0.25, nbytes=1 << 30)])],
        "bytes on two devices, one peak": [
            rf.run(
                [
                    rf.result("t.py::test_a", 0.25, nbytes=1 << 30),
                    rf.result("t.py::test_a", 0.5, nbytes=1 << 30, device="NVIDIA A100", cache="cold"),
                ],
                devices=[rf.H200, "NVIDIA A100"],
                peaks={rf.H200: 4020.0},
                device_env={**rf.DEVICE_ENV, "driver": "580.1"},
            )
        ],
        "many samples": [rf.run([rf.result("t.py::test_many", 0.003, samples=200, rounds=[0.003] * 5)])],
        "few samples, no entry": [rf.run([_without_entry(rf.result("t.py::test_bare", 2.0, samples=5))])],
        "host rounds from the entry": [
            rf.run([with_host_rounds(rf.result("t.py::t", 0.05, rounds=[0.05] * 3, host_ms=0.08))])
        ],
        "counters": [rf.run([_with_counters(rf.result("t.py::test_c", 1.0, name="fused"))])],
        "against a revision": [rf.run([_against(rf.result("t.py::test_d", 0.02, rounds=[0.02] * 3), 0.021)])],
        "checked and timed": [
            rf.run([_checked(rf.result("t.py::test_checked", 1.0)), rf.result("t.py::b", 2.0)])
        ],
        "one key twice: the first kept": [
            rf.run([rf.result("t.py::test_twice", 1.0), rf.result("t.py::test_twice", 3.0)])
        ],
        "verdicts and methods": [
            rf.run(
                [_verdict(rf.result("t.py::t", 0.05, rounds=[0.05 + i * 1e-6] * 3), i)], created=rf.created(i)
            )
            for i in range(4)
        ],
        "a drifting series": [
            rf.run(
                [rf.result("tests/test_k.py::test_mul", level, rounds=[level * 0.999, level, level * 1.001])],
                created=rf.created(i),
            )
            for i, level in enumerate([1.0] * 4 + [1.2] * 4)
        ],
    }
    return groups


def _verdict(result: dict[str, Any], i: int) -> dict[str, Any]:
    result["verdict"] = ("same", "slower", "faster", "undetermined")[i]
    result["device_time"]["method"] = ("cupti", "cupti", "cuda-graph", "cupti")[i]
    return result


# --- the rows ----------------------------------------------------------------------------------------


def _figure(value: Any) -> Any:
    return float(f"{value:.12g}") if isinstance(value, float) else value


def stored_rows(store: HistoryStore) -> dict[str, Any]:
    """Every row of the store's tables as written (ids and ingestion times aside: runs are named by
    their digest, series by their key), with each measurement's value checked by `judged_value`."""
    db = store.db
    runs = {}
    for rid, *values in db.execute(f"SELECT id, {', '.join(RUN_COLUMNS)} FROM runs ORDER BY id").fetchall():
        runs[rid] = dict(zip(RUN_COLUMNS, values, strict=True))
    series = {}
    for sid, *values in db.execute(f"SELECT id, {', '.join(SERIES_COLUMNS)} FROM series").fetchall():
        series[sid] = " | ".join(values)
    measurements = []
    columns = ", ".join(MEASUREMENT_COLUMNS)
    for rid, sid, value, *values in db.execute(
        f"SELECT run_id, series_id, value_ms, {columns} FROM measurements ORDER BY run_id, series_id"
    ).fetchall():
        row = dict(zip(MEASUREMENT_COLUMNS, values, strict=True))
        assert value == judged_value(row), (series[sid], value, row)
        measurements.append({"run": runs[rid]["digest"], "series": series[sid], **row})
    counters = [
        {"run": runs[rid]["digest"], "series": series[sid], **dict(zip(COUNTER_COLUMNS, values, strict=True))}
        for rid, sid, *values in db.execute(
            f"SELECT run_id, series_id, {', '.join(COUNTER_COLUMNS)} FROM kernel_counters "
            "ORDER BY run_id, series_id, kernel"
        ).fetchall()
    ]
    tables = {
        "runs": list(runs.values()),
        "series": sorted(series.values()),
        "measurements": measurements,
        "counters": counters,
    }
    out: dict[str, Any] = json.loads(json.dumps(tables), parse_float=lambda text: _figure(float(text)))
    return out


def read_back(store: HistoryStore, with_value: bool) -> dict[str, Any]:
    """What the store's readers give of a history: runs, series, points and the export."""
    points = {
        store.series()[sid].label(): [
            {
                "run": p.run_id,
                "created": p.created,
                "commit": p.commit,
                "branch": p.branch,
                "level_ms": p.level_ms,
                "rounds": list(p.rounds()),
                "verdict": p.verdict,
                "kernels": p.inventory(),
                "autotune": p.autotune,
                "environment": dict(p.environment),
                "reference_ratio": p.reference_ratio,
                "peak_fraction": p.peak_fraction,
                "artifacts": list(p.artifacts),
                "peak_memory_bytes": p.peak_memory_bytes,
                **({"value": p.value} if with_value else {}),
            }
            for p in found
        ]
        for sid, found in store.points().items()
    }
    data = {
        "runs": store.runs(),
        "points": points,
        "export": list(store.measurements()),
        "peaks": store.peaks(),
    }
    out: dict[str, Any] = json.loads(json.dumps(data), parse_float=lambda text: _figure(float(text)))
    return out


def fingerprint(tables: Mapping[str, Any]) -> dict[str, Any]:
    text = json.dumps(tables, sort_keys=True, separators=(",", ":"))
    counts = {name: len(rows) for name, rows in tables.items() if isinstance(rows, (list, dict))}
    return {"sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), **counts}


# --- the golden file ---------------------------------------------------------------------------------


def _golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text(encoding="utf-8")) if GOLDEN.exists() else {}


def agrees(name: str, tables: Mapping[str, Any]) -> None:
    """`tables` are what the golden file pins under `name` (with KERNELPERF_WRITE_GOLDEN=1: pinned)."""
    found = fingerprint(tables)
    if WRITE:
        golden = _golden()
        golden[name] = found
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1) + "\n", encoding="utf-8")
        return
    pinned = _golden().get(name)
    assert pinned is not None, f"{name}: not in {GOLDEN.name} (KERNELPERF_WRITE_GOLDEN=1 pins it)"
    if pinned != found:
        shown = json.dumps(tables, sort_keys=True, indent=1)[:6000]
        pytest.fail(f"{name}: the rows differ from those pinned ({pinned} -> {found}):\n{shown}")


def _ingested(
    location: Path | str, runs: list[dict[str, Any]], repository: str = ""
) -> Callable[[], HistoryStore]:
    with HistoryStore(location, repository=repository) as store:
        for i, run in enumerate(runs):
            store.ingest(run, commit=commit_of(i), branch="main" if i % 2 else None, source=f"run{i}.json")
    return lambda: HistoryStore(location, read_only=True, repository=repository)


# --- the tests ---------------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=needs_server)])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    if request.param == "sqlite":
        return tmp_path / "history.sqlite"
    return str(request.getfixturevalue("server_url"))


def pinned_runs(group: str) -> list[dict[str, Any]]:
    """A group of synthetic runs as they are pinned: as run-file schema 1 wrote them."""
    return [in_schema_1(run) for run in synthetic_runs()[group]]


@pytest.mark.parametrize("group", sorted(synthetic_runs()))
def test_the_rows_of_synthetic_runs_are_as_pinned(location: Path | str, group: str) -> None:
    opened = _ingested(location, pinned_runs(group))
    with opened() as store:
        agrees(f"synthetic: {group}", stored_rows(store))
        agrees(f"synthetic, read back: {group}", read_back(store, with_value=False))


@pytest.mark.parametrize("group", sorted(synthetic_runs()))
def test_runs_in_schema_2_give_the_rows_of_the_same_runs_in_schema_1(tmp_path: Path, group: str) -> None:
    """A run's digest is of its file as written; every other figure stored is the same."""
    current, old = synthetic_runs()[group], pinned_runs(group)
    with _ingested(tmp_path / "2.sqlite", current)() as store:
        found = stored_rows(store)
    with _ingested(tmp_path / "1.sqlite", old)() as store:
        expected = stored_rows(store)
    digests = dict(
        zip((r["digest"] for r in found["runs"]), (r["digest"] for r in expected["runs"]), strict=True)
    )
    assert len(set(digests.values())) == len(digests) and all(new != old for new, old in digests.items())
    for run in found["runs"]:
        run["digest"] = digests[run["digest"]]
    for row in found["measurements"] + found["counters"]:
        row["run"] = digests[row["run"]]
    assert found == expected


def test_a_named_repository_keeps_the_rows_and_digests_of_its_own(location: Path | str) -> None:
    runs = pinned_runs("a drifting series")
    _ingested(location, runs)
    opened = _ingested(location, runs, repository="kernels")
    with opened() as store:
        agrees("synthetic, two repositories", stored_rows(store))


def test_the_histories_the_tests_fill_are_as_pinned(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        fill(store, [1.0] * 5 + [1.1] * 5, code_from=5, schema_1=True)
        fill(store, [0.2] * 6, nodeid="tests/test_k.py::test_add", name=None, first=10, schema_1=True)
        agrees("synthetic: historykit.fill", stored_rows(store))


def test_the_recorded_run_file_of_the_tests_gives_the_rows_pinned(location: Path | str) -> None:
    run = json.loads((REPO / "tests" / "adversarial" / "data" / "run.json").read_text(encoding="utf-8"))
    with _ingested(location, [run])() as store:
        agrees("recorded: tests/adversarial/data/run.json", stored_rows(store))


@pytest.mark.slow
def test_the_recorded_run_files_of_the_studies_give_the_rows_pinned(tmp_path: Path) -> None:
    found = 0
    for i, (name, text) in enumerate(recorded_runs()):
        with HistoryStore(tmp_path / f"{i}.sqlite") as store:
            store.ingest(json.loads(text), commit=commit_of(i), source=name)
            agrees(f"recorded: {name}", stored_rows(store))
        found += 1
    assert found == 172


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_an_older_history_reads_back_as_pinned(tmp_path: Path, version: int) -> None:
    path = tmp_path / "old.sqlite"
    runs = [run for group in synthetic_runs() for run in pinned_runs(group)]
    write_old_history(path, version, runs)
    with HistoryStore(path, read_only=True) as store:
        # Written by today's ingest and copied back: the value is today's, pinned by the tests above.
        agrees(f"old history at version {version}, read back", read_back(store, with_value=False))


@pytest.mark.parametrize("name", ["h200_demo_history.sqlite", "h200_inventory_history.sqlite"])
def test_the_histories_recorded_on_an_h200_read_back_as_pinned(tmp_path: Path, name: str) -> None:
    path = tmp_path / name  # a copy: a reader of a WAL file makes its shared-memory file beside it
    shutil.copyfile(REPO / "docs" / "results" / "real_history" / name, path)
    with HistoryStore(path, read_only=True) as store:
        agrees(f"recorded history: {name}", read_back(store, with_value=True))
