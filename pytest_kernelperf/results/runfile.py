"""The JSON file of a run (`--kernelperf-json`): a versioned schema, written and read back.

Documented field by field in docs/json-schema.md. `run_from_dict(run_to_dict(run)) == run`: a saved
run carries everything its reports and its baseline entries need, so that `python -m
pytest_kernelperf compare`, `merge` and `update-baselines` work from the file alone.

Fields marked "derived" in the documentation (a result's module, test id, sample median, GB/s,
change in percent, the totals) are written for dashboards and ignored when reading. Files of
schema version 1, which named the level judged `median_ms`, are read through an upgrade in memory
(`upgraded`). Pure module: no pytest, no torch.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_kernelperf.atomic import write_atomic
from pytest_kernelperf.baselines.schema import (
    SchemaError,
    entry_from_data,
    entry_to_data,
    kernel_to_data,
    path_text,
)
from pytest_kernelperf.model.baseline import BaselineEntry
from pytest_kernelperf.model.call import KernelRecord
from pytest_kernelperf.model.device import DeviceInfo, Peak
from pytest_kernelperf.model.names import CACHE_MODES
from pytest_kernelperf.model.names import RUN_SCHEMA as SCHEMA
from pytest_kernelperf.model.names import RUN_SCHEMA_VERSION as SCHEMA_VERSION
from pytest_kernelperf.model.result import (
    CALL_PHASES,
    BenchResult,
    CallCost,
    Comparison,
    Found,
    MemoryCheck,
    PairsStopped,
    RatioCheck,
    Reading,
    RevisionCheck,
    SequentialPairs,
    Throttling,
    Verdict,
)
from pytest_kernelperf.results.cost import RUN_PHASES, RunCost, add_up
from pytest_kernelperf.results.throughput import figures
from pytest_kernelperf.verdict import sequential
from pytest_kernelperf.verdict.judge import MODEL
from pytest_kernelperf.verdict.stats import quantile

MAX_FILE_BYTES = 512 * 1024 * 1024


class RunFileError(ValueError):
    """A run JSON file that cannot be used, naming the file and the field."""

    def __init__(self, source: str, where: str, problem: str) -> None:
        self.source = source
        self.where = where
        self.problem = problem
        at = f" at {where}" if where else ""
        super().__init__(
            f"{source}{at}: {problem} (expected a file written by `pytest --kernelperf-json=PATH`, "
            f"schema {SCHEMA} version {SCHEMA_VERSION})"
        )


# What pytest reported of a test, as the run file keeps it.
OUTCOMES = ("passed", "failed", "error", "skipped")
MAX_MESSAGE_CHARS = 4000  # a failure's text, kept for annotations: its headline and evidence


@dataclass(frozen=True)
class ReportedTest:
    """A test as pytest reported it: where it is defined (`file` relative to the run's rootdir,
    `line` counted from 1, None where pytest knows no line), how it ended, and why it failed."""

    file: str
    line: int | None
    outcome: str  # one of OUTCOMES: "error" is a failure outside the test's call (setup, teardown)
    message: str = ""  # the failure's text (capped at MAX_MESSAGE_CHARS); empty unless it failed


@dataclass(frozen=True)
class RunReport:
    """One pytest run (or several merged): what ran where, with which settings, and every result.
    `tests`: the tests with a result and those that failed, by node id; `rootdir` their files' root."""

    plugin_version: str
    created: str  # UTC, ISO 8601
    mode: str  # "compare" (--kernelperf), "update" (--kernelperf-update-baselines) or "check"
    settings: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)  # python, platform, pytest, ...
    devices: tuple[DeviceInfo, ...] = ()
    peaks: dict[str, Peak] = field(default_factory=dict)
    results: tuple[BenchResult, ...] = ()
    artifacts: dict[str, Any] = field(default_factory=dict)
    merged_from: tuple[str, ...] = ()
    schema_version: int = SCHEMA_VERSION
    cost: RunCost | None = None  # where the run's time went (None: merged runs, older files)
    rootdir: str = ""
    tests: dict[str, ReportedTest] = field(default_factory=dict)


# Verdicts that judge a measurement against its baseline: what "per judged measurement" counts.
JUDGED = (Verdict.SAME, Verdict.SLOWER, Verdict.FASTER)


def measurement_counts(results: Sequence[BenchResult]) -> tuple[int, int]:
    """(judged, timed): results judged same, slower or faster, and results timed at all."""
    judged = sum(1 for r in results if r.verdict in JUDGED)
    timed = sum(1 for r in results if r.verdict not in (Verdict.CHECKED, Verdict.MISMATCH))
    return judged, timed


# --- writing -----------------------------------------------------------------------------------


def _num(value: float | None) -> float | None:
    """JSON has no NaN or infinity: such a value is written as null."""
    return value if value is None or math.isfinite(value) else None


def _escaped(text: str) -> str:
    """Free text with the control characters that a reader refuses (`_BAD_TEXT`) as escapes."""
    return _BAD_TEXT.sub(lambda m: ascii(m.group())[1:-1], text)


def _comparison(comparison: Comparison | None) -> dict[str, Any] | None:
    if comparison is None:
        return None
    return {
        "verdict": str(comparison.verdict),
        "ratio": _num(comparison.ratio),
        "change_pct": _num(comparison.change_pct),  # derived
        "p_value": _num(comparison.p_value),
        "threshold": comparison.threshold,
        "alpha": comparison.alpha,
        "test": sequential.MODEL if comparison.sequential else MODEL,  # derived
        "reason": comparison.reason,
        "ratio_ci": list(comparison.ratio_ci) if comparison.ratio_ci else None,
        "level": comparison.level,
        "planned_judgements": comparison.planned_judgements,
        "noise_sd": comparison.noise_sd,
        "noise_source": comparison.noise_source,
        "process_sd": comparison.process_sd,
        "process_source": comparison.process_source,
        "detectable": comparison.detectable,
        "rounds": comparison.rounds,
        "baseline_rounds": comparison.baseline_rounds,
        "time_ratio": _num(comparison.time_ratio),
        "sequential": _sequential(comparison.sequential),
        "evidence": comparison.evidence(),  # derived
    }


