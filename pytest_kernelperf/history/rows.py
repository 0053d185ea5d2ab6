"""The rows a run gives the history, made from the typed run the gateway reads (results/runfile.py):
the runs row, and per result one measurement row per metric in its series, and its kernels' counters.

A row's figures are the ones the rest of the package computes: the level a verdict judges (as
`BenchResult` carries it), the rounds, the entry's quantiles (or `verdict/stats.compress` of the
samples), GB/s and the share of the copy bandwidth from `results/throughput.figures`, the counters
Nsight Compute read from the entry. `MeasurementRow`'s fields are the `measurements` table's columns
(history/schema.py), in order, and say which of them the export writes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from pytest_kernelperf.model.counters import KernelCounters
from pytest_kernelperf.model.device import Peak
from pytest_kernelperf.model.result import BenchResult
from pytest_kernelperf.results.runfile import CheckedRun, RunReport, kernel_data
from pytest_kernelperf.results.throughput import figures
from pytest_kernelperf.verdict.stats import compress

COUNTERS_METRIC = "device_time"  # the series a kernel's counters belong to (where its time is judged)


@dataclass(frozen=True)
class SeriesKey:
    test: str  # pytest node id
    name: str  # the kernel_bench call's name= ("" when none)
    device: str
    cache: str
    metric: str  # "device_time" or "host_latency"

    def label(self) -> str:
        name = f"[{self.name}]" if self.name else ""
        return f"{self.test}{name} {self.device} {self.cache} {self.metric}"

    def values(self) -> tuple[str, str, str, str, str]:
        """The fields in their order (the series table's columns after its repository)."""
        return (self.test, self.name, self.device, self.cache, self.metric)


def _column(*, json_text: bool = False, csv: bool = True, export: bool = True) -> Any:
    """A column: stored as JSON text or not; written by the JSON export, and by the CSV one."""
    return field(metadata={"json": json_text, "csv": csv and export, "export": export})


@dataclass(frozen=True, slots=True)
class MeasurementRow:
    """One measurement of a series in one run (times in ms)."""

    verdict: str | None = _column()
    method: str | None = _column()
    level_ms: float = _column()  # the level the verdict judged (`BenchResult.level_ms`)
    # The run's one value in its series: the level (rows stored before it was: the mean of the
    # rounds). Equal to level_ms, it is left out of the export.
    value_ms: float = _column(export=False)
    ci_low_ms: float | None = _column()
    ci_high_ms: float | None = _column()
    n: int | None = _column()  # samples
    rounds_ms: str = _column(json_text=True)
    quantiles_ms: str = _column(json_text=True, csv=False)
    kernels: str | None = _column(json_text=True, csv=False)  # the entry's inventory
    autotune: str | None = _column(json_text=True, csv=False)
    reference_ratio: float | None = _column()
    reference_ms: float | None = _column()
    against_commit: str | None = _column()
    against_ms: float | None = _column()
    peak_memory_bytes: int | None = _column()
    bytes: int | None = _column()
    gb_per_s: float | None = _column()
    peak_gb_per_s: float | None = _column()
    peak_fraction: float | None = _column()
    artifacts: str = _column(json_text=True, csv=False)

    def values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in MEASUREMENT_COLUMNS)


MEASUREMENT_COLUMNS = tuple(f.name for f in fields(MeasurementRow))
JSON_COLUMNS = tuple(f.name for f in fields(MeasurementRow) if f.metadata["json"])
EXPORTED_COLUMNS = tuple(f.name for f in fields(MeasurementRow) if f.metadata["export"])
# The export's columns: the run and the series of a measurement, then its own (the CSV: each a
# figure or a list of rounds; the JSON export also the inventories and quantiles).
EXPORT_KEYS = ("run_id", "created", "commit", "branch", "test", "name", "device", "cache", "metric")
CSV_COLUMNS = EXPORT_KEYS + tuple(f.name for f in fields(MeasurementRow) if f.metadata["csv"])


@dataclass(frozen=True)
class RunRow:
    """A run as the `runs` table keeps it (its JSON parts as text)."""

    digest: str
    repository: str
    created: str
    ingested: str
    commit_sha: str | None
    branch: str | None
    source: str | None
    plugin_version: str
    mode: str
    environment: str
    devices: str  # device name -> the software around it (environments_of)
    peaks: str
    settings: str

    def values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in RUN_COLUMNS)


