"""--kernelperf-json: the file matches docs/json-schema.md field by field and reads back exactly."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import Project
from reportkit import KERNELS, RATIO, mixed_verdicts, setup, times

from pytest_kernelperf.model.baseline import BaselineEntry, MetricRecord
from pytest_kernelperf.model.call import DYNAMIC, CompileContext, KernelRecord, TensorInput
from pytest_kernelperf.model.device import DeviceInfo, Peak
from pytest_kernelperf.model.result import (
    BenchResult,
    CallCost,
    Comparison,
    Found,
    MemoryCheck,
    PairsStopped,
    RatioCheck,
    RevisionCheck,
    SequentialPairs,
    Verdict,
)
from pytest_kernelperf.results import runfile
from pytest_kernelperf.results.cost import RunCost

DOC = Path(__file__).parent.parent / "docs" / "json-schema.md"
OPTIONAL = {"merged_from", "xdist_worker"}  # documented as present only in some files


def documented() -> dict[str, dict[str, str]]:
    """Object path ("", "settings", "results[].device_time", ...) -> field -> documented type."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in DOC.read_text().splitlines():
        heading = re.match(r"^### (?:Top level|`(?P<path>[^`]+)`)$", line)
        if heading:
            current = sections.setdefault(heading["path"] or "", {})
            continue
        row = re.match(r"^\| `(?P<field>[a-z_]+)` \| (?P<type>[^|]+) \|", line)
        if row and current is not None:
            current[row["field"]] = row["type"].strip()
    return sections


def type_ok(value: Any, documented_type: str) -> bool:
    for option in (text.strip() for text in documented_type.split(" or ")):
        if option == "null" and value is None:
            return True
        if option == "string" and isinstance(value, str):
            return True
        if option == "integer" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if option == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if option == "boolean" and isinstance(value, bool):
            return True
        if option in ("object", "object of strings") and isinstance(value, dict):
            return option == "object" or all(isinstance(v, str) for v in value.values())
        if option == "[number, number]" and isinstance(value, list) and len(value) == 2:
            return all(isinstance(v, (int, float)) for v in value)
        if option.startswith("list") and isinstance(value, list):
            if option == "list of strings":
                return all(isinstance(v, str) for v in value)
            if option == "list of numbers":
                return all(isinstance(v, (int, float)) for v in value)
            return True
    return False


def check_object(value: Any, path: str, docs: dict[str, dict[str, str]], seen: set[str]) -> None:
    """Every field documented with its type, and every documented field present."""
    assert isinstance(value, dict), f"{path} is not an object"
    fields = docs[path]
    seen.add(path)
    assert set(value) <= set(fields), f"{path}: undocumented fields {set(value) - set(fields)}"
    assert set(fields) - OPTIONAL <= set(value), f"{path}: missing {set(fields) - OPTIONAL - set(value)}"
    for key, item in value.items():
        assert type_ok(item, fields[key]), f"{path}.{key} = {item!r} is not {fields[key]}"
        child = f"{path}.{key}" if path else key
        if key in ("host_comparison",):
            child = f"{path}.comparison"  # documented together
        if item is None:
            continue
        if isinstance(item, dict) and child in docs:
            check_object(item, child, docs, seen)
        elif isinstance(item, dict) and f"{child}.*" in docs:
            for entry in item.values():
                check_object(entry, f"{child}.*", docs, seen)
        elif isinstance(item, list) and f"{child}[]" in docs:
            for entry in item:
                check_object(entry, f"{child}[]", docs, seen)


