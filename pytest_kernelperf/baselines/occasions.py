"""Whether a run's measurement may join a stored entry as one more recording occasion.

`--kernelperf-add-occasion` pools this run's rounds with the stored entry's (baselines/processes.py
`another_occasion`), and the spread of the occasions becomes part of every later verdict's noise.
That holds only for the same code measured again: another call (its inputs or compile context
changed), another timer, or a level this very run judged different would pool two workloads into
one level, or widen the occasion term until no verdict is determined. Such an occasion is refused
and the stored entry stays as it is. No pytest, no torch.
"""

from __future__ import annotations

from pytest_kernelperf.model.baseline import MAX_OCCASIONS, MAX_PROCESSES, BaselineEntry, MetricRecord
from pytest_kernelperf.model.result import Verdict
from pytest_kernelperf.profiling import compile_context
from pytest_kernelperf.profiling.inputs import describe_change

# Verdicts that say the run measured another level than the stored entry's, or one that cannot be
# trusted: an `unreliable` run (throttled, a busy host, rounds far apart) may hide a slower one.
_DIFFERENT = (Verdict.SLOWER, Verdict.FASTER, Verdict.UNRELIABLE)


def not_the_same_call(
    stored: BaselineEntry, new: BaselineEntry, verdict: Verdict, change_pct: float | None
) -> str | None:
    """Why `new` is not another occasion of what `stored` measured (a clause), or None where it is.
    `verdict` and `change_pct`: this run's judgement of `new` against `stored`."""
    old_method, new_method = stored.device_time.method, new.device_time.method
    if old_method != new_method:
        return f"the stored entry was timed with {old_method}, this run with {new_method}"
    if stored.inputs is not None:
        changes = describe_change(stored.inputs, new.inputs or ())
        if changes:
            return "its inputs differ from the stored entry's: " + "; ".join(changes)
    if compile_context.differs(stored.compile_context, new.compile_context):
        assert stored.compile_context is not None and new.compile_context is not None
        return (
            f"the stored entry was {stored.compile_context.summary()}, this run "
            f"{new.compile_context.summary()}"
        )
    if verdict in _DIFFERENT:
        change = f" ({change_pct:+.1f}%)" if change_pct is not None else ""
        return f"this run judged it {verdict.value}{change} against the stored entry"
    return None


def beyond_the_cap(stored: BaselineEntry, new: BaselineEntry) -> str | None:
    """Why one more occasion would hold more than an entry keeps (a clause), or None where it fits.
    An entry without rounds (schema 1) is replaced, never pooled: it always fits."""
    record = stored.device_time
    if not record.rounds_ms:
        return None
    occasions = _occasions(record)
    processes = len(record.process_rounds) or 1
    more = len(new.device_time.process_rounds) or 1
    if occasions + 1 > MAX_OCCASIONS:
        return f"it holds {occasions} recording occasions already, the most an entry keeps"
    if processes + more > MAX_PROCESSES:
        return (
            f"it holds {processes} recording processes already, and {more} more would pass the "
            f"{MAX_PROCESSES} an entry keeps"
        )
    return None


def _occasions(record: MetricRecord) -> int:
    return len(record.occasion_processes) or 1
