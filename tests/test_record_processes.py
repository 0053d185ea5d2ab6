"""--kernelperf-record-processes: a baseline recorded in several processes, one after another, is
their mean, keeps each process's rounds, and is judged with the spread they show."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
import yaml
from conftest import Project, seed_peak_cache

from pytest_kernelperf.baselines import processes, schema
from pytest_kernelperf.baselines.yaml_io import read
from pytest_kernelperf.model.baseline import BaselineEntry, MetricRecord
from pytest_kernelperf.settings import GPU_MOST_RECORD_PROCESSES, GPU_RECORD_PROCESSES, Settings

# Each process draws its own level (its pid picks it), as processes on a GPU do.
PER_PROCESS = """
import os

import torch

def kernel(x):
    return x * 2

kernel.fake_ms = 1.0 + (os.getpid() % 9973) * 1e-6  # process ids one after another: distinct

def test_kernel(kernel_bench):
    kernel_bench(kernel, torch.ones(8), reference=lambda x: x + x)

def test_other(kernel_bench):
    kernel_bench(kernel, torch.ones(4), name="four")
"""


@pytest.mark.slow
def test_a_baseline_recorded_in_three_processes_keeps_each_ones_rounds(project: Project) -> None:
    project.module(PER_PROCESS)
    seed_peak_cache(project.pytester.path)
    result = project.run("--kernelperf-update-baselines", "--kernelperf-record-processes=3")
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    # Said when each starts, and how long it took when it ends (plugins/progress.py's lines).
    assert "kernelperf: recording process 2 of 3 (2 tests) ...\n" in out
    assert re.search(r"kernelperf: recording process 3 of 3 \(2 tests\) \.\.\. [0-9.]+ s\n", out)
    entries = read(project.baseline_file)
    assert len(entries) == 2
    for entry in entries.values():
        record = entry.device_time
        assert record.process_rounds == (8, 8, 8) and len(record.rounds_ms) == 24
        levels = {round(v, 9) for v in record.rounds_ms}
        assert len(levels) > 1  # three processes, three levels
    report = project.pytester.path / "run.json"
    judged = project.run("--kernelperf", f"--kernelperf-json={report}")
    judged.assert_outcomes(passed=2)
    for result_data in json.loads(report.read_text())["results"]:
        assert "3 recording processes, shrunk toward" in result_data["comparison"]["process_source"]


def record(rounds: tuple[float, ...], n: int = 40) -> MetricRecord:
    low, high = min(rounds) * 0.99, max(rounds) * 1.01
    quantiles = tuple(low + (high - low) * i / 31 for i in range(32))
    return MetricRecord("cupti", sorted(rounds)[len(rounds) // 2], (low, high), n, quantiles, rounds, 3.2e-5)


# Each process sits 3% from the last: a count of the processes that imported the module picks it.
OFFSET_PROCESSES = """
import pathlib

import torch

_seen = pathlib.Path(__file__).with_name("processes.txt")
with _seen.open("a") as handle:
    handle.write("x")

def kernel(x):
    return x * 2

kernel.fake_ms = 0.05 * (1 + 0.03 * (len(_seen.read_text()) % 3))

def test_kernel(kernel_bench):
    kernel_bench(kernel, torch.ones(8))
"""


@pytest.mark.slow
def test_an_update_names_the_entries_whose_processes_need_occasions(project: Project) -> None:
    project.module(OFFSET_PROCESSES)
    seed_peak_cache(project.pytester.path)
    result = project.run("--kernelperf-update-baselines", "--kernelperf-record-processes=3")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*kernelperf baselines updated*",
            "needs occasions: 1 entry whose recording processes disagree far beyond their rounds: "
            "test_kernel on * (3 processes *% apart, *x the 0.30% of 10 us-100 us kernels); their "
            "verdicts say so until they are recorded again on another day or machine with "
            "--kernelperf-update-baselines --kernelperf-add-occasion",
        ]
    )
    report = project.pytester.path / "run.json"
    project.run("--kernelperf", f"--kernelperf-json={report}")
    (judged,) = json.loads(report.read_text())["results"]
    assert "needs occasions: its 3 recording processes sit" in judged["comparison"]["reason"]


def test_the_baselines_clock_is_its_processes_mean() -> None:
    """A power-capped kernel's level is the mean over its processes; so is the clock it is set against."""
    one = BaselineEntry(record((1.0, 1.0)), "2026-12-03", {"sm_clock_mhz": "1980", "driver": "580"})
    two = processes.combine(one, dataclasses.replace(one, environment={"sm_clock_mhz": "1545"}))
    assert two.environment == {"sm_clock_mhz": str(round((1980 * 1545) ** 0.5)), "driver": "580"}
    three = processes.combine(two, dataclasses.replace(one, environment={"sm_clock_mhz": "1605"}))
    assert three.environment["sm_clock_mhz"] == str(round((1980 * 1545 * 1605) ** (1 / 3)))
    # Another occasion's processes count too; an entry without a clock leaves it as it was.
    later = processes.another_occasion(three, dataclasses.replace(one, environment={"sm_clock_mhz": "1700"}))
    assert later.environment["sm_clock_mhz"] == str(round((1980 * 1545 * 1605 * 1700) ** (1 / 4)))
    # A process whose clock is unknown leaves the pooled level's clock unknown too.
    unknown = processes.combine(three, dataclasses.replace(one, environment={"driver": "580"}))
    assert "sm_clock_mhz" not in unknown.environment and unknown.environment["driver"] == "580"
    # Records that do not pool (another method) keep one side's level, and its clock.
    other_method = dataclasses.replace(
        one,
        device_time=dataclasses.replace(one.device_time, method="cuda-event"),
        environment={"sm_clock_mhz": "1545"},
    )
    assert processes.combine(one, other_method).environment["sm_clock_mhz"] == "1980"
    assert processes.another_occasion(one, other_method).environment["sm_clock_mhz"] == "1545"


