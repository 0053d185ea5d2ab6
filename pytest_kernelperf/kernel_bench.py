"""KernelBench: the kernel_bench fixture, a facade that sequences the stages of one call (call/):
its spec, the first call checked against the reference, the counterpart at another revision, the
timed rounds, the judgement, the record.

Knows nothing of pytest: failing, warning and recording are the host's (call/context.py), so this
class is unit-testable with plain functions and fake timers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pytest_kernelperf.baselines.schema import as_stored
from pytest_kernelperf.call import counterpart, judged, timed
from pytest_kernelperf.call.check import MismatchFound, first_call, mismatch
from pytest_kernelperf.call.context import CallRun
from pytest_kernelperf.call.counterpart import Counterpart, RevisionLookup
from pytest_kernelperf.call.spec import CallSpec, spec_of
from pytest_kernelperf.correctness import snapshot
from pytest_kernelperf.ids import check_name
from pytest_kernelperf.measure.clock import Clock
from pytest_kernelperf.measure.interpreter import interpreted
from pytest_kernelperf.measure.roofline import tensor_bytes
from pytest_kernelperf.model.baseline import split_nodeid
from pytest_kernelperf.model.result import BenchResult, Verdict
from pytest_kernelperf.profiling.call_context import CallContext
from pytest_kernelperf.settings import Settings
from pytest_kernelperf.verdict.messages import named_twice


class KernelBench:
    """Times a kernel against its stored baseline and checks it against a reference.

    Call it as ``kernel_bench(fn, *args, reference=ref, name=..., **kwargs)``; see the plugin's
    fixture docstring for the arguments.
    """

    def __init__(self, test: CallRun, *, device: str, against: RevisionLookup | None = None) -> None:
        """`test`: the test's calls' shared parts (its CallRun, without a name); `device`: where
        kernels run by default; `against`: the revision of --kernelperf-against, if any."""
        self._test = test
        self.device = device
        self._against = against
        self._names: set[str | None] = set()

    @property
    def nodeid(self) -> str:
        return self._test.nodeid

    @property
    def settings(self) -> Settings:
        return self._test.settings

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
        run = self._run(name)
        own = {"reference": reference, "rtol": rtol, "atol": atol, "name": name}
        own |= {"bytes": bytes, "flops": flops, "max_ratio": max_ratio}
        try:
            with run.devices.guard(fn, name):
                self._claim(run)
                spec = spec_of(run, fn, args, kwargs, own, fn_kwargs, restore_inputs)
                return self._checked_then_timed(run, spec)
        except MismatchFound as found:  # the test goes on, and fails at its end
            return mismatch(found, run, self.device)

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
        run = self._run(name)
        try:
            with run.devices.guard(fn, name):
                self._claim(run)
                own = {"reference": reference, "rtol": rtol, "atol": atol, "name": name}
                spec = spec_of(run, fn, args, kwargs, own, fn_kwargs)
                with run.first_call():
                    checked = first_call(spec, run)
        except MismatchFound as found:
            return mismatch(found, run, self.device)
        notes = (why, *checked.notes)
        return run.record(BenchResult(run.nodeid, name, self.device, Verdict.CHECKED, notes=notes))

    # -- stages ------------------------------------------------------------------------------

    def _run(self, name: str | None) -> CallRun:
        """The call's own state: its name and a fresh clock of its phases (measure/clock.py)."""
        return replace(self._test, name=name, clock=Clock())

    def _claim(self, run: CallRun) -> None:
        """The call's name: valid, and not used by another call of the test."""
        __tracebackhide__ = True
        name = run.name
        try:
            check_name(name)
        except ValueError as exc:
            run.fail(exc)
        if name in self._names:
            run.host.fail(named_twice(run.nodeid, name))
        self._names.add(name)

    def _checked_then_timed(self, run: CallRun, spec: CallSpec) -> BenchResult:
        """fn's first call checked against the reference (and its counterpart's answer taken), then
        timed where the run times; the call's context is open throughout."""
        __tracebackhide__ = True
        base = counterpart.load(self._against, spec.fn, run, split_nodeid(run.nodeid)[0])
        # The counterpart's answer is taken on the inputs as they were before fn's first call.
        original = snapshot(spec.arguments) if base is not None and base.fn is not None else None
        settings = run.settings
        # Opened before the first call: a fresh torch.compile context must precede compilation.
        context = CallContext(
            spec.fn,
            spec.args,
            spec.kwargs,
            compile_context=settings.compile_context,
            autotune=settings.autotune,
            active=settings.timing,
            reference=spec.reference,
        )
        with run.opened(context):
            if run.later_recording:  # no autotuner benchmarks again what the first process chose
                context.pin(judged.first_process_choices(run, spec.kind(self.device)))
            with run.first_call():
                checked = first_call(spec, run)
            if base is not None and original is not None:
                base = counterpart.answer(base, spec, run, checked.output, original)
                del original
            # No bytes= given: count the tensors read and written (the report says "inferred").
            inferred = tensor_bytes(spec.args, spec.kwargs, checked.output) if spec.bytes is None else None
            notes = checked.notes
            del checked  # on a GPU its output may be a GiB that timing needs
            if settings.timing and (untimed := interpreted(spec.fn)) is not None:  # Triton on CPU
                notes = (untimed, *notes)
            elif settings.timing:
                if inferred is not None:
                    spec = replace(spec, bytes=inferred)
                return self._timed(run, spec, base, context, notes, bytes_inferred=inferred is not None)
            return run.record(BenchResult(run.nodeid, run.name, self.device, Verdict.CHECKED, notes=notes))

    def _timed(
        self,
        run: CallRun,
        spec: CallSpec,
        base: Counterpart | None,
        context: CallContext,
        notes: tuple[str, ...],
        *,
        bytes_inferred: bool,
    ) -> BenchResult:
        """Timed, judged (a slower verdict measured twice), profiled where wanted, staged in an
        update, recorded; its failures deferred to the test's end."""
        __tracebackhide__ = True
        measurement = judged.measurement(run, spec.kind(self.device), stored=base is None)
        device, baseline = measurement.device, measurement.baseline
        rounds = timed.set_up(spec, run, measurement, base, context)
        first = timed.measure(run, rounds, base, context)
        memory = timed.memory(run, spec, rounds, baseline)
        ratio = None
        with run.clock.phase("judge"):
            if spec.max_ratio is not None and first.reference is not None:
                ratio = judged.ratio(run, first.timing, first.reference, device, spec.max_ratio)
            result = judged.judge(run, first.timing, measurement, spec)
            if first.base is not None:
                result = counterpart.judged_against(
                    result, run, device, first.timing, first.base, first.base_timing
                )
        judgement = (first.timing, result, ratio)
        if judged.confirming(run, result):  # slower, or near it: measured again, and both judged
            again = timed.measure_again(run, rounds)
            judgement = judged.confirmed(run, measurement, spec, judgement, again, first.reference)
        timing, result, ratio = judgement
        profiled = timed.profile(run, spec, rounds, result.verdict, first.record)
        with run.clock.phase("judge"):  # the entry's statistics (the first use imports scipy)
            entry = as_stored(judged.entry(run, timing, device, profiled, first.record, memory[0]))
        result = replace(result, bytes_inferred=bytes_inferred, ratio=ratio, entry=entry)
        result = timed.finished(result, rounds, timing, first.record, memory, profiled, baseline, notes=notes)
        if run.settings.update:
            with run.clock.phase("baseline_io"):
                judged.stage(run, measurement, result)
        result = run.record(result)
        judged.enforce(run, result, measurement, profiled, entry.environment)
        return result