def test_json_matches_the_documented_schema_and_reads_back(project: Project) -> None:
    mixed_verdicts(project)
    project.module(KERNELS + RATIO)
    times(project, b=4.0, c=0.5, slow=1.2)
    result = project.run("--kernelperf", "--kernelperf-json=out/run.json")
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(["kernelperf: wrote the JSON to out/run.json"])
    path = project.pytester.path / "out" / "run.json"
    data = json.loads(path.read_text())

    seen: set[str] = set()
    check_object(data, "", documented(), seen)
    # Every documented object occurred at least once (host latency, kernel inventories and device
    # memory are CUDA-only; the revision of --kernelperf-against is tests/test_against.py's).
    assert set(documented()) - seen <= {
        "results[].against",
        "results[].comparison.sequential",
        "results[].host_latency",
        "results[].baseline_entry.kernels[]",
        "results[].baseline_entry.compile_context",
        "results[].memory",
    }
    check_object(runfile.result_to_dict(full_result()), "results[]", documented(), seen)
    assert set(documented()) - seen == set()

    assert data["schema"] == "pytest-kernelperf-run" and data["schema_version"] == 2
    assert data["mode"] == "compare"
    assert data["totals"] == {"same": 3, "slower": 1, "faster": 1, "new": 2}
    by_id = {r["test_id"]: r for r in data["results"]}
    slower = by_id["test_param[b]"]
    assert slower["verdict"] == "slower"
    assert slower["comparison"]["p_value"] < 0.01 and slower["comparison"]["threshold"] == 0.005
    assert slower["comparison"]["level"] == pytest.approx(0.01 / slower["comparison"]["planned_judgements"])
    # Measured twice: both measurements' 5 rounds, judged pooled.
    assert len(slower["device_time"]["rounds_ms"]) == slower["comparison"]["rounds"] == 10
    assert [r["rounds"] for r in slower["device_time"]["readings"]] == [5, 5]
    assert len(slower["baseline_entry"]["device_time"]["rounds_ms"]) == 10
    assert slower["baseline"]["file"].endswith("test_kernels.yaml")
    assert slower["baseline"]["level_ms"] == pytest.approx(1.0, rel=0.01)
    assert len(slower["device_time"]["samples_ms"]) == slower["device_time"]["n"] == 2 * 5 * 50
    assert slower["throughput"] == {
        "bytes": 8 << 20,
        "bytes_inferred": True,
        "flops": None,
        "gb_per_s": pytest.approx(8.39 / 4, rel=0.01),
        "tflop_per_s": None,
        "peak_gb_per_s": 100.0,
        "peak_fraction": pytest.approx(0.021, rel=0.01),
    }
    assert by_id["test_named::second"]["throughput"]["bytes_inferred"] is False
    ratio = by_id["test_ratio"]["reference"]
    assert ratio["ratio"] == pytest.approx(1.2, rel=0.01) and ratio["max_ratio"] == 1.5
    assert ratio["exceeded"] is False and ratio["reason"] == "within max_ratio"
    assert data["peaks"]["Test CPU"]["gb_per_s"] == 100.0
    assert data["devices"] == [
        {"kind": "cpu", "name": "Test CPU", "index": None, "environment": {"torch": "test", "threads": "1"}}
    ]
    assert data["artifacts"]["json"] == "out/run.json"

    # Read back: nothing lost, and writing it again gives the same document.
    run = runfile.load(path)
    assert len(run.results) == 7
    assert runfile.loads(runfile.dumps(run)) == run
    assert json.loads(runfile.dumps(run)) == data


def test_update_run_records_mode_and_baseline_files(project: Project) -> None:
    setup(project)
    times(project)
    project.run("--kernelperf-update-baselines", "--kernelperf-json=run.json").assert_outcomes(passed=5)
    data = json.loads((project.pytester.path / "run.json").read_text())
    assert data["mode"] == "update"
    assert [Path(p).name for p in data["artifacts"]["baselines_written"]] == ["test_kernels.yaml"]
    assert all(r["baseline_entry"]["device_time"]["method"] == "scripted" for r in data["results"])


def test_correctness_only_run_writes_checked_results(project: Project) -> None:
    setup(project)
    times(project)
    project.run("--kernelperf-json=run.json").assert_outcomes(passed=5)
    run = runfile.load(project.pytester.path / "run.json")
    assert run.mode == "check"
    assert {r.verdict for r in run.results} == {Verdict.CHECKED}
    assert all(r.level_ms is None and r.entry is None for r in run.results)


TESTS_OF_EACH_OUTCOME = """
import pytest
import torch


def double(x):
    return x * 2
double.fake_ms = 1.0
def test_timed(kernel_bench):
    kernel_bench(double, torch.ones(8), reference=lambda x: x + x)

def test_plain():
    pass

def test_broken():
    raise ValueError("no such size: 3")

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("left a lock")

def test_torn_down(broken_teardown):
    pass
"""


