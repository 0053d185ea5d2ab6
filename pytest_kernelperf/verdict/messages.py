"""Every message that fails a kernel_bench call or asks for new baselines, built here: the headline,
its figures and evidence, and the one update hint (the judge's note on a legacy baseline uses it
too). Pure text from the records (model/); nothing here decides a verdict."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from pytest_kernelperf.formatting import duration, percent
from pytest_kernelperf.model.baseline import BaselineEntry
from pytest_kernelperf.model.result import MEMORY_FLOOR_BYTES, BenchResult, MemoryCheck, RatioCheck, Verdict
from pytest_kernelperf.verdict.memory import format_bytes

UPDATE_HINT = "record new baselines with `pytest --kernelperf-update-baselines`"
RATIO_HINT = "Speed up the kernel, or raise max_ratio= in the kernel_bench call if the limit is too tight."


def regression_message(
    result: BenchResult, baseline: BaselineEntry, path: Path, details: Sequence[str] = ()
) -> str:
    """A slower verdict against the stored baseline: both levels, the evidence, where the baseline is,
    the diagnosis (`details`) and the update hint."""
    comparison = result.comparison
    assert comparison is not None and result.level_ms is not None
    base = baseline.device_time
    threshold = comparison.threshold or 0.0
    rounds = result.rounds_ms
    spread = (
        f"; this run's {len(rounds)} rounds {duration(min(rounds))} to {duration(max(rounds))}"
        + (f", timer step {duration(result.resolution_ms, 2)}" if result.resolution_ms else "")
        if rounds
        else ""
    )
    return (
        f"performance regression in {result.label} on {result.device}: "
        f"{duration(result.level_ms)} vs baseline {duration(base.level_ms)} "
        f"({comparison.change()}, beyond the {percent(threshold, 3)} threshold).\n"
        f"  evidence: {comparison.evidence()}{spread}.\n"
        f"  method: {result.method}, {result.cache} cache; baseline: {path} (recorded {baseline.recorded}).\n"
        + "".join(f"  {line}\n" for line in details)
        + f"  If the change is intended, {UPDATE_HINT}."
    )


def against_message(result: BenchResult) -> str:
    """A slowdown against --kernelperf-against's revision: both levels, the paired evidence."""
    comparison, check = result.comparison, result.against
    assert comparison is not None and check is not None
    assert result.level_ms is not None and check.level_ms is not None
    threshold = comparison.threshold or 0.0
    answers = f"; answers {check.answers}" if check.answers else ""
    placed = ", each pair at one memory placement" if result.placements else ""
    return (
        f"performance regression in {result.label} on {result.device}: "
        f"{duration(result.level_ms)} vs {duration(check.level_ms)} at {check.revision} "
        f"({comparison.change()}, beyond the {percent(threshold, 3)} threshold).\n"
        f"  evidence: {comparison.evidence()}.\n"
        f"  method: {result.method}, {result.cache} cache; both timed in this process in "
        f"{len(check.rounds_ms)} paired rounds{placed}; {check.where} loaded from {check.commit}{answers}.\n"
        f"  If the change is intended, it needs no baseline: the comparison is with {check.revision}."
    )


def memory_failure(result: BenchResult, baseline: BaselineEntry, path: Path) -> str:
    """Device memory grown beyond its threshold, with the update hint."""
    assert result.memory is not None
    where = f"{path} (recorded {baseline.recorded})"
    return (
        memory_message(result.label, result.device, result.memory, where)
        + f"  If the change is intended, {UPDATE_HINT}."
    )


def occasion_refused(result: BenchResult, path: Path, why: str) -> str:
    """--kernelperf-add-occasion refused for a call that is not the stored entry's measured again."""
    return (
        f"not added as another recording occasion: {result.label} on {result.device} ({result.cache} "
        f"cache) in {path}: {why}. An occasion is the same call measured again; the stored entry was "
        f"left as it was.\n  If the change is intended, record the entry afresh with "
        f"`pytest --kernelperf-update-baselines` (without --kernelperf-add-occasion)."
    )


def verdict_figure(result: BenchResult) -> str:
    """A verdict as a word and its number: `same ±6.3%` and `undetermined ±12%` (the smallest
    slowdown the judgement could detect), `slower +4.1%`, `faster -20.0%`, `unreliable +5.0%` (the
    change); the word alone where there is no number (`new`, `checked`, `mismatch`)."""
    comparison = result.comparison
    word = str(result.verdict)
    if comparison is None:
        return word
    if result.verdict in (Verdict.SAME, Verdict.UNDETERMINED):
        seen = comparison.detectable
        if seen is None and comparison.sequential is not None:
            seen = comparison.sequential.resolution
        if seen is not None and comparison.threshold is not None:
            seen = max(seen, comparison.threshold)  # it saw the threshold: nothing finer is promised
        return f"{word} ±{percent(seen)}" if seen is not None and math.isfinite(seen) else word
    if (
        result.verdict in (Verdict.SLOWER, Verdict.FASTER, Verdict.UNRELIABLE)
        and comparison.ratio is not None
    ):
        return f"{word} {change_figure(comparison.change_pct)}"
    return word


def change_figure(pct: float | None) -> str:
    """A change in percent as the tables write it: +4.1%, -50.0%, +0.0% (never -0.0%); "" for None."""
    if pct is None:
        return ""
    return "+0.0%" if abs(pct) < 0.05 else f"{pct:+.1f}%"


# Where a warning of a call not judged sends its reader: the report's notes hold the reason and
# the remedy, once however many calls cite them.
SEE_THE_NOTES = "see the notes under the kernelperf table"


