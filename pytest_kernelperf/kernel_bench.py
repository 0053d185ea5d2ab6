"""KernelBench: run -> check -> time -> compare -> record, for one test.

Knows nothing of pytest: failing, warning and recording are callables handed in by the plugin, so
this class is unit-testable with plain functions and fake timers.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import math
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from pytest_kernelperf import call_arguments
from pytest_kernelperf.baselines.schema import as_stored
from pytest_kernelperf.baselines.store import BaselineStore
from pytest_kernelperf.baselines.yaml_io import BaselineError
from pytest_kernelperf.correctness import (
    Mismatch,
    NotRestorable,
    Uncomparable,
    assert_matches,
    compare_answers,
    mutated,
    restore,
    snapshot,
)
from pytest_kernelperf.formatting import utc_stamp
from pytest_kernelperf.ids import check_name
from pytest_kernelperf.measure import placement
from pytest_kernelperf.measure.clock import Clock, active
from pytest_kernelperf.measure.memory import MemoryReading, MemoryRequest
from pytest_kernelperf.measure.placement import Placements
from pytest_kernelperf.measure.roofline import tensor_bytes
from pytest_kernelperf.measure.timing import (
    Metric,
    SamplingPlan,
    Target,
    Timer,
    Timing,
    TimingError,
    merge_rounds,
)
from pytest_kernelperf.model.baseline import (
    BaselineEntry,
    EntryKey,
    MetricRecord,
    entry_test_id,
    split_nodeid,
)
from pytest_kernelperf.model.device import CARD_KEY, DeviceInfo
from pytest_kernelperf.model.names import HOST_PATH_METHODS
from pytest_kernelperf.model.result import (
    JUDGEMENTS,
    MEASURED_TWICE,
    NOT_JUDGED,
    BenchResult,
    Comparison,
    Found,
    MemoryCheck,
    RatioCheck,
    RevisionCheck,
    Throttling,
    Verdict,
)
from pytest_kernelperf.profiling import ncu as nsight
from pytest_kernelperf.profiling.call_context import CallContext, CallRecord
from pytest_kernelperf.profiling.capture import PROFILED_CALLS, CallProfile, ProfileRequest, artifact_folder
from pytest_kernelperf.profiling.explain import context_notes, regression_details
from pytest_kernelperf.settings import Settings
from pytest_kernelperf.verdict import noise, stats
from pytest_kernelperf.verdict.judgement import (
    Failure,
    JudgementContext,
    Measured,
    PastRuns,
    failures,
    judge_measurement,
    judge_pair,
    pairs_needed,
)
from pytest_kernelperf.verdict.memory import judge_memory, memory_message
from pytest_kernelperf.verdict.prior import NoisePrior, groups, within_variance
from pytest_kernelperf.verdict.ratio import check_ratio, ratio_message, validate_max_ratio

if TYPE_CHECKING:  # --kernelperf-against's loader is imported only by a run that uses it
    from pytest_kernelperf.revision.loader import Lookup
    from pytest_kernelperf.revision.source import Revision

UPDATE_HINT = "If the change is intended, record new baselines with `pytest --kernelperf-update-baselines`."


def no_guard() -> AbstractContextManager[None]:
    return contextlib.nullcontext()


@dataclass(frozen=True)
class Callbacks:
    """What the bench needs from its host (pytest, or a test)."""

    fail: Callable[[str], NoReturn]  # stops the test: a usage error, or a call that cannot go on
    warn: Callable[[str], None]
    record: Callable[[BenchResult], None]
    make_timer: Callable[[Settings, DeviceInfo], Timer]
    device_info: Callable[[str], DeviceInfo]
    now: Callable[[], _dt.datetime] = lambda: _dt.datetime.now(_dt.timezone.utc)
    profile: Callable[[ProfileRequest], CallProfile] | None = None
    # Wraps each call (kernel, name): the host's fault handling, e.g. a poisoned CUDA context.
    guard: Callable[[Callable[..., Any], str | None], AbstractContextManager[None]] = lambda fn, name: (
        no_guard()
    )
    # A failure that lets the test go on (a regression, a mismatch): the host fails the test at its
    # end with every such message, so one bad row never hides the others. None: fail at once.
    deferred: Callable[[str], None] | None = None

    def defer(self, message: str) -> None:
        __tracebackhide__ = True
        if self.deferred is None:
            self.fail(message)
        self.deferred(message)

    # The run's judgements: the prior for round noise per device (pooled from the baseline entries
    # the run has read) and how many judgements the run plans on a device (Bonferroni's m).
    noise_prior: Callable[[str], NoisePrior] = lambda device: NoisePrior()
    planned_judgements: Callable[[str], int] = lambda device: 1
    # The rounds of a measurement's past runs in the run history that matched its baseline, oldest
    # first: its own between-process noise. None without a history.
    past_rounds: Callable[[PastRuns], Sequence[Sequence[float]] | None] = lambda key: None
    # The peak device memory of one call beyond what was allocated before it; None where there is
    # nothing to measure (a CPU). The host's pytest_kernelperf_peak_memory hook (measure/memory.py).
    peak_memory: Callable[[MemoryRequest], MemoryReading | None] = lambda request: None
    # A long step said on the terminal while it runs, and how long it took (plugins/progress.py).
    progress: Callable[[str], AbstractContextManager[None]] = lambda what: no_guard()
    # --kernelperf-against: the revision, and fn's counterpart there (fn, the test module's file).
    revision: Revision | None = None
    find_at_revision: Callable[[Callable[..., Any], Path], Lookup] | None = None
    # --kernelperf-ncu: the call replayed under Nsight Compute for its hardware counters (profiling/ncu.py).
    ncu: Callable[[nsight.CounterRequest], nsight.CounterReading] | None = None


@dataclass(frozen=True)
class _Base:
    """fn's counterpart at the revision of --kernelperf-against, and how their answers compare."""

    revision: Revision
    lookup: Lookup
    answers: str = ""
    imports_when_called: bool = False  # its first call imported modules (through the loader)

    @property
    def fn(self) -> Callable[..., Any] | None:
        return self.lookup.fn if self.lookup.found is Found.SAME_NAME else None

    def check(self, timing: Timing | None = None) -> RevisionCheck:
        metric = timing.device_time if timing is not None else None
        return RevisionCheck(
            revision=self.revision.describe(),
            commit=self.revision.commit,
            found=self.lookup.found,
            where=self.lookup.where,
            reason=self.lookup.reason,
            median_ms=metric.level_ms if metric is not None else None,
            rounds_ms=metric.round_locations_ms if metric is not None else (),
            method=metric.method if metric is not None else None,
            answers=self.answers,
        )


