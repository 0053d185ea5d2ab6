"""Nsight Compute counters in the run history: one row per kernel of a measurement.

A run file's results carry the counters `--kernelperf-ncu` read in `baseline_entry.counters`
(validated by baselines/schema.py; `rows.counters_of` gives them). They get a table of their own
beside `measurements` (schema step 6), keyed like it by (series, run), so a kernel's DRAM bytes or
occupancy can be followed from run to run. The store calls `insert` in its ingest transaction with
the series ids it made; `read` gives a series' counters back per run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from pytest_kernelperf.baselines.schema import SchemaError, counters_from_data
from pytest_kernelperf.model.counters import KernelCounters

from .database import Database
from .rows import SeriesKey


def insert(
    db: Database,
    run_id: int,
    series_ids: Mapping[SeriesKey, int],
    found: Sequence[tuple[SeriesKey, KernelCounters]],
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


def read(db: Database, series_id: int) -> dict[int, tuple[KernelCounters, ...]]:
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
