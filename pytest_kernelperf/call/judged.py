"""The judged stage: the baseline a call is judged against, the verdict (and max_ratio's), a slower
verdict's two measurements judged as one (the second taken by the timed stage), the baseline entry
of the measurement, and the failures it raises. It judges; it times nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from pytest_kernelperf.baselines import occasions
from pytest_kernelperf.baselines.processes import another_occasion
from pytest_kernelperf.baselines.yaml_io import BaselineError
from pytest_kernelperf.call.context import CallRun, Measurement
from pytest_kernelperf.call.spec import CallSpec
from pytest_kernelperf.formatting import utc_stamp
from pytest_kernelperf.measure.timing import Metric, Timing, merge_rounds
from pytest_kernelperf.model.baseline import (
    CLOCK_KEY,
    THROTTLED_KEY,
    BaselineEntry,
    EntryKey,
    MetricRecord,
    entry_test_id,
    split_nodeid,
)
from pytest_kernelperf.model.device import CARD_KEY, DeviceInfo
from pytest_kernelperf.model.result import (
    MEASURED_TWICE,
    NOT_GATED,
    NOT_JUDGED,
    BenchResult,
    MemoryCheck,
    RatioCheck,
    Reading,
    Throttling,
    Verdict,
)
from pytest_kernelperf.profiling.call_context import CallRecord
from pytest_kernelperf.profiling.capture import CallProfile
from pytest_kernelperf.profiling.explain import regression_details
from pytest_kernelperf.verdict import stats
from pytest_kernelperf.verdict.busy_host import host_timed, unfit_to_record
from pytest_kernelperf.verdict.judgement import (
    PERSISTENT_UNDETERMINED_RUNS,
    Failure,
    Measured,
    PastRuns,
    failures,
    judge_measurement,
    persistently_undetermined,
    remeasure_wanted,
)
from pytest_kernelperf.verdict.messages import (
    against_message,
    memory_failure,
    not_judged,
    not_judged_warning,
    occasion_refused,
    ratio_message,
    regression_message,
    strictly_not_judged,
    undetermined_pair,
)
from pytest_kernelperf.verdict.ratio import check_ratio


def measurement(run: CallRun, kind: str, *, stored: bool = True) -> Measurement:
    """Where the call's measurement belongs on the device of `kind`, with its stored baseline entry
    where it is judged against one (`stored`: not against a revision)."""
    __tracebackhide__ = True
    device = run.devices.device_info(kind)
    path = run.store.path_for(split_nodeid(run.nodeid)[0])
    key = EntryKey(entry_test_id(run.nodeid, run.name), device.name, run.settings.cache)
    if not stored:  # against a revision, the stored baselines play no part
        return Measurement(device, path, key)
    with run.clock.phase("baseline_io"):
        return Measurement(device, path, key, _baseline(run, path, key))


def first_process_choices(run: CallRun, kind: str) -> dict[str, str] | None:
    """In a later recording process: the autotuner configs the first process chose for the call
    (its entry is this process's baseline), to pin before the call's first run."""
    baseline = measurement(run, kind).baseline
    return baseline.autotune if baseline is not None else None


def _baseline(run: CallRun, path: Path, key: EntryKey) -> BaselineEntry | None:
    __tracebackhide__ = True
    try:
        return run.store.lookup(path, key)
    except BaselineError as exc:
        problem = exc
    if run.settings.update and run.settings.replace_unreadable:
        run.host.warn(f"{problem.path}: {problem.problem}; REPLACING this file: its entries are lost")
        return None
    run.host.fail(str(problem))  # outside the except block: no chained traceback


def ratio(run: CallRun, timing: Timing, reference: Timing, device: DeviceInfo, limit: float) -> RatioCheck:
    """fn's rounds against its reference's, for max_ratio=."""
    measured, ref = timing.device_time, reference.device_time
    check = check_ratio(
        measured.round_locations_ms,
        measured.method,
        ref.round_locations_ms,
        ref.method,
        max_ratio=limit,
        alpha=run.settings.alpha,
        reference_samples_ms=ref.samples_ms,
        device=device.name,
        planned_judgements=run.judgement.planned_judgements(device.name),
        prior=run.judgement.noise_prior(device.name),
    )
    if measured.method != ref.method:
        run.warn(f"{check.reason}; max_ratio was not checked")
    return check


def judge(run: CallRun, timing: Timing, measurement: Measurement, spec: CallSpec) -> BenchResult:
    """The measurement judged against its baseline entry (with spec's bytes and flops per call)."""
    settings, device, baseline = run.settings, measurement.device, measurement.baseline
    measured, host = timing.device_time, timing.host_latency
    throttling = throttling_of(timing, baseline)
    past = PastRuns.of(run.nodeid, run.name, settings.cache, device.name, baseline) if baseline else None
    history = run.judgement.past_rounds(past) if past is not None else None
    context = run.judgement_context(device, history)
    current = Measured(
        record_of(measured),
        record_of(host) if host is not None else None,
        device.environment.get(CARD_KEY),
        host_timed(measured.method, device.kind),
    )
    comparison, host_comparison = judge_measurement(
        current, baseline, context, device=device.name, throttling=throttling, host_load=timing.host_load
    )
    host_base = baseline.host_latency if baseline else None
    notes = list(timing.notes)
    if timing.health is not None:
        notes.append(timing.health.describe())
    if timing.throttled_rounds:
        notes.append(
            f"{timing.throttled_rounds} throttled round(s) seen; re-measured where the budget allowed"
        )
    # The history is asked only of a call undetermined now.
    if (
        comparison.verdict is Verdict.UNDETERMINED
        and past is not None
        and persistently_undetermined(run.judgement.past_verdicts(past, PERSISTENT_UNDETERMINED_RUNS - 1))
    ):
        notes.append(
            f"{NOT_GATED}undetermined in its last {PERSISTENT_UNDETERMINED_RUNS} runs of the history"
        )
    return BenchResult(
        nodeid=run.nodeid,
        name=run.name,
        device=device.name,
        verdict=comparison.verdict,
        cache=settings.cache,
        method=measured.method,
        level_ms=measured.level_ms,
        samples_ms=measured.samples_ms,
        round_range_ms=(min(measured.round_locations_ms), max(measured.round_locations_ms)),
        baseline_level_ms=baseline.device_time.level_ms if baseline else None,
        comparison=comparison,
        host_method=host.method if host else None,
        host_level_ms=host.level_ms if host else None,
        host_baseline_level_ms=host_base.level_ms if host_base else None,
        host_comparison=host_comparison,
        baseline_file=str(measurement.path),
        notes=tuple(notes),
        bytes=spec.bytes,
        flops=spec.flops,
        wall_s=timing.wall_s,
        device_index=device.index,
        rounds_ms=measured.round_locations_ms,
        resolution_ms=measured.resolution_ms,
        throttled_rounds=timing.throttled_rounds,
        throttling=throttling,
    )


def confirming(run: CallRun, result: BenchResult) -> bool:
    """Whether a first measurement is measured again before its verdict stands: slower, or near it,
    against the stored baseline (docs/measurement.md#verdicts); never in a baseline update, which
    judges nothing, nor against a revision."""
    return result.against is None and not run.settings.update and remeasure_wanted(result.comparison)


def confirmed(
    run: CallRun,
    measurement: Measurement,
    spec: CallSpec,
    first: tuple[Timing, BenchResult, RatioCheck | None],
    again: tuple[Timing, Timing | None],
    reference: Timing | None = None,
) -> tuple[Timing, BenchResult, RatioCheck | None]:
    """A first measurement (`first`: timing, result, ratio) and its second (`again`, from
    timed.measure_again: fn's timing, its reference's) judged by one test of both measurements'
    rounds, its ratio to the reference with it; the result keeps each one's reading.
    `reference`: the reference's timing beside the first measurement."""
    timing, result, ratio_check = first
    again_timing, reference_again = again
    with run.clock.phase("judge"):
        alone = judge(run, again_timing, measurement, spec)
        timing = merge_rounds([timing, again_timing])
        result = judge(run, timing, measurement, spec)
        if spec.max_ratio is not None and reference is not None and reference_again is not None:
            both = merge_rounds([reference, reference_again])
            ratio_check = ratio(run, timing, both, measurement.device, spec.max_ratio)
        readings = (_reading(first[1]), _reading(alone))
        result = replace(result, readings=readings, notes=(*result.notes, _measured_twice(readings, result)))
    return timing, result, ratio_check


def _reading(result: BenchResult) -> Reading:
    comparison = result.comparison
    return Reading(result.verdict, comparison.ratio if comparison else None, len(result.rounds_ms))


def _measured_twice(readings: Sequence[Reading], pooled: BenchResult) -> str:
    """The note of a call measured twice: each measurement alone, and the pooled verdict."""
    pct = pooled.comparison.change_pct if pooled.comparison else None
    change = f"{pct:+.1f}%" if pct is not None else "no change figure"
    each = ", then ".join(r.describe() for r in readings)
    return f"{MEASURED_TWICE}{each}; judged on both pooled: {change} ({pooled.verdict})"


def entry(
    run: CallRun,
    timing: Timing,
    device: DeviceInfo,
    profiled: CallProfile | None,
    record: CallRecord,
    memory: MemoryCheck | None = None,
) -> BaselineEntry:
    """The measurement as a baseline entry (staged in an update, kept in the run's results); one
    that the host made meaningless (verdict/busy_host.py) is said as it is recorded."""
    host = timing.host_latency
    if run.settings.update:
        measured = timing.device_time
        load = timing.host_load if host_timed(measured.method, device.kind) else None
        unfit = unfit_to_record(measured.round_locations_ms, load)
        if unfit is not None:
            run.warn(f"{run.label} recorded as a baseline, but {unfit}; record it again on a quiet host")
    return BaselineEntry(
        device_time=record_of(timing.device_time),
        host_latency=record_of(host) if host is not None else None,
        recorded=utc_stamp(run.host.now()),
        environment=environment_of(timing, device),
        kernels=profiled.kernels if profiled is not None else None,
        compile_context=record.compile_context,
        autotune=record.autotune,
        inputs=record.inputs,
        peak_memory_bytes=memory.peak_bytes if memory is not None else None,
        counters=profiled.counters if profiled is not None else None,
    )


def stage(run: CallRun, measurement: Measurement, result: BenchResult) -> None:
    """An update stages the result's entry, or with --kernelperf-add-occasion the stored one with
    this run's processes as one more occasion (a later recording process's entry joins the first's
    in the main process). An occasion of another call, or of a level this run judged different,
    stages nothing and fails the test; one past the cap stages nothing and says so: the stored entry
    stays as it is."""
    __tracebackhide__ = True
    stored, entry = measurement.baseline, result.entry
    assert entry is not None
    if run.settings.add_occasion and stored is not None and not run.later_recording:
        why = occasions.not_the_same_call(stored, entry, result.verdict, result.change_pct)
        if why is not None:
            run.host.defer(occasion_refused(result, measurement.path, why))
            return
        full = occasions.beyond_the_cap(stored, entry)
        if full is not None:
            run.warn(
                f"not added as another recording occasion of its baseline entry in {measurement.path}: {full}"
            )
            return
        entry = another_occasion(stored, entry)
    run.store.stage(measurement.path, measurement.key, entry)


def enforce(
    run: CallRun,
    result: BenchResult,
    measurement: Measurement,
    profiled: CallProfile | None,
    environment: dict[str, str],
) -> None:
    """The call's failures deferred to the test's end (verdict/judgement.failures decides which),
    and a call not judged said."""
    __tracebackhide__ = True
    baseline, path, defer = measurement.baseline, measurement.path, run.host.defer
    settings = run.settings
    found = failures(
        result, strict=settings.strict, update=settings.update, allow_undetermined=settings.allow_undetermined
    )
    if Failure.MAX_RATIO in found:
        assert result.ratio is not None and result.level_ms is not None
        defer(ratio_message(result.label, result.device, result.level_ms, result.ratio))
    if Failure.MEMORY in found:
        assert baseline is not None
        defer(memory_failure(result, baseline, path))
    if Failure.SLOWER in found and result.against is not None:
        defer(against_message(result))
    elif Failure.SLOWER in found:
        assert baseline is not None and result.level_ms is not None
        # The headline's figures (regression_message): one ratio for the verdict and the diagnosis.
        call_ms = (baseline.device_time.level_ms, result.level_ms)
        details = regression_details(baseline, environment, profiled, current=result.entry, call_ms=call_ms)
        defer(regression_message(result, baseline, path, details))
    if not run.settings.update and result.verdict in NOT_JUDGED:
        why = not_judged(result, path, run.settings.cache)
        if Failure.NOT_JUDGED in found:
            defer(strictly_not_judged(why))
        elif Failure.UNDETERMINED in found:
            defer(undetermined_pair(why))
        if result.verdict is not Verdict.NEW:  # never silently: new is counted in the summary
            run.host.warn(not_judged_warning(result))  # one line: the reason is the table's note
    # A slower launch path (host latency) never fails a test: it is listed under the summary
    # table (results/render.py), one line per call, instead of one warning per test.


def environment_of(timing: Timing, device: DeviceInfo) -> dict[str, str]:
    """The device's environment and the measurement's SM clock (the median after its rounds)."""
    environment = dict(device.environment)
    if timing.health is not None:
        environment[CLOCK_KEY] = str(timing.health.clock_mhz)
        environment[THROTTLED_KEY] = ", ".join(timing.health.throttled) or "no"
    return environment


def throttling_of(timing: Timing, baseline: BaselineEntry | None = None) -> Throttling | None:
    """Throttling in the rounds kept, or None when they all ran at full clock; with the clocks that
    could explain a slowdown (the drop within the measurement, the baseline's clock)."""
    health = timing.health
    if health is None or not health.throttled:
        return None
    return Throttling(
        health.throttled,
        health.clock_drop,
        health.throttled_rounds,
        lowest_clock_mhz=health.lowest_clock_mhz or min(health.start.sm_clock_mhz, health.end.sm_clock_mhz),
        clock_mhz=health.clock_mhz,
    ).with_baseline(baseline.environment if baseline else None)


def record_of(metric: Metric) -> MetricRecord:
    """A metric's measurement as a stored record: sample median and CI, quantiles, the rounds."""
    summary = metric.summary
    return MetricRecord(
        method=metric.method,
        median_ms=summary.median_ms,
        ci_ms=(summary.ci_low_ms, summary.ci_high_ms),
        n=summary.n,
        quantiles_ms=tuple(stats.compress(metric.samples_ms)),
        rounds_ms=metric.round_locations_ms,
        resolution_ms=metric.resolution_ms,
    )
