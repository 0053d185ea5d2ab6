"""Operations on saved runs (the JSON of `--kernelperf-json`): compare two, merge shards, and turn a
run into baseline entries. Pure module: no pytest, no torch.

`compare_runs` judges NEW's rounds against the baseline entry OLD's measurement made, with the
judgement a pytest run uses (verdict/judgement.py): the noise prior pooled from OLD's entries per
device and the level alpha / m, m the number of OLD's entries NEW's timed tests are judged against. Comparing
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
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey
from pytest_kernelperf.model.device import CARD_KEY, DeviceInfo, Peak
from pytest_kernelperf.model.result import MEASURED_TWICE, BenchResult, MemoryCheck, Verdict
from pytest_kernelperf.profiling.envdiff import differences
from pytest_kernelperf.results.runfile import ReportedTest, RunReport
from pytest_kernelperf.settings import judged_setting
from pytest_kernelperf.verdict.judgement import (
    JudgementContext,
    Measured,
    judge_measurement,
    noise_priors,
    suite_judgements,
)
from pytest_kernelperf.verdict.memory import judge_memory

ResultKey = tuple[str, str, str, str]  # module, test id, device, cache: one baseline entry


class MergeError(ValueError):
    pass


def key_of(result: BenchResult) -> ResultKey:
    return result.module, result.test_id, result.device, result.cache


def describe_key(key: ResultKey) -> str:
    module, test, device, cache = key
    return f"{module}::{test} on {device} ({cache} cache)"


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
    """NEW's results judged against baseline entries, as a pytest run would judge them
    (verdict/judgement.py): the noise prior pooled from the entries per device, the level alpha / m
    with m every baseline entry on the result's device (the suite, as a run counts it). Threshold
    and alpha: the ones given, else those each result was judged with, else NEW's run settings.
    Check-only results are returned as they are."""
    priors = noise_priors((device, entry) for (_, _, device, _), entry in baselines.items())
    stored = [EntryKey(test, device, cache) for _, test, device, cache in baselines]
    judged = []
    for result in new.results:
        if not _timed(result):  # checked only: nothing to compare
            judged.append(result)
            continue
        used, host = result.comparison, result.host_comparison
        recorded = new.settings
        context = JudgementContext(
            threshold=judged_setting(
                "threshold", given=threshold, recorded=used.threshold if used else None, run=recorded
            ),
            alpha=judged_setting("alpha", given=alpha, recorded=used.alpha if used else None, run=recorded),
            host_threshold=judged_setting(
                "host_threshold", recorded=host.threshold if host else None, run=recorded
            ),
            planned_judgements=suite_judgements(stored, result.device),
            prior=priors.get(result.device),
            baseline_name=source,
        )
        judged.append(_judge(result, baselines.get(key_of(result)), context))
    return judged


def _judge(result: BenchResult, base: BaselineEntry | None, context: JudgementContext) -> BenchResult:
    entry = result.entry
    assert entry is not None and result.method is not None
    measured = Measured(entry.device_time, entry.host_latency, entry.environment.get(CARD_KEY))
    # The throttling NEW's rounds ran under, set against this baseline's clock and reasons (not the
    # ones NEW was judged against when it ran).
    throttling = (
        result.throttling.with_baseline(base.environment if base else None) if result.throttling else None
    )
    comparison, host_comparison = judge_measurement(
        measured, base, context, device=result.device, throttling=throttling
    )
    their_host = base.host_latency if base is not None else None
    return replace(
        result,
        # What NEW's own run judged against its own baseline (each measurement of a call measured
        # twice, the environment's changes from that baseline) is not this judgement's.
        readings=(),
        notes=tuple(note for note in result.notes if not note.startswith(MEASURED_TWICE)),
        environment_changes=tuple(differences(base.environment, entry.environment)) if base else None,
        verdict=comparison.verdict,
        comparison=comparison,
        baseline_level_ms=base.device_time.level_ms if base is not None else None,
        baseline_round_range_ms=base.device_time.round_range_ms if base is not None else None,
        baseline_file=context.baseline_name,
        host_baseline_level_ms=their_host.level_ms if their_host is not None else None,
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
    tests: dict[str, ReportedTest] = {}
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
        for nodeid, test in run.tests.items():
            tests.setdefault(nodeid, test)
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
        rootdir=first.rootdir,
        tests=tests,
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