def _sequential(stop: SequentialPairs | None) -> dict[str, Any] | None:
    if stop is None:
        return None
    return {"stopped": str(stop.stopped), "upper": _num(stop.upper), "resolution": _num(stop.resolution)}


def _throttling(throttling: Throttling | None) -> dict[str, Any] | None:
    if throttling is None:
        return None
    return {
        "reasons": list(throttling.reasons),
        "clock_drop": throttling.clock_drop,
        "rounds": throttling.rounds,
        "lowest_clock_mhz": throttling.lowest_clock_mhz,
        "baseline_clock_mhz": throttling.baseline_clock_mhz,
        "clock_mhz": throttling.clock_mhz,
        "baseline_reasons": list(throttling.baseline_reasons)
        if throttling.baseline_reasons is not None
        else None,
    }


def _entry(entry: BaselineEntry | None) -> dict[str, Any] | None:
    """The schema's encoding of an entry, with absent parts written as null (every documented field
    is present, for dashboards); the schema reads null as absent."""
    if entry is None:
        return None
    # Every documented field is present in the run file; null where the entry has none.
    absent = dict.fromkeys(
        ("host_latency", "kernels", "compile_context", "autotune", "inputs", "peak_memory_bytes", "counters")
    )
    data = {**absent, **entry_to_data(entry)}
    if entry.kernels is not None:
        data["kernels"] = [kernel_data(kernel) for kernel in entry.kernels]
    for metric in ("device_time", "host_latency"):
        if data[metric] is not None:
            data[metric] = {"rounds_ms": [], "resolution_ms": None, **data[metric]}
    return data


def kernel_data(kernel: KernelRecord) -> dict[str, Any]:
    """One kernel of an entry's inventory as a run file writes it: every field, null where unknown."""
    return {"code": None, "grid": None, **kernel_to_data(kernel)}


def _memory(check: MemoryCheck | None) -> dict[str, Any] | None:
    if check is None:
        return None
    return {
        "peak_bytes": check.peak_bytes,
        "baseline_bytes": check.baseline_bytes,
        "growth_bytes": check.growth_bytes,  # derived
        "allowed_growth_bytes": check.allowed_growth_bytes,  # derived
        "threshold": check.threshold,
        "exceeded": check.exceeded,
        "allocations": list(check.allocations),
    }


def _call_cost(cost: CallCost | None) -> dict[str, float] | None:
    return None if cost is None else {**cost.phases(), "total": cost.total}


def _run_cost(cost: RunCost | None, results: Sequence[BenchResult]) -> dict[str, Any] | None:
    if cost is None:
        return None
    judged, timed = measurement_counts(results)
    return {
        **cost.phases(),
        "total": cost.total,
        "calls": _call_cost(add_up(r.cost for r in results if r.cost is not None)),  # derived
        "judged_measurements": judged,  # derived
        "timed_measurements": timed,  # derived
        "per_judged_measurement": cost.total / judged if judged else None,  # derived
    }


def _ratio(check: RatioCheck | None) -> dict[str, Any] | None:
    if check is None:
        return None
    return {
        "method": check.method,
        "level_ms": check.reference_level_ms,
        "round_range_ms": list(check.reference_round_range_ms),
        "samples_ms": list(check.reference_samples_ms),
        "ratio": check.ratio,
        "max_ratio": check.max_ratio,
        "p_value": _num(check.p_value),
        "alpha": check.alpha,
        "exceeded": check.exceeded,
        "reason": check.reason,
        "rounds_ms": list(check.reference_rounds_ms),
        "ratio_ci": list(check.ratio_ci) if check.ratio_ci else None,
        "level": check.level,
        "noise_sd": check.noise_sd,
        "noise_source": check.noise_source,
    }


def _against(check: RevisionCheck | None) -> dict[str, Any] | None:
    if check is None:
        return None
    return {
        "revision": check.revision,
        "commit": check.commit,
        "found": str(check.found),
        "where": check.where,
        "reason": _escaped(check.reason),  # may quote an exception's text
        "level_ms": check.level_ms,
        "rounds_ms": list(check.rounds_ms),
        "method": check.method,
        "answers": _escaped(check.answers),
    }


def _sample_median(samples_ms: Sequence[float]) -> float | None:
    """The median of the samples, as a baseline entry keeps it (verdict/stats.py); None without any."""
    return quantile(sorted(samples_ms), 0.5) if samples_ms else None


