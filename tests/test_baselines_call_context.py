"""The optional compile_context, autotune and inputs of a baseline entry, and kernels' grid:
strict validation, deterministic writing, exact read-back."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_kernelperf.baselines.yaml_io import BaselineError, dump, parse
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey, MetricRecord
from pytest_kernelperf.model.call import DYNAMIC, STATIC, CompileContext, KernelRecord, TensorInput

PATH = Path("baselines/test_x.yaml")
KEY = EntryKey("test_ln", "NVIDIA H200", "hot")
METRIC = MetricRecord("cupti", 0.5, (0.49, 0.51), 10, (0.49, 0.5, 0.51))


def file_with(extra_yaml: str) -> str:
    body = textwrap.indent(textwrap.dedent(extra_yaml).strip("\n"), " " * 8)
    return (
        "schema_version: 1\nentries:\n  test_ln:\n    NVIDIA H200:\n      hot:\n"
        "        recorded: '2026-11-30T12:00:00Z'\n"
        "        device_time: {method: cupti, median_ms: 0.5, ci_ms: [0.49, 0.51], n: 10,"
        " quantiles_ms: [0.5]}\n"
        f"{body}\nend: true\n"
    )


def test_round_trip_of_every_new_field() -> None:
    entry = BaselineEntry(
        METRIC,
        "2026-11-30T12:00:00Z",
        kernels=(KernelRecord("triton_red_fused_0", 1, 1.0, 0.5, grid=(8192, 1, 1)),),
        compile_context=CompileContext(
            DYNAMIC, 2, ("x: dim 0",), ("(64, 4096)",), ("triton_red_fused_0",), "0123456789ab", "shared", "r"
        ),
        autotune={"matmul_kernel": "BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=3"},
        inputs=(TensorInput("x", (8192, 4096), (4096, 1), "bfloat16"),),
    )
    text = dump({KEY: entry})
    assert parse(text, PATH) == {KEY: entry}
    assert dump(parse(text, PATH)) == text
    assert "grid: [8192, 1, 1]" in text
    assert "- {dtype: bfloat16, name: x, shape: [8192, 4096], stride: [4096, 1]}" in text
    assert "matmul_kernel: BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=3" in text


def test_a_static_context_is_written_without_empty_lists() -> None:
    entry = BaselineEntry(METRIC, "2026-11-30T12:00:00Z", compile_context=CompileContext(STATIC, 1))
    assert "compile_context: {compiles: 1, mode: fresh, shapes: static}" in dump({KEY: entry})


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ("compile_context: {shapes: sometimes}", "shapes must be static or dynamic"),
        ("compile_context: {shapes: static, compiles: -1}", "compiles must be a whole number"),
        ("compile_context: {shapes: static, mode: warm}", "mode must be fresh or shared"),
        ("compile_context: {shapes: static, code: XYZ}", "code must be a hex hash"),
        (
            "compile_context: {shapes: static, dynamic: [1]}",
            "dynamic must be a list of short one-line strings",
        ),
        ("compile_context: {shapes: static, colour: red}", "unknown key 'colour'"),
        ("autotune: {k: [1]}", "autotune config of 'k' must be a string"),
        ("inputs: [{name: x, shape: [2], stride: [1]}]", "inputs item missing dtype"),
        (
            "inputs: [{name: x, shape: [-2], stride: [1], dtype: f}]",
            r"inputs\[0\]\.shape must be a list of whole numbers",
        ),
        (
            "inputs:\n- {name: x, shape: [2], stride: [1], dtype: f}\n"
            "- {name: x, shape: [2], stride: [1], dtype: f}",
            "input 'x' listed twice",
        ),
        (
            "kernels: [{name: k, launches: 1, share: 1, ms: 0.5, grid: [0]}]",
            r"kernels\[0\]\.grid must be a list",
        ),
    ],
)
def test_bad_values_name_the_problem(extra: str, problem: str) -> None:
    with pytest.raises(BaselineError, match=problem):
        parse(file_with(extra), PATH)
