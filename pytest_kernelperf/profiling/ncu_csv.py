"""Nsight Compute's raw page as CSV (`ncu --import r.ncu-rep --csv --page raw --print-units base`),
read into per-kernel counters.

The layout: a header line of quoted column names ("ID", "Process ID", ..., "Kernel Name", ...,
then one column per metric), a line of units (empty for the descriptive columns), then one row
per kernel launch. Read defensively: lines before the header (ncu's own `==PROF==` or `==WARNING==`
lines) are skipped, a units line is recognised rather than assumed, numbers may carry thousands
separators, `n/a` or an empty cell is a counter not read, units other than the base ones
(`Kbyte`, `usecond`) are scaled back to bytes and nanoseconds, and a kernel name's control
characters (an escape sequence, a line break) are kept as escapes (`\\x1b`). No torch, no pytest.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from pytest_kernelperf.formatting import escape_controls
from pytest_kernelperf.model.counters import (
    ADDITIVE,
    BY_KEY,
    MAX_PCT,
    STALL_PREFIX,
    STALL_REASONS,
    KernelCounters,
)

# Nsight Compute's metric -> our counter key (model/counters.py); the few derived ones follow.
DIRECT = {
    "gpu__time_duration.sum": "duration_ns",
    "dram__bytes_read.sum": "dram_read_bytes",
    "dram__bytes_write.sum": "dram_write_bytes",
    "lts__t_sector_hit_rate.pct": "l2_hit_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy_pct",
    "launch__registers_per_thread": "registers",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_throughput_pct",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_throughput_pct",
    **{
        f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio": STALL_PREFIX + reason
        for reason in STALL_REASONS
    },
}
SHARED_STATIC = "launch__shared_mem_per_block_static"
SHARED_DYNAMIC = "launch__shared_mem_per_block_dynamic"
LOAD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
LOAD_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
# The metric set asked of ncu: fixed, so that a diagnosis takes seconds and counters compare run to run.
METRICS: tuple[str, ...] = (*DIRECT, SHARED_STATIC, SHARED_DYNAMIC, LOAD_SECTORS, LOAD_REQUESTS)

_NAME_COLUMNS = ("Kernel Name", "Function Name", "Name")
_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 1024.0, "Mi": 1024.0**2, "Gi": 1024.0**3}
_TIME = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}


class CsvError(ValueError):
    """Output that is not ncu's raw CSV page."""


@dataclass(frozen=True)
class Launch:
    """One row: a kernel launch and the values of the metrics read for it, in base units."""

    name: str
    metrics: dict[str, float]


def parse(text: str) -> list[Launch]:
    """Every launch in ncu's raw CSV page, in order; CsvError when no header is found."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith('"ID"')), None)
    if start is None:
        raise CsvError('no header line starting with "ID" in ncu\'s CSV output')
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header = [cell.strip() for cell in rows[0]]
    name_at = next((header.index(c) for c in _NAME_COLUMNS if c in header), None)
    if name_at is None:
        raise CsvError(f"ncu's CSV header has no kernel name column (looked for {', '.join(_NAME_COLUMNS)})")
    units: dict[str, str] = {}
    body = rows[1:]
    if body and _is_units(body[0], name_at):
        units = {header[i]: cell.strip() for i, cell in enumerate(body[0]) if i < len(header)}
        body = body[1:]
    wanted = [(i, column) for i, column in enumerate(header) if column in METRICS]
    launches: list[Launch] = []
    for row in body:
        if len(row) <= name_at or not row[name_at].strip():
            continue  # a blank or cut line
        metrics: dict[str, float] = {}
        for index, column in wanted:
            value = _number(row[index]) if index < len(row) else None
            if value is not None:
                metrics[column] = value * _factor(units.get(column, ""))
        # A name is shown in messages and tables: its control characters as escapes, never obeyed.
        launches.append(Launch(escape_controls(row[name_at].strip()), metrics))
    return launches


def _is_units(row: Sequence[str], name_at: int) -> bool:
    """The units line: no kernel name and no ID."""
    return len(row) > name_at and not row[name_at].strip() and not (row[0].strip() if row else "")


def _number(cell: str) -> float | None:
    text = cell.strip().replace(",", "")
    if not text or text.lower() in ("n/a", "nan", "-"):
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _factor(unit: str) -> float:
    """The factor to base units (bytes, nanoseconds) of a unit as ncu prints it."""
    unit = unit.strip().split("/", 1)[0]  # byte/block, register/thread
    if unit in _TIME:
        return _TIME[unit]
    if unit.endswith("byte"):
        return _SCALE.get(unit.removesuffix("byte"), 1.0)
    return 1.0


def launch_values(metrics: Mapping[str, float]) -> dict[str, float]:
    """One launch's metrics as our counters (model/counters.py)."""
    values = {DIRECT[m]: v for m, v in metrics.items() if m in DIRECT}
    shared = [metrics[m] for m in (SHARED_STATIC, SHARED_DYNAMIC) if m in metrics]
    if shared:
        values["shared_bytes"] = sum(shared)
    sectors, requests = metrics.get(LOAD_SECTORS), metrics.get(LOAD_REQUESTS)
    if sectors is not None and requests:
        values["sectors_per_request"] = sectors / requests
    return values


def per_kernel(launches: Iterable[Launch]) -> tuple[KernelCounters, ...]:
    """The launches grouped by kernel name, in order of first launch: time and bytes summed over a
    kernel's launches, the other counters averaged over the launches that read them."""
    grouped: dict[str, list[dict[str, float]]] = {}
    for launch in launches:
        grouped.setdefault(launch.name, []).append(launch_values(launch.metrics))
    kernels = []
    for name, rows in grouped.items():
        values: dict[str, float] = {}
        for key in dict.fromkeys(k for row in rows for k in row):
            read = [row[key] for row in rows if key in row]
            values[key] = math.fsum(read) if key in ADDITIVE else math.fsum(read) / len(read)
        kernels.append(KernelCounters(name=name, launches=len(rows), values=values))
    return tuple(kernels)


def within_range(kernels: Iterable[KernelCounters]) -> tuple[tuple[KernelCounters, ...], str | None]:
    """The kernels with every counter where a baseline may hold it, and a note of what was moved
    (None: nothing). ncu's throughput percentages are of a sustained peak, which a kernel can pass:
    one above 100 is kept as 100 (at the peak). A figure below 0 is no reading: it is left out.
    Unchecked, one such figure would leave the whole baseline file unwritable."""
    out, moved = [], []
    for kernel in kernels:
        values = {}
        for key, value in kernel.values.items():
            if value < 0:
                moved.append(f"{key} of {kernel.name!r} {value:g} left out (below 0)")
            elif BY_KEY[key].kind == "pct" and value > MAX_PCT:
                moved.append(f"{key} of {kernel.name!r} {value:g} kept as {MAX_PCT:g} (a percentage)")
                values[key] = MAX_PCT
            else:
                values[key] = value
        out.append(replace(kernel, values=values))
    note = f"ncu counters out of range: {'; '.join(moved)}" if moved else None
    return tuple(out), note