def result_to_dict(result: BenchResult, peak: Peak | None = None) -> dict[str, Any]:
    timed = result.method is not None or result.level_ms is not None or result.samples_ms
    host = result.host_method is not None or result.host_level_ms is not None
    has_baseline = (
        result.baseline_file is not None
        or result.baseline_level_ms is not None
        or result.baseline_round_range_ms is not None
        or result.host_baseline_level_ms is not None
    )
    fig = figures(result, peak)
    return {
        "nodeid": result.nodeid,
        "name": result.name,
        "function": result.function,
        "module": result.module,  # derived
        "test_id": result.test_id,  # derived
        "device": result.device,
        "cache": result.cache,
        "verdict": str(result.verdict),
        "device_time": {
            "method": result.method,
            "level_ms": result.level_ms,
            "round_range_ms": list(result.round_range_ms) if result.round_range_ms else None,
            "median_ms": _sample_median(result.samples_ms),  # derived
            "n": len(result.samples_ms),  # derived
            "samples_ms": list(result.samples_ms),
            "rounds_ms": list(result.rounds_ms),
            "resolution_ms": result.resolution_ms,
            "throttled_rounds": result.throttled_rounds,
            "throttling": _throttling(result.throttling),
            "placements": result.placements,
            "readings": [
                {"verdict": str(r.verdict), "ratio": r.ratio, "rounds": r.rounds} for r in result.readings
            ],
        }
        if timed
        else None,
        "host_latency": {"method": result.host_method, "level_ms": result.host_level_ms} if host else None,
        "baseline": {
            "file": result.baseline_file,
            "level_ms": result.baseline_level_ms,
            "round_range_ms": list(result.baseline_round_range_ms)
            if result.baseline_round_range_ms
            else None,
            "host_level_ms": result.host_baseline_level_ms,
            "environment_changes": (
                list(result.environment_changes) if result.environment_changes is not None else None
            ),
        }
        if has_baseline
        else None,
        "comparison": _comparison(result.comparison),
        "host_comparison": _comparison(result.host_comparison),
        "reference": _ratio(result.ratio),
        "against": _against(result.against),
        "throughput": {
            "bytes": result.bytes,
            "bytes_inferred": result.bytes_inferred,
            "flops": result.flops,
            "gb_per_s": _num(fig.gb_per_s),  # derived
            "tflop_per_s": _num(fig.tflop_per_s),  # derived
            "peak_gb_per_s": peak.gb_per_s if peak and fig.gb_per_s else None,  # derived
            "peak_fraction": _num(fig.peak_fraction),  # derived
        },
        "baseline_entry": _entry(result.entry),
        "notes": [_escaped(note) for note in result.notes],  # may quote an exception's text
        "artifacts": list(result.artifacts),
        "wall_s": result.wall_s,
        "device_index": result.device_index,
        "memory": _memory(result.memory),
        "cost_s": _call_cost(result.cost),
    }


def _device(info: DeviceInfo) -> dict[str, Any]:
    return {"kind": info.kind, "name": info.name, "index": info.index, "environment": dict(info.environment)}


def _peak(peak: Peak) -> dict[str, Any]:
    return {
        "device": peak.device,
        "gb_per_s": peak.gb_per_s,
        "bytes": peak.bytes,
        "method": peak.method,
        "measured": peak.measured,
        "cache_bytes": peak.cache_bytes,
        "load_per_core": peak.load_per_core,
    }


def _test(test: ReportedTest) -> dict[str, Any]:
    return {"file": test.file, "line": test.line, "outcome": test.outcome, "message": _escaped(test.message)}


def run_to_dict(run: RunReport) -> dict[str, Any]:
    counts = Counter(str(r.verdict) for r in run.results)
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": run.schema_version,
        "plugin_version": run.plugin_version,
        "created": run.created,
        "mode": run.mode,
        "settings": dict(run.settings),
        "environment": dict(run.environment),
        "devices": [_device(d) for d in run.devices],
        "peaks": {name: _peak(peak) for name, peak in run.peaks.items()},
        "totals": {v.value: counts[v.value] for v in Verdict if counts[v.value]},  # derived
        "results": [result_to_dict(r, run.peaks.get(r.device)) for r in run.results],
        "artifacts": dict(run.artifacts),
        "cost_s": _run_cost(run.cost, run.results),
        "rootdir": run.rootdir,
        "tests": {nodeid: _test(test) for nodeid, test in run.tests.items()},
    }
    if run.merged_from:
        data["merged_from"] = list(run.merged_from)
    return data


# A list of numbers as json.dumps(indent=...) lays it out: one number per line. Literal newlines
# never occur inside JSON strings, so this cannot match text in a test id.
_NUMBER_LIST = re.compile(r"\[\n\s*(-?[0-9][-+.0-9eE]*(?:,\n\s*-?[0-9][-+.0-9eE]*)*)\n\s*\]")


def dumps(run: RunReport) -> str:
    """Indented JSON, with lists of numbers (samples, quantiles) on one line each."""
    text = json.dumps(run_to_dict(run), indent=1, allow_nan=False)
    return _NUMBER_LIST.sub(lambda m: "[" + ", ".join(v.strip() for v in m[1].split(",")) + "]", text) + "\n"


# --- reading -----------------------------------------------------------------------------------

_MISSING = object()


