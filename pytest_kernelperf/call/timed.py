"""The timed stage: the timer and what it times (fn, its reference for max_ratio, its counterpart at
another revision, each round at its own memory placement), the rounds taken in turn (and once more
to confirm a slower verdict), then the call's device memory and, where wanted, its profile; and the
judged result finished with what the stage found."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pytest_kernelperf.call.context import CallRun, Measurement, Rounds
from pytest_kernelperf.call.counterpart import Counterpart, pairs_wanted
from pytest_kernelperf.call.spec import CallSpec, bind, restorer
from pytest_kernelperf.formatting import duration
from pytest_kernelperf.measure import placement
from pytest_kernelperf.measure.clock import active
from pytest_kernelperf.measure.interleave import OtherFailed, interleaved
from pytest_kernelperf.measure.memory import MemoryRequest
from pytest_kernelperf.measure.placement import Placements
from pytest_kernelperf.measure.timing import Metric, Target, Timer, Timing, TimingError
from pytest_kernelperf.model.baseline import BaselineEntry
from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.model.result import BenchResult, MemoryCheck, Verdict
from pytest_kernelperf.profiling import ncu as nsight
from pytest_kernelperf.profiling.call_context import CallContext, CallRecord
from pytest_kernelperf.profiling.capture import (
    PROFILED_CALLS,
    CallProfile,
    ProfileRequest,
    artifact_folder,
    inventory_budget,
)
from pytest_kernelperf.profiling.envdiff import differences
from pytest_kernelperf.profiling.explain import context_notes
from pytest_kernelperf.verdict import noise
from pytest_kernelperf.verdict.memory import judge_memory
from pytest_kernelperf.verdict.messages import no_timer, timing_failed
from pytest_kernelperf.verdict.prior import groups, within_variance


@dataclass(frozen=True)
class Timed:
    """The rounds' outcome: fn's timing, its reference's and its counterpart's (None where not
    timed), the counterpart as it came out (found unusable should it have raised), and what the
    call's context recorded (compile context, autotune choices, inputs)."""

    timing: Timing
    reference: Timing | None
    base: Counterpart | None
    base_timing: Timing | None
    record: CallRecord


def set_up(
    spec: CallSpec, run: CallRun, measurement: Measurement, base: Counterpart | None, context: CallContext
) -> Rounds:
    """The timer, fn's target and plan (known round noise from its baseline), and the targets timed
    beside it; the autotuners pinned to the baseline's choices where it is judged against them."""
    __tracebackhide__ = True
    device, key, baseline = measurement.device, measurement.key, measurement.baseline
    prefer = baseline.device_time.method if baseline else None
    try:
        timer: Timer | None = run.devices.make_timer(run.settings, device)
    except TimingError as exc:
        timer, unusable = None, str(exc)
    if timer is None:  # outside the except block: no chained traceback
        run.host.fail(no_timer(run.nodeid, unusable))
    # Recording lets each autotuner choose afresh (a pin would keep an old config forever); a later
    # recording process pinned the first process's choices before the first call (kernel_bench.py).
    pin = baseline is not None and not run.settings.update
    context.pin(baseline.autotune if pin and baseline else None)
    # The counterpart's round i lands where fn's round i did: the same draws of placement.
    seed = random.randrange(1 << 32)
    prepare = restorer(spec.arguments, spec.saved, run.fail)
    placements = _placements(run, spec.fn, spec, device, random.Random(seed))
    target = Target(spec.call, device, label=key.test, fn=spec.fn, prepare=prepare, placements=placements)
    plan = run.settings.plan(prefer)
    if placements is None:  # rounds beyond the planned ones sample placements: none drawn, none more
        plan = replace(plan, max_rounds=None)
    if baseline is not None and baseline.device_time.rounds_ms:
        parts = groups(baseline.device_time.rounds_ms, baseline.device_time.process_rounds)
        plan = replace(plan, known_round_sd=math.sqrt(within_variance(parts)[0]))
    others: dict[str, Target] = {}  # timed in rounds interleaved with fn's
    if base is not None and base.fn is not None:
        adapt = base.lookup.adapt
        others["base"] = Target(
            bind(base.fn, *adapt(spec.arguments)),
            device,
            label=f"{key.test}::base",
            fn=base.fn,
            prepare=prepare,
            placements=_placements(run, base.fn, spec, device, random.Random(seed), adapt),
        )
    if spec.max_ratio is not None and spec.reference is not None:
        others["reference"] = Target(
            bind(spec.reference, spec.args, spec.kwargs),
            device,
            label=f"{key.test}::reference",
            fn=spec.reference,
            placements=_placements(run, spec.reference, replace(spec, saved=None), device),
        )
    return Rounds(timer, target, plan, others, placements, prepare)


