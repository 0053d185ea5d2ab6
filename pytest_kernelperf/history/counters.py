"""Nsight Compute counters in the run history: one row per kernel of a measurement.

A run file's results carry the counters `--kernelperf-ncu` read in `baseline_entry.counters`
(validated by baselines/schema.py). Here they get a table of their own beside `measurements`,
keyed like it by (series, run), so a kernel's DRAM bytes or occupancy can be followed from run to
run. store.py runs `MIGRATION` as a step of its schema, and calls `insert` in its ingest
transaction with the series ids it made; `read` gives a series' counters back per run.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pytest_kernelperf.baselines.schema import SchemaError, counters_from_data
from pytest_kernelperf.model.counters import KernelCounters

MIGRATION: tuple[str, ...] = (
    """CREATE TABLE kernel_counters (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        series_id INTEGER NOT NULL REFERENCES series (id) ON DELETE CASCADE,
        kernel TEXT NOT NULL,
        launches INTEGER NOT NULL,
        counters TEXT NOT NULL,
        PRIMARY KEY (series_id, run_id, kernel)
    ) WITHOUT ROWID""",
)
METRIC = "device_time"  # the series counters belong to (what a kernel's time is judged in)

# (test, name, device, cache, metric): store.SeriesKey's fields, in its order.
Key = tuple[str, str, str, str, str]


def rows(run: Mapping[str, Any]) -> Iterator[tuple[Key, KernelCounters]]:
    """(series key, one kernel's counters) of every result of a run dict that carries counters;
    counters the schema refuses are left out (the run file gateway has reported them)."""
    results = run.get("results")
    for result in results if isinstance(results, list) else []:
        if not isinstance(result, dict) or not isinstance(result.get("nodeid"), str):
            continue
        entry = result.get("baseline_entry")
        data = entry.get("counters") if isinstance(entry, dict) else None
        if data is None:
            continue
        try:
            kernels = counters_from_data(data)
        except SchemaError:
            continue
        name = result.get("name")
        key = (
            result["nodeid"],
            name if isinstance(name, str) else "",
            str(result.get("device") or ""),
            str(result.get("cache") or ""),
            METRIC,
        )
        for kernel in kernels:
            yield key, kernel


def insert(
    db: Any,
    run_id: int,
    series_ids: Mapping[Key, int],
    found: Sequence[tuple[Key, KernelCounters]],
) -> int:
    """Store the counters of one run (in the caller's transaction); how many kernel rows."""
    values = [
        (run_id, series_ids[key], kernel.name, kernel.launches, json.dumps(kernel.values, sort_keys=True))
        for key, kernel in found
        if key in series_ids
    ]
    db.executemany(
        "INSERT OR IGNORE INTO kernel_counters (run_id, series_id, kernel, launches, counters) "
        "VALUES (?, ?, ?, ?, ?)",
        values,
    )
    return len(values)


def read(db: sqlite3.Connection, series_id: int) -> dict[int, tuple[KernelCounters, ...]]:
    """Run id -> the kernels' counters of one series, oldest run first; a row that is not what
    `insert` writes is left out."""
    out: dict[int, list[KernelCounters]] = {}
    query = (
        "SELECT run_id, kernel, launches, counters FROM kernel_counters WHERE series_id = ? "
        "ORDER BY run_id, kernel"
    )
    for run_id, kernel, launches, text in db.execute(query, (series_id,)):
        try:
            (counters,) = counters_from_data(
                [{"name": kernel, "launches": launches, "metrics": json.loads(text)}]
            )
        except (SchemaError, ValueError, TypeError):
            continue
        out.setdefault(int(run_id), []).append(counters)
    return {run_id: tuple(kernels) for run_id, kernels in out.items()}