class _Reader:
    """Typed access to one JSON object, with the path of every field in errors."""

    def __init__(self, data: Any, source: str, where: str) -> None:
        if not isinstance(data, dict):
            raise RunFileError(source, where, f"expected an object, got {_kind(data)}")
        self.data = data
        self.source = source
        self.where = where

    def _at(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, problem: str) -> RunFileError:
        return RunFileError(self.source, self._at(key), problem)

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        if key not in self.data:
            if default is _MISSING:
                raise self.fail(key, "missing")
            return default
        return self.data[key]

    def child(self, key: str, *, optional: bool = False) -> _Reader | None:
        value = self.raw(key, None if optional else _MISSING)
        if value is None:
            if optional:
                return None
            raise self.fail(key, "expected an object, got null")
        return _Reader(value, self.source, self._at(key))

    def text(self, key: str, *, optional: bool = False) -> str | None:
        value = self.raw(key, None if optional else _MISSING)
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise self.fail(key, f"expected a string, got {_kind(value)}")
        return value

    def req_text(self, key: str) -> str:
        value = self.text(key)
        assert value is not None
        return value

    def number(self, key: str, *, optional: bool = False) -> float | None:
        value = self.raw(key, None if optional else _MISSING)
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(key, f"expected a number, got {_kind(value)}")
        return float(value)

    def req_number(self, key: str) -> float:
        value = self.number(key)
        assert value is not None
        return value

    def whole(self, key: str, *, optional: bool = False) -> int | None:
        value = self.raw(key, None if optional else _MISSING)
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"expected a whole number, got {_kind(value)}")
        return value

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {_kind(value)}")
        return value

    def numbers(self, key: str, *, optional: bool = False) -> tuple[float, ...] | None:
        value = self.raw(key, None if optional else _MISSING)
        if value is None and optional:
            return None
        if not isinstance(value, list) or any(
            isinstance(v, bool) or not isinstance(v, (int, float)) for v in value
        ):
            raise self.fail(key, "expected a list of numbers")
        return tuple(float(v) for v in value)

    def pair(self, key: str, *, optional: bool = False) -> tuple[float, float] | None:
        values = self.numbers(key, optional=optional)
        if values is None:
            return None
        if len(values) != 2:
            raise self.fail(key, f"expected [low, high], got {len(values)} numbers")
        return values[0], values[1]

    def texts(self, key: str) -> tuple[str, ...]:
        value = self.raw(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, "expected a list of strings")
        return tuple(value)

    def text_map(self, key: str) -> dict[str, str]:
        value = self.raw(key, {})
        if not isinstance(value, dict):
            raise self.fail(key, f"expected an object, got {_kind(value)}")
        return {str(k): str(v) for k, v in value.items()}

    def verdict(self, key: str) -> Verdict:
        text = self.req_text(key)
        try:
            return Verdict(text)
        except ValueError:
            choices = ", ".join(v.value for v in Verdict)
            raise self.fail(key, f"unknown verdict {text!r} (expected one of {choices})") from None


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _level(reader: _Reader) -> float | None:
    """An object's `level_ms`, the level judged (None where absent or null)."""
    _not_renamed(reader)
    return reader.number("level_ms", optional=True)


def _not_renamed(reader: _Reader) -> None:
    """A `median_ms` standing in the place of `level_ms` is schema 1's level in a document that
    says schema 2: refused, rather than read as no level at all."""
    if "level_ms" not in reader.data and "median_ms" in reader.data:
        raise reader.fail(
            "level_ms",
            "missing where median_ms is given: schema 2 names the level judged level_ms (median_ms is "
            "only the samples' median); a document of schema 1 says schema_version 1",
        )


def _comparison_from(reader: _Reader | None) -> Comparison | None:
    if reader is None:
        return None
    tested = reader.raw("p_value", None) is not None and reader.raw("level", None) is not None
    if tested and reader.raw("alpha", None) is None:  # the evidence quotes it
        raise reader.fail("alpha", "missing: a comparison with a p_value and a level was held to an alpha")
    return Comparison(
        verdict=reader.verdict("verdict"),
        ratio=reader.number("ratio", optional=True),
        p_value=reader.number("p_value", optional=True),
        threshold=reader.number("threshold", optional=True),
        alpha=reader.number("alpha", optional=True),
        reason=reader.text("reason", optional=True) or "",
        ratio_ci=reader.pair("ratio_ci", optional=True),
        level=reader.number("level", optional=True),
        planned_judgements=reader.whole("planned_judgements", optional=True),
        noise_sd=reader.number("noise_sd", optional=True),
        noise_source=reader.text("noise_source", optional=True) or "",
        process_sd=reader.number("process_sd", optional=True),
        process_source=reader.text("process_source", optional=True) or "",
        detectable=reader.number("detectable", optional=True),
        rounds=reader.whole("rounds", optional=True),
        baseline_rounds=reader.whole("baseline_rounds", optional=True),
        time_ratio=reader.number("time_ratio", optional=True),
        sequential=_sequential_from(reader.child("sequential", optional=True)),
    )


def _sequential_from(reader: _Reader | None) -> SequentialPairs | None:
    """The paired gate's stop; a bound or resolution written null is unbounded (too few pairs)."""
    if reader is None:
        return None
    stopped = reader.req_text("stopped")
    if stopped not in {str(s) for s in PairsStopped}:
        raise reader.fail("stopped", f"expected one of {', '.join(map(str, PairsStopped))}, got {stopped!r}")
    upper, resolution = (reader.number(key, optional=True) for key in ("upper", "resolution"))
    return SequentialPairs(
        PairsStopped(stopped),
        math.inf if upper is None else upper,
        math.inf if resolution is None else resolution,
    )


def _texts_or_none(reader: _Reader, key: str) -> tuple[str, ...] | None:
    """A list of strings, or None where the key is absent or null (an older run file)."""
    return None if reader.raw(key, None) is None else reader.texts(key)


def _readings_from(timing: _Reader | None) -> tuple[Reading, ...]:
    raw = timing.raw("readings", None) if timing is not None else None
    if raw is None:
        return ()
    assert timing is not None
    if not isinstance(raw, list):
        raise timing.fail("readings", f"expected a list, got {_kind(raw)}")
    readings = []
    for index, item in enumerate(raw):
        reader = _Reader(item, timing.source, timing._at(f"readings[{index}]"))
        ratio = reader.number("ratio", optional=True)
        rounds = reader.whole("rounds")
        if ratio is not None and not (ratio > 0 and math.isfinite(ratio)):
            raise reader.fail("ratio", f"expected a positive ratio, got {ratio!r}")
        if rounds is None or rounds < 1:
            raise reader.fail("rounds", f"expected a count of one or more, got {rounds!r}")
        readings.append(Reading(reader.verdict("verdict"), ratio, rounds))
    return tuple(readings)


