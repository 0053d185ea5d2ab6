"""pytest-xdist: workers send, the controller writes; repeated parallel updates give the same bytes."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import SCRIPTED_CONFTEST, SUBPROCESS_ARGS, seed_peak_cache

from pytest_kernelperf import baselines
from pytest_kernelperf.baselines.schema import entry_to_data
from pytest_kernelperf.baselines.yaml_io import read
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey
from pytest_kernelperf.model.result import BenchResult, Comparison, Verdict
from pytest_kernelperf.results import runfile, transport

ROOT = Path(baselines.__file__).resolve().parent.parent

# Every baseline write is logged with the process that made it.
SPY_CONFTEST = (
    SCRIPTED_CONFTEST
    + """
import os
from pytest_kernelperf.baselines import store

_write = store.write_atomic

def _logged(path, text):
    with open(os.environ["KERNELPERF_WRITE_LOG"], "a") as log:
        log.write(f"{os.environ.get('PYTEST_XDIST_WORKER', 'controller')} {path.name}\\n")
    _write(path, text)

def pytest_configure(config):
    store.write_atomic = _logged

def pytest_unconfigure(config):
    # In-process runs share the module with the outer test session: put it back.
    store.write_atomic = _write
"""
)

MODULE = """
import pytest
import torch

def kernel(x):
    return x * 2
kernel.fake_ms = {ms}

@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_sizes(kernel_bench, n):
    kernel_bench(kernel, torch.ones(n))

def test_named(kernel_bench):
    kernel_bench(kernel, torch.ones(4), name="fast")
    kernel_bench(kernel, torch.ones(4), name="slow")
