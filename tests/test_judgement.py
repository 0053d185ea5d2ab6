"""verdict/judgement.py: what fails, the count of planned judgements and the pooled prior."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey, MetricRecord
from pytest_kernelperf.model.result import BenchResult, RatioCheck, Verdict
from pytest_kernelperf.verdict.judgement import (
    Failure,
    JudgementContext,
    Measured,
    failures,
    judge_measurement,
    noise_priors,
    suite_judgements,
)


def record(*rounds: float, method: str = "cupti") -> MetricRecord:
    return MetricRecord(method, rounds[0], (min(rounds), max(rounds)), 10, rounds, rounds_ms=rounds)


def ratio(exceeded: bool) -> RatioCheck:
    return RatioCheck("cupti", 1.0, (1.0, 1.0), (1.0,), 2.0, 1.5, None, 0.01, exceeded, "")


@pytest.mark.parametrize(
    ("verdict", "exceeded", "strict", "update", "expected"),
    [
        (Verdict.SAME, False, False, False, []),
        (Verdict.SLOWER, False, False, False, [Failure.SLOWER]),
        (Verdict.SAME, True, False, False, [Failure.MAX_RATIO]),
        (Verdict.SLOWER, True, False, False, [Failure.MAX_RATIO, Failure.SLOWER]),
        (Verdict.NEW, False, False, False, []),
        (Verdict.NEW, False, True, False, [Failure.NOT_JUDGED]),
        (Verdict.UNRELIABLE, False, True, False, [Failure.NOT_JUDGED]),
        (Verdict.INCOMPARABLE, False, True, False, [Failure.NOT_JUDGED]),
        (Verdict.FASTER, False, True, False, []),
        # An update judges nothing against a baseline; the ratio still holds.
        (Verdict.SLOWER, False, True, True, []),
        (Verdict.NEW, True, True, True, [Failure.MAX_RATIO]),
    ],
)
def test_failures(
    verdict: Verdict, exceeded: bool, strict: bool, update: bool, expected: list[Failure]
) -> None:
    result = BenchResult("t.py::test_a", None, "gpu", verdict, ratio=ratio(exceeded))
    assert failures(result, strict=strict, update=update) == expected


def test_m_counts_every_entry_of_the_suite_on_the_device_whatever_is_selected() -> None:
    keys = [
        EntryKey("test_a", "gpu", "hot"),
        EntryKey("test_a", "gpu", "cold"),
        EntryKey("test_b::first", "gpu", "hot"),
        EntryKey("test_c", "gpu", "hot"),  # a test this run may not select: it still counts
        EntryKey("test_a", "other", "hot"),  # another device
    ]
    assert suite_judgements(keys, "gpu") == 4
    assert suite_judgements(keys, "other") == 1
    assert suite_judgements(keys, "none") == 1  # at least one


def test_the_prior_pools_device_time_and_host_latency_per_device() -> None:
    entry = BaselineEntry(record(1.0, 1.01, 0.99), "now", host_latency=record(5.0, 5.5, 4.5, method="event"))
    priors = noise_priors([("gpu", entry), ("other", replace(entry, host_latency=None))])
    assert set(priors) == {"gpu", "other"}
    assert set(priors["gpu"]._rounds) == {("gpu", "cupti"), ("gpu", "event")}
    assert set(priors["other"]._rounds) == {("other", "cupti")}


def test_judge_measurement_judges_host_latency_as_new_without_a_baseline_for_it() -> None:
    context = JudgementContext(threshold=0.005, alpha=0.01, host_threshold=0.5)
    measured = Measured(record(1.0, 1.0, 1.0), record(5.0, 5.0, 5.0, method="event"))
    device, host = judge_measurement(measured, None, context, device="gpu")
    assert device.verdict is Verdict.NEW and host is not None and host.verdict is Verdict.NEW
    base = BaselineEntry(record(1.0, 1.001, 0.999), "then")
    device, host = judge_measurement(measured, base, context, device="gpu")
    assert device.verdict is Verdict.SAME and host is not None and host.verdict is Verdict.NEW
    assert judge_measurement(replace(measured, host_latency=None), base, context, device="gpu")[1] is None


def test_the_paired_mode_counts_a_judgement_for_every_named_call_of_a_planned_test() -> None:
    from pytest_kernelperf.model.baseline import EntryKey
    from pytest_kernelperf.verdict.judgement import against_judgements

    entries = [
        ("t.py", EntryKey("test_a::triton", "H200", "hot")),
        ("t.py", EntryKey("test_a::torch", "H200", "hot")),
        ("t.py", EntryKey("test_a::torch", "H100", "hot")),  # another card: the same call
        ("t.py", EntryKey("test_b", "H200", "hot")),
        ("u.py", EntryKey("test_c", "H200", "hot")),  # not collected: the full run judges it
        ("u.py", EntryKey("test_c", "H100", "hot")),
    ]
    planned = {("t.py", "test_a"), ("t.py", "test_b"), ("t.py", "test_new")}
    # test_a judges two calls, test_b one, test_new (no entry yet) at least one, and test_c one.
    assert against_judgements(entries, planned) == 5