def test_the_run_file_names_each_tests_file_line_and_failure(project: Project) -> None:
    setup(project)
    project.pytester.makepyfile(test_outcomes=TESTS_OF_EACH_OUTCOME)
    project.run("--kernelperf", "--kernelperf-json=run.json", "test_outcomes.py").assert_outcomes(
        passed=3, failed=1, errors=1
    )
    run = runfile.load(project.pytester.path / "run.json")
    assert run.rootdir == str(project.pytester.path)
    # The timed test and the failures; a plain test that passed is left out.
    assert run.tests == {
        "test_outcomes.py::test_timed": runfile.ReportedTest("test_outcomes.py", 8, "passed"),
        "test_outcomes.py::test_broken": runfile.ReportedTest(
            "test_outcomes.py", 14, "failed", "ValueError: no such size: 3"
        ),
        "test_outcomes.py::test_torn_down": runfile.ReportedTest(
            "test_outcomes.py", 22, "error", "RuntimeError: left a lock"
        ),
    }


def full_result() -> BenchResult:
    """A result with every field set, including the CUDA-only ones."""
    record = MetricRecord("cupti", 0.5, (0.49, 0.51), 200, (0.48, 0.5, 0.52))
    return BenchResult(
        nodeid="tests/test_k.py::test_gelu[2^24]",
        name="triton",
        device="NVIDIA H200",
        verdict=Verdict.SLOWER,
        cache="cold",
        method="cupti",
        level_ms=0.5123456789,
        samples_ms=(0.5, 0.5123456789, 0.53),
        round_range_ms=(0.5, 0.53),
        baseline_level_ms=0.4,
        comparison=Comparison(
            Verdict.SLOWER,
            1.28,
            1e-9,
            0.05,
            0.01,
            "",
            sequential=SequentialPairs(PairsStopped.DECIDED, 1.31, 0.024),
        ),
        host_method="cuda-event",
        host_level_ms=0.02,
        host_baseline_level_ms=0.019,
        host_comparison=Comparison(Verdict.SAME, 1.05, None, 0.05, 0.01, "within threshold"),
        baseline_file="baselines/tests/test_k.yaml",
        notes=("SM clock 1980->1980 MHz, 40->41 C",),
        bytes=1 << 27,
        flops=None,
        artifacts=(".kernelperf/x/profile.txt",),
        wall_s=0.4,
        bytes_inferred=True,
        ratio=RatioCheck("cupti", 0.25, (0.24, 0.26), (0.24, 0.25, 0.26), 2.05, 1.1, 1e-12, 0.01, True),
        against=RevisionCheck(
            "origin/main (1a2b3c4d5e)",
            "1a2b3c4d5e" + "0" * 30,
            Found.SAME_NAME,
            "kernels.gelu:triton_gelu",
            "",
            0.4,
            (0.39, 0.4, 0.41),
            "cupti",
            "within tolerance",
        ),
        baseline_round_range_ms=(0.39, 0.41),
        entry=BaselineEntry(
            record,
            "2026-11-30T00:00:00Z",
            {"torch": "2.11.0"},
            host_latency=record,
            kernels=(
                KernelRecord("triton_gelu_kernel", 1, 1.0, 0.508, "3f2a9c01b7de", grid=(65536, 1, 1)),
                KernelRecord("memset", 2, 0.0, 0.0),
            ),
            compile_context=CompileContext(
                DYNAMIC,
                1,
                ("x: dim 0",),
                ("(64, 4096)",),
                ("triton_red_fused_0",),
                "5d1c0e9a7b21",
                "shared",
                "why",
            ),
            autotune={"matmul_kernel": "BLOCK_M=64, num_warps=4, num_stages=3"},
            inputs=(TensorInput("x", (4096, 4096), (4096, 1), "float32"),),
            peak_memory_bytes=192 << 20,
        ),
        memory=MemoryCheck(192 << 20, 128 << 20, 0.1, True, ("aten::empty 64 MiB",)),
        cost=CallCost(0.3, 2.5, 0.05, 0.2, 0.01, 0.3, 0.002, 0.001, 3.4),
    )


