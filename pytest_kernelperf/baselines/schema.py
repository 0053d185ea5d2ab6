"""Baseline entries (model/baseline.py): the one validation of them as plain data, and back.

Every reader of an entry goes through `entry_from_data`: a YAML baseline file, a run JSON file
(`python -m pytest_kernelperf update-baselines` records entries from CI artefacts, as untrusted as a
YAML file in a pull request), and the data xdist workers and isolated tests send to their parent.
Plain data in (dicts, lists, strings, numbers, booleans, None), a typed entry or a SchemaError out.
The error holds the path of the field within the entry (`device_time.median_ms`,
`kernels[2].share`); each reader turns that into its own location: a YAML line, or a JSON path such
as `results[3].baseline_entry.device_time.median_ms`.

Each metric names its figures once: `level_ms` the level a verdict judges (the geometric mean of
its rounds, per recording process; written for the reader, and checked against the rounds when
read: files written before it lack it), `median_ms` the samples' median and `ci_ms` that median's
95% interval.

Beyond types, an entry must be consistent in itself: a median outside its own confidence interval
or outside the range of its quantiles, rounds (the figures a verdict judges) that the samples
cannot have given, or a level that is not its rounds', are a hand edit or a corruption, never a
measurement. No pytest, no torch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pytest_kernelperf.formatting import significant
from pytest_kernelperf.model.baseline import (
    MAX_OCCASIONS,
    MAX_PROCESSES,
    BaselineEntry,
    EntryKey,
    MetricRecord,
)
from pytest_kernelperf.model.call import (
    FRESH,
    MAX_TENSOR_DIMS,
    MODES,
    SHAPES,
    CompileContext,
    KernelRecord,
    TensorInput,
)
from pytest_kernelperf.model.counters import BY_KEY as COUNTERS_BY_KEY
from pytest_kernelperf.model.counters import MAX_PCT, KernelCounters
from pytest_kernelperf.model.names import BUILTIN_METHODS, CACHE_MODES, METRICS
from pytest_kernelperf.profiling.compile_context import valid_text
from pytest_kernelperf.verdict.noise import geometric_mean

# A timer's name: those of this package (BUILTIN_METHODS), and a timer plugin's own of the same
# shape: lower case, digits and dashes. Anything else ("Scripted Timer!", "rm -rf /") is refused.
_METHOD = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
_CODE_HASH = re.compile(r"^[0-9a-f]{8,64}$")
# Relative rounding error a computed midmean or quantile may carry past the samples it comes from.
_FLOAT_SLACK = 1e-9
# How far a stored level may lie from the level of the stored rounds: both rounded to six
# significant digits (each at most 5e-6 off), and a float's own error.
LEVEL_SLACK = 1.2e-5
# A launch grid is (x, y, z); the room beyond is a profiler plugin's.
_MAX_GRID_DIMS = 16
# A kernel inventory's fields; `code` is optional.
_KERNEL_KEYS = ("name", "launches", "share", "ms")

FieldPath = tuple[str | int, ...]


class SchemaError(ValueError):
    """A field of an entry that is missing, of the wrong type, or inconsistent with the others.

    `path` locates the field from the entry (or from the entries mapping for `entries_from_data`);
    `problem` says what is wrong and names the field.
    """

    def __init__(self, path: FieldPath, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path_text(path)}: {problem}" if path else problem)

    def within(self, *prefix: str | int) -> SchemaError:
        """The same error, located from an outer object."""
        return SchemaError((*prefix, *self.path), self.problem)


def path_text(path: FieldPath) -> str:
    """`device_time.ci_ms[1]`: a JSON path, as jq or a dashboard would write it."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


# --- plain data -> entries ----------------------------------------------------------------------


