"""One baseline entry from the entries several recording processes measured.

A kernel's level moves from one process to the next (clocks, what the process compiled and chose,
where its buffers landed), and a baseline from one process freezes one such draw for every later
run. Recorded in several processes (`--kernelperf-record-processes`), an entry keeps every
process's rounds, in order, with how many each measured (`process_rounds`): the judge compares
against the mean over the processes, and their spread is the kernel's own between-process noise.
The samples' summary (median, interval, quantiles) is that of all processes' samples together, so
the entry stays consistent in itself. The SM clock in its environment is the processes' mean, as
its level is: the judge sets one against the other for a kernel at the power cap. No pytest, no torch.
"""

from __future__ import annotations

import math
from dataclasses import replace

from pytest_kernelperf.model.baseline import CLOCK_KEY, BaselineEntry, MetricRecord, clock_of
from pytest_kernelperf.verdict import stats


def combine(first: BaselineEntry, other: BaselineEntry) -> BaselineEntry:
    """`first` with the rounds of `other`, a later process's entry of the same test, added as one more
    recording process. Everything else (date, environment but its clock, inventory, context) stays
    `first`'s."""
    host = first.host_latency
    if host is not None and other.host_latency is not None:
        host = combine_metric(host, other.host_latency)
    return replace(
        first,
        device_time=combine_metric(first.device_time, other.device_time),
        host_latency=host,
        environment=_mean_clock(first.environment, first, other),
    )


def another_occasion(stored: BaselineEntry, new: BaselineEntry) -> BaselineEntry:
    """`stored` with `new`'s processes added as one more recording occasion (an update on another
    machine or day, `--kernelperf-add-occasion`): the judge's occasion term shrinks with the
    occasions. `new`'s date, environment (but its clock), inventory and context describe the entry
    from now on."""
    host = new.host_latency
    if host is not None and stored.host_latency is not None:
        host = combine_metric(stored.host_latency, host, occasion=True)
    return replace(
        new,
        device_time=combine_metric(stored.device_time, new.device_time, occasion=True),
        host_latency=host,
        environment=_mean_clock(new.environment, stored, new),
    )


def _mean_clock(environment: dict[str, str], first: BaselineEntry, other: BaselineEntry) -> dict[str, str]:
    """`environment` with the SM clock of the level `first` and `other` pool into: the geometric mean
    over their processes, each entry's clock weighing as many processes as it holds. Where the two do
    not pool (another method, no rounds) the level is one side's, and so is its clock; where they pool
    but a clock is unknown, the level's clock is too, and the key goes."""
    if not _pools(first.device_time, other.device_time):
        return environment
    clocks = [(clock_of(e.environment), len(e.device_time.process_rounds) or 1) for e in (first, other)]
    known = [(math.log(clock), count) for clock, count in clocks if clock is not None]
    if len(known) < len(clocks):
        return {key: value for key, value in environment.items() if key != CLOCK_KEY}
    mean = math.exp(math.fsum(log * count for log, count in known) / sum(count for _, count in known))
    return {**environment, CLOCK_KEY: str(round(mean))}


def _pools(first: MetricRecord, other: MetricRecord) -> bool:
    """Whether two records' rounds pool into one level: the same method, rounds on both sides."""
    return first.method == other.method and bool(first.rounds_ms) and bool(other.rounds_ms)


def combine_metric(first: MetricRecord, other: MetricRecord, *, occasion: bool = False) -> MetricRecord:
    """Two records of one metric as one, `other`'s processes added to `first`'s occasion, or as an
    occasion of their own. Records of another method, or without rounds, cannot be pooled: `other`
    stays as it was when it starts an occasion, else `first`."""
    if not _pools(first, other):
        return other if occasion else first
    pooled = sorted(_stand_ins(first) + _stand_ins(other))
    summary = stats.summarize(pooled)
    counts = (first.process_rounds or (len(first.rounds_ms),)) + (
        other.process_rounds or (len(other.rounds_ms),)
    )
    steps = [s for s in (first.resolution_ms, other.resolution_ms) if s is not None]
    first_occasions = first.occasion_processes or (len(first.process_rounds) or 1,)
    other_processes = len(other.process_rounds) or 1
    if occasion:
        occasions = first_occasions + (other.occasion_processes or (other_processes,))
    else:  # a later process of the same recording: the last occasion gains its processes
        occasions = (*first_occasions[:-1], first_occasions[-1] + other_processes)
    return MetricRecord(
        method=first.method,
        median_ms=summary.median_ms,
        ci_ms=(summary.ci_low_ms, summary.ci_high_ms),
        n=first.n + other.n,
        quantiles_ms=tuple(stats.compress(pooled)),
        rounds_ms=first.rounds_ms + other.rounds_ms,
        resolution_ms=min(steps) if steps else None,
        process_rounds=counts,
        occasion_processes=occasions if len(occasions) > 1 else (),
    )


def _stand_ins(record: MetricRecord) -> list[float]:
    """The record's stored quantiles, each repeated for the samples it stands for, so that two
    processes' samples pool in proportion to how many each measured."""
    weight = max(1, round(record.n / len(record.quantiles_ms)))
    return [value for value in record.quantiles_ms for _ in range(weight)]