def measure(run: CallRun, rounds: Rounds, base: Counterpart | None, context: CallContext) -> Timed:
    """fn's rounds, in turn with the others'; a counterpart that raises while timed is found
    unusable and fn is timed again without it; the context's record, its notes and the timer's
    said."""
    __tracebackhide__ = True
    device, plan, others = rounds.target.device, rounds.plan, dict(rounds.others)
    more, paired_plan = None, plan
    if "base" in others:
        more = pairs_wanted(run, list(others).index("base"), device)
        if list(others) == ["base"]:
            # Each pair shares its placement, so a placement-sensitive fn needs no extra rounds of
            # its own: the pairs' spread decides how many are drawn. (A reference timed beside
            # them draws placements of its own: then fn's plan keeps its extra rounds.)
            paired_plan = replace(plan, max_rounds=None)
    try:
        with run.step("rounds", f"timing {run.label}", less=("warmup",)), active(run.clock):
            try:
                timing, timed = interleaved(
                    rounds.timer, rounds.target, list(others.values()), paired_plan, more
                )
            except OtherFailed as failed:
                if list(others)[failed.index] != "base":
                    raise failed.error from None  # the reference's error is the test's
                assert base is not None
                # The revision's function fails where this code's does not: not comparable.
                error = failed.error
                base = base.unloadable(f"{base.where} raised {type(error).__name__} while timed: {error}")
                del others["base"]
                timing, timed = interleaved(rounds.timer, rounds.target, list(others.values()), plan)
            by_role = dict(zip(others, timed, strict=True))
    except TimingError as exc:
        run.host.fail(timing_failed(run.nodeid, exc))
    with run.clock.phase("context"):
        record = context.finish()
    for note in (*record.notes, *timing.notes):
        run.warn(note)
    return Timed(timing, by_role.get("reference"), base, by_role.get("base"), record)


def measure_again(run: CallRun, rounds: Rounds) -> tuple[Timing, Timing | None]:
    """fn measured once more as it was the first time, to confirm a slower verdict (in rounds
    alternating with its reference's where it has one); the reference's timing too."""
    __tracebackhide__ = True
    reference = rounds.others.get("reference")
    what = f"measuring {run.label} again to confirm a slower verdict"
    with run.step("rounds", what, less=("warmup",)), active(run.clock):
        try:
            timing, others = interleaved(
                rounds.timer, rounds.target, [reference] if reference else [], rounds.plan
            )
        except OtherFailed as failed:
            raise failed.error from None  # the reference's error is the test's
        except TimingError as exc:
            timing, others, problem = None, [], exc
    if timing is None:  # outside the except block: no chained traceback
        run.host.fail(timing_failed(run.nodeid, problem, again=True))
    for note in timing.notes:
        run.warn(note)
    return timing, (others[0] if others else None)


def _placements(
    run: CallRun,
    fn: Callable[..., Any],
    spec: CallSpec,
    device: DeviceInfo,
    rng: random.Random | None = None,
    adapt: Callable[[Any], Any] = lambda value: value,
) -> Placements | None:
    """Each round's own memory placement of spec's arguments, for a CUDA measurement with placement
    "fresh"; `adapt` makes the moved arguments fn's (another revision's classes)."""
    if run.settings.placement != "fresh" or device.kind != "cuda" or not placement.usable(device.index):
        return None
    assert device.index is not None

    def bound(moved: Any) -> tuple[Callable[[], Any], Callable[[], object] | None]:
        adapted = adapt(moved)
        return bind(fn, adapted[0], adapted[1]), restorer(moved, spec.saved, run.fail)

    return Placements(spec.arguments, bound, f"cuda:{device.index}", rng=rng)


def placement_notes(rounds: Rounds, timing: Timing) -> tuple[str, ...]:
    """The placements' notes, and a kernel named whose time depends on where its buffers land, with
    the spread its rounds saw; () without placements."""
    if rounds.placements is None:
        return ()
    return (*rounds.placements.notes, *_sensitive(timing.device_time))


def _sensitive(metric: Metric) -> tuple[str, ...]:
    rounds = metric.round_locations_ms
    if not noise.placement_sensitive(rounds, metric.method):
        return ()
    return (
        f"placement-sensitive: {duration(min(rounds))} to {duration(max(rounds))} across {len(rounds)} "
        "memory placements (the level judged is their mean)",
    )


def memory(
    run: CallRun, spec: CallSpec, rounds: Rounds, baseline: BaselineEntry | None
) -> tuple[MemoryCheck | None, tuple[str, ...]]:
    """The call's peak device memory beyond its inputs, from one more call after its timing,
    judged against the baseline's; (None, ()) where nothing can be measured (a CPU). A peak
    grown beyond the threshold is measured once more to name the operators allocating most."""
    if run.later_recording:  # the entry keeps the first recording process's (processes.combine)
        return None, ()
    # An in-place kernel is measured on restored inputs, as it was timed (the probe restores them).
    device = rounds.target.device
    request = MemoryRequest(spec.call, device, spec.fn, label=run.label, prepare=rounds.prepare)
    with run.step("memory", f"measuring the device memory of {run.label}"):
        try:
            reading = run.devices.peak_memory(request)
        except Exception as exc:  # a failing probe must not hide the timing
            return None, (f"peak device memory not measured: {type(exc).__name__}: {exc}",)
        if reading is None:
            return None, ()
        recorded = baseline.peak_memory_bytes if baseline is not None else None
        check = judge_memory(reading.peak_bytes, recorded, run.settings.memory_threshold)
        if check.exceeded and not run.settings.update:
            try:
                detail = run.devices.peak_memory(replace(request, allocations=True))
            except Exception as exc:
                return check, (f"allocations not named: {type(exc).__name__}: {exc}",)
            if detail is not None and detail.allocations:
                check = replace(check, allocations=detail.allocations)
    return check, ()


