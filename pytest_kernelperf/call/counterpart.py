"""--kernelperf-against: fn's counterpart at another revision, its first answer, how many pairs of
rounds it is timed in (until they decide the verdict, or the kernel's budget is spent), and the
judgement of fn against it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_kernelperf.call.context import CallRun
from pytest_kernelperf.call.spec import CallSpec
from pytest_kernelperf.correctness import compare_answers
from pytest_kernelperf.measure.timing import Timing
from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.model.names import HOST_PATH_METHODS
from pytest_kernelperf.model.result import (
    BenchResult,
    Comparison,
    Found,
    PairsStopped,
    RevisionCheck,
    Verdict,
)
from pytest_kernelperf.verdict.judgement import judge_pair, pairs_settled

if TYPE_CHECKING:  # --kernelperf-against's loader is imported only by a run that uses it
    from pytest_kernelperf.revision.loader import Lookup
    from pytest_kernelperf.revision.source import Revision
    from pytest_kernelperf.settings import Settings


@dataclass(frozen=True)
class RevisionLookup:
    """The revision of --kernelperf-against, and how fn's counterpart is found there (fn, the test
    module's file)."""

    revision: Revision
    find: Callable[[Callable[..., Any], Path], Lookup]


@dataclass(frozen=True)
class Counterpart:
    """fn's counterpart at the revision of --kernelperf-against, and how their answers compare."""

    revision: Revision
    lookup: Lookup
    answers: str = ""
    imports_when_called: bool = False  # its first call imported modules (through the loader)

    @property
    def fn(self) -> Callable[..., Any] | None:
        return self.lookup.fn if self.lookup.found is Found.SAME_NAME else None

    @property
    def where(self) -> str:
        return f"{self.lookup.where} at {self.revision.describe()}"

    def unloadable(self, reason: str) -> Counterpart:
        """This counterpart, found unusable (it raised): not comparable, for `reason`."""
        return replace(self, lookup=replace(self.lookup, found=Found.UNLOADABLE, reason=reason))

    def check(self, timing: Timing | None = None) -> RevisionCheck:
        metric = timing.device_time if timing is not None else None
        return RevisionCheck(
            revision=self.revision.describe(),
            commit=self.revision.commit,
            found=self.lookup.found,
            where=self.lookup.where,
            reason=self.lookup.reason,
            level_ms=metric.level_ms if metric is not None else None,
            rounds_ms=metric.round_locations_ms if metric is not None else (),
            method=metric.method if metric is not None else None,
            answers=self.answers,
        )


def load(
    against: RevisionLookup | None, fn: Callable[..., Any], run: CallRun, module: str
) -> Counterpart | None:
    """fn's counterpart at --kernelperf-against's revision; None without that option."""
    if against is None:
        return None
    with run.step("context", f"loading {run.nodeid}'s kernel from {against.revision.describe()}"):
        return Counterpart(against.revision, against.find(fn, Path(module)))


def answer(base: Counterpart, spec: CallSpec, run: CallRun, output: Any, original: Any) -> Counterpart:
    """The counterpart's first call (compiling it) on fn's original inputs, its answer compared
    with fn's `output` (for two in-place kernels that return nothing, the inputs each left): a
    change of numerics is said, never failed (the reference judges correctness)."""
    assert base.fn is not None
    where = base.where
    imports = base.lookup.imports_when_called()
    with run.first_call(where):
        try:
            adapted = base.lookup.adapt(original)
            with base.lookup.bounded():  # time-limited; cannot end the process
                expected = base.fn(*adapted[0], **adapted[1])
        except BaseException as exc:  # its code, not the test's (pytest.skip too): not comparable
            if isinstance(exc, KeyboardInterrupt):
                raise
            return base.unloadable(f"{where} raised {type(exc).__name__}: {exc}")
    if output is None and expected is None:
        output, expected = spec.arguments, original  # fn's inputs after its first call
    answers = compare_answers(output, expected, rtol=spec.rtol, atol=spec.atol)
    base = replace(base, imports_when_called=base.lookup.imports_when_called() > imports)
    if answers.startswith("differs"):
        run.host.warn(f"{run.label}: the answer changed against {where}: {answers}")
    return replace(base, answers=answers)


def most_pairs(settings: Settings) -> int:
    """The most pairs drawn for one kernel: --kernelperf-max-rounds x the planned rounds."""
    return settings.plan().rounds * settings.max_rounds


def pairs_wanted(
    run: CallRun, index: int, device: DeviceInfo
) -> Callable[[list[Timing], list[list[Timing]]], bool]:
    """Whether the interleaving draws another group for the pair with the revision (the others'
    `index`): the sequential gate (verdict/sequential.py) draws until the pairs decide the verdict,
    at most most_pairs of them, while measuring has taken at most the pair_seconds setting."""
    context = run.judgement_context(device)
    most = most_pairs(run.settings)
    began = time.monotonic()

    def wanted(fn_rounds: list[Timing], other_rounds: list[list[Timing]]) -> bool:
        if len(fn_rounds) >= most or time.monotonic() - began > run.settings.pair_seconds:
            return False
        fn_ms = [t.device_time.round_locations_ms[-1] for t in fn_rounds]
        base_ms = [t.device_time.round_locations_ms[-1] for t in other_rounds[index]]
        return not pairs_settled(fn_ms, base_ms, context)

    return wanted


def judged_against(
    result: BenchResult,
    run: CallRun,
    device: DeviceInfo,
    timing: Timing,
    base: Counterpart,
    base_timing: Timing | None,
) -> BenchResult:
    """The result judged against the counterpart's paired rounds, or, without a counterpart
    timed, not judged (new where the revision lacks fn) with the reason."""
    check = base.check(base_timing)
    if base_timing is None:
        absent = base.lookup.found is Found.ABSENT
        verdict = Verdict.NEW if absent else Verdict.INCOMPARABLE
        comparison = Comparison(verdict, reason=base.lookup.reason)
        return replace(result, verdict=verdict, comparison=comparison, baseline_file=None, against=check)
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
        pairs = measured.round_locations_ms
        most = len(pairs) >= most_pairs(run.settings)
        comparison = judge_pair(
            pairs,
            there.round_locations_ms,
            run.judgement_context(device),
            unsettled=PairsStopped.MOST_PAIRS if most else PairsStopped.BUDGET,
        )
    return replace(
        result,
        verdict=comparison.verdict,
        comparison=comparison,
        baseline_level_ms=there.level_ms,
        baseline_round_range_ms=(min(there.round_locations_ms), max(there.round_locations_ms)),
        baseline_file=None,
        host_comparison=None,
        against=check,
    )
