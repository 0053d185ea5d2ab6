"""The judgement around the one judge (verdict/judge.py), once for every caller.

A pytest run (kernel_bench.py), saved-run compare (results/saved_runs.py) and bisect
(history/bisect.py) all judge a measurement the same way:

* `JudgementContext`: what a judgement is made with (threshold, alpha, the host-latency threshold,
  the planned judgements m of the level alpha / m, the noise prior, the kernel's past rounds);
* `PastRuns`: which past runs in the run history teach a kernel's between-process noise;
* `noise_priors` pools the prior from a baseline set, `suite_judgements` counts m: one rule each;
* `judge_measurement` judges a measurement's stored metrics (device time and host latency) against
  its baseline entry; `judge_pair` judges its rounds against another revision's, timed in the same
  process (`--kernelperf-against`), and `pairs_settled` says when those pairs need no more;
* `failures` says why a judged result fails, if it does.

Pure logic: no torch, no pytest.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey, MetricRecord
from pytest_kernelperf.model.device import CARD_KEY
from pytest_kernelperf.model.result import (
    NOT_JUDGED,
    BenchResult,
    Comparison,
    PairsStopped,
    Throttling,
    Verdict,
)
from pytest_kernelperf.verdict.judge import Rounds, judge
from pytest_kernelperf.verdict.noise import HISTORY_MAX_RUNS
from pytest_kernelperf.verdict.prior import NoisePrior
from pytest_kernelperf.verdict.sequential import judge_pairs


@dataclass(frozen=True)
class JudgementContext:
    """How one measurement is judged: the practical floors (device time, host latency), the suite's
    false-alarm rate alpha and the planned judgements m it is shared among, the round-noise prior
    of the baseline set, and the device-time rounds of the kernel's past runs (None: not known)."""

    threshold: float
    alpha: float
    host_threshold: float
    planned_judgements: int = 1
    prior: NoisePrior | None = None
    history: Sequence[Sequence[float]] | None = None
    baseline_name: str = "baseline"  # how messages name the baseline ("OLD.json", "GOOD")


@dataclass(frozen=True)
class PastRuns:
    """Which past runs of a measurement can teach its between-process noise: those of this test,
    name, device and cache mode, timed with the baseline's method since the baseline was recorded,
    and judged the same as it (a run that found a regression is left out, so that a regression's
    own runs cannot widen the noise it is judged against); the newest `limit`, at most. The run
    history answers it (plugins/session.py); the rule is the judgement's."""

    nodeid: str
    name: str | None
    device: str
    cache: str
    method: str
    since: str  # the baseline's `recorded` stamp
    verdict: Verdict = Verdict.SAME
    limit: int = HISTORY_MAX_RUNS

    @classmethod
    def of(cls, nodeid: str, name: str | None, cache: str, device: str, baseline: BaselineEntry) -> PastRuns:
        return cls(nodeid, name, device, cache, baseline.device_time.method, baseline.recorded)


@dataclass(frozen=True)
class Measured:
    """What is judged of a measurement: its stored metrics and the card that measured them."""

    device_time: MetricRecord
    host_latency: MetricRecord | None = None
    card: str | None = None  # the GPU's identity (its UUID) where known
    host_timed: bool = True  # whether the host measured the device time (verdict/busy_host.py)


def noise_priors(entries: Iterable[tuple[str, BaselineEntry]]) -> dict[str, NoisePrior]:
    """Per device, the round noise of a baseline set: the rounds of every (device, entry), device
    time and host latency, grouped by recording process."""
    priors: dict[str, NoisePrior] = {}
    for device, entry in entries:
        prior = priors.setdefault(device, NoisePrior())
        for record in (entry.device_time, entry.host_latency):
            if record is not None and record.rounds_ms:
                prior.add(
                    device, record.method, record.rounds_ms, record.process_rounds, record.occasion_processes
                )
    return priors


def suite_judgements(keys: Iterable[EntryKey], device: str) -> int:
    """m of the level alpha / m on `device`: every entry of the suite's baseline set on it, at least
    1, whichever tests a run selects. A test re-run alone (`-k`, `--lf`, a node id) is judged at the
    level it had in the full run: counting only the selected tests' entries would make it the more
    lenient (m = 3 puts z at 2.71 instead of 3.48 for m = 40) exactly when a user checks it."""
    return max(1, sum(1 for key in keys if key.device == device))


def against_judgements(entries: Iterable[tuple[str, EntryKey]], planned: Collection[tuple[str, str]]) -> int:
    """m in the paired mode (--kernelperf-against), where every test is judged whether or not it has
    a baseline: one judgement per stored entry (file, key) of a planned test, on any device (each
    named call is one), one for each planned test without one, and one for each other stored test
    id (a test the run did not collect, or one of its named calls), on any device."""
    per_test: dict[tuple[str, str], set[str]] = {test: set() for test in planned}
    others: set[tuple[str, str]] = set()
    for where, key in entries:
        test = (where, key.test) if (where, key.test) in per_test else (where, key.test.rpartition("::")[0])
        if test in per_test:
            per_test[test].add(key.test)
        else:
            others.add((where, key.test))
    return max(1, sum(max(1, len(names)) for names in per_test.values()) + len(others))


def _rounds(record: MetricRecord, card: str | None) -> Rounds:
    return Rounds.of_stored(record, card)