def profile(
    run: CallRun, spec: CallSpec, rounds: Rounds, verdict: Verdict, record: CallRecord
) -> CallProfile | None:
    """The call's profile (_profiled) with its Nsight Compute counters where wanted (counters);
    none in a later recording process, whose entry keeps the first process's inventory and
    counters (baselines/processes.combine)."""
    if run.later_recording:
        return None
    return counters(run, verdict, record, _profiled(run, spec, rounds, verdict))


def _profiled(run: CallRun, spec: CallSpec, rounds: Rounds, verdict: Verdict) -> CallProfile | None:
    """Profile the call once more, after its timing: for everything with --kernelperf-profile,
    for a slower or unreliable verdict (to explain it), and for the kernel inventory of an update
    or of a run kept in the history (whose change points are attributed from inventories)."""
    settings = run.settings
    explain = not settings.update and verdict in (Verdict.SLOWER, Verdict.UNRELIABLE)
    write_files = settings.profile or explain
    inventory = settings.update or settings.history is not None
    if run.devices.profile is None or not (write_files or inventory):
        return None
    if rounds.prepare is not None:
        # An in-place kernel (restore_inputs=True): profile one call on restored inputs, which
        # then hold what the timed calls left, as without profiling.
        rounds.prepare()
    request = ProfileRequest(
        call=spec.call,
        device=rounds.target.device,
        folder=artifact_folder(settings.artifacts, run.nodeid, run.name) if write_files else None,
        with_stack=settings.profile_stack,
        fn=spec.fn,
        label=run.label,
        calls=1 if rounds.prepare is not None else PROFILED_CALLS,
        # A baseline's or history run's inventory costs a few times the call's own measuring; files
        # asked for (--kernelperf-profile, a slower verdict explained) are written in full.
        budget_s=None if write_files else inventory_budget(_measured_s(run)),
    )
    try:
        with run.step("profile", f"profiling {request.label}"):
            return run.devices.profile(request)
    except Exception as exc:  # a failing profiler must not hide the verdict it was to explain
        return CallProfile(notes=(f"profiling failed: {type(exc).__name__}: {exc}",))


def _measured_s(run: CallRun) -> float:
    """The seconds the call's warm-up and rounds took so far."""
    return run.clock.seconds.get("warmup", 0.0) + run.clock.seconds.get("rounds", 0.0)


def counters(
    run: CallRun, verdict: Verdict, record: CallRecord, profiled: CallProfile | None
) -> CallProfile | None:
    """The profile with the call's Nsight Compute counters where --kernelperf-ncu asks for them
    (profiling/ncu.py decides when: a slower call, an update, a profiled run)."""
    slower = verdict is Verdict.SLOWER
    with run.step("profile", f"reading Nsight Compute counters of {run.label}"):
        return nsight.stage(run.devices.ncu, run.settings, run.nodeid, run.name, slower, record, profiled)


def finished(
    result: BenchResult,
    rounds: Rounds,
    timing: Timing,
    record: CallRecord,
    memory: tuple[MemoryCheck | None, tuple[str, ...]],
    profiled: CallProfile | None,
    baseline: BaselineEntry | None,
    *,
    notes: tuple[str, ...],
) -> BenchResult:
    """The judged `result`, which carries its entry, with what this stage found: the placements of
    the rounds of `timing` (the timing judged), the device memory (`memory`: the check and its
    notes), the profile's files, what the call's context recorded, and against the baseline the
    entry's context and environment; its notes after the first call's (`notes`)."""
    entry = result.entry
    assert entry is not None
    check, memory_notes = memory
    changes = None if baseline is None else tuple(differences(baseline.environment, entry.environment))
    result = replace(
        result,
        baseline_round_range_ms=baseline.device_time.round_range_ms
        if baseline
        else result.baseline_round_range_ms,
        placements=len(timing.device_time.round_locations_ms) if rounds.placements is not None else 0,
        notes=(
            *notes,
            *placement_notes(rounds, timing),
            *result.notes,
            *record.notes,
            *context_notes(baseline, entry),
            *memory_notes,
        ),
        memory=check,
        environment_changes=changes,
    )
    if profiled is not None:
        artifacts = tuple(str(p) for p in profiled.artifacts)
        result = replace(result, artifacts=artifacts, notes=result.notes + profiled.notes)
    return result
