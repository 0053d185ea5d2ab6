"""A kernel_bench call's shared state (CallRun), and what the host lends it, by kind: its services
(Host), its device factories (Devices) and the run's judgement context (RunJudgement)."""

from __future__ import annotations

import contextlib
import datetime as _dt
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

from pytest_kernelperf.baselines.store import BaselineStore
from pytest_kernelperf.measure.clock import Clock
from pytest_kernelperf.measure.memory import MemoryReading, MemoryRequest
from pytest_kernelperf.measure.placement import Placements
from pytest_kernelperf.measure.timing import SamplingPlan, Target, Timer
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey
from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.model.result import BenchResult
from pytest_kernelperf.profiling.call_context import CallContext
from pytest_kernelperf.profiling.capture import CallProfile, ProfileRequest
from pytest_kernelperf.profiling.ncu import CounterReading, CounterRequest
from pytest_kernelperf.settings import Settings
from pytest_kernelperf.verdict.judgement import JudgementContext, PastRuns
from pytest_kernelperf.verdict.messages import usage_error
from pytest_kernelperf.verdict.prior import NoisePrior


def no_guard() -> AbstractContextManager[None]:
    return contextlib.nullcontext()


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


@dataclass(frozen=True)
class Host:
    """The host's services (pytest, or a test): failing, warning, recording, the terminal, the time."""

    fail: Callable[[str], NoReturn]  # stops the test: a usage error, or a call that cannot go on
    warn: Callable[[str], None]
    record: Callable[[BenchResult], None]
    # A failure that lets the test go on (a regression, a mismatch): the host fails the test at its
    # end with every such message, so one bad row never hides the others. None: fail at once.
    deferred: Callable[[str], None] | None = None
    # A long step said on the terminal while it runs, and how long it took (plugins/progress.py).
    progress: Callable[[str], AbstractContextManager[None]] = lambda what: no_guard()
    now: Callable[[], _dt.datetime] = _now

    def defer(self, message: str) -> None:
        __tracebackhide__ = True
        if self.deferred is None:
            self.fail(message)
        self.deferred(message)


@dataclass(frozen=True)
class Devices:
    """What the host makes for a device: its timer, its description, the profiler, the fault guard
    and the peak-memory probe."""

    make_timer: Callable[[Settings, DeviceInfo], Timer]
    device_info: Callable[[str], DeviceInfo]
    profile: Callable[[ProfileRequest], CallProfile] | None = None
    # Wraps each call (kernel, name): the host's fault handling, e.g. a poisoned CUDA context.
    guard: Callable[[Callable[..., Any], str | None], AbstractContextManager[None]] = lambda fn, name: (
        no_guard()
    )
    # The peak device memory of one call beyond what was allocated before it; None where there is
    # nothing to measure (a CPU). The host's pytest_kernelperf_peak_memory hook (measure/memory.py).
    peak_memory: Callable[[MemoryRequest], MemoryReading | None] = lambda request: None
    # One call replayed under Nsight Compute for its hardware counters (plugins/ncu.py); None: never.
    ncu: Callable[[CounterRequest], CounterReading] | None = None


@dataclass(frozen=True)
class RunJudgement:
    """The run's judgements: the prior for round noise per device (pooled from the baseline entries
    the run has read), how many judgements the run plans on a device (Bonferroni's m), and the
    rounds of a measurement's past runs in the run history that matched its baseline, oldest first
    (its own between-process noise; None without a history)."""

    noise_prior: Callable[[str], NoisePrior] = lambda device: NoisePrior()
    planned_judgements: Callable[[str], int] = lambda device: 1
    past_rounds: Callable[[PastRuns], Sequence[Sequence[float]] | None] = lambda key: None
    # The verdicts of a measurement's newest past runs (PastRuns' series, at most this many), newest
    # first; None without a history.
    past_verdicts: Callable[[PastRuns, int], Sequence[str] | None] = lambda key, limit: None


@dataclass(frozen=True)
class Measurement:
    """Where a timed call's measurement belongs: its device, baseline file and entry, and the stored
    entry it is judged against (None: new, or against a revision)."""

    device: DeviceInfo
    path: Path
    key: EntryKey
    baseline: BaselineEntry | None = None


@dataclass(frozen=True)
class Rounds:
    """How a call is timed: the timer, fn's target and plan, the targets timed beside it by role
    ("base": its counterpart at another revision, "reference": its reference, for max_ratio), the
    memory placements fn's rounds drew, and the step that puts an in-place kernel's inputs back."""

    timer: Timer
    target: Target
    plan: SamplingPlan
    others: dict[str, Target]
    placements: Placements | None = None
    prepare: Callable[[], object] | None = None


@dataclass
class CallRun:
    """One kernel_bench call: the test, the call's name, its settings, the host's parts, the baseline
    store and the clock of the call's phases. Every stage reads and reports through it."""

    nodeid: str
    name: str | None
    settings: Settings
    host: Host
    devices: Devices
    judgement: RunJudgement
    store: BaselineStore
    # A later recording process: it runs the first process's autotuner choices from the first call
    # on, and measures only the rounds a further process adds to the first's entry.
    later_recording: bool = False
    clock: Clock = field(default_factory=Clock)
    function: str | None = None  # the timed callable's name (ids.function_name), for the reports

    @property
    def label(self) -> str:
        return self.nodeid if self.name is None else f"{self.nodeid} [{self.name}]"

    def fail(self, problem: object) -> NoReturn:
        """A wrong argument or use of kernel_bench: the test fails, naming it."""
        __tracebackhide__ = True
        self.host.fail(usage_error(self.nodeid, problem))

    def warn(self, note: str) -> None:
        self.host.warn(f"{self.nodeid}: {note}")

    @contextlib.contextmanager
    def step(self, phase: str, what: str, *, less: Sequence[str] = ()) -> Iterator[None]:
        """A phase of the call on its clock, said on the terminal should it take long."""
        with self.clock.phase(phase, less=less), self.host.progress(what):
            yield

    def first_call(self, what: str | None = None) -> AbstractContextManager[None]:
        return self.step("first_call", f"first call of {what or self.label} (compile, JIT, autotune)")

    @contextlib.contextmanager
    def opened(self, context: CallContext) -> Iterator[CallContext]:
        """The call's context entered as a phase of its own: a fresh torch.compile context, the
        autotuners watched (the first use in a process imports torch's compiler: seconds)."""
        with contextlib.ExitStack() as stack:
            with self.clock.phase("context"):
                stack.enter_context(context)
            yield context

    def record(self, result: BenchResult) -> BenchResult:
        """The result, with the seconds of the call's phases so far, to the host's results."""
        result = replace(result, cost=self.clock.call_cost(), function=result.function or self.function)
        self.host.record(result)
        return result

    def judgement_context(
        self, device: DeviceInfo, history: Sequence[Sequence[float]] | None = None
    ) -> JudgementContext:
        """What this call's judgements are made with: the settings' floors and level, the run's
        judgements and noise prior on this device, and the kernel's past rounds where known."""
        return JudgementContext(
            threshold=self.settings.threshold,
            alpha=self.settings.alpha,
            host_threshold=self.settings.host_threshold,
            planned_judgements=self.judgement.planned_judgements(device.name),
            prior=self.judgement.noise_prior(device.name),
            history=history,
        )
