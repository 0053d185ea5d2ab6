"""Each list an entry holds has its own bound: recording processes (refused as an option before
anything is recorded), occasions, tensor dimensions (torch's own 64); a list too long is named by
its length, not blamed on its values."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import KERNEL_MODULE, Project

from pytest_kernelperf.baselines.schema import SchemaError, entry_from_data
from pytest_kernelperf.baselines.yaml_io import read
from pytest_kernelperf.model.baseline import MAX_PROCESSES, MAX_RECORDING_PROCESSES
from pytest_kernelperf.model.call import MAX_TENSOR_DIMS
from pytest_kernelperf.settings import MAX_ROUNDS_FACTOR, SettingsError, resolve


@pytest.mark.parametrize("value", [str(MAX_RECORDING_PROCESSES + 1), "99999999999999999999"])
def test_more_recording_processes_than_an_entry_keeps_is_refused_as_an_option(value: str) -> None:
    with pytest.raises(SettingsError) as caught:
        resolve({"update": True, "record_processes": value}, {}, rootdir=Path("/project"))
    assert str(caught.value) == (
        f"--kernelperf-record-processes: expected auto or a whole number of processes from 1 to "
        f"{MAX_RECORDING_PROCESSES}, got {value}"
    )


def test_the_usage_error_comes_before_anything_is_recorded(project: Project) -> None:
    project.module()

    result = project.run(
        "--kernelperf-update-baselines", f"--kernelperf-record-processes={MAX_RECORDING_PROCESSES + 1}"
    )

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--kernelperf-record-processes: expected auto or a whole number" in result.stderr.str()
    assert not project.baseline_file.exists()


MANY_DIMENSIONS = (
    KERNEL_MODULE
    + f"""

def test_17d(kernel_bench):
    kernel_bench(kernel, torch.ones([1] * 17), reference=reference)

def test_too_many(kernel_bench):
    kernel_bench(kernel, torch.ones([1] * {MAX_TENSOR_DIMS + 1}), reference=reference)
"""
)


def test_a_tensor_of_many_dimensions_is_recorded_with_its_module(project: Project) -> None:
    project.module(MANY_DIMENSIONS)

    project.run("--kernelperf-update-baselines").assert_outcomes(passed=3)

    entries = {key.test: entry for key, entry in read(project.baseline_file).items()}
    assert sorted(entries) == ["test_17d", "test_kernel", "test_too_many"]
    assert entries["test_17d"].inputs is not None
    assert [t.shape for t in entries["test_17d"].inputs] == [(1,) * 17]
    assert entries["test_too_many"].inputs is None  # beyond torch's own bound: left out of the record


def metric(rounds: int, process_rounds: list[int]) -> dict[str, object]:
    return {
        "method": "cupti",
        "median_ms": 1.0,
        "ci_ms": [1.0, 1.0],
        "n": rounds,
        "quantiles_ms": [1.0],
        "rounds_ms": [1.0] * rounds,
        "process_rounds": process_rounds,
    }


def test_a_list_too_long_is_named_by_its_length() -> None:
    processes = MAX_PROCESSES + 1
    data: dict[str, object] = {
        "recorded": "2026-12-04T00:00:00Z",
        "device_time": metric(processes, [1] * processes),
    }
    with pytest.raises(SchemaError) as caught:
        entry_from_data(data)
    assert str(caught.value) == (
        f"device_time.process_rounds: device_time.process_rounds lists {processes} numbers, more than "
        f"the {MAX_PROCESSES} it may hold"
    )
    data["device_time"] = metric(2, [1, 1])
    for dims, problem in ((MAX_TENSOR_DIMS + 1, f"more than the {MAX_TENSOR_DIMS} it may hold"), (17, None)):
        data["inputs"] = [{"name": "x", "shape": [1] * dims, "stride": [1] * dims, "dtype": "float32"}]
        if problem is None:
            assert entry_from_data(data).inputs is not None
            continue
        with pytest.raises(SchemaError) as caught:
            entry_from_data(data)
        assert caught.value.problem == f"inputs[0].shape lists {dims} numbers, {problem}"


@pytest.mark.parametrize("value", [str(MAX_ROUNDS_FACTOR + 1), "99999999999999999999"])
def test_more_rounds_than_the_bound_is_refused_as_an_option(value: str) -> None:
    with pytest.raises(SettingsError) as caught:
        resolve({"max_rounds": value}, {}, rootdir=Path("/project"))
    assert str(caught.value) == (
        f"--kernelperf-max-rounds: expected a whole number from 1 to {MAX_ROUNDS_FACTOR}, got {value}"
    )
