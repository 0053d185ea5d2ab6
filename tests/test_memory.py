"""Device memory as a judged metric: the peak a call allocates beyond its inputs, recorded in its
baseline entry and judged against it. On this CPU the probe is FakeMemoryProbe: each kernel states
its peak (`fake_peak_bytes`, from PEAK_BYTES here), as the CUDA allocator would measure it."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
import torch
from conftest import SCRIPTED_CONFTEST, Project

from pytest_kernelperf.baselines.schema import SchemaError, entry_from_data, entry_to_data
from pytest_kernelperf.baselines.store import merge, within_noise
from pytest_kernelperf.baselines.yaml_io import read
from pytest_kernelperf.measure.memory import MemoryRequest, allocation_lines, largest_allocations, peak_memory
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey, MetricRecord
from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.model.result import MEMORY_FLOOR_BYTES, MemoryCheck
from pytest_kernelperf.results import render, runfile, saved_runs
from pytest_kernelperf.verdict.memory import format_bytes, judge_memory, memory_text

MiB = 1 << 20

CONFTEST = (
    SCRIPTED_CONFTEST
    + """
from pytest_kernelperf.testing import FakeMemoryProbe

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_peak_memory(config, memory_request):
    return FakeMemoryProbe()(memory_request)
"""
)

# PEAK_BYTES "none": the kernel states no peak, as on a CPU. MEMORY_THRESHOLD: the test's marker.
MODULE = """
import os

import pytest
import torch

def kernel(x):
    return x * 2

kernel.fake_ms = 1.0
peak = os.environ.get("PEAK_BYTES", "none")
if peak != "none":
    kernel.fake_peak_bytes = int(peak)
    kernel.fake_allocations = ("aten::empty 64 MiB", "aten::mul 4 KiB")

@pytest.mark.kernelperf(memory_threshold=os.environ.get("MEMORY_THRESHOLD", "10%"))
def test_kernel(kernel_bench):
    kernel_bench(kernel, torch.ones(64), reference=lambda x: x + x)