def entries_from_data(data: Any) -> dict[EntryKey, BaselineEntry]:
    """`{test: {device: {cache: entry}}}` (a baseline file's `entries`) as typed entries."""
    tests = _mapping(data, (), "entries")
    out: dict[EntryKey, BaselineEntry] = {}
    for test, devices in tests.items():
        for device, modes in _mapping(devices, (test,), f"entry {test!r}").items():
            for cache, record in _mapping(modes, (test, device), f"device {device!r} of {test!r}").items():
                if cache not in CACHE_MODES:
                    raise SchemaError(
                        (test, device, cache), f"unknown cache mode {cache!r} (expected hot or cold)"
                    )
                try:
                    out[EntryKey(test, device, cache)] = entry_from_data(record)
                except SchemaError as exc:
                    raise exc.within(test, device, cache) from None
    return out


def entry_from_data(data: Any) -> BaselineEntry:
    """One entry from plain data; SchemaError names the field."""
    record = _mapping(data, (), "an entry")
    _only_keys(
        record,
        {"recorded", "environment", "kernels", "peak_memory_bytes", "counters", *METRICS, *CONTEXT_KEYS},
        (),
    )
    for key in ("recorded", "device_time"):
        if key not in record:
            raise SchemaError((key,), f"missing {key}")
    recorded = record["recorded"]
    if not isinstance(recorded, str):
        raise SchemaError(("recorded",), "recorded must be a quoted date string")
    environment: dict[str, str] = {}
    if record.get("environment") is not None:
        for key, setting in _mapping(record["environment"], ("environment",), "environment").items():
            if not isinstance(setting, (str, int, float)) or isinstance(setting, bool):
                raise SchemaError(("environment", key), f"environment {key} must be a string")
            environment[str(key)] = str(setting)
    metrics = {name: _metric(record[name], (name,)) for name in METRICS if record.get(name) is not None}
    if "device_time" not in metrics:
        raise SchemaError(("device_time",), "device_time must be a mapping, got null")
    kernels = record.get("kernels")
    return BaselineEntry(
        device_time=metrics["device_time"],
        host_latency=metrics.get("host_latency"),
        recorded=recorded,
        environment=environment,
        kernels=None if kernels is None else _kernels(kernels),
        peak_memory_bytes=_memory_bytes(record.get("peak_memory_bytes")),
        counters=None if record.get("counters") is None else counters_from_data(record["counters"]),
        **_call_context(record),
    )


# Far beyond any device's memory (16 EiB is 2^64): a figure beyond it is a corruption.
_MAX_MEMORY_BYTES = 1 << 60