def test_result_round_trips_with_every_field_set() -> None:
    result = full_result()
    data = json.loads(json.dumps(runfile.result_to_dict(result)))
    assert runfile.result_from_dict(data) == result
    run = runfile.RunReport(
        plugin_version="0.1.0",
        created="2026-11-30T00:00:00Z",
        mode="compare",
        settings={"threshold": 0.05},
        environment={"python": "3.11"},
        devices=(DeviceInfo("cuda", "NVIDIA H200", 0, {"cuda": "13.0"}),),
        peaks={"NVIDIA H200": Peak("NVIDIA H200", 4220.0, 1 << 31, "copy", "2026-11-30T00:00:00Z")},
        results=(
            result,
            BenchResult("t.py::test", None, "cpu", Verdict.CHECKED, notes=("correctness only",)),
        ),
        artifacts={"json": "run.json"},
        merged_from=("a.json", "b.json"),
        cost=RunCost(1.5, 0.5, 12.0, 0.0, 0.02, 0.8, 0.1, 15.0),
        rootdir="/work/repo",
        tests={
            result.nodeid: runfile.ReportedTest("tests/test_k.py", 12, "failed", "performance regression"),
            "t.py::test": runfile.ReportedTest("t.py", None, "passed"),
        },
    )
    assert runfile.loads(runfile.dumps(run)) == run


def test_non_finite_numbers_are_written_as_null() -> None:
    result = BenchResult(
        "t.py::test", None, "cpu", Verdict.SAME, comparison=Comparison(Verdict.SAME, math.nan, math.inf)
    )
    data = runfile.result_to_dict(result)
    assert data["comparison"]["ratio"] is None and data["comparison"]["p_value"] is None
    json.dumps(data, allow_nan=False)  # valid JSON for strict readers


def test_an_unbounded_paired_interval_is_written_null_and_read_back_unbounded() -> None:
    unbounded = SequentialPairs(PairsStopped.BUDGET, math.inf, math.inf)
    comparison = Comparison(Verdict.UNDETERMINED, 1.01, 0.5, 0.005, 0.01, sequential=unbounded)
    result = BenchResult("t.py::test", None, "cpu", Verdict.UNDETERMINED, comparison=comparison)
    data = json.loads(json.dumps(runfile.result_to_dict(result), allow_nan=False))
    assert data["comparison"]["sequential"] == {"stopped": "budget", "upper": None, "resolution": None}
    assert runfile.result_from_dict(data).comparison == comparison


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["results"][0]["device_time"].update(level_ms="1 ms"),
            "results[0].device_time.level_ms: expected a number",
        ),
        (
            lambda d: d["results"][0]["device_time"].pop("level_ms"),
            "results[0].device_time.level_ms: missing where median_ms is given",
        ),
        (
            lambda d: (baseline := d["results"][0]["baseline"]).update(median_ms=baseline.pop("level_ms")),
            "results[0].baseline.level_ms: missing where median_ms is given",
        ),
        (lambda d: d["results"][0].update(verdict="worse"), "results[0].verdict: unknown verdict 'worse'"),
        (lambda d: d.update(schema_version=3), "schema_version 3 is not readable"),
        (lambda d: d.pop("results"), "at results: missing"),
        (lambda d: d.update(schema="other"), "not a pytest-kernelperf run file"),
        (
            lambda d: d.update(tests={"t.py::t": {"file": "t.py", "line": 1, "outcome": "broken"}}),
            "tests.t.py::t.outcome: unknown outcome 'broken'",
        ),
        (
            lambda d: d.update(tests={"t.py::t": {"file": "t.py", "line": 0, "outcome": "passed"}}),
            "tests.t.py::t.line: expected a line number from 1, got 0",
        ),
    ],
)
def test_bad_files_are_refused_naming_the_field(change: Any, message: str, tmp_path: Path) -> None:
    run = runfile.RunReport("0.1.0", "now", "compare", results=(full_result(),))
    data = runfile.run_to_dict(run)
    change(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(runfile.RunFileError) as excinfo:
        runfile.load(path)
    assert str(path) in str(excinfo.value) and message in str(excinfo.value)


def test_not_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{\n "schema": \n')
    with pytest.raises(runfile.RunFileError, match=r"bad.json at line 3: not valid JSON"):
        runfile.load(path)