def _throttling_from(reader: _Reader | None) -> Throttling | None:
    if reader is None:
        return None
    return Throttling(
        reasons=reader.texts("reasons"),
        clock_drop=reader.number("clock_drop", optional=True),
        rounds=reader.whole("rounds", optional=True) or 0,
        lowest_clock_mhz=reader.whole("lowest_clock_mhz", optional=True),
        baseline_clock_mhz=reader.whole("baseline_clock_mhz", optional=True),
        clock_mhz=reader.whole("clock_mhz", optional=True),
        baseline_reasons=_texts_or_none(reader, "baseline_reasons"),
    )


def _entry_from(reader: _Reader | None) -> BaselineEntry | None:
    """The baseline entry of a result, validated by the schema that checks YAML files: a run file
    is recorded into baselines, so it is as untrusted as a baseline file."""
    if reader is None:
        return None
    try:
        return entry_from_data(reader.data)
    except SchemaError as exc:
        raise RunFileError(
            reader.source, f"{reader.where}.{path_text(exc.path)}".rstrip("."), exc.problem
        ) from None


def _memory_from(reader: _Reader | None) -> MemoryCheck | None:
    if reader is None:
        return None
    peak = reader.whole("peak_bytes")
    baseline = reader.whole("baseline_bytes", optional=True)
    for key, value in (("peak_bytes", peak), ("baseline_bytes", baseline)):
        if value is not None and value < 0:
            raise reader.fail(key, f"expected a number of bytes (0 or more), got {value}")
    assert peak is not None
    threshold = reader.req_number("threshold")
    if not math.isfinite(threshold) or threshold < 0:
        raise reader.fail("threshold", f"expected a fraction (0 or more), got {threshold!r}")
    return MemoryCheck(
        peak_bytes=peak,
        baseline_bytes=baseline,
        threshold=threshold,
        exceeded=reader.flag("exceeded"),
        allocations=reader.texts("allocations"),
    )


def _seconds_from(reader: _Reader, names: Sequence[str]) -> dict[str, float]:
    out = {}
    for name in (*names, "total"):
        value = reader.number(name, optional=True)
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise reader.fail(name, f"expected seconds (0 or more), got {value!r}")
        out[name] = value or 0.0
    return out


def _call_cost_from(reader: _Reader | None) -> CallCost | None:
    return None if reader is None else CallCost(**_seconds_from(reader, CALL_PHASES))


def _run_cost_from(reader: _Reader | None) -> RunCost | None:
    return None if reader is None else RunCost(**_seconds_from(reader, RUN_PHASES))


def _ratio_from(reader: _Reader | None) -> RatioCheck | None:
    if reader is None:
        return None
    _not_renamed(reader)
    spread = reader.pair("round_range_ms")
    samples = reader.numbers("samples_ms")
    assert spread is not None and samples is not None
    return RatioCheck(
        method=reader.req_text("method"),
        reference_level_ms=reader.req_number("level_ms"),
        reference_round_range_ms=spread,
        reference_samples_ms=samples,
        ratio=reader.req_number("ratio"),
        max_ratio=reader.req_number("max_ratio"),
        p_value=reader.number("p_value", optional=True),
        alpha=reader.req_number("alpha"),
        exceeded=reader.flag("exceeded"),
        reason=reader.text("reason", optional=True) or "",
        reference_rounds_ms=reader.numbers("rounds_ms", optional=True) or (),
        ratio_ci=reader.pair("ratio_ci", optional=True),
        level=reader.number("level", optional=True),
        noise_sd=reader.number("noise_sd", optional=True),
        noise_source=reader.text("noise_source", optional=True) or "",
    )


# A full commit id as git prints it: SHA-1, or SHA-256 in a repository using it.
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _against_from(reader: _Reader | None) -> RevisionCheck | None:
    if reader is None:
        return None
    found = reader.req_text("found")
    if found not in {str(f) for f in Found}:
        raise reader.fail("found", f"expected one of {', '.join(map(str, Found))}, got {found!r}")
    commit = reader.req_text("commit")
    if not _COMMIT.fullmatch(commit):
        raise reader.fail("commit", f"expected a commit of 40 hex digits (64 for SHA-256), got {commit!r}")
    return RevisionCheck(
        revision=reader.req_text("revision"),
        commit=commit,
        found=Found(found),
        where=reader.text("where", optional=True) or "",
        reason=reader.text("reason", optional=True) or "",
        level_ms=_level(reader),
        rounds_ms=reader.numbers("rounds_ms", optional=True) or (),
        method=reader.text("method", optional=True),
        answers=reader.text("answers", optional=True) or "",
    )