class KernelBench:
    """Times a kernel against its stored baseline and checks it against a reference.

    Call it as ``kernel_bench(fn, *args, reference=ref, name=..., **kwargs)``; see the plugin's
    fixture docstring for the arguments.
    """

    def __init__(
        self,
        *,
        nodeid: str,
        settings: Settings,
        store: BaselineStore,
        hooks: Callbacks,
        device: str,
        later_recording: bool = False,
    ) -> None:
        self.nodeid = nodeid
        self.later_recording = later_recording
        self.settings = settings
        self.device = device
        self._store = store
        self._hooks = hooks
        self._names: set[str | None] = set()
        self._module = split_nodeid(nodeid)[0]
        self._clock = Clock()  # the phases of the call in progress (measure/clock.py)

    # -- public ------------------------------------------------------------------------------

    def __call__(
        self,
        fn: Callable[..., Any],
        /,
        *args: Any,
        reference: Callable[..., Any] | None = None,
        rtol: float | None = None,
        atol: float | None = None,
        name: str | None = None,
        bytes: int | None = None,
        flops: int | None = None,
        max_ratio: float | None = None,
        restore_inputs: bool = False,
        fn_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> BenchResult:
        __tracebackhide__ = True
        self._clock = Clock()
        try:
            return self._call(
                fn,
                args,
                kwargs,
                reference,
                rtol,
                atol,
                name,
                bytes,
                flops,
                max_ratio,
                fn_kwargs,
                restore_inputs,
            )
        except _MismatchFound as found:  # the test goes on, and fails at its end
            return self._mismatch(found, name)

    def _call(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        reference: Callable[..., Any] | None,
        rtol: float | None,
        atol: float | None,
        name: str | None,
        bytes: int | None,
        flops: int | None,
        max_ratio: float | None,
        fn_kwargs: dict[str, Any] | None,
        restore_inputs: object = False,
    ) -> BenchResult:
        __tracebackhide__ = True
        with self._hooks.guard(fn, name):
            self._claim(name)
            own = {"reference": reference, "rtol": rtol, "atol": atol, "name": name}
            own |= {"bytes": bytes, "flops": flops, "max_ratio": max_ratio}
            kwargs, (rtol, atol), (bytes, flops) = self._arguments(fn, args, kwargs, fn_kwargs, own)
            limit = self._max_ratio(max_ratio, reference)
            call = _bind(fn, args, kwargs)
            if not isinstance(restore_inputs, bool):
                self._hooks.fail(f"kernel_bench in {self.nodeid}: restore_inputs= must be True or False")
            # An in-place kernel declared so: its inputs are put back before every timed call.
            saved = snapshot((tuple(args), kwargs)) if restore_inputs else None
            prepare = _restorer((tuple(args), kwargs), saved, self._hooks.fail, self.nodeid)
            base = self._base(fn)
            # The counterpart's answer is taken on the inputs as they were before fn's first call.
            original = snapshot((tuple(args), kwargs)) if base is not None and base.fn is not None else None
            # Opened before the first call: a fresh torch.compile context must precede compilation.
            with self._opened(
                CallContext(
                    fn,
                    args,
                    kwargs,
                    compile_context=self.settings.compile_context,
                    autotune=self.settings.autotune,
                    active=self.settings.timing,
                    reference=reference,
                )
            ) as context:
                with self._first_call(name):
                    checked = self._check(call, reference, args, kwargs, rtol, atol, name)
                output, notes = checked
                if base is not None and original is not None:
                    after = (tuple(args), kwargs)  # fn's inputs after its first call
                    base = self._base_answer(base, output, after, original, rtol, atol, name)
                    del original
                # No bytes= given: count the tensors read and written (the report says "inferred").
                inferred = tensor_bytes(args, kwargs, output) if bytes is None else None
                del output, checked  # on a GPU it may be a GiB that timing needs
                if not self.settings.timing:
                    return self._record(
                        BenchResult(self.nodeid, name, self.device, Verdict.CHECKED, notes=notes)
                    )
                versus = None
                if limit is not None and reference is not None:
                    versus = (reference, _bind(reference, args, kwargs), limit)
                return self._time(
                    fn,
                    call,
                    name,
                    _device_of(args, kwargs, self.device),
                    (tuple(args), kwargs),
                    saved,
                    bytes if bytes is not None else inferred,
                    flops,
                    bytes_inferred=bytes is None and inferred is not None,
                    versus=versus,
                    notes=notes,
                    context=context,
                    prepare=prepare,
                    base=base,
                )

    def check(
        self,
        fn: Callable[..., Any],
        /,
        *args: Any,
        reference: Callable[..., Any] | None = None,
        rtol: float | None = None,
        atol: float | None = None,
        name: str | None = None,
        why: str = "correctness only",
        fn_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> BenchResult:
        """Check `fn` against `reference` without timing it (e.g. Triton's CPU interpreter, whose
        timings mean nothing); reported as checked, with `why`."""
        __tracebackhide__ = True
        self._clock = Clock()
        try:
            with self._hooks.guard(fn, name):
                self._claim(name)
                own = {"reference": reference, "rtol": rtol, "atol": atol, "name": name}
                kwargs, (rtol, atol), _ = self._arguments(fn, args, kwargs, fn_kwargs, own)
                with self._first_call(name):
                    checked = self._check(_bind(fn, args, kwargs), reference, args, kwargs, rtol, atol, name)
        except _MismatchFound as found:
            return self._mismatch(found, name)
        notes = (why, *checked[1])
        return self._record(BenchResult(self.nodeid, name, self.device, Verdict.CHECKED, notes=notes))

    # -- steps -------------------------------------------------------------------------------

    def _label(self, name: str | None) -> str:
        return self.nodeid if name is None else f"{self.nodeid} [{name}]"

    @contextlib.contextmanager
    def _step(self, phase: str, what: str, *, less: Sequence[str] = ()) -> Iterator[None]:
        """A phase of the call on its clock, said on the terminal should it take long."""
        with self._clock.phase(phase, less=less), self._hooks.progress(what):
            yield

    @contextlib.contextmanager
    def _opened(self, context: CallContext) -> Iterator[CallContext]:
        """The call's context entered as a phase of its own: a fresh torch.compile context, the
        autotuners watched (the first use in a process imports torch's compiler: seconds)."""
        with contextlib.ExitStack() as stack:
            with self._clock.phase("context"):
                stack.enter_context(context)
            yield context

    def _first_call(self, name: str | None) -> AbstractContextManager[None]:
        return self._step("first_call", f"first call of {self._label(name)} (compile, JIT, autotune)")

    def _claim(self, name: str | None) -> None:
        __tracebackhide__ = True
        try:
            check_name(name)
        except ValueError as exc:
            self._hooks.fail(f"kernel_bench in {self.nodeid}: {exc}")
        if name in self._names:
            label = "without a name" if name is None else f"with name={name!r}"
            self._hooks.fail(
                f"kernel_bench was called twice {label} in {self.nodeid}; give each call its own name= "
                "(each name is its own baseline entry)"
            )
        self._names.add(name)

    def _arguments(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        fn_kwargs: object,
        own: Mapping[str, object],
    ) -> tuple[dict[str, Any], tuple[float | None, float | None], tuple[int | None, int | None]]:
        """Validate kernel_bench's own arguments and make fn's keywords; a bad one fails the test
        with its name (and the test only)."""
        __tracebackhide__ = True
        try:
            if not callable(fn):
                raise call_arguments.CallArgumentError(
                    f"kernel_bench needs a callable to time, got {type(fn).__name__}"
                )
            keywords = call_arguments.fn_keywords(kwargs, fn_kwargs)
            tolerances = (
                call_arguments.tolerance(own["rtol"], "rtol"),
                call_arguments.tolerance(own["atol"], "atol"),
            )
            amounts = (
                call_arguments.amount(own.get("bytes"), "bytes", "bytes"),
                call_arguments.amount(own.get("flops"), "flops", "floating-point operations"),
            )
            given = {k: v for k, v in own.items() if v is not None}
            problem = call_arguments.check_binding(fn, args, keywords, given)
        except call_arguments.CallArgumentError as exc:
            error: str | None = str(exc)
        else:
            error = None
            if problem is not None and not problem.startswith("note:"):
                error = problem
            elif problem is not None:
                self._hooks.warn(f"{self.nodeid}: kernel_bench {problem.removeprefix('note: ')}")
        if error is not None:  # failed outside the except block: no chained traceback
            self._hooks.fail(f"kernel_bench in {self.nodeid}: {error}")
        return keywords, tolerances, amounts

    def _max_ratio(self, value: object, reference: Callable[..., Any] | None) -> float | None:
        __tracebackhide__ = True
        if value is None:
            return None
        try:
            limit: float | None = validate_max_ratio(value)
        except ValueError as exc:
            limit, error = None, str(exc)
        if limit is None:  # failed outside the except block: no chained traceback
            self._hooks.fail(f"kernel_bench in {self.nodeid}: {error}")
        if reference is None:
            self._hooks.fail(
                f"kernel_bench in {self.nodeid}: max_ratio={value!r} needs reference=, the function "
                "to time fn against (e.g. kernel_bench(fn, x, reference=torch_fn, max_ratio=1.1))"
            )
        return limit

    def _check(
        self,
        call: Callable[[], Any],
        reference: Callable[..., Any] | None,
        args: Sequence[Any],
        kwargs: dict[str, Any],
        rtol: float | None,
        atol: float | None,
        name: str | None,
    ) -> tuple[Any, tuple[str, ...]]:
        """Run fn once and compare with the reference: (output, notes); raises _MismatchFound.

        The reference gets a copy of the inputs as they were before fn ran, so an in-place kernel
        is checked against the right values, and a kernel that changes its inputs is named."""
        __tracebackhide__ = True
        before = snapshot((tuple(args), kwargs)) if reference is not None else None
        output = call()  # the first call also pays for compilation; a raise is the test's error
        if reference is None or before is None:
            return output, ()
        notes: tuple[str, ...] = ()
        changed = mutated(before, (tuple(args), kwargs))
        if changed:
            where = ", ".join(_argument_name(path) for path in changed)
            notes = (
                f"fn modified its input in place ({where}); the reference was given the original values",
            )
        expected = reference(*before[0], **before[1])
        try:
            assert_matches(output, expected, rtol=rtol, atol=atol)
        except Mismatch as exc:
            problem: str | None = f"{exc} ({self.nodeid}{'' if name is None else f' [{name}]'})"
            usage = False
        except Uncomparable as exc:
            problem, usage = f"kernel_bench in {self.nodeid}: {exc}", True
        else:
            problem, usage = None, False
        if problem is None:
            return output, notes
        if usage:  # outside the except block: no chained traceback
            self._hooks.fail(problem)
        # Raised through the host's fault guard, which turns a mismatch read back from a broken CUDA
        # context into that CUDA error; the caller then records the mismatch and lets the test go on.
        raise _MismatchFound(problem, notes)

    def _base(self, fn: Callable[..., Any]) -> _Base | None:
        """fn's counterpart at --kernelperf-against's revision; None without that option."""
        revision, find = self._hooks.revision, self._hooks.find_at_revision
        if revision is None or find is None:
            return None
        with self._step("context", f"loading {self.nodeid}'s kernel from {revision.describe()}"):
            return _Base(revision, find(fn, Path(self._module)))

    def _base_answer(
        self,
        base: _Base,
        output: Any,
        after: Any,
        original: Any,
        rtol: float | None,
        atol: float | None,
        name: str | None,
    ) -> _Base:
        """The counterpart's first call (compiling it) on fn's original inputs, its answer compared
        with fn's (for two in-place kernels that return nothing, the inputs each left): a change of
        numerics is said, never failed (the reference judges correctness)."""
        assert base.fn is not None
        where = f"{base.lookup.where} at {base.revision.describe()}"
        imports = base.lookup.imports_when_called()
        with self._step("first_call", f"first call of {where} (compile, JIT, autotune)"):
            try:
                adapted = base.lookup.adapt(original)
                expected = base.fn(*adapted[0], **adapted[1])
            except BaseException as exc:  # its code, not the test's (pytest.skip too): not comparable
                if isinstance(exc, KeyboardInterrupt):
                    raise
                lookup = replace(
                    base.lookup, found=Found.UNLOADABLE, reason=f"{where} raised {type(exc).__name__}: {exc}"
                )
                return replace(base, lookup=lookup)
        if output is None and expected is None:
            output, expected = after, original
        answers = compare_answers(output, expected, rtol=rtol, atol=atol)
        base = replace(base, imports_when_called=base.lookup.imports_when_called() > imports)
        if answers.startswith("differs"):
            self._hooks.warn(f"{self._label(name)}: the answer changed against {where}: {answers}")
        return replace(base, answers=answers)

    def _mismatch(self, found: _MismatchFound, name: str | None) -> BenchResult:
        problem = found.problem + (f"\n  {found.notes[0]}" if found.notes else "")
        self._hooks.defer(problem)
        result = BenchResult(
            self.nodeid, name, self.device, Verdict.MISMATCH, notes=(found.problem, *found.notes)
        )
        return self._record(result)

    def _time(
        self,
        fn: Callable[..., Any],
        call: Callable[[], Any],
        name: str | None,
        kind: str,
        arguments: tuple[tuple[Any, ...], dict[str, Any]],
        saved: object,
        nbytes: int | None,
        flops: int | None,
        *,
        bytes_inferred: bool = False,
        versus: tuple[Callable[..., Any], Callable[[], Any], float] | None = None,
        notes: tuple[str, ...] = (),
        context: CallContext | None = None,
        prepare: Callable[[], object] | None = None,
        base: _Base | None = None,
    ) -> BenchResult:
        __tracebackhide__ = True
        device = self._hooks.device_info(kind)
        path = self._store.path_for(self._module)
        key = EntryKey(entry_test_id(self.nodeid, name), device.name, self.settings.cache)
        baseline = None
        if base is None:  # against a revision, the stored baselines play no part
            with self._clock.phase("baseline_io"):
                baseline = self._baseline(path, key)
        prefer = baseline.device_time.method if baseline else None
        try:
            timer: Timer | None = self._hooks.make_timer(self.settings, device)
        except TimingError as exc:
            timer, unusable = None, str(exc)
        if timer is None:  # outside the except block: no chained traceback
            self._hooks.fail(f"kernel_bench cannot time {self.nodeid}: {unusable} (--kernelperf-timer)")
        if context is not None:
            # Recording lets each autotuner choose afresh (a pin would keep an old config forever),
            # except in a later recording process: its baselines are the first process's entries.
            pin = baseline is not None and (not self.settings.update or self.later_recording)
            context.pin(baseline.autotune if pin and baseline else None)
        # The counterpart's round i lands where fn's round i did: the same draws of placement.
        seed = random.randrange(1 << 32)
        placements = self._placements(fn, arguments, saved, device, random.Random(seed))
        target = Target(call, device, label=key.test, fn=fn, prepare=prepare, placements=placements)
        plan = self.settings.plan(prefer)
        if baseline is not None and baseline.device_time.rounds_ms:
            parts = groups(baseline.device_time.rounds_ms, baseline.device_time.process_rounds)
            plan = replace(plan, known_round_sd=math.sqrt(within_variance(parts)[0]))
        reference: Timing | None = None
        base_timing: Timing | None = None
        others: dict[str, Target] = {}  # timed in rounds interleaved with fn's
        if base is not None and base.fn is not None:
            adapt = base.lookup.adapt
            others["base"] = Target(
                _bind(base.fn, *adapt(arguments)),
                device,
                label=f"{key.test}::base",
                fn=base.fn,
                prepare=prepare,
                placements=self._placements(base.fn, arguments, saved, device, random.Random(seed), adapt),
            )
        if versus is not None:
            others["reference"] = Target(
                versus[1],
                device,
                label=f"{key.test}::reference",
                fn=versus[0],
                placements=self._placements(versus[0], arguments, None, device),
            )
        more, paired_plan = None, plan
        if "base" in others:
            more = self._pairs_wanted(list(others), plan, device)
            if list(others) == ["base"]:
                # Each pair shares its placement, so a placement-sensitive fn needs no extra rounds of
                # its own: the pairs' spread decides how many are drawn. (A reference timed beside
                # them draws placements of its own: then fn's plan keeps its extra rounds.)
                paired_plan = replace(plan, max_rounds=None)
        try:
            with (
                self._step("rounds", f"timing {self._label(name)}", less=("warmup",)),
                active(self._clock),
            ):
                try:
                    timing, timed = _interleaved(timer, target, list(others.values()), paired_plan, more)
                except _OtherFailed as failed:
                    if list(others)[failed.index] != "base":
                        raise failed.error from None  # the reference's error is the test's
                    assert base is not None
                    # The revision's function fails where this code's does not: not comparable.
                    where = f"{base.lookup.where} at {base.revision.describe()}"
                    problem = f"{where} raised {type(failed.error).__name__} while timed: {failed.error}"
                    base = replace(base, lookup=replace(base.lookup, found=Found.UNLOADABLE, reason=problem))
                    del others["base"]
                    timing, timed = _interleaved(timer, target, list(others.values()), plan)
                by_role = dict(zip(others, timed, strict=True))
                base_timing, reference = by_role.get("base"), by_role.get("reference")
        except TimingError as exc:
            self._hooks.fail(f"kernel_bench could not time {self.nodeid}: {exc}")
        with self._clock.phase("context"):
            record = context.finish() if context is not None else CallRecord()
        for note in record.notes:
            self._hooks.warn(f"{self.nodeid}: {note}")
        for note in timing.notes:
            self._hooks.warn(f"{self.nodeid}: {note}")
        memory, memory_notes = self._memory(fn, call, device, name, prepare, baseline)
        ratio = None
        with self._clock.phase("judge"):
            if versus is not None and reference is not None:
                ratio = self._ratio_check(timing, reference, device, versus[2])
            result = self._judge(timing, baseline, device, name, path, nbytes, flops)
            if base is not None:
                result = self._judge_pair(result, timing, base, base_timing, device)
        if result.verdict is Verdict.SLOWER and base is None and not self.settings.update:
            # Measured again before it fails (docs/measurement.md#verdicts): the second measurement
            # decides where it is a judgement; a throttled one does not excuse the first.
            assert timer is not None
            again, reference_again = self._measured_again(timer, target, others.get("reference"), plan, name)
            with self._clock.phase("judge"):
                second = self._judge(again, baseline, device, name, path, nbytes, flops)
                first = result
                if second.verdict in JUDGEMENTS:
                    timing, result = again, second
                    if versus is not None and reference_again is not None:
                        ratio = self._ratio_check(again, reference_again, device, versus[2])
                result = replace(result, notes=(*result.notes, _measured_twice(first, second)))
        drawn = len(timing.device_time.round_locations_ms) if placements is not None else 0
        if placements is not None:
            notes += (*placements.notes, *_placement_notes(timing.device_time))
        profiled = self._profile(fn, call, device, name, result.verdict, prepare)
        slower = result.verdict is Verdict.SLOWER
        with self._step("profile", f"reading Nsight Compute counters of {self._label(name)}"):
            profiled = nsight.stage(
                self._hooks.ncu, self.settings, self.nodeid, name, slower, record, profiled
            )
        with self._clock.phase("judge"):  # the entry's statistics (the first use imports scipy)
            entry = as_stored(self._entry(timing, device, profiled, record, memory))
        result = replace(
            result,
            bytes_inferred=bytes_inferred,
            ratio=ratio,
            baseline_ci_ms=baseline.device_time.round_range_ms if baseline else result.baseline_ci_ms,
            entry=entry,
            placements=drawn,
            notes=notes + result.notes + record.notes + context_notes(baseline, entry) + memory_notes,
            memory=memory,
        )
        if profiled is not None:
            result = replace(
                result,
                artifacts=tuple(str(p) for p in profiled.artifacts),
                notes=result.notes + profiled.notes,
            )
        if self.settings.update:
            with self._clock.phase("baseline_io"):
                self._store.stage(path, key, entry)
        result = self._record(result)
        self._enforce(result, baseline, path, _environment(timing, device), profiled)
        return result

    def _measured_again(
        self, timer: Timer, target: Target, reference: Target | None, plan: SamplingPlan, name: str | None
    ) -> tuple[Timing, Timing | None]:
        """fn measured once more as it was the first time (in rounds alternating with its reference's
        where it has one); the reference's timing too."""
        __tracebackhide__ = True
        what = f"measuring {self._label(name)} again to confirm a slower verdict"
        with self._step("rounds", what, less=("warmup",)), active(self._clock):
            try:
                timing, others = _interleaved(timer, target, [reference] if reference else [], plan)
            except _OtherFailed as failed:
                raise failed.error from None  # the reference's error is the test's
            except TimingError as exc:
                timing, others, problem = None, [], exc
        if timing is None:  # outside the except block: no chained traceback
            self._hooks.fail(f"kernel_bench could not time {self.nodeid} again: {problem}")
        for note in timing.notes:
            self._hooks.warn(f"{self.nodeid}: {note}")
        return timing, (others[0] if others else None)

    def _memory(
        self,
        fn: Callable[..., Any],
        call: Callable[[], Any],
        device: DeviceInfo,
        name: str | None,
        prepare: Callable[[], object] | None,
        baseline: BaselineEntry | None,
    ) -> tuple[MemoryCheck | None, tuple[str, ...]]:
        """The call's peak device memory beyond its inputs, from one more call after its timing,
        judged against the baseline's; (None, ()) where nothing can be measured (a CPU). A peak
        grown beyond the threshold is measured once more to name the operators allocating most."""
        # An in-place kernel is measured on restored inputs, as it was timed (the probe restores them).
        request = MemoryRequest(call, device, fn, label=self._label(name), prepare=prepare)
        with self._step("memory", f"measuring the device memory of {self._label(name)}"):
            try:
                reading = self._hooks.peak_memory(request)
            except Exception as exc:  # a failing probe must not hide the timing
                return None, (f"peak device memory not measured: {type(exc).__name__}: {exc}",)
            if reading is None:
                return None, ()
            recorded = baseline.peak_memory_bytes if baseline is not None else None
            check = judge_memory(reading.peak_bytes, recorded, self.settings.memory_threshold)
            if check.exceeded and not self.settings.update:
                try:
                    detail = self._hooks.peak_memory(replace(request, allocations=True))
                except Exception as exc:
                    return check, (f"allocations not named: {type(exc).__name__}: {exc}",)
                if detail is not None and detail.allocations:
                    check = replace(check, allocations=detail.allocations)
        return check, ()

    def _pairs_wanted(
        self, roles: list[str], plan: SamplingPlan, device: DeviceInfo
    ) -> Callable[[list[Timing], list[list[Timing]]], bool]:
        """Whether _interleaved draws another group for the pair with the revision: once the planned
        pairs are in, how many are needed is decided (judgement.pairs_needed, up to the plan's most
        rounds, --kernelperf-max-rounds x the planned), and groups are drawn up to that while
        measuring has taken at most the pair_seconds setting."""
        context = self._context(device)
        index = roles.index("base")
        most = plan.max_rounds or plan.rounds * self.settings.max_rounds
        began = time.monotonic()
        goal: int | None = None  # decided once, after the planned rounds

        def wanted(fn_rounds: list[Timing], other_rounds: list[list[Timing]]) -> bool:
            nonlocal goal
            if goal is None:
                fn_ms = [t.device_time.round_locations_ms[-1] for t in fn_rounds]
                base_ms = [t.device_time.round_locations_ms[-1] for t in other_rounds[index]]
                method = fn_rounds[0].device_time.method
                goal = pairs_needed(fn_ms, base_ms, context, device=device.name, method=method, most=most)
            return len(fn_rounds) < goal and time.monotonic() - began <= self.settings.pair_seconds

        return wanted

    def _judge_pair(
        self, result: BenchResult, timing: Timing, base: _Base, base_timing: Timing | None, device: DeviceInfo
    ) -> BenchResult:
        """The result judged against the counterpart's paired rounds, or, without a counterpart
        timed, not judged (new where the revision lacks fn) with the reason."""
        check = base.check(base_timing)
        if base_timing is None:
            absent = base.lookup.found is Found.ABSENT
            verdict = Verdict.NEW if absent else Verdict.INCOMPARABLE
            comparison = Comparison(verdict, reason=base.lookup.reason)
            return replace(result, verdict=verdict, comparison=comparison, baseline_file=None, against=check)
        context = self._context(device)
        measured, there = timing.device_time, base_timing.device_time
        if measured.method != there.method:
            reason = f"{check.revision} timed with {there.method}, this code with {measured.method}"
            comparison = Comparison(Verdict.INCOMPARABLE, reason=reason)
        elif base.imports_when_called and measured.method in HOST_PATH_METHODS:
            reason = (
                f"{check.where} at {check.revision} imports modules when called, through an import of "
                f"this process's own, which costs another time than the interpreter's: {measured.method} "
                "times the Python code too, so the pair is not comparable (device time would be)"
            )
            comparison = Comparison(Verdict.INCOMPARABLE, reason=reason)
        else:
            comparison = judge_pair(
                measured.round_locations_ms,
                there.round_locations_ms,
                context,
                device=device.name,
                method=measured.method,
            )
        return replace(
            result,
            verdict=comparison.verdict,
            comparison=comparison,
            baseline_ms=there.level_ms,
            baseline_ci_ms=(min(there.round_locations_ms), max(there.round_locations_ms)),
            baseline_file=None,
            host_comparison=None,
            against=check,
        )

    def _placements(
        self,
        fn: Callable[..., Any],
        arguments: tuple[tuple[Any, ...], dict[str, Any]],
        saved: object,
        device: DeviceInfo,
        rng: random.Random | None = None,
        adapt: Callable[[Any], Any] = lambda value: value,
    ) -> Placements | None:
        """Each round's own memory placement, for a CUDA measurement with placement "fresh";
        `adapt` makes the moved arguments fn's (another revision's classes)."""
        if self.settings.placement != "fresh" or device.kind != "cuda" or not placement.usable(device.index):
            return None
        assert device.index is not None

        def bind(moved: Any) -> tuple[Callable[[], Any], Callable[[], object] | None]:
            adapted = adapt(moved)
            return _bind(fn, adapted[0], adapted[1]), _restorer(moved, saved, self._hooks.fail, self.nodeid)

        return Placements(arguments, bind, f"cuda:{device.index}", rng=rng)

    def _ratio_check(self, timing: Timing, reference: Timing, device: DeviceInfo, limit: float) -> RatioCheck:
        measured, ref = timing.device_time, reference.device_time
        check = check_ratio(
            measured.round_locations_ms,
            measured.method,
            ref.round_locations_ms,
            ref.method,
            max_ratio=limit,
            alpha=self.settings.alpha,
            reference_samples_ms=ref.samples_ms,
            device=device.name,
            planned_judgements=self._hooks.planned_judgements(device.name),
            prior=self._hooks.noise_prior(device.name),
        )
        if measured.method != ref.method:
            self._hooks.warn(f"{self.nodeid}: {check.reason}; max_ratio was not checked")
        return check

    def _profile(
        self,
        fn: Callable[..., Any],
        call: Callable[[], Any],
        device: DeviceInfo,
        name: str | None,
        verdict: Verdict,
        prepare: Callable[[], object] | None = None,
    ) -> CallProfile | None:
        """Profile the call once more, after its timing: for everything with --kernelperf-profile,
        for a slower or unreliable verdict (to explain it), and for the kernel inventory of an update
        or of a run kept in the history (whose change points are attributed from inventories)."""
        settings = self.settings
        explain = not settings.update and verdict in (Verdict.SLOWER, Verdict.UNRELIABLE)
        write_files = settings.profile or explain
        inventory = settings.update or settings.history is not None
        if self._hooks.profile is None or not (write_files or inventory):
            return None
        if prepare is not None:
            # An in-place kernel (restore_inputs=True): profile one call on restored inputs, which
            # then hold what the timed calls left, as without profiling.
            prepare()
        request = ProfileRequest(
            call=call,
            device=device,
            folder=artifact_folder(settings.artifacts, self.nodeid, name) if write_files else None,
            with_stack=settings.profile_stack,
            fn=fn,
            label=self.nodeid if name is None else f"{self.nodeid} [{name}]",
            calls=1 if prepare is not None else PROFILED_CALLS,
        )
        try:
            with self._step("profile", f"profiling {request.label}"):
                return self._hooks.profile(request)
        except Exception as exc:  # a failing profiler must not hide the verdict it was to explain
            return CallProfile(notes=(f"profiling failed: {type(exc).__name__}: {exc}",))

    def _baseline(self, path: Path, key: EntryKey) -> BaselineEntry | None:
        __tracebackhide__ = True
        try:
            return self._store.lookup(path, key)
        except BaselineError as exc:
            problem = exc
        if self.settings.update and self.settings.replace_unreadable:
            self._hooks.warn(f"{problem.path}: {problem.problem}; REPLACING this file: its entries are lost")
            return None
        self._hooks.fail(str(problem))  # outside the except block: no chained traceback

    def _context(
        self, device: DeviceInfo, history: Sequence[Sequence[float]] | None = None
    ) -> JudgementContext:
        """What this call's judgements are made with: the settings' floors and level, the run's
        judgements and noise prior on this device, and the kernel's past rounds where known."""
        return JudgementContext(
            threshold=self.settings.threshold,
            alpha=self.settings.alpha,
            host_threshold=self.settings.host_threshold,
            planned_judgements=self._hooks.planned_judgements(device.name),
            prior=self._hooks.noise_prior(device.name),
            history=history,
        )

    def _judge(
        self,
        timing: Timing,
        baseline: BaselineEntry | None,
        device: DeviceInfo,
        name: str | None,
        path: Path,
        nbytes: int | None,
        flops: int | None,
    ) -> BenchResult:
        settings = self.settings
        measured, host = timing.device_time, timing.host_latency
        throttling = throttling_of(timing, baseline)
        history = None
        if baseline is not None:
            history = self._hooks.past_rounds(
                PastRuns.of(self.nodeid, name, settings.cache, device.name, baseline)
            )
        context = self._context(device, history)
        current = Measured(
            _record_of(measured),
            _record_of(host) if host is not None else None,
            device.environment.get(CARD_KEY),
        )
        comparison, host_comparison = judge_measurement(
            current, baseline, context, device=device.name, throttling=throttling
        )
        host_base = baseline.host_latency if baseline else None
        notes = list(timing.notes)
        if timing.health is not None:
            notes.append(timing.health.describe())
        if timing.throttled_rounds:
            notes.append(
                f"{timing.throttled_rounds} throttled round(s) seen; re-measured where the budget allowed"
            )
        return BenchResult(
            nodeid=self.nodeid,
            name=name,
            device=device.name,
            verdict=comparison.verdict,
            cache=settings.cache,
            method=measured.method,
            median_ms=measured.level_ms,
            samples_ms=measured.samples_ms,
            ci_ms=(min(measured.round_locations_ms), max(measured.round_locations_ms)),
            baseline_ms=baseline.device_time.level_ms if baseline else None,
            comparison=comparison,
            host_method=host.method if host else None,
            host_median_ms=host.level_ms if host else None,
            host_baseline_ms=host_base.level_ms if host_base else None,
            host_comparison=host_comparison,
            baseline_file=str(path),
            notes=tuple(notes),
            bytes=nbytes,
            flops=flops,
            wall_s=timing.wall_s,
            device_index=device.index,
            rounds_ms=measured.round_locations_ms,
            resolution_ms=measured.resolution_ms,
            throttled_rounds=timing.throttled_rounds,
            throttling=throttling,
        )

    def _enforce(
        self,
        result: BenchResult,
        baseline: BaselineEntry | None,
        path: Path,
        environment: dict[str, str],
        profiled: CallProfile | None,
    ) -> None:
        __tracebackhide__ = True
        found = failures(result, strict=self.settings.strict, update=self.settings.update)
        if Failure.MAX_RATIO in found:
            assert result.ratio is not None and result.median_ms is not None
            self._hooks.defer(ratio_message(result.label, result.device, result.median_ms, result.ratio))
        if Failure.MEMORY in found:
            assert baseline is not None and result.memory is not None
            where = f"{path} (recorded {baseline.recorded})"
            self._hooks.defer(
                memory_message(result.label, result.device, result.memory, where) + f"  {UPDATE_HINT}"
            )
        if Failure.SLOWER in found and result.against is not None:
            self._hooks.defer(against_message(result))
        elif Failure.SLOWER in found:
            assert baseline is not None
            assert result.median_ms is not None
            # The headline's figures (regression_message): one ratio for the verdict and the diagnosis.
            call_ms = (baseline.device_time.level_ms, result.median_ms)
            details = regression_details(
                baseline, environment, profiled, current=result.entry, call_ms=call_ms
            )
            self._hooks.defer(regression_message(result, baseline, path, details))
        if not self.settings.update and result.verdict in NOT_JUDGED:
            why = _not_judged(result, path, self.settings.cache)
            if Failure.NOT_JUDGED in found:
                self._hooks.defer(
                    f"{why}, and --kernelperf-strict fails every verdict that is not a judgement"
                )
            if result.verdict is not Verdict.NEW:  # never silently: new is counted in the summary
                self._hooks.warn(why)
        # A slower launch path (host latency) never fails a test: it is listed under the summary
        # table (results/render.py), one line per call, instead of one warning per test.

    def _entry(
        self,
        timing: Timing,
        device: DeviceInfo,
        profiled: CallProfile | None,
        record: CallRecord,
        memory: MemoryCheck | None = None,
    ) -> BaselineEntry:
        host = timing.host_latency
        return BaselineEntry(
            device_time=_record_of(timing.device_time),
            host_latency=_record_of(host) if host is not None else None,
            recorded=utc_stamp(self._hooks.now()),
            environment=_environment(timing, device),
            kernels=profiled.kernels if profiled is not None else None,
            compile_context=record.compile_context,
            autotune=record.autotune,
            inputs=record.inputs,
            peak_memory_bytes=memory.peak_bytes if memory is not None else None,
            counters=profiled.counters if profiled is not None else None,
        )

    def _record(self, result: BenchResult) -> BenchResult:
        """The result, with the seconds of the call's phases so far, to the host's results."""
        result = replace(result, cost=self._clock.call_cost())
        self._hooks.record(result)
        return result


def _environment(timing: Timing, device: DeviceInfo) -> dict[str, str]:
    """The device's environment and the SM clock read at the end of the measurement."""
    environment = dict(device.environment)
    if timing.health is not None:
        environment["sm_clock_mhz"] = str(timing.health.end.sm_clock_mhz)
    return environment


def _interleaved(
    timer: Timer,
    fn: Target,
    others: Sequence[Target],
    plan: SamplingPlan,
    more: Callable[[list[Timing], list[list[Timing]]], bool] | None = None,
) -> tuple[Timing, list[Timing]]:
    """fn and other functions (its reference, its counterpart at another revision) in single rounds
    taken in turn, the order rotating from one group of rounds to the next (fn first, then second,
    ...), so that drift over the measurement and any advantage of a place in the order hit all
    alike; the others prefer fn's method. Whether another group is drawn is decided here, so all
    have as many rounds: fn's plan wants more (a placement-sensitive fn), or `more` does, given the
    single rounds so far of fn and of each other. Each single round is exactly one. Without
    others, fn's measurement as planned. An error of another function's round raises _OtherFailed
    with its index."""
    if not others:
        return timer.measure(fn, plan), []
    fn_rounds: list[Timing] = []
    other_rounds: list[list[Timing]] = [[] for _ in others]
    single = replace(plan, rounds=1, max_rounds=None, known_round_sd=0.0)
    while plan.wants_more([t.device_time.round_locations_ms[-1] for t in fn_rounds]) or (
        more is not None and more(fn_rounds, other_rounds)
    ):
        one = replace(single, warm=bool(fn_rounds))
        group = len(fn_rounds)
        order = [-1, *range(len(others))]  # -1: fn, the first of the first group (its method leads)
        shift = group % len(order)
        for index in order[shift:] + order[:shift]:
            if index < 0:
                fn_rounds.append(timer.measure(fn, one))
                continue
            method = fn_rounds[0].device_time.method if fn_rounds else None
            try:
                other_rounds[index].append(timer.measure(others[index], replace(one, prefer_method=method)))
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # SystemExit, pytest.fail and pytest.skip included
                raise _OtherFailed(index, exc) from exc
    return merge_rounds(fn_rounds), [merge_rounds(rounds) for rounds in other_rounds]


class _OtherFailed(Exception):
    """A round of a function timed beside fn raised `error`."""

    def __init__(self, index: int, error: BaseException) -> None:
        super().__init__(str(error))
        self.index = index
        self.error = error


def throttling_of(timing: Timing, baseline: BaselineEntry | None = None) -> Throttling | None:
    """Throttling in the rounds kept, or None when they all ran at full clock; with the clocks that
    could explain a slowdown (the drop within the measurement, the baseline's clock)."""
    health = timing.health
    if health is None or not health.throttled:
        return None
    recorded = baseline.environment.get("sm_clock_mhz") if baseline else None
    return Throttling(
        health.throttled,
        health.clock_drop,
        health.throttled_rounds,
        lowest_clock_mhz=health.lowest_clock_mhz or min(health.start.sm_clock_mhz, health.end.sm_clock_mhz),
        baseline_clock_mhz=int(recorded) if recorded and recorded.isdigit() else None,
    )


def _not_judged(result: BenchResult, path: Path, cache: str) -> str:
    comparison = result.comparison
    if result.against is not None:
        reason = comparison.reason if comparison else ""
        return f"{result.label} on {result.device} not judged against {result.against.revision}: {reason}"
    if result.verdict is Verdict.NEW:
        return (
            f"no baseline for {result.label} on {result.device} ({cache} cache) in {path}; record one with "
            "`pytest --kernelperf-update-baselines`"
        )
    reason = comparison.reason if comparison else ""
    if result.verdict is Verdict.UNRELIABLE:
        change = f" {comparison.change_pct:+.1f}%" if comparison and comparison.change_pct is not None else ""
        return f"UNRELIABLE: {result.label} on {result.device} not judged{change}: {reason}"
    return f"{result.label} on {result.device} not compared ({result.verdict}): {reason}"


def _measured_twice(first: BenchResult, second: BenchResult) -> str:
    """The note of a slower verdict measured again: both readings, and which one decided."""

    def change(result: BenchResult) -> str:
        pct = result.comparison.change_pct if result.comparison else None
        return f"{pct:+.1f}%" if pct is not None else "no change figure"

    if second.verdict is Verdict.SLOWER:
        outcome = "slower: confirmed"
    elif second.verdict in JUDGEMENTS:
        outcome = f"{second.verdict}: not confirmed, judged on the second"
    else:
        reason = f", {second.comparison.reason}" if second.comparison and second.comparison.reason else ""
        outcome = f"{second.verdict}{reason}: the first measurement's verdict stands"
    return f"{MEASURED_TWICE}{change(first)} (slower), then {change(second)} ({outcome})"


def _bind(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> Callable[[], Any]:
    return lambda: fn(*args, **kwargs)


class _MismatchFound(Exception):
    """A wrong answer found by the check: recorded as a mismatch, and the test fails at its end."""

    def __init__(self, problem: str, notes: tuple[str, ...]) -> None:
        super().__init__(problem)
        self.problem = problem
        self.notes = notes


def _restorer(
    inputs: Any, saved: object, fail: Callable[[str], NoReturn], nodeid: str
) -> Callable[[], object] | None:
    """A step that puts `inputs` back to `saved`, their snapshot from before the kernel's first call
    (its own copy: the reference's copy is handed to the reference, which may change it); None
    without a snapshot (a kernel not declared in place). What cannot be put back fails the test,
    naming the argument, rather than time changed inputs."""
    if saved is None:
        return None

    def put_back() -> None:
        __tracebackhide__ = True
        try:
            restore(inputs, saved)
        except NotRestorable as exc:
            problem = f"{_argument_name(exc.path)}: {exc.problem}"
        else:
            return
        fail(f"kernel_bench in {nodeid}: restore_inputs=True cannot put back {problem}")

    return put_back


def _placement_notes(metric: Metric) -> tuple[str, ...]:
    """Names a kernel whose time depends on where its buffers land, with the spread its rounds saw."""
    rounds = metric.round_locations_ms
    if not noise.placement_sensitive(rounds, metric.method):
        return ()
    return (
        f"placement-sensitive: {min(rounds):.4g}-{max(rounds):.4g} ms across {len(rounds)} memory placements "
        f"(the level judged is their mean)",
    )


def _argument_name(path: str) -> str:
    """ "[0][1]" (a path into (args, kwargs)) as the caller wrote it: "args[1]" or "kwargs['x']"."""
    if path.startswith("[0]"):
        return "args" + path[3:]
    return "kwargs" + path[3:] if path.startswith("[1]") else path


def _device_of(args: Sequence[Any], kwargs: dict[str, Any], default: str) -> str:
    """Where the call runs: CUDA when any tensor argument is on a CUDA device, else CPU."""
    tensors = [v for v in (*args, *kwargs.values()) if hasattr(v, "is_cuda") and hasattr(v, "device")]
    if not tensors:
        return default
    return "cuda" if any(t.is_cuda for t in tensors) else "cpu"


def _record_of(metric: Metric) -> MetricRecord:
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


def regression_message(
    result: BenchResult, baseline: BaselineEntry, path: Path, details: Sequence[str] = ()
) -> str:
    comparison = result.comparison
    assert comparison is not None and result.median_ms is not None
    base = baseline.device_time
    threshold = comparison.threshold or 0.0
    rounds = result.rounds_ms
    spread = (
        f"; this run's {len(rounds)} rounds {min(rounds):.4g}-{max(rounds):.4g} ms"
        + (f", timer step {result.resolution_ms * 1e6:.3g} ns" if result.resolution_ms else "")
        if rounds
        else ""
    )
    return (
        f"performance regression in {result.label} on {result.device}: "
        f"{result.median_ms:.4g} ms vs baseline {base.level_ms:.4g} ms "
        f"({comparison.change_pct:+.1f}%, practical floor {threshold * 100:g}%).\n"
        f"  evidence: {comparison.evidence()}{spread}.\n"
        f"  method: {result.method}, {result.cache} cache; baseline: {path} (recorded {baseline.recorded}).\n"
        + "".join(f"  {line}\n" for line in details)
        + f"  {UPDATE_HINT}"
    )


def against_message(result: BenchResult) -> str:
    """A slowdown against --kernelperf-against's revision: both levels, the paired evidence."""
    comparison, check = result.comparison, result.against
    assert comparison is not None and check is not None
    assert result.median_ms is not None and check.median_ms is not None
    threshold = comparison.threshold or 0.0
    answers = f"; answers {check.answers}" if check.answers else ""
    placed = ", each pair at one memory placement" if result.placements else ""
    return (
        f"performance regression in {result.label} on {result.device}: "
        f"{result.median_ms:.4g} ms vs {check.median_ms:.4g} ms at {check.revision} "
        f"({comparison.change_pct:+.1f}%, practical floor {threshold * 100:g}%).\n"
        f"  evidence: {comparison.evidence()}.\n"
        f"  method: {result.method}, {result.cache} cache; both timed in this process in "
        f"{len(check.rounds_ms)} paired rounds{placed}; {check.where} loaded from {check.commit}{answers}.\n"
        f"  If the change is intended, it needs no baseline: the comparison is with {check.revision}."
    )