def _memory_bytes(value: Any) -> int | None:
    """peak_memory_bytes: a whole number of bytes, 0 or more; absent or null where not measured."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < _MAX_MEMORY_BYTES:
        raise SchemaError(
            ("peak_memory_bytes",),
            f"peak_memory_bytes must be a whole number of bytes (0 or more), got {value!r}",
        )
    return value


# --- the call's context: compile context, autotuner choices, inputs (all optional) ---------------

CONTEXT_KEYS = ("compile_context", "autotune", "inputs")


def _call_context(record: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if record.get("compile_context") is not None:
        out["compile_context"] = _compile_context(record["compile_context"])
    if record.get("autotune") is not None:
        out["autotune"] = _autotune(record["autotune"])
    if record.get("inputs") is not None:
        out["inputs"] = _inputs(record["inputs"])
    return out


def _texts(value: Any, at: FieldPath) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(valid_text(v) for v in value) or len(value) > 64:
        raise SchemaError(at, f"{path_text(at)} must be a list of short one-line strings")
    return tuple(value)


def _compile_context(value: Any) -> CompileContext:
    at: FieldPath = ("compile_context",)
    record = _mapping(value, at, "compile_context")
    _only_keys(record, {"shapes", "compiles", "dynamic", "seen", "kernels", "code", "mode", "reason"}, at)
    shapes, compiles = record.get("shapes"), record.get("compiles", 0)
    if shapes not in SHAPES:
        raise SchemaError((*at, "shapes"), f"shapes must be static or dynamic, got {shapes!r}")
    if not isinstance(compiles, int) or isinstance(compiles, bool) or compiles < 0:
        raise SchemaError((*at, "compiles"), f"compiles must be a whole number, got {compiles!r}")
    mode, code, reason = record.get("mode", FRESH), record.get("code"), record.get("reason")
    if mode not in MODES:
        raise SchemaError((*at, "mode"), f"mode must be fresh or shared, got {mode!r}")
    if code is not None and (not isinstance(code, str) or not _CODE_HASH.match(code)):
        raise SchemaError((*at, "code"), f"code must be a hex hash, got {code!r}")
    if reason is not None and not valid_text(reason):
        raise SchemaError((*at, "reason"), "reason must be a short one-line string")
    lists = {
        key: _texts(record[key], (*at, key)) if key in record else ()
        for key in ("dynamic", "seen", "kernels")
    }
    return CompileContext(shapes=shapes, compiles=compiles, code=code, mode=mode, reason=reason, **lists)


def _autotune(value: Any) -> dict[str, str]:
    record = _mapping(value, ("autotune",), "autotune")
    for kernel, config in record.items():
        if not valid_text(config):
            raise SchemaError(
                ("autotune", kernel),
                f"autotune config of {kernel!r} must be a string such as 'BLOCK=64, num_warps=4'",
            )
    return {str(k): str(v) for k, v in record.items()}


def _whole_numbers(value: Any, at: FieldPath, least: int, most: int) -> tuple[int, ...]:
    """A list of at most `most` whole numbers, each at least `least`."""
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= least for v in value
    ):
        raise SchemaError(at, f"{path_text(at)} must be a list of whole numbers of at least {least}")
    if len(value) > most:
        raise SchemaError(at, f"{path_text(at)} lists {len(value)} numbers, more than the {most} it may hold")
    return tuple(value)


def _inputs(value: Any) -> tuple[TensorInput, ...]:
    if not isinstance(value, (list, tuple)):
        raise SchemaError(("inputs",), "inputs must be a list of mappings")
    out: list[TensorInput] = []
    for index, item in enumerate(value):
        at: FieldPath = ("inputs", index)
        record = _mapping(item, at, "each item of inputs")
        _only_keys(record, {"name", "shape", "stride", "dtype"}, at)
        missing = sorted({"name", "shape", "stride", "dtype"} - set(record))
        if missing:
            raise SchemaError(at, f"inputs item missing {', '.join(missing)}")
        name, dtype = record["name"], record["dtype"]
        if not valid_text(name) or not valid_text(dtype):
            raise SchemaError(at, "inputs name and dtype must be short strings")
        if any(t.name == name for t in out):
            raise SchemaError(at, f"input {name!r} listed twice")
        shape = _whole_numbers(record["shape"], (*at, "shape"), 0, MAX_TENSOR_DIMS)
        stride = _whole_numbers(record["stride"], (*at, "stride"), 0, MAX_TENSOR_DIMS)
        out.append(TensorInput(name=name, shape=shape, stride=stride, dtype=dtype))
    return tuple(out)


def _metric(value: Any, at: FieldPath) -> MetricRecord:
    record = _mapping(value, at, at[-1])
    required = {"method", "median_ms", "ci_ms", "n", "quantiles_ms"}
    optional = {"level_ms", "rounds_ms", "resolution_ms", "process_rounds", "occasion_processes"}
    _only_keys(record, required | optional, at)
    missing = sorted(required - set(record))
    if missing:
        raise SchemaError((*at, missing[0]), f"missing {', '.join(missing)}")
    method = record["method"]
    if not isinstance(method, str) or not _METHOD.match(method):
        raise SchemaError(
            (*at, "method"),
            f"method must be a timer name such as {', '.join(BUILTIN_METHODS[:4])}, got {method!r}",
        )
    median = _positive(record["median_ms"], (*at, "median_ms"), "median_ms")
    n = record["n"]
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise SchemaError((*at, "n"), f"n must be a positive whole number, got {n!r}")
    ci = record["ci_ms"]
    if not isinstance(ci, (list, tuple)) or len(ci) != 2:
        raise SchemaError((*at, "ci_ms"), "ci_ms must be a list [low, high]")
    low, high = (_positive(v, (*at, "ci_ms", i), "ci_ms") for i, v in enumerate(ci))
    quantiles = record["quantiles_ms"]
    if not isinstance(quantiles, (list, tuple)) or not quantiles:
        raise SchemaError((*at, "quantiles_ms"), "quantiles_ms must be a non-empty list")
    values = tuple(_positive(v, (*at, "quantiles_ms", i), "quantiles_ms") for i, v in enumerate(quantiles))
    _consistent(at, median, (low, high), values)
    rounds: tuple[float, ...] = ()
    if record.get("rounds_ms") is not None:
        listed = record["rounds_ms"]
        if not isinstance(listed, (list, tuple)):  # empty: an entry measured before rounds
            raise SchemaError((*at, "rounds_ms"), "rounds_ms must be a list of numbers")
        rounds = tuple(_positive(v, (*at, "rounds_ms", i), "rounds_ms") for i, v in enumerate(listed))
        if rounds:
            _rounds_consistent(at, rounds, median, values, n)
    step = None
    if record.get("resolution_ms") is not None:
        step = _positive(record["resolution_ms"], (*at, "resolution_ms"), "resolution_ms")
    built = MetricRecord(
        method=method,
        median_ms=median,
        ci_ms=(low, high),
        n=n,
        quantiles_ms=values,
        rounds_ms=rounds,
        resolution_ms=step,
        process_rounds=(processes := _process_rounds(record.get("process_rounds"), len(rounds), at)),
        occasion_processes=_occasion_processes(record.get("occasion_processes"), len(processes) or 1, at),
    )
    if record.get("level_ms") is not None:
        _level_consistent(at, _positive(record["level_ms"], (*at, "level_ms"), "level_ms"), built)
    return built


def _level_consistent(at: FieldPath, given: float, record: MetricRecord) -> None:
    """`level_ms` is written for its reader, never read: the level is its rounds' (per process,
    `MetricRecord.level_ms`), or the median of an entry without rounds. Written to six significant
    digits, as the rounds are, it agrees with them to LEVEL_SLACK; beyond, it was edited apart from
    the figures it stands for."""
    level = record.level_ms
    if abs(math.log(given / level)) > LEVEL_SLACK:
        made_of = "the geometric mean of rounds_ms" if record.rounds_ms else "median_ms, without rounds_ms"
        raise SchemaError(
            (*at, "level_ms"),
            f"level_ms {given!r} is not the level of its own figures ({rounded(level)!r}: {made_of}): "
            "the figures do not come from one measurement",
        )


def _occasion_processes(value: Any, processes: int, at: FieldPath) -> tuple[int, ...]:
    """Recording processes per occasion: whole numbers of at least 1 that add up to the processes."""
    if value is None:
        return ()
    counts = _whole_numbers(value, (*at, "occasion_processes"), 1, MAX_OCCASIONS)
    if sum(counts) != processes:
        raise SchemaError(
            (*at, "occasion_processes"),
            f"occasion_processes must count the recording processes of each occasion, adding up to the "
            f"{processes} process_rounds counts, got {value!r}",
        )
    return counts if len(counts) > 1 else ()


def _process_rounds(value: Any, rounds: int, at: FieldPath) -> tuple[int, ...]:
    """Rounds per recording process: whole numbers of at least 1 that add up to the rounds."""
    if value is None:
        return ()
    counts = _whole_numbers(value, (*at, "process_rounds"), 1, MAX_PROCESSES)
    if sum(counts) != rounds:
        raise SchemaError(
            (*at, "process_rounds"),
            f"process_rounds must count the rounds of each recording process, adding up to the {rounds} "
            f"in rounds_ms, got {value!r}",
        )
    return counts if len(counts) > 1 else ()


def _consistent(at: FieldPath, median: float, ci: tuple[float, float], quantiles: tuple[float, ...]) -> None:
    """The figures of one measurement agree: the median lies within its CI and its quantiles."""
    for index in range(1, len(quantiles)):
        if quantiles[index] < quantiles[index - 1]:
            raise SchemaError(
                (*at, "quantiles_ms", index),
                f"quantiles_ms must be sorted ascending, but {quantiles[index]!r} follows "
                f"{quantiles[index - 1]!r}",
            )
    low, high = ci
    if not low <= median <= high:
        raise SchemaError(
            (*at, "ci_ms"),
            f"ci_ms must hold the median: low <= median_ms <= high, got [{low!r}, {high!r}] around {median!r}",
        )
    if not quantiles[0] <= median <= quantiles[-1]:
        raise SchemaError(
            (*at, "median_ms"),
            f"median_ms {median!r} lies outside its own quantiles_ms ({quantiles[0]!r} to "
            f"{quantiles[-1]!r}): the figures do not come from one measurement",
        )


def _rounds_consistent(
    at: FieldPath, rounds: tuple[float, ...], median: float, quantiles: tuple[float, ...], n: int
) -> None:
    """The rounds agree with the samples: a round is the midmean of some of the measurement's
    samples, so it lies within the range of all of them.

    The quantiles span that range when they are the samples themselves (n <= their count). Of more
    samples they keep evenly spaced inner quantiles, leaving out the outer 1/64 on each side, where a
    round holding few of the samples (rounds differ in length) can lie: such a round may lie up to
    the stored range's width beyond it. The level judged (the rounds' geometric mean) must lie in the
    stored range, as the median does: beyond it, nearly every round would have to be made of the
    extreme 1/64 of the samples. So one edited figure cannot move the level away from the rest of
    the entry by more than the samples' own spread.
    """
    low, high = quantiles[0] * (1 - _FLOAT_SLACK), quantiles[-1] * (1 + _FLOAT_SLACK)
    widen = 1.0 if n <= len(quantiles) else high / low
    for index, value in enumerate(rounds):
        if not low / widen <= value <= high * widen:
            raise SchemaError(
                (*at, "rounds_ms", index),
                f"rounds_ms[{index}] {value!r} lies outside the range of its own samples (quantiles_ms "
                f"{quantiles[0]!r} to {quantiles[-1]!r}): each round is the midmean of samples, so the "
                "figures do not come from one measurement",
            )
    level = geometric_mean(rounds)
    if not low <= level <= high:
        raise SchemaError(
            (*at, "rounds_ms"),
            f"rounds_ms average {level:.6g} (their geometric mean: the level a verdict judges) lies "
            f"outside the range of its own samples (quantiles_ms {quantiles[0]!r} to {quantiles[-1]!r}, "
            f"around median_ms {median!r}): the figures do not come from one measurement",
        )


def _kernels(value: Any) -> tuple[KernelRecord, ...]:
    if not isinstance(value, (list, tuple)):
        raise SchemaError(("kernels",), "kernels must be a list of mappings")
    out: list[KernelRecord] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(value):
        at: FieldPath = ("kernels", index)
        record = _mapping(item, at, "each item of kernels")
        _only_keys(record, {*_KERNEL_KEYS, "code", "grid"}, at)
        missing = [key for key in _KERNEL_KEYS if key not in record]
        if missing:
            raise SchemaError((*at, missing[0]), f"kernels item missing {', '.join(sorted(missing))}")
        name, launches, code = record["name"], record["launches"], record.get("code")
        if not isinstance(name, str) or not name:
            raise SchemaError((*at, "name"), f"kernels name must be a non-empty string, got {name!r}")
        if name in seen:
            raise SchemaError(at, f"kernel {name!r} listed twice (first as kernels[{seen[name]}])")
        seen[name] = index
        if not isinstance(launches, int) or isinstance(launches, bool) or launches < 1:
            raise SchemaError(
                (*at, "launches"), f"launches of {name!r} must be a positive whole number, got {launches!r}"
            )
        share = _non_negative(record["share"], (*at, "share"), f"share of {name!r}")
        if share > 1:
            raise SchemaError((*at, "share"), f"share of {name!r} must lie between 0 and 1, got {share!r}")
        ms = _non_negative(record["ms"], (*at, "ms"), f"ms of {name!r}")
        if code is not None and (not isinstance(code, str) or not _CODE_HASH.match(code)):
            raise SchemaError(
                (*at, "code"), f"code of {name!r} must be a hex hash such as 3f2a9c01b7de, got {code!r}"
            )
        grid = record.get("grid")
        grid = _whole_numbers(grid, (*at, "grid"), 1, _MAX_GRID_DIMS) if grid is not None else None
        out.append(KernelRecord(name=name, launches=launches, share=share, ms=ms, code=code, grid=grid))
    return tuple(out)  # as given: files are written sorted by name (as_stored, dump)


def counters_from_data(value: Any) -> tuple[KernelCounters, ...]:
    """counters: Nsight Compute's per kernel, `{name, launches, metrics: {key: number}}` with the
    keys of model/counters.py, each a finite number, 0 or more (a percentage at most 100)."""
    if not isinstance(value, (list, tuple)):
        raise SchemaError(("counters",), "counters must be a list of mappings")
    out: list[KernelCounters] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(value):
        at: FieldPath = ("counters", index)
        record = _mapping(item, at, "each item of counters")
        _only_keys(record, {"name", "launches", "metrics"}, at)
        name, launches = record.get("name"), record.get("launches")
        if not isinstance(name, str) or not name:
            raise SchemaError((*at, "name"), f"counters name must be a non-empty string, got {name!r}")
        if name in seen:
            raise SchemaError(at, f"kernel {name!r} listed twice (first as counters[{seen[name]}])")
        seen[name] = index
        if not isinstance(launches, int) or isinstance(launches, bool) or launches < 1:
            raise SchemaError(
                (*at, "launches"), f"launches of {name!r} must be a positive whole number, got {launches!r}"
            )
        metrics = _mapping(record.get("metrics"), (*at, "metrics"), f"metrics of {name!r}")
        values: dict[str, float] = {}
        for key, number in metrics.items():
            where = (*at, "metrics", key)
            counter = COUNTERS_BY_KEY.get(key)
            if counter is None:
                known = ", ".join(COUNTERS_BY_KEY)
                raise SchemaError(where, f"unknown counter {key!r} (known: {known})")
            values[key] = _non_negative(number, where, f"{key} of {name!r}")
            if counter.kind == "pct" and values[key] > MAX_PCT:
                raise SchemaError(
                    where, f"{key} of {name!r} is a percentage, at most {MAX_PCT:g}, got {number!r}"
                )
        out.append(KernelCounters(name=name, launches=launches, values=values))
    return tuple(out)


def _non_negative(value: Any, at: FieldPath, what: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return 0.0
    return _positive(value, at, what)


def _positive(value: Any, at: FieldPath, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        hint = (
            " (write numbers plainly: YAML 1.1 reads 1e-3 as a string, use 0.001 or 1.0e-3)"
            if isinstance(value, str)
            else ""
        )
        raise SchemaError(at, f"{what} must be a number, got {value!r}{hint}")
    if not math.isfinite(value) or value <= 0:
        raise SchemaError(at, f"{what} must be a finite positive number, got {value!r}")
    return float(value)


def _mapping(value: Any, at: FieldPath, what: str | int) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        kind = "null" if value is None else type(value).__name__
        raise SchemaError(at, f"{what} must be a mapping, got {kind}")
    for key in value:
        if not isinstance(key, str):
            raise SchemaError(at, f"keys must be strings, got {key!r}")
    return value


def _only_keys(mapping: Mapping[str, Any], allowed: set[str], at: FieldPath) -> None:
    for key in mapping:
        if key not in allowed:
            raise SchemaError((*at, key), f"unknown key {key!r}")


# --- entries -> plain data ----------------------------------------------------------------------


def metric_to_data(record: MetricRecord) -> dict[str, Any]:
    data: dict[str, Any] = {
        "method": record.method,
        "level_ms": record.level_ms,  # derived (the rounds'), for the reader of the file
        "median_ms": record.median_ms,
        "ci_ms": list(record.ci_ms),
        "n": record.n,
        "quantiles_ms": list(record.quantiles_ms),
    }
    if record.rounds_ms:  # a schema-1 entry kept by an update has none to write
        data["rounds_ms"] = list(record.rounds_ms)
    if record.resolution_ms is not None:
        data["resolution_ms"] = record.resolution_ms
    if record.process_rounds:
        data["process_rounds"] = list(record.process_rounds)
    if record.occasion_processes:
        data["occasion_processes"] = list(record.occasion_processes)
    return data


def kernel_to_data(kernel: KernelRecord) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": kernel.name,
        "launches": kernel.launches,
        "share": kernel.share,
        "ms": kernel.ms,
    }
    if kernel.code is not None:
        data["code"] = kernel.code
    if kernel.grid is not None:
        data["grid"] = list(kernel.grid)
    return data


def compile_context_to_data(context: CompileContext) -> dict[str, Any]:
    data: dict[str, Any] = {"shapes": context.shapes, "compiles": context.compiles, "mode": context.mode}
    for key in ("dynamic", "seen", "kernels"):
        if getattr(context, key):
            data[key] = list(getattr(context, key))
    if context.code is not None:
        data["code"] = context.code
    if context.reason is not None:
        data["reason"] = context.reason
    return data


def input_to_data(tensor: TensorInput) -> dict[str, Any]:
    return {
        "name": tensor.name,
        "dtype": tensor.dtype,
        "shape": list(tensor.shape),
        "stride": list(tensor.stride),
    }


def entry_to_data(entry: BaselineEntry) -> dict[str, Any]:
    """The entry as plain data, read back by `entry_from_data`: what every file and process carries.

    Absent parts (no host latency, no kernel inventory) are left out rather than written as null.
    """
    data: dict[str, Any] = {
        "recorded": entry.recorded,
        "environment": dict(entry.environment),
        "device_time": metric_to_data(entry.device_time),
    }
    if entry.host_latency is not None:
        data["host_latency"] = metric_to_data(entry.host_latency)
    if entry.kernels is not None:
        data["kernels"] = [kernel_to_data(k) for k in entry.kernels]
    if entry.compile_context is not None:
        data["compile_context"] = compile_context_to_data(entry.compile_context)
    if entry.autotune is not None:
        data["autotune"] = dict(entry.autotune)
    if entry.inputs is not None:
        data["inputs"] = [input_to_data(t) for t in entry.inputs]
    if entry.peak_memory_bytes is not None:
        data["peak_memory_bytes"] = entry.peak_memory_bytes
    if entry.counters is not None:
        data["counters"] = [counters_to_data(k) for k in entry.counters]
    return data


def counters_to_data(kernel: KernelCounters) -> dict[str, Any]:
    return {"name": kernel.name, "launches": kernel.launches, "metrics": dict(sorted(kernel.values.items()))}


# --- what a file gives back -----------------------------------------------------------------------


def rounded(value: float) -> float:
    """Six significant digits: far below any timing's noise, and short diffs."""
    return significant(value, 6)


def _rounded_metric(record: MetricRecord) -> MetricRecord:
    return replace(
        record,
        median_ms=rounded(record.median_ms),
        ci_ms=(rounded(record.ci_ms[0]), rounded(record.ci_ms[1])),
        quantiles_ms=tuple(rounded(v) for v in record.quantiles_ms),
        rounds_ms=tuple(rounded(v) for v in record.rounds_ms),
        resolution_ms=None if record.resolution_ms is None else rounded(record.resolution_ms),
    )


def as_stored(entry: BaselineEntry) -> BaselineEntry:
    """The entry exactly as a file will give it back (rounding is monotone: it keeps consistency)."""
    return replace(
        entry,
        device_time=_rounded_metric(entry.device_time),
        host_latency=_rounded_metric(entry.host_latency) if entry.host_latency else None,
        kernels=None
        if entry.kernels is None
        else tuple(
            replace(k, share=rounded(k.share), ms=rounded(k.ms))
            for k in sorted(entry.kernels, key=lambda k: k.name)
        ),
        counters=None
        if entry.counters is None
        else tuple(
            replace(k, values={key: rounded(v) for key, v in sorted(k.values.items())})
            for k in sorted(entry.counters, key=lambda k: k.name)
        ),
    )