def result_from_dict(data: Any, source: str = "<json>", where: str = "result") -> BenchResult:
    """A result from `result_to_dict`'s encoding: a run file's, or one sent by another process."""
    reader = _Reader(data, source, where)
    entry = _entry_from(reader.child("baseline_entry", optional=True))
    if not reader.req_text("nodeid"):
        raise reader.fail("nodeid", "expected a test's node id, got an empty string")
    if not reader.req_text("device"):
        raise reader.fail("device", "expected a device name, got an empty string")
    if entry is not None and reader.req_text("cache") not in CACHE_MODES:
        raise reader.fail("cache", f"expected one of {', '.join(CACHE_MODES)}, got {reader.raw('cache')!r}")
    timing = reader.child("device_time", optional=True)
    host = reader.child("host_latency", optional=True)
    baseline = reader.child("baseline", optional=True)
    throughput = reader.child("throughput", optional=True)
    bytes_ = throughput.whole("bytes", optional=True) if throughput else None
    flops = throughput.whole("flops", optional=True) if throughput else None
    for what, count in (("bytes", bytes_), ("flops", flops)):
        if throughput is not None and count is not None and count < 0:
            raise throughput.fail(what, f"expected a count of zero or more, got {count}")
    if timing is not None and timing.raw("samples_ms", None) and not timing.text("method", optional=True):
        raise timing.fail("method", "missing for a timed result (it has samples_ms)")
    wall_s = reader.number("wall_s", optional=True) or 0.0
    if wall_s < 0:
        raise reader.fail("wall_s", f"expected seconds of zero or more, got {wall_s!r}")
    return BenchResult(
        nodeid=reader.req_text("nodeid"),
        name=reader.text("name", optional=True),
        function=reader.text("function", optional=True),
        device=reader.req_text("device"),
        verdict=reader.verdict("verdict"),
        cache=reader.req_text("cache"),
        method=timing.text("method", optional=True) if timing else None,
        level_ms=_level(timing) if timing else None,
        samples_ms=(timing.numbers("samples_ms", optional=True) or ()) if timing else (),
        round_range_ms=timing.pair("round_range_ms", optional=True) if timing else None,
        baseline_level_ms=_level(baseline) if baseline else None,
        comparison=_comparison_from(reader.child("comparison", optional=True)),
        host_method=host.text("method", optional=True) if host else None,
        host_level_ms=_level(host) if host else None,
        host_baseline_level_ms=baseline.number("host_level_ms", optional=True) if baseline else None,
        host_comparison=_comparison_from(reader.child("host_comparison", optional=True)),
        baseline_file=baseline.text("file", optional=True) if baseline else None,
        notes=reader.texts("notes"),
        bytes=bytes_,
        flops=flops,
        artifacts=reader.texts("artifacts"),
        wall_s=wall_s,
        bytes_inferred=throughput.flag("bytes_inferred") if throughput else False,
        ratio=_ratio_from(reader.child("reference", optional=True)),
        against=_against_from(reader.child("against", optional=True)),
        baseline_round_range_ms=baseline.pair("round_range_ms", optional=True) if baseline else None,
        entry=entry,
        device_index=reader.whole("device_index", optional=True),
        rounds_ms=(timing.numbers("rounds_ms", optional=True) or ()) if timing else (),
        resolution_ms=timing.number("resolution_ms", optional=True) if timing else None,
        throttled_rounds=(timing.whole("throttled_rounds", optional=True) or 0) if timing else 0,
        throttling=_throttling_from(timing.child("throttling", optional=True)) if timing else None,
        placements=(timing.whole("placements", optional=True) or 0) if timing else 0,
        readings=_readings_from(timing),
        environment_changes=(
            _texts_or_none(baseline, "environment_changes") if baseline is not None else None
        ),
        memory=_memory_from(reader.child("memory", optional=True)),
        cost=_call_cost_from(reader.child("cost_s", optional=True)),
    )


def _device_from(reader: _Reader) -> DeviceInfo:
    return DeviceInfo(
        kind=reader.req_text("kind"),
        name=reader.req_text("name"),
        index=reader.whole("index", optional=True),
        environment=reader.text_map("environment"),
    )


def _peak_from(reader: _Reader, device: str) -> Peak:
    gbps = reader.req_number("gb_per_s")
    if not gbps > 0:
        raise reader.fail("gb_per_s", f"expected a positive number, got {gbps!r}")
    return Peak(
        device=reader.text("device", optional=True) or device,
        gb_per_s=gbps,
        bytes=reader.whole("bytes", optional=True) or 0,
        method=reader.text("method", optional=True) or "",
        measured=reader.text("measured", optional=True) or "",
        cache_bytes=reader.whole("cache_bytes", optional=True),
        load_per_core=reader.number("load_per_core", optional=True),
    )


def _test_from(reader: _Reader) -> ReportedTest:
    outcome = reader.req_text("outcome")
    if outcome not in OUTCOMES:
        raise reader.fail("outcome", f"unknown outcome {outcome!r} (expected one of {', '.join(OUTCOMES)})")
    line = reader.whole("line", optional=True)
    if line is not None and line < 1:
        raise reader.fail("line", f"expected a line number from 1, got {line}")
    return ReportedTest(
        file=reader.req_text("file"),
        line=line,
        outcome=outcome,
        message=reader.text("message", optional=True) or "",
    )


def run_from_dict(data: Any, source: str = "<json>") -> RunReport:
    reader = _Reader(data, source, "")
    schema = reader.raw("schema", None)
    if schema != SCHEMA:
        raise RunFileError(source, "schema", f"not a pytest-kernelperf run file (schema {schema!r})")
    version = reader.whole("schema_version")
    if version != SCHEMA_VERSION:
        raise RunFileError(
            source,
            "schema_version",
            f"schema_version {version} is not readable by this pytest-kernelperf "
            f"(reads {SCHEMA_VERSION}); use the version that wrote it",
        )
    results = reader.raw("results")
    if not isinstance(results, list):
        raise reader.fail("results", f"expected a list, got {_kind(results)}")
    devices = reader.raw("devices", [])
    if not isinstance(devices, list):
        raise reader.fail("devices", f"expected a list, got {_kind(devices)}")
    peaks = reader.child("peaks", optional=True)
    tests = reader.child("tests", optional=True)
    settings = reader.raw("settings", {})
    environment = reader.raw("environment", {})
    artifacts = reader.raw("artifacts", {})
    for key, value in (("settings", settings), ("environment", environment), ("artifacts", artifacts)):
        if not isinstance(value, dict):
            raise reader.fail(key, f"expected an object, got {_kind(value)}")
    return RunReport(
        plugin_version=reader.text("plugin_version", optional=True) or "",
        created=reader.text("created", optional=True) or "",
        mode=reader.text("mode", optional=True) or "",
        settings=dict(settings),
        environment=dict(environment),
        devices=tuple(_device_from(_Reader(d, source, f"devices[{i}]")) for i, d in enumerate(devices)),
        peaks={
            name: _peak_from(_Reader(value, source, f"peaks.{name}"), name)
            for name, value in (peaks.data.items() if peaks else ())
        },
        results=tuple(result_from_dict(r, source, f"results[{i}]") for i, r in enumerate(results)),
        artifacts=dict(artifacts),
        merged_from=reader.texts("merged_from"),
        schema_version=version,
        cost=_run_cost_from(reader.child("cost_s", optional=True)),
        rootdir=reader.text("rootdir", optional=True) or "",
        tests={
            nodeid: _test_from(_Reader(value, source, f"tests.{nodeid}"))
            for nodeid, value in (tests.data.items() if tests else ())
        },
    )