def not_judged_warning(result: BenchResult) -> str:
    """The one line a pytest warning says of a call not judged (undetermined, unreliable,
    incomparable, or a pair that could not be compared): its verdict and number, and where the
    reason is. The reason itself is the table's note (and the failure's text, where one fails)."""
    where = f" against {result.against.revision}" if result.against is not None else ""
    change = result.change_pct
    if result.verdict is Verdict.UNDETERMINED:
        moved = f" (change {change_figure(change)})" if change is not None else ""
        return f"{result.label}: {verdict_figure(result)}{moved}{where}: not gated; {SEE_THE_NOTES}"
    return f"{result.label}: {verdict_figure(result)}{where}: not judged; {SEE_THE_NOTES}"


def not_judged(result: BenchResult, path: Path, cache: str) -> str:
    """Why a timed call was not judged: no baseline (with the update hint), unreliable, incomparable."""
    comparison = result.comparison
    if result.against is not None:
        reason = comparison.reason if comparison else ""
        return f"{result.label} on {result.device} not judged against {result.against.revision}: {reason}"
    if result.verdict is Verdict.NEW:
        return f"no baseline for {result.label} on {result.device} ({cache} cache) in {path}; {UPDATE_HINT}"
    reason = comparison.reason if comparison else ""
    change = f" {change_figure(result.change_pct)}" if result.change_pct is not None else ""
    if result.verdict is Verdict.UNDETERMINED:
        return f"UNDETERMINED: {result.label} on {result.device}{change}, {verdict_figure(result)}: {reason}"
    if result.verdict is Verdict.UNRELIABLE:
        return f"UNRELIABLE: {result.label} on {result.device} not judged{change}: {reason}"
    return f"{result.label} on {result.device} not compared ({result.verdict}): {reason}"


def undetermined_pair(why: str) -> str:
    """A pair against another revision that could not see the threshold, failed by the gate."""
    return (
        f"{why}; the pull-request gate (--kernelperf-against) fails a pair that could not see a change "
        "as small as its threshold (pass it with --kernelperf-allow-undetermined)"
    )


def strictly_not_judged(why: str) -> str:
    """A call not judged, failed by --kernelperf-strict."""
    return f"{why}, and --kernelperf-strict fails every verdict that is not a judgement"


def mismatch_problem(error: Exception, label: str) -> str:
    """A wrong answer: the comparison's own account, then the call."""
    return f"{error} ({label})"


def mismatch_message(problem: str, notes: Sequence[str]) -> str:
    """The deferred failure of a mismatch, with its first note (an input modified in place)."""
    return problem + (f"\n  {notes[0]}" if notes else "")


def usage_error(nodeid: str, problem: object) -> str:
    """A kernel_bench argument or use that is wrong: the test and the problem."""
    return f"kernel_bench in {nodeid}: {problem}"


def named_twice(nodeid: str, name: str | None) -> str:
    """Two calls of one test under one name, which would share a baseline entry."""
    label = "without a name" if name is None else f"with name={name!r}"
    return (
        f"kernel_bench was called twice {label} in {nodeid}; give each call its own name= "
        "(each name is its own baseline entry)"
    )


def no_timer(nodeid: str, problem: object) -> str:
    """No timer could be made for the call's device."""
    return f"kernel_bench cannot time {nodeid}: {problem} (--kernelperf-timer)"


def timing_failed(nodeid: str, problem: object, *, again: bool = False) -> str:
    """The timer failed while measuring (`again`: while measuring a slower verdict once more)."""
    return f"kernel_bench could not time {nodeid}{' again' if again else ''}: {problem}"


def memory_message(label: str, device: str, check: MemoryCheck, baseline_where: str) -> str:
    """The failure of a call whose device memory grew beyond its threshold, with the figures."""
    assert check.baseline_bytes is not None and check.growth_bytes is not None
    allowed = check.allowed_growth_bytes
    assert allowed is not None
    change = check.change_pct
    pct = f", {change:+.1f}%" if change is not None and math.isfinite(change) else ""
    if check.allocations:
        allocations = (
            "  largest allocations of one call now (torch.profiler, operator and its own net "
            f"allocation): {', '.join(check.allocations)}; the baseline keeps no per-allocation "
            "record, so which of them grew is not known.\n"
        )
    else:
        allocations = "  which allocations grew is not known (the profiler named none).\n"
    return (
        f"device memory grew in {label} on {device}: peak {format_bytes(check.peak_bytes)} "
        f"({check.peak_bytes} bytes) beyond the inputs vs baseline {format_bytes(check.baseline_bytes)} "
        f"({check.baseline_bytes} bytes): +{format_bytes(check.growth_bytes)}{pct}, more than the "
        f"+{format_bytes(allowed)} allowed (memory_threshold {check.threshold * 100:g}%, at least "
        f"{format_bytes(MEMORY_FLOOR_BYTES)}).\n" + allocations + f"  baseline: {baseline_where}.\n"
    )


def ratio_message(label: str, device: str, level_ms: float, check: RatioCheck) -> str:
    return (
        f"ratio to reference exceeded in {label} on {device}: {duration(level_ms)} is "
        f"{check.ratio:#.3g}x the reference's {duration(check.reference_level_ms)} "
        f"(max_ratio {check.max_ratio:g}).\n"
        f"  evidence: {check.evidence()}; both timed in this run with {check.method}, rounds interleaved.\n"
        f"  {RATIO_HINT}"
    )