def judge_measurement(
    measured: Measured,
    baseline: BaselineEntry | None,
    context: JudgementContext,
    *,
    device: str,
    throttling: Throttling | None = None,
    host_load: float | None = None,
) -> tuple[Comparison, Comparison | None]:
    """The device-time comparison and, for a measurement with host latency, the host-latency one
    (new where the baseline has none); without a baseline entry both are new. `host_load`: the
    host's load average per core after the rounds (verdict/busy_host.py), which bears on the device
    time where the host measured it (`measured.host_timed`) and on the host latency always."""
    there = baseline.environment.get(CARD_KEY) if baseline is not None else None
    common = {
        "device": device,
        "alpha": context.alpha,
        "planned_judgements": context.planned_judgements,
        "prior": context.prior,
        "baseline_name": context.baseline_name,
    }
    comparison = judge(
        _rounds(measured.device_time, measured.card),
        _rounds(baseline.device_time, there) if baseline is not None else None,
        threshold=context.threshold,
        throttling=throttling,
        history=context.history if baseline is not None else None,
        host_load=host_load if measured.host_timed else None,
        **common,  # type: ignore[arg-type]
    )
    host = None
    if measured.host_latency is not None:
        base = baseline.host_latency if baseline is not None else None
        host = judge(
            _rounds(measured.host_latency, measured.card),
            _rounds(base, there) if base is not None else None,
            threshold=context.host_threshold,
            host_load=host_load,
            **common,  # type: ignore[arg-type]
        )
    return comparison, host


def judge_pair(
    current_ms: Sequence[float],
    base_ms: Sequence[float],
    context: JudgementContext,
    *,
    unsettled: PairsStopped = PairsStopped.BUDGET,
) -> Comparison:
    """Device time against another version of the code timed in the same process, round for
    round (`--kernelperf-against`): the sequential paired gate's verdict at the last pair, at the
    run's threshold and level; `unsettled`: why the drawing stopped if the pairs decide nothing."""
    return judge_pairs(
        current_ms,
        base_ms,
        threshold=context.threshold,
        alpha=context.alpha,
        planned_judgements=context.planned_judgements,
        unsettled=unsettled,
    )


def pairs_settled(current_ms: Sequence[float], base_ms: Sequence[float], context: JudgementContext) -> bool:
    """Whether the pairs so far decide the verdict at the threshold, so that no more are drawn."""
    comparison = judge_pair(current_ms, base_ms, context)
    return comparison.sequential is not None and comparison.sequential.stopped is PairsStopped.DECIDED


# A first measurement that reads slower, or whose change lies beyond the threshold with a p-value
# within this factor of the level, is measured again, and one test of both measurements' rounds
# decides. That test has the level of any other judgement, so the rule adds no false alarms beyond
# it, and it sees more of a real slowdown than one measurement does: with twice the rounds its
# round part shrinks by half (docs/measurement.md#verdicts). Under no change about 20x the level of
# judgements are measured again.
REMEASURE_P_FACTOR = 20.0


def remeasure_wanted(comparison: Comparison | None) -> bool:
    """Whether this judgement is decided by measuring again and judging both measurements pooled."""
    if comparison is None or comparison.ratio is None or comparison.p_value is None:
        return False
    if comparison.verdict is Verdict.SLOWER:
        return True
    near = (
        comparison.level is not None
        and comparison.threshold is not None
        and comparison.ratio > 1 + comparison.threshold
        and comparison.p_value < REMEASURE_P_FACTOR * comparison.level
    )
    return comparison.verdict in (Verdict.SAME, Verdict.UNDETERMINED) and near


# A call `undetermined` in this many runs in a row (this one and its newest past runs in the history)
# is named as not gated: the same kernels read undetermined run after run (an NVRTC SAXPY in 10 of 11
# fresh runs), and a pass by default must not hide that the test has stopped gating anything.
PERSISTENT_UNDETERMINED_RUNS = 3


def persistently_undetermined(past: Sequence[str] | None) -> bool:
    """Whether an `undetermined` call's newest past runs were undetermined too, enough of them to
    make PERSISTENT_UNDETERMINED_RUNS in a row with this one."""
    wanted = PERSISTENT_UNDETERMINED_RUNS - 1
    return (
        past is not None
        and len(past) >= wanted
        and all(v == str(Verdict.UNDETERMINED) for v in past[:wanted])
    )


class Failure(str, enum.Enum):
    """Why a judged result fails its test (and makes `compare` and a bisection step say bad)."""

    SLOWER = "slower"  # significantly slower than its baseline, beyond the threshold
    MAX_RATIO = "max_ratio"  # slower than its reference beyond kernel_bench(max_ratio=)
    NOT_JUDGED = "not judged"  # new, incomparable or unreliable, under --kernelperf-strict
    UNDETERMINED = "undetermined"  # the pull-request gate could not see the threshold
    MEMORY = "memory"  # peak device memory grew beyond memory_threshold

    def __str__(self) -> str:
        return self.value


def failures(
    result: BenchResult, *, strict: bool = False, update: bool = False, allow_undetermined: bool = False
) -> list[Failure]:
    """Why `result` fails, in order; empty when it passes. The ratio to a reference is a property of
    the code, not of a baseline: it fails updates too. A slower launch path (host latency) never
    fails: it is listed under the summary table instead. A pair against another revision that
    could not see a change as small as the threshold (`undetermined`) fails unless
    `allow_undetermined`: the pull-request gate exists to see small changes, and a pass that saw
    nothing would read as "checked, unchanged"."""
    found = []
    if result.ratio is not None and result.ratio.exceeded:
        found.append(Failure.MAX_RATIO)
    if update:
        return found
    if result.memory is not None and result.memory.exceeded:
        found.append(Failure.MEMORY)
    if result.verdict is Verdict.SLOWER:
        found.append(Failure.SLOWER)
    if strict and result.verdict in NOT_JUDGED:
        found.append(Failure.NOT_JUDGED)
    elif result.verdict is Verdict.UNDETERMINED and result.against is not None and not allow_undetermined:
        found.append(Failure.UNDETERMINED)
    return found