# --- the gateway: every reader of a run file goes through `read` (or `check` for a dict in hand) ---

MAX_DEPTH = 32  # a run file written by the plugin nests about 8 levels deep
MAX_WHOLE = 2**63 - 1  # a whole number beyond 64 bits is no count, size or index
# A time is between a picosecond and about 32 years: anything else is no measurement, and within
# these bounds sums, ratios and their squares over any run file stay finite.
MIN_MS, MAX_MS = 1e-9, 1e12
READABLE_VERSIONS = (1, SCHEMA_VERSION)
# Free text (notes, reasons, kernel code) may hold tabs and line breaks; no other control character
# (ANSI escapes rewrite a terminal) and no lone surrogate (not writable as UTF-8) is allowed.
_BAD_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
# The fields that name a measurement (and are printed in one line of a table): no control at all.
_BAD_NAME = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_NAME_FIELDS = frozenset({"nodeid", "name", "function", "module", "test_id", "device", "cache"})


class _OutOfRange:
    """A number of the text that JSON allows and this schema does not (NaN, Infinity, 1e400, a
    100-digit integer): kept by the parser, refused with its path by `_check_values`."""

    def __init__(self, text: str) -> None:
        self.text = text if len(text) <= 24 else f"{text[:20]}... ({len(text)} characters)"


def _parse_float(text: str) -> float | _OutOfRange:
    value = float(text)
    return value if math.isfinite(value) else _OutOfRange(text)


def _parse_int(text: str) -> int | _OutOfRange:
    # Decided on the text first: Python refuses to convert more than 4300 digits at all.
    if len(text.lstrip("-")) > 19 or abs(value := int(text)) > MAX_WHOLE:
        return _OutOfRange(text)
    return value


def _parse_json(text: str, source: str) -> Any:
    try:
        return json.loads(text, parse_float=_parse_float, parse_int=_parse_int, parse_constant=_OutOfRange)
    except json.JSONDecodeError as exc:
        raise RunFileError(source, f"line {exc.lineno}", f"not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise RunFileError(
            source, "", f"not a run file: JSON nested more than {MAX_DEPTH} levels deep"
        ) from None


_PLAIN = frozenset({dict, list, str, float, int, bool, type(None), _OutOfRange})
_Node = tuple[Any, int, str, Any]  # a value, its depth, the name of its field, (parent node, key)


def _where(node: _Node) -> str:
    """The JSON path of a node (built only for an error: most files have none)."""
    keys: list[str | int] = []
    while node[3] is not None:
        node, key = node[3]
        keys.append(key)
    out = ""
    for key in reversed(keys):
        out = f"{out}[{key}]" if isinstance(key, int) else (f"{out}.{key}" if out else key)
    return out


def _number_problem(value: int | float, timed: bool) -> str | None:
    if type(value) is int and abs(value) > MAX_WHOLE:
        return f"{value} is out of range (a whole number of 64 bits is expected)"
    if not math.isfinite(value):
        return f"{value!r} is not a finite number"
    if timed and not MIN_MS <= value <= MAX_MS:
        return f"a time must be a positive number of ms from {MIN_MS:g} to {MAX_MS:g}, got {value!r}"
    return None


def _check_values(data: Any, source: str) -> None:
    """What no field of a run file may hold, whatever its name: nesting beyond MAX_DEPTH, a number
    that is not finite or beyond 64 bits, a time (a field ending in `_ms`, or an item of a list so
    named) outside MIN_MS to MAX_MS, control characters or lone surrogates in text. Iterative, so
    that no depth of input can exhaust the stack; a list of numbers is checked in one loop."""
    stack: list[_Node] = [(data, 1, "", None)]
    while stack:
        node = stack.pop()
        value, depth, name, _ = node
        kind: type = type(value)
        if kind not in _PLAIN:  # a subclass or a tuple, in a document built in this process
            kind = next((k for k in (bool, list, dict, str, float, int) if isinstance(value, k)), kind)
            kind = list if isinstance(value, tuple) else kind
        if kind is dict or kind is list:
            if depth > MAX_DEPTH:
                raise RunFileError(source, _where(node), f"nested more than {MAX_DEPTH} levels deep")
            if kind is list:
                timed = name.endswith("_ms")
                for index, item in enumerate(value):
                    if type(item) is float or type(item) is int:
                        problem = _number_problem(item, timed)
                        if problem:
                            raise RunFileError(
                                source, _where((item, depth + 1, name, (node, index))), problem
                            )
                    else:
                        stack.append((item, depth + 1, name, (node, index)))
                continue
            for key, item in value.items():
                if isinstance(key, str) and _BAD_TEXT.search(key):
                    raise RunFileError(source, _where(node), f"a key with a control character: {key!r}")
                stack.append((item, depth + 1, str(key), (node, key)))
        elif kind is str:
            bad = (_BAD_NAME if name in _NAME_FIELDS else _BAD_TEXT).search(value)
            if bad:
                raise RunFileError(
                    source,
                    _where(node),
                    f"a control character {bad.group()!r} in {value[:60]!r} (not allowed here)",
                )
        elif kind is float or kind is int:
            problem = _number_problem(value, name.endswith("_ms"))
            if problem:
                raise RunFileError(source, _where(node), problem)
        elif kind is _OutOfRange:
            raise RunFileError(
                source,
                _where(node),
                f"{value.text} is out of range (a number must be finite, a whole number within 64 bits)",
            )
        elif not (kind is bool or value is None):
            raise RunFileError(source, _where(node), f"{_kind(value)} is not a JSON value")


