"""An update keeps an entry as it was only when nothing it records moved: the times within noise and
the same inputs, compile context, autotuner choices and counters. Counters Nsight Compute reads out
of range are brought within it at reading, so that the baseline is still written."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import KERNEL_MODULE, Project
from test_ncu_flow import BASE_CSV, Ncu

from pytest_kernelperf.baselines.store import merge, same_call
from pytest_kernelperf.baselines.yaml_io import read
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey, MetricRecord
from pytest_kernelperf.model.counters import KernelCounters


@pytest.fixture
def ncu(project: Project, tmp_path_factory: pytest.TempPathFactory) -> Ncu:
    return Ncu(project, tmp_path_factory.mktemp("ncu"))


def summary_line(result: pytest.RunResult) -> str:
    return next(
        line for line in result.stdout.lines if line.endswith(" kept") and "test_kernels.yaml" in line
    )


def test_counters_read_for_an_unchanged_entry_are_written(ncu: Ncu) -> None:
    ncu.run("--kernelperf-update-baselines").assert_outcomes(passed=1)

    result = ncu.run("--kernelperf-update-baselines", "--kernelperf-ncu")

    result.assert_outcomes(passed=1)
    assert summary_line(result).endswith(": 0 added, 1 changed, 0 unchanged, 0 kept")
    (entry,) = read(ncu.project.baseline_file).values()
    assert entry.counters is not None and entry.counters[0].name == "triton_poi_fused_add_0"
    # The failure message's remedy now holds: the baseline has counters to set against.
    slower = ncu.run("--kernelperf", "--kernelperf-ncu", ms=2.0)
    assert "the baseline has none" not in slower.stdout.str()
    assert "hardware counters (Nsight Compute): none moved beyond its noise band against the baseline's" in (
        slower.stdout.str()
    )
    # Read again within their noise, or not read at all: unchanged, the counters kept.
    again = ncu.run("--kernelperf-update-baselines", "--kernelperf-ncu")
    assert summary_line(again).endswith(": 0 added, 0 changed, 1 unchanged, 0 kept")
    without = ncu.run("--kernelperf-update-baselines")
    assert summary_line(without).endswith(": 0 added, 0 changed, 1 unchanged, 0 kept")
    (kept,) = read(ncu.project.baseline_file).values()
    assert kept == entry


def test_a_changed_input_shape_is_written_though_the_time_is_unchanged(project: Project) -> None:
    project.module()
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    project.module(KERNEL_MODULE.replace("linspace(-3, 3, 64)", "linspace(-3, 3, 4096)"))

    result = project.run("--kernelperf-update-baselines")

    assert summary_line(result).endswith(": 0 added, 1 changed, 0 unchanged, 0 kept")
    (entry,) = read(project.baseline_file).values()
    assert entry.inputs is not None and entry.inputs[0].shape == (4096,)


def counted(entry: BaselineEntry, **values: float) -> BaselineEntry:
    return dataclasses.replace(entry, counters=(KernelCounters("k", 1, values),))


def test_autotuner_choices_and_counters_beyond_their_noise_are_changes() -> None:
    old = BaselineEntry(MetricRecord("cupti", 1.0, (1.0, 1.0), 8, (1.0,), (1.0, 1.0)), "2026-12-04")
    read_once = counted(old, registers=64.0, occupancy_pct=60.0)
    assert not same_call(old, read_once)  # counters added
    assert same_call(read_once, old)  # none read this time: the old ones stay
    assert not same_call(read_once, counted(old, registers=128.0, occupancy_pct=60.0))
    assert not same_call(read_once, counted(old, registers=64.0))  # one no longer read
    assert same_call(read_once, counted(old, registers=64.0, occupancy_pct=62.0))  # within its band
    tuned = dataclasses.replace(old, autotune={"k": "BLOCK=64"})
    key = EntryKey("t", "d", "hot")
    merged, _, changed, unchanged, _ = merge({key: old}, {key: tuned})
    assert changed == (key,) and unchanged == 0 and merged[key] is tuned


OUT_OF_RANGE = {
    "occupancy": ('"62.35"', '"150"'),
    "negative duration": ('"33,184"', '"-5"'),
}


@pytest.mark.parametrize("case", sorted(OUT_OF_RANGE))
def test_a_counter_out_of_range_leaves_the_baseline_writable(ncu: Ncu, tmp_path: Path, case: str) -> None:
    cell, bad = OUT_OF_RANGE[case]
    csv = tmp_path / "ncu_bad.csv"
    csv.write_text(BASE_CSV.read_text().replace(cell, bad, 1))

    result = ncu.run(
        "--kernelperf-update-baselines", "--kernelperf-ncu", "--kernelperf-json=run.json", csv=csv
    )

    result.assert_outcomes(passed=1)
    (entry,) = read(ncu.project.baseline_file).values()
    assert entry.counters is not None
    values = entry.counters[0].values
    if case == "occupancy":
        assert values["occupancy_pct"] == 100.0
        said = "occupancy_pct of 'triton_poi_fused_add_0' 150 kept as 100 (a percentage)"
    else:
        assert "duration_ns" not in values and values["occupancy_pct"] == 62.35
        said = "duration_ns of 'triton_poi_fused_add_0' -5 left out (below 0)"
    (measured,) = json.loads((ncu.project.pytester.path / "run.json").read_text())["results"]
    assert f"ncu counters out of range: {said}" in measured["notes"]