"""


@pytest.fixture
def memory_project(project: Project) -> Project:
    project.pytester.makeconftest(CONFTEST)
    project.module(MODULE)
    return project


def run(project: Project, *args: str, peak: int | None, threshold: str = "10%") -> pytest.RunResult:
    project.monkeypatch.setenv("PEAK_BYTES", "none" if peak is None else str(peak))
    project.monkeypatch.setenv("MEMORY_THRESHOLD", threshold)
    return project.run(*args, "--kernelperf-json=run.json")


def result_of(project: Project) -> dict[str, Any]:
    data = json.loads((project.pytester.path / "run.json").read_text())
    (result,) = data["results"]
    assert isinstance(result, dict)
    return result


def test_an_update_records_the_peak_and_a_growth_beyond_the_threshold_fails(memory_project: Project) -> None:
    project = memory_project
    run(project, "--kernelperf-update-baselines", peak=64 * MiB).assert_outcomes(passed=1)
    (entry,) = read(project.baseline_file).values()
    assert entry.peak_memory_bytes == 64 * MiB
    assert "peak_memory_bytes: 67108864" in project.baseline_file.read_text()

    grown = run(project, "--kernelperf", "-v", "--junitxml=junit.xml", peak=128 * MiB)
    grown.assert_outcomes(failed=1)
    grown.stdout.fnmatch_lines(
        [
            "test_kernels.py::test_kernel FAILED (same +0.0%, memory over its threshold)*",
            "device memory grew in test_kernels.py::test_kernel on *: peak 128 MiB (134217728 bytes) beyond "
            "the inputs vs baseline 64 MiB (67108864 bytes): +64 MiB, +100.0%, more than the +6.4 MiB "
            "allowed (memory_threshold 10%, at least 1 MiB).",
            "  largest allocations of one call now (torch.profiler, *): "
            "aten::empty 64 MiB, aten::mul 4 KiB; *",
            "  baseline: *test_kernels.yaml (recorded *).",
            "*Memory*Verdict*",
            "*128 MiB (+64 MiB)*same*",
            "kernelperf: 1 same, 1 over memory_threshold",
        ]
    )
    junit = (project.pytester.path / "junit.xml").read_text()
    assert '"kernelperf.peak_memory_bytes" value="134217728"' in junit
    assert '"kernelperf.memory_exceeded" value="yes"' in junit
    memory = result_of(project)["memory"]
    assert memory == {
        "peak_bytes": 128 * MiB,
        "baseline_bytes": 64 * MiB,
        "growth_bytes": 64 * MiB,
        "allowed_growth_bytes": math.ceil(0.1 * 64 * MiB),
        "threshold": 0.1,
        "exceeded": True,
        "allocations": ["aten::empty 64 MiB", "aten::mul 4 KiB"],
    }

    # Within the threshold (3 MiB of 64: under 10%) it passes, showing the growth.
    within = run(project, "--kernelperf", peak=67 * MiB)
    within.assert_outcomes(passed=1)
    within.stdout.fnmatch_lines(["*67 MiB (+3 MiB)*same*", "kernelperf: 1 same"])
    assert result_of(project)["memory"]["exceeded"] is False
    # ... unless the test's marker asks for less.
    strict = run(project, "--kernelperf", peak=67 * MiB, threshold="1%")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(
        ["*+3 MiB, +4.7%, more than the +1 MiB allowed (memory_threshold 1%, at least 1 MiB)*"]
    )
    # A smaller peak passes; an update records it.
    run(project, "--kernelperf", peak=32 * MiB).assert_outcomes(passed=1)
    updated = run(project, "--kernelperf-update-baselines", peak=32 * MiB)
    updated.stdout.fnmatch_lines(["*test_kernels.yaml: 0 added, 1 changed, 0 unchanged, 0 kept"])
    assert next(iter(read(project.baseline_file).values())).peak_memory_bytes == 32 * MiB


def test_without_a_baseline_the_peak_is_new_and_passes(memory_project: Project) -> None:
    result = run(memory_project, "--kernelperf", peak=64 * MiB)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*Memory*Verdict*", "*64 MiB*new*"])
    memory = result_of(memory_project)["memory"]
    assert memory["peak_bytes"] == 64 * MiB and memory["baseline_bytes"] is None
    assert memory["exceeded"] is False and memory["allowed_growth_bytes"] is None


def test_on_a_cpu_there_is_no_memory_figure_and_no_failure(memory_project: Project) -> None:
    project = memory_project
    run(project, "--kernelperf-update-baselines", peak=None).assert_outcomes(passed=1)
    assert "peak_memory_bytes" not in project.baseline_file.read_text()
    result = run(project, "--kernelperf", peak=None)
    result.assert_outcomes(passed=1)
    assert "Memory" not in result.stdout.str()
    data = result_of(project)
    assert data["memory"] is None and data["baseline_entry"]["peak_memory_bytes"] is None
    # The built-in probe measures nothing on a CPU: None, not 0.
    x = torch.ones(4)
    assert peak_memory(MemoryRequest(lambda: x * 2, DeviceInfo("cpu", "a CPU"))) is None


def test_a_baseline_recorded_before_memory_is_not_judged_on_it_and_an_update_adds_it(
    memory_project: Project,
) -> None:
    project = memory_project
    run(project, "--kernelperf-update-baselines", peak=None).assert_outcomes(passed=1)
    result = run(project, "--kernelperf", peak=512 * MiB)
    result.assert_outcomes(passed=1)
    assert result_of(project)["memory"]["baseline_bytes"] is None
    updated = run(project, "--kernelperf-update-baselines", peak=512 * MiB)
    updated.stdout.fnmatch_lines(["*test_kernels.yaml: 0 added, 1 changed, 0 unchanged, 0 kept"])


def test_the_judgement_allows_the_threshold_and_at_least_the_floor() -> None:
    assert not judge_memory(100 * MiB + 10 * MiB, 100 * MiB, 0.1).exceeded
    assert judge_memory(100 * MiB + 10 * MiB + 1, 100 * MiB, 0.1).exceeded
    assert not judge_memory(MEMORY_FLOOR_BYTES, 0, 0.1).exceeded  # a first small workspace: the floor
    assert judge_memory(MEMORY_FLOOR_BYTES + 1, 0, 0.0).exceeded
    assert not judge_memory(10 * MiB, None, 0.1).exceeded
    check = judge_memory(0, 0, 0.1)
    assert check.change_pct == 0.0 and memory_text(check) == "0 B"
    assert [format_bytes(n) for n in (512, 1536, 64 * MiB, 1536 * MiB)] == [
        "512 B",
        "1.5 KiB",
        "64 MiB",
        "1.5 GiB",
    ]


def record() -> MetricRecord:
    return MetricRecord("cupti", 1.0, (0.99, 1.01), 10, (0.98, 1.0, 1.02), (1.0, 1.0), 0.001)


def test_the_baseline_field_is_validated_and_optional() -> None:
    entry = BaselineEntry(record(), "2026-12-01T00:00:00Z", peak_memory_bytes=64 * MiB)
    data = entry_to_data(entry)
    assert data["peak_memory_bytes"] == 64 * MiB and entry_from_data(data) == entry
    del data["peak_memory_bytes"]
    assert entry_from_data(data).peak_memory_bytes is None  # older entries stay valid
    for bad in (-1, 1.5, "64MiB", True, 1 << 62):
        with pytest.raises(SchemaError, match="peak_memory_bytes must be a whole number of bytes") as caught:
            entry_from_data({**data, "peak_memory_bytes": bad})
        assert caught.value.path == ("peak_memory_bytes",)


def test_an_update_keeps_an_entry_whose_peak_moved_less_than_the_floor() -> None:
    old = BaselineEntry(record(), "2026-12-01T00:00:00Z", peak_memory_bytes=64 * MiB)
    assert within_noise(old, BaselineEntry(record(), "later", peak_memory_bytes=64 * MiB + 4096))
    assert not within_noise(old, BaselineEntry(record(), "later", peak_memory_bytes=80 * MiB))
    assert not within_noise(old, BaselineEntry(record(), "later"))
    key = EntryKey("t", "d", "hot")
    _, _, changed, same, _ = merge(
        {key: old}, {key: BaselineEntry(record(), "later", peak_memory_bytes=80 * MiB)}
    )
    assert changed == (key,) and same == 0


def test_the_profiler_names_the_operators_that_allocate_most() -> None:
    x = torch.ones(1 << 10)

    def call() -> torch.Tensor:
        big = torch.empty(1 << 22)  # 16 MiB
        return x * 2 + big[: 1 << 10]

    lines = largest_allocations(call, cuda=False)  # host memory on a CPU, the same profiler path
    assert lines[0] == "aten::empty 16 MiB"

    class Average:
        def __init__(self, key: str, size: int) -> None:
            self.key, self.self_device_memory_usage = key, size

    named = allocation_lines([Average("a", MiB), Average("b", -MiB), Average("c", 64 * MiB)], cuda=True)
    assert named == ("c 64 MiB", "a 1 MiB")


def test_a_saved_run_is_judged_on_memory_against_other_entries() -> None:
    mine = BaselineEntry(record(), "2026-12-01T00:00:00Z", peak_memory_bytes=96 * MiB)
    theirs = BaselineEntry(record(), "2026-11-30T00:00:00Z", peak_memory_bytes=64 * MiB)
    result = runfile.result_from_dict(
        {
            "nodeid": "t.py::test",
            "device": "NVIDIA H200",
            "cache": "hot",
            "verdict": "same",
            "device_time": {
                "method": "cupti",
                "level_ms": 1.0,
                "rounds_ms": [1.0, 1.0],
                "samples_ms": [1.0],
            },
            "baseline_entry": entry_to_data(mine),
            "memory": {"peak_bytes": 96 * MiB, "threshold": 0.1, "exceeded": False},
        }
    )
    run = runfile.RunReport("0", "now", "compare", results=(result,))
    (judged,) = saved_runs.judge_run({saved_runs.key_of(result): theirs}, run)
    assert judged.memory == MemoryCheck(96 * MiB, 64 * MiB, 0.1, True)
    assert render.totals([judged]) == "1 same, 1 over memory_threshold"
