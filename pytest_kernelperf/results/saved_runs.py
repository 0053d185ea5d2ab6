"""Operations on saved runs (the JSON of `--kernelperf-json`): compare two, merge shards, and turn a
run into baseline entries. Pure module: no pytest, no torch.

`compare_runs` judges NEW's rounds against the baseline entry OLD's measurement made, with the one
judge a pytest run uses (verdict/judge.py): the noise prior pooled from OLD's entries per device and
the level alpha / m, m the number of NEW's results OLD has a baseline for on that device. Comparing
the JSON of an update run with the JSON of a later run gives the verdicts the later run gave against
the baselines the update wrote, when that run read the same baseline set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pytest_kernelperf import __version__
from pytest_kernelperf.baselines.store import BaselineStore, FileUpdate, file_for
from pytest_kernelperf.formatting import utc_stamp
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey, MetricRecord
from pytest_kernelperf.model.device import CARD_KEY, DeviceInfo, Peak
from pytest_kernelperf.model.result import BenchResult, Comparison, MemoryCheck, Verdict
from pytest_kernelperf.results.runfile import RunReport
from pytest_kernelperf.settings import DEFAULTS
from pytest_kernelperf.verdict.judge import Rounds, judge
from pytest_kernelperf.verdict.memory import judge_memory
from pytest_kernelperf.verdict.prior import NoisePrior

DEFAULT_THRESHOLD = DEFAULTS["threshold"]
DEFAULT_ALPHA = DEFAULTS["alpha"]
DEFAULT_HOST = DEFAULTS["host_threshold"]

ResultKey = tuple[str, str, str, str]  # module, test id, device, cache: one baseline entry


class MergeError(ValueError):
    pass


def key_of(result: BenchResult) -> ResultKey:
    return result.module, result.test_id, result.device, result.cache


def describe_key(key: ResultKey) -> str:
    module, test, device, cache = key
    return f"{module}::{test} on {device} ({cache} cache)"


def _setting(run: RunReport, name: str, default: float) -> float:
    value = run.settings.get(name)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


@dataclass(frozen=True)
class RunComparison:
    """NEW's results judged against OLD's measurements, and what could not be compared."""

    results: list[BenchResult]
    missing: list[ResultKey]  # OLD's results of tests that NEW does not have at all
    untimed: list[ResultKey]  # OLD's timed results of tests that NEW only checked (no timing)


def _test_of(result: BenchResult) -> tuple[str, str]:
    # A check-only result names the device kind ("cpu"), a timed one the model: match by test.
    return result.module, result.test_id


def _timed(result: BenchResult) -> bool:
    return result.entry is not None and bool(result.samples_ms)


def compare_runs(
    old: RunReport,
    new: RunReport,
    *,
    old_source: str = "OLD",
    threshold: float | None = None,
    alpha: float | None = None,
) -> RunComparison:
    """NEW's results judged against OLD's measurements.

    Threshold and alpha: the ones given, else those each NEW result was judged with (its test's
    marker included), else NEW's run settings. A test that one side only checked (a run without
    --kernelperf) is said to be untimed there, never missing.
    """
    baselines: dict[ResultKey, BaselineEntry] = {}
    for result in old.results:
        if result.entry is not None:
            baselines[key_of(result)] = result.entry
    only_checked_in_old = {_test_of(r) for r in old.results if not _timed(r)}
    judged = judge_run(baselines, new, source=old_source, threshold=threshold, alpha=alpha)
    for index, verdict in enumerate(judged):
        if (
            verdict.comparison is not None
            and verdict.verdict is Verdict.NEW
            and _test_of(verdict) in only_checked_in_old
        ):
            reason = f"{old_source} has no timing for it (only checked: a run without --kernelperf)"
            judged[index] = replace(verdict, comparison=replace(verdict.comparison, reason=reason))
    seen = {key_of(r) for r in new.results}
    new_tests = {_test_of(r) for r in new.results}
    missing, untimed = [], []
    for result in old.results:
        key = key_of(result)
        if key in seen:
            continue
        if _test_of(result) not in new_tests:
            missing.append(key)
        elif _timed(result):
            untimed.append(key)
    return RunComparison(judged, list(dict.fromkeys(missing)), list(dict.fromkeys(untimed)))


def judge_run(
    baselines: Mapping[ResultKey, BaselineEntry],
    new: RunReport,
    *,
    source: str = "baseline",
    threshold: float | None = None,
    alpha: float | None = None,
) -> list[BenchResult]:
    """NEW's results judged against baseline entries, as a pytest run would judge them: the noise
    prior pooled from the entries per device, the level alpha / m with m the results that have an
    entry. Threshold and alpha: the ones given, else those each result was judged with, else NEW's
    run settings. Check-only results are returned as they are."""
    priors = noise_priors(baselines)
    planned: dict[str, int] = {}
    for result in new.results:
        if result.entry is not None and key_of(result) in baselines:
            planned[result.device] = planned.get(result.device, 0) + 1
    judged = []
    for result in new.results:
        if not _timed(result):  # checked only: nothing to compare
            judged.append(result)
            continue
        used = result.comparison
        t = threshold if threshold is not None else (used.threshold if used and used.threshold else None)
        a = alpha if alpha is not None else (used.alpha if used and used.alpha else None)
        t = t if t is not None else _setting(new, "threshold", DEFAULT_THRESHOLD)
        a = a if a is not None else _setting(new, "alpha", DEFAULT_ALPHA)
        host = result.host_comparison
        host_t = host.threshold if host and host.threshold else _setting(new, "host_threshold", DEFAULT_HOST)
        judgement = Judgement(t, a, host_t, planned.get(result.device, 1), priors.get(result.device))
        judged.append(_judge(result, baselines.get(key_of(result)), source, judgement))
    return judged


def noise_priors(baselines: Mapping[ResultKey, BaselineEntry]) -> dict[str, NoisePrior]:
    """Per device, the round noise of a baseline set (device time and host latency)."""
    priors: dict[str, NoisePrior] = {}
    for (_, _, device, _), entry in baselines.items():
        prior = priors.setdefault(device, NoisePrior())
        for record in (entry.device_time, entry.host_latency):
            if record is not None and record.rounds_ms:
                prior.add(device, record.method, record.rounds_ms, record.process_rounds)
    return priors


def _stored(record: MetricRecord, entry: BaselineEntry) -> Rounds:
    return Rounds.of_stored(record, entry.environment.get(CARD_KEY))


@dataclass(frozen=True)
class Judgement:
    threshold: float
    alpha: float
    host_threshold: float
    planned: int
    prior: NoisePrior | None


def _judge(result: BenchResult, base: BaselineEntry | None, source: str, how: Judgement) -> BenchResult:
    assert result.entry is not None and result.method is not None
    common = {
        "device": result.device,
        "alpha": how.alpha,
        "planned_judgements": how.planned,
        "prior": how.prior,
        "baseline_name": source,
    }
    mine = result.entry.device_time
    comparison = judge(
        _stored(mine, result.entry),
        _stored(base.device_time, base) if base else None,
        threshold=how.threshold,
        throttling=result.throttling,
        **common,  # type: ignore[arg-type]
    )
    if base is None:
        return replace(
            result,
            verdict=Verdict.NEW,
            comparison=comparison,
            baseline_ms=None,
            baseline_ci_ms=None,
            baseline_file=source,
            host_baseline_ms=None,
            host_comparison=None,
            memory=_memory(result, None),
        )
    host_comparison: Comparison | None = None
    my_host, their_host = result.entry.host_latency, base.host_latency
    if my_host is not None and their_host is not None:
        host_comparison = judge(
            _stored(my_host, result.entry),
            _stored(their_host, base),
            threshold=how.host_threshold,
            **common,  # type: ignore[arg-type]
        )
    return replace(
        result,
        verdict=comparison.verdict,
        comparison=comparison,
        baseline_ms=base.device_time.level_ms,
        baseline_ci_ms=base.device_time.round_range_ms,
        baseline_file=source,
        host_baseline_ms=their_host.level_ms if their_host is not None else None,
        host_comparison=host_comparison,
        memory=_memory(result, base),
    )


def _memory(result: BenchResult, base: BaselineEntry | None) -> MemoryCheck | None:
    """The result's peak device memory judged against `base`'s, with the threshold it was judged
    with in its own run."""
    if result.memory is None:
        return None
    recorded = base.peak_memory_bytes if base is not None else None
    return judge_memory(result.memory.peak_bytes, recorded, result.memory.threshold)


def merge_runs(runs: Sequence[RunReport], sources: Sequence[str], output: str | None = None) -> RunReport:
    """One run from shards (xdist workers, a CI matrix across GPU hosts).

    A result may occur in one shard only: two shards measuring the same test on the same device
    and cache mode would make the merged baseline depend on the order of the files.
    """
    if not runs:
        raise MergeError("nothing to merge: give at least one run file")
    owner: dict[ResultKey, str] = {}
    results: list[BenchResult] = []
    devices: dict[str, DeviceInfo] = {}
    peaks: dict[str, Peak] = {}
    plots: list[str] = []
    written: list[str] = []
    merged_from: list[str] = []
    for run, source in zip(runs, sources, strict=True):
        for result in run.results:
            key = key_of(result)
            if key in owner:
                raise MergeError(
                    f"{owner[key]} and {source} both have a result for {describe_key(key)}; merge shards "
                    "that ran different tests or on different devices"
                )
            owner[key] = source
            results.append(result)
        for device in run.devices:
            devices.setdefault(device.name, device)
        for name, peak in run.peaks.items():
            peaks.setdefault(name, peak)
        plots.extend(str(p) for p in run.artifacts.get("plots") or [])
        written.extend(str(p) for p in run.artifacts.get("baselines_written") or [])
        merged_from.extend(run.merged_from or (source,))
    modes = {run.mode for run in runs}
    first = runs[0]
    return RunReport(
        plugin_version=__version__,
        created=utc_stamp(),
        mode=modes.pop() if len(modes) == 1 else "mixed",
        settings=dict(first.settings),
        environment=dict(first.environment),
        devices=tuple(devices.values()),
        peaks=peaks,
        results=tuple(results),
        artifacts={
            "json": output,
            "plots": list(dict.fromkeys(plots)),
            "baselines_written": list(dict.fromkeys(written)),
        },
        merged_from=tuple(merged_from),
    )


def baseline_entries(run: RunReport, baseline_dir: Path) -> dict[Path, dict[EntryKey, BaselineEntry]]:
    """The baseline entries a run's measurements make, by file: what an update run would stage."""
    out: dict[Path, dict[EntryKey, BaselineEntry]] = {}
    for result in run.results:
        if result.entry is None:
            continue
        path = file_for(baseline_dir, result.module)
        out.setdefault(path, {})[EntryKey(result.test_id, result.device, result.cache)] = result.entry
    return out


def update_baselines(run: RunReport, baseline_dir: Path) -> list[FileUpdate]:
    """Record a run's measurements as baselines, with the in-run update's rules: merged into the
    existing files (entries of tests not in the run are kept), each file written atomically."""
    store = BaselineStore(baseline_dir)
    for path, entries in baseline_entries(run, baseline_dir).items():
        for key, entry in entries.items():
            store.stage(path, key, entry)
    return store.write()