RUN_COLUMNS = tuple(f.name for f in fields(RunRow))


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def canonical_digest(run: Mapping[str, Any], repository: str = "") -> str:
    """A run's unique key: the SHA-256 of its canonical JSON, and of its repository when it has one
    (the same run file imported into two repositories is two runs; into one, one run)."""
    text = json.dumps(run, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    if repository:
        text = f"repository {json.dumps(repository)}\n{text}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def run_row(
    checked: CheckedRun,
    *,
    repository: str,
    commit: str | None,
    branch: str | None,
    source: str | None,
    ingested: str,
) -> RunRow:
    """The runs row of a checked run. Its digest is of the JSON as written, and so are its peaks
    (kept as the file gives them; the store reads their GB/s back)."""
    report = checked.report
    return RunRow(
        digest=canonical_digest(checked.data, repository),
        repository=repository,
        created=report.created or ingested,
        ingested=ingested,
        commit_sha=commit,
        branch=branch,
        source=source,
        plugin_version=report.plugin_version,
        mode=report.mode,
        environment=dumps(report.environment),
        devices=dumps(environments_of(report)),
        peaks=dumps(checked.data.get("peaks") or {}),
        settings=dumps(report.settings),
    )


def environments_of(report: RunReport) -> dict[str, dict[str, str]]:
    """Device name -> the software around it: the run's environment, then the device's own."""
    return {device.name: environment_of(report, device.name) for device in report.devices}


def environment_of(report: RunReport, device: str) -> dict[str, str]:
    """The software around `device` in a run: the run's environment, then the device's own (the
    last of its devices of that name)."""
    own = [info.environment for info in report.devices if info.name == device]
    common = {str(k): str(v) for k, v in report.environment.items() if k != "xdist_worker"}
    return {**common, **(own[-1] if own else {})}


def series_key(result: BenchResult, metric: str) -> SeriesKey:
    return SeriesKey(result.nodeid, result.name or "", result.device, result.cache, metric)


def rows_of(report: RunReport) -> Iterator[tuple[SeriesKey, MeasurementRow]]:
    """Each (series, measurement row) of a run, device time then host latency per result; a metric
    without a level (a result only checked, a call without host timing) gives none."""
    for result in report.results:
        if result.level_ms is not None:
            yield series_key(result, "device_time"), device_time(result, report.peaks.get(result.device))
        if result.host_level_ms is not None:
            yield series_key(result, "host_latency"), host_latency(result)


def device_time(result: BenchResult, peak: Peak | None) -> MeasurementRow:
    level, entry = result.level_ms, result.entry
    assert level is not None
    recorded = entry.device_time if entry is not None else None
    rounds = result.rounds_ms or (recorded.rounds_ms if recorded else ()) or (level,)
    fig = figures(result, peak)
    return MeasurementRow(
        verdict=str(result.verdict),
        method=result.method,
        level_ms=level,
        value_ms=level,
        ci_low_ms=result.round_range_ms[0] if result.round_range_ms else None,
        ci_high_ms=result.round_range_ms[1] if result.round_range_ms else None,
        n=len(result.samples_ms) or (recorded.n if recorded else None),
        rounds_ms=dumps(rounds),
        quantiles_ms=dumps((recorded.quantiles_ms if recorded else ()) or compress(result.samples_ms)),
        kernels=None
        if entry is None or entry.kernels is None
        else dumps(list(map(kernel_data, entry.kernels))),
        autotune=None if entry is None or entry.autotune is None else dumps(entry.autotune),
        reference_ratio=result.ratio.ratio if result.ratio else None,
        reference_ms=result.ratio.reference_level_ms if result.ratio else None,
        against_commit=result.against.commit if result.against else None,
        against_ms=result.against.level_ms if result.against else None,
        peak_memory_bytes=result.peak_memory_bytes,
        bytes=result.bytes if fig.gb_per_s is not None else None,
        gb_per_s=fig.gb_per_s,
        peak_gb_per_s=peak.gb_per_s if peak is not None and fig.gb_per_s is not None else None,
        peak_fraction=fig.peak_fraction,
        artifacts=dumps(result.artifacts),
    )


def host_latency(result: BenchResult) -> MeasurementRow:
    """Host latency: a run file keeps its rounds, quantiles and count only in the entry it would record."""
    level, entry = result.host_level_ms, result.entry
    assert level is not None
    recorded = entry.host_latency if entry is not None else None
    return MeasurementRow(
        verdict=str(result.verdict),
        method=result.host_method,
        level_ms=level,
        value_ms=level,
        ci_low_ms=None,
        ci_high_ms=None,
        n=recorded.n if recorded else None,
        rounds_ms=dumps((recorded.rounds_ms if recorded else ()) or (level,)),
        quantiles_ms=dumps(recorded.quantiles_ms if recorded else ()),
        kernels=None,
        autotune=None,
        reference_ratio=None,
        reference_ms=None,
        against_commit=None,
        against_ms=None,
        peak_memory_bytes=None,
        bytes=None,
        gb_per_s=None,
        peak_gb_per_s=None,
        peak_fraction=None,
        artifacts=dumps(result.artifacts),
    )


def counters_of(report: RunReport) -> Iterator[tuple[SeriesKey, KernelCounters]]:
    """(series, one kernel's counters) of every result whose entry carries Nsight Compute's counters."""
    for result in report.results:
        if result.entry is not None and result.entry.counters:
            key = series_key(result, COUNTERS_METRIC)
            for kernel in result.entry.counters:
                yield key, kernel