"""
MODULES = 4


@pytest.fixture
def parallel_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeconftest(SPY_CONFTEST)
    for index in range(MODULES):
        pytester.makepyfile(**{f"test_m{index}": textwrap.dedent(MODULE.format(ms=1.0 + index))})
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("KERNELPERF_WRITE_LOG", str(pytester.path / "writes.log"))
    seed_peak_cache(pytester.path)
    return pytester


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.yaml"))}


@pytest.mark.slow
def test_repeated_parallel_updates_give_identical_files_with_no_entry_lost(
    parallel_project: pytest.Pytester,
) -> None:
    folder = parallel_project.path / "baselines"
    log = parallel_project.path / "writes.log"

    # Two workers already send results from separate processes, which is what could lose or
    # reorder entries; more workers on a CI machine of two cores only add start-up time.
    first = parallel_project.runpytest_subprocess(
        *SUBPROCESS_ARGS, "-n", "2", "--kernelperf-update-baselines"
    )
    first.assert_outcomes(passed=5 * MODULES)
    first.stdout.fnmatch_lines([f"kernelperf: {6 * MODULES} new"])  # the controller's table has them all
    written = files(folder)
    second = parallel_project.runpytest_subprocess(
        *SUBPROCESS_ARGS, "-n", "2", "--kernelperf-update-baselines"
    )
    second.assert_outcomes(passed=5 * MODULES)

    assert files(folder) == written  # byte for byte
    table = second.stdout.str().split("= kernelperf =")[1]
    assert table.index("\ntest_m0.py\n") < table.index("\ntest_m3.py\n")  # modules in collection order
    second.stdout.fnmatch_lines(["*test_m0.yaml: 0 added, 0 changed, 6 unchanged, 0 kept"])
    expected = {f"test_sizes[{n}]" for n in range(1, 5)} | {"test_named::fast", "test_named::slow"}
    for index in range(MODULES):
        assert {key.test for key in read(folder / f"test_m{index}.yaml")} == expected
    writers = {line.split()[0] for line in log.read_text().splitlines()}
    assert writers == {"controller"}  # no worker ever wrote a baseline file
    assert len(log.read_text().splitlines()) == MODULES  # the second run changed nothing, wrote nothing


def test_without_xdist_the_plugin_works_alone(parallel_project: pytest.Pytester) -> None:
    result = parallel_project.runpytest(
        "-p", "no:cacheprovider", "-p", "no:xdist", "--kernelperf-update-baselines"
    )
    result.assert_outcomes(passed=5 * MODULES)
    assert len(files(parallel_project.path / "baselines")) == MODULES


# --- what crosses between processes ----------------------------------------------------------------


def full_result() -> BenchResult:
    comparison = Comparison(Verdict.SLOWER, ratio=1.2, p_value=1e-5, threshold=0.05, alpha=0.01, reason="r")
    return BenchResult(
        nodeid="tests/test_k.py::test_k[a/b::c]",
        name="fast",
        device="NVIDIA H200",
        verdict=Verdict.SLOWER,
        cache="cold",
        method="cupti",
        level_ms=0.5,
        samples_ms=(0.49, 0.5, 0.51),
        round_range_ms=(0.495, 0.505),
        baseline_level_ms=0.41,
        comparison=comparison,
        host_method="cuda-event",
        host_level_ms=0.6,
        host_baseline_level_ms=0.59,
        host_comparison=Comparison(Verdict.SAME, ratio=1.01, reason="within threshold"),
        baseline_file="/b/tests/test_k.yaml",
        notes=("a note",),
        bytes=1 << 20,
        flops=3 << 20,
        artifacts=("/a/trace.json",),
        wall_s=0.25,
        device_index=1,
    )


def test_a_result_survives_json_and_back() -> None:
    result = full_result()
    data = json.loads(json.dumps(transport.results_to_data([result])))
    assert transport.results_from_data(data) == [result]


def test_results_travel_in_the_run_files_encoding() -> None:
    result = full_result()
    assert transport.results_to_data([result]) == [runfile.result_to_dict(result)]


def test_unknown_fields_from_a_newer_sender_are_ignored() -> None:
    [data] = transport.results_to_data([full_result()])
    data["field_of_the_future"] = 1
    assert transport.results_from_data([data]) == [full_result()]


def test_staged_entries_travel_relative_to_the_baseline_folder(tmp_path: Path) -> None:
    entry = next(e for e in read_sample().values() if e.kernels)  # with its kernel inventory
    key = EntryKey("test_k[x]", "NVIDIA H200", "hot")
    sent = transport.staged_to_data({Path("/worker/b/tests/test_k.yaml"): {key: entry}}, Path("/worker/b"))
    assert sent[0]["file"] == "tests/test_k.yaml"
    assert sent[0]["entry"] == entry_to_data(entry)  # the baseline schema's encoding
    received = transport.staged_from_data(json.loads(json.dumps(sent)), tmp_path)
    assert received == {tmp_path / "tests" / "test_k.yaml": {key: entry}}


def staged_item(file: str = "t.yaml", **device_time: Any) -> dict[str, Any]:
    entry = entry_to_data(next(iter(read_sample().values())))
    entry["device_time"].update(device_time)
    return {"file": file, "key": {"test": "t", "device": "d", "cache": "hot"}, "entry": entry}


@pytest.mark.parametrize("bad", ["../outside.yaml", "/etc/passwd", "a/../../b.yaml", ""])
def test_a_staged_file_outside_the_folder_is_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(transport.TransportError, match="outside the baseline folder"):
        transport.staged_from_data([staged_item(bad)], tmp_path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"median_ms": -1},
            r"staged\[0\]\.entry\.device_time\.median_ms: median_ms must be a finite positive",
        ),
        (
            {"method": "Scripted Timer!"},
            r"staged\[0\]\.entry\.device_time\.method: method must be a timer name",
        ),
        ({"ci_ms": [5.0, 1.0]}, r"device_time\.ci_ms: ci_ms must hold the median"),
    ],
)
def test_a_staged_entry_is_checked_by_the_baseline_schema(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    with pytest.raises(transport.TransportError, match=message):
        transport.staged_from_data([staged_item(**change)], tmp_path)


def test_garbage_is_a_transport_error() -> None:
    with pytest.raises(transport.TransportError, match=r"results\[0\]\.verdict: unknown verdict"):
        transport.results_from_data(
            [{"nodeid": "x", "name": None, "device": "d", "cache": "hot", "verdict": "no-such-verdict"}]
        )


def read_sample() -> dict[EntryKey, BaselineEntry]:
    from baseline_samples import sample_entries

    return sample_entries()