def test_two_processes_pool_into_one_consistent_record() -> None:
    first, second = record((1.0, 1.01, 1.0)), record((1.1, 1.09, 1.1, 1.1), n=80)
    both = processes.combine_metric(first, second)
    assert both.rounds_ms == first.rounds_ms + second.rounds_ms and both.process_rounds == (3, 4)
    assert both.n == 120 and both.quantiles_ms[0] >= first.quantiles_ms[0]
    assert both.quantiles_ms[-1] <= second.quantiles_ms[-1]
    assert both.level_ms == pytest.approx((first.level_ms * second.level_ms) ** 0.5)  # processes weigh alike
    third = processes.combine_metric(both, record((1.05,) * 2))
    assert third.process_rounds == (3, 4, 2)


def test_records_of_another_method_are_not_pooled() -> None:
    first = record((1.0, 1.0))
    other = MetricRecord("cuda-graph", 1.0, (0.9, 1.1), 10, (0.9, 1.1), (1.0, 1.0))
    assert processes.combine_metric(first, other) == first


def test_a_second_occasion_is_added_to_the_stored_entry_and_narrows_the_occasion_term(
    project: Project,
) -> None:
    project.module()
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    project.run("--kernelperf-update-baselines", "--kernelperf-add-occasion").assert_outcomes(passed=1)
    text = project.baseline_file.read_text()
    assert "occasion_processes:" in text and "process_rounds:" in text
    data = yaml.safe_load(text)
    ((entry,),) = ([*by_cache.values()] for by_cache in data["entries"]["test_kernel"].values())
    assert entry["device_time"]["occasion_processes"] == [1, 1]
    assert entry["device_time"]["process_rounds"] == [8, 8]
    result = project.run("--kernelperf", "--kernelperf-json=run.json")
    result.assert_outcomes(passed=1)
    (judged,) = json.loads((project.pytester.path / "run.json").read_text())["results"]
    source = judged["comparison"]["process_source"]
    # Two processes of two occasions: no spread within an occasion, the occasions' own in tau.
    assert source.startswith("0.15% built in for 1 ms-10 ms kernels; plus ")
    assert "between occasions (2 recording occasions, shrunk toward" in source


def test_adding_an_occasion_needs_an_update(project: Project) -> None:
    project.module()
    result = project.run("--kernelperf", "--kernelperf-add-occasion")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--kernelperf-add-occasion adds this run's measurements*--kernelperf-update-baselines*"]
    )


def test_occasions_count_their_processes_and_a_later_process_joins_the_last_one() -> None:
    stored = processes.combine_metric(record((1.0, 1.0)), record((1.01, 1.01)))  # one occasion, 2 processes
    assert stored.occasion_processes == ()
    both = processes.combine_metric(stored, record((1.02, 1.02)), occasion=True)
    assert both.process_rounds == (2, 2, 2) and both.occasion_processes == (2, 1)
    later = processes.combine_metric(both, record((1.03, 1.03)))  # the new occasion's second process
    assert later.process_rounds == (2, 2, 2, 2) and later.occasion_processes == (2, 2)
    other = MetricRecord("cuda-graph", 1.0, (0.9, 1.1), 10, (0.9, 1.1), (1.0, 1.0))
    assert processes.combine_metric(stored, other, occasion=True) == other  # a new method starts afresh


@pytest.mark.parametrize("counts", [[1, 1, 1], [3], [0, 2], "two"])
def test_occasion_counts_that_do_not_add_up_to_the_processes_are_refused(counts: object) -> None:
    data = schema.metric_to_data(processes.combine_metric(record((1.0, 1.0)), record((1.01, 1.01))))
    data["occasion_processes"] = counts
    with pytest.raises(schema.SchemaError) as caught:
        schema.entry_from_data({"device_time": data, "recorded": "2026-12-03T00:00:00Z"})
    assert "occasion_processes" in str(caught.value.path)


def test_auto_records_the_tests_timed_on_a_gpu_in_two_processes_or_three_and_the_others_once() -> None:
    auto = Settings()
    assert auto.record_processes == "auto" and auto.chooses_more_processes
    assert auto.processes_to_record(on_gpu=True) == GPU_RECORD_PROCESSES == 2
    assert GPU_MOST_RECORD_PROCESSES == 3
    assert auto.processes_to_record(on_gpu=False) == 1
    given = dataclasses.replace(auto, record_processes=2)
    assert given.processes_to_record(on_gpu=False) == given.processes_to_record(on_gpu=True) == 2
    assert not given.chooses_more_processes


def test_a_cpu_update_by_default_records_in_this_process_only(project: Project) -> None:
    project.module(PER_PROCESS)
    result = project.run("--kernelperf-update-baselines")
    result.assert_outcomes(passed=2)
    assert "recording process" not in result.stdout.str()
    assert all(not entry.device_time.process_rounds for entry in read(project.baseline_file).values())


@pytest.mark.parametrize("value", ["0", "some", "1.5"])
def test_a_bad_number_of_recording_processes_names_the_option(project: Project, value: str) -> None:
    project.module(PER_PROCESS)
    result = project.run("--kernelperf-update-baselines", f"--kernelperf-record-processes={value}")
    assert result.ret != 0
    assert "--kernelperf-record-processes" in result.stderr.str() + result.stdout.str()