@dataclass(frozen=True)
class CheckedRun:
    """A run file that passed the one validation: its JSON as written (`data`: what the history's
    digest of a run is taken of), the run it describes, and the JSON in the current schema
    (`current`: `data` itself when it was written in it, else upgraded in memory), for readers of
    the dict."""

    data: dict[str, Any]
    report: RunReport
    current: dict[str, Any]


# Schema 1 named the level judged `median_ms` and the lowest and highest round `ci_ms`, beside a
# baseline entry whose `median_ms` is the samples' median and `ci_ms` that median's interval.
# Version 2 renames them in each object of a result; the baseline entry keeps its names.
_RENAMED_IN_2: dict[str, dict[str, str]] = {
    "device_time": {"median_ms": "level_ms", "ci_ms": "round_range_ms"},
    "host_latency": {"median_ms": "level_ms"},
    "baseline": {"median_ms": "level_ms", "ci_ms": "round_range_ms", "host_median_ms": "host_level_ms"},
    "reference": {"median_ms": "level_ms", "ci_ms": "round_range_ms"},
    "against": {"median_ms": "level_ms"},
}
_NEW_NAMES = sorted({new for names in _RENAMED_IN_2.values() for new in names.values()})
_RENAMED_FIELD = re.compile(rf"^(results\[\d+\]\.({'|'.join(_RENAMED_IN_2)}))\.({'|'.join(_NEW_NAMES)})\b")


def upgraded(data: dict[str, Any]) -> dict[str, Any]:
    """A schema-1 document in schema 2's names, as a new dict (the one given is left as it was).
    Every renamed field keeps its value; a field of a new name that schema 1 did not know (and its
    reader ignored) gives way to the renamed one. Derived fields new in version 2 (a device time's
    sample median) are not added: a reader ignores them."""
    out = {**data, "schema_version": SCHEMA_VERSION}
    if isinstance(data.get("results"), list):
        out["results"] = [_result_upgraded(result) for result in data["results"]]
    return out


def _result_upgraded(result: Any) -> Any:
    if not isinstance(result, dict):
        return result  # refused by the reader, at its place
    out = dict(result)
    for part, names in _RENAMED_IN_2.items():
        found = result.get(part)
        if isinstance(found, dict):
            kept = {key: value for key, value in found.items() if key not in names.values()}
            out[part] = {names.get(key, key): value for key, value in kept.items()}
    return out


def _as_written_in_1(where: str) -> str:
    """The path of a field of an upgraded schema-1 document as its file spells it."""
    found = _RENAMED_FIELD.match(where)
    if found is None:
        return where
    old = {new: old for old, new in _RENAMED_IN_2[found[2]].items()}[found[3]]
    return f"{found[1]}.{old}{where[found.end() :]}"


def check(data: Any, source: str = "<json>") -> CheckedRun:
    """The one validation of a run file's parsed JSON, shared by every reader (compare, merge,
    report, update-baselines, the history's import, bisect, the studies): the schema and its
    version (a schema-1 document upgraded in memory, `upgraded`), every field's type
    (`run_from_dict`), and `_check_values`. RunFileError names the file and the field as the file
    spells it."""
    if not isinstance(data, dict):
        raise RunFileError(source, "", f"expected an object, got {_kind(data)}")
    if data.get("schema") != SCHEMA:
        raise RunFileError(
            source, "schema", f"not a pytest-kernelperf run file (schema {data.get('schema')!r})"
        )
    version = data.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise RunFileError(source, "schema_version", f"expected a whole number, got {_kind(version)}")
    if version not in READABLE_VERSIONS:
        raise RunFileError(
            source,
            "schema_version",
            f"schema_version {version} is not readable by this pytest-kernelperf "
            f"(reads {', '.join(map(str, READABLE_VERSIONS))}); use the version that wrote it",
        )
    _check_values(data, source)
    if version == SCHEMA_VERSION:
        return CheckedRun(data, run_from_dict(data, source), data)
    # One upgrade step per older version, in memory; an error names the field as the file does.
    current = upgraded(data)
    try:
        report = run_from_dict(current, source)
    except RunFileError as exc:
        raise RunFileError(source, _as_written_in_1(exc.where), exc.problem) from None
    return CheckedRun(data, report, current)


def loads(text: str, source: str = "<json>") -> RunReport:
    return check(_parse_json(text, source), source).report


def read(path: Path) -> CheckedRun:
    """The gateway: a run file read, parsed and checked; RunFileError naming the file and the field."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise RunFileError(str(path), "", f"file is {size} bytes, over the {MAX_FILE_BYTES}-byte cap")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RunFileError(str(path), "", "no such file") from None
    except IsADirectoryError:
        raise RunFileError(str(path), "", "a folder, not a run file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RunFileError(str(path), "", f"cannot be read: {exc}") from None
    return check(_parse_json(text, str(path)), str(path))


def load(path: Path) -> RunReport:
    return read(path).report


def write(path: Path, run: RunReport) -> None:
    write_atomic(path, dumps(run))


def devices_by_name(devices: Sequence[DeviceInfo]) -> Mapping[str, Mapping[str, str]]:
    return {d.name: {"kind": d.kind, **d.environment} for d in devices}
