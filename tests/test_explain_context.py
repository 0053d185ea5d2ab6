"""Regression messages name causes other than the code: a changed input, another compile context,
another autotuner choice; and a kernel's change is judged against the call's, not a fixed 10%."""

from __future__ import annotations

from pytest_kernelperf.model.baseline import BaselineEntry, MetricRecord
from pytest_kernelperf.model.call import DYNAMIC, SHARED, STATIC, CompileContext, KernelRecord, TensorInput
from pytest_kernelperf.profiling.capture import CallProfile
from pytest_kernelperf.profiling.explain import context_notes, regression_details
from pytest_kernelperf.testing import FakeProfiler

ENV = {"torch": "2.11.0"}


def entry(median_ms: float, **fields: object) -> BaselineEntry:
    metric = MetricRecord("cupti", median_ms, (median_ms * 0.99, median_ms * 1.01), 10, (median_ms,))
    return BaselineEntry(metric, "2026-11-30T12:00:00Z", dict(ENV), **fields)  # type: ignore[arg-type]


def test_ten_percent_more_elements_names_the_input_the_kernel_and_its_grid() -> None:
    """The H200 case: +9.7% on a Triton kernel given 10% more elements was blamed on host work."""
    old_kernels = FakeProfiler.records([("triton_gelu_kernel", 1, 0.2625, None, (65536, 1, 1))])
    new_kernels = FakeProfiler.records([("triton_gelu_kernel", 1, 0.288, None, (72089, 1, 1))])
    base = entry(0.2625, kernels=old_kernels, inputs=(TensorInput("x", (67108864,), (1,), "float32"),))
    now = entry(0.288, inputs=(TensorInput("x", (73819136,), (1,), "float32"),))
    lines = regression_details(base, ENV, CallProfile(kernels=new_kernels), current=now)
    assert lines[0].startswith("inputs differ from the baseline's: x grew 10% (67108864 -> 73819136 elements")
    assert "  * triton_gelu_kernel: 263 us -> 288 us per call (+10%), 100% of device time" in lines
    assert "  # triton_gelu_kernel: grid 65536 blocks -> 72089 blocks" in lines
    assert not any("outside the kernels" in line for line in lines)


def test_unchanged_kernels_against_the_calls_change_point_outside_them() -> None:
    kernels = FakeProfiler.records([("triton_gelu_kernel", 1, 0.2625)])
    lines = regression_details(
        entry(0.2625, kernels=kernels), ENV, CallProfile(kernels=kernels), current=entry(0.3)
    )
    assert (
        "  the same 1 kernel launch as the baseline; their time per call 263 us -> 263 us (+0 ms) "
        "against 262.5 us -> 300 us (+37.5 us, +14.3%) for the call: the kernels' time did not grow, so "
        "the slowdown is outside the kernels (launch overhead, gaps between kernels, host work?)"
    ) in lines


def test_a_small_kernel_change_far_below_the_calls_is_not_blamed() -> None:
    old = FakeProfiler.records([("a", 1, 0.5), ("b", 1, 0.01)])
    new = FakeProfiler.records([("a", 1, 0.6), ("b", 1, 0.012)])  # b +20%, but 0.002 of the 0.1 ms
    lines = regression_details(entry(0.51, kernels=old), ENV, CallProfile(kernels=new), current=entry(0.612))
    assert any(line.startswith("  * a: 500 us -> 600 us") for line in lines)
    assert not any(line.startswith("  * b:") for line in lines)


def test_a_dynamic_compile_context_comes_before_the_kernels_and_explains_the_code_change() -> None:
    static = CompileContext(STATIC, 1, kernels=("triton_per_fused_native_layer_norm_0",), code="aaaa1111")
    dynamic = CompileContext(
        DYNAMIC,
        1,
        ("x: dim 0",),
        ("(64, 4096)", "(8192, 4096)"),
        ("triton_red_fused_native_layer_norm_0",),
        "bbbb2222",
        SHARED,
    )
    old = (KernelRecord("triton_per_fused_native_layer_norm_0", 1, 1.0, 0.1, code="aaaa1111"),)
    new = (KernelRecord("triton_red_fused_native_layer_norm_0", 1, 1.0, 0.2, code="bbbb2222"),)
    base, now = entry(0.1, kernels=old, compile_context=static), entry(0.2, compile_context=dynamic)
    lines = regression_details(base, ENV, CallProfile(kernels=new), current=now)
    assert lines[0].startswith(
        "compile context differs: compiled with dynamic shapes (x: dim 0) in this run because the same "
        "function saw shapes (64, 4096) and (8192, 4096) earlier in this process; the baseline was "
        "compiled static."
    )
    assert any("a different kernel in its place" in line for line in lines)
    assert context_notes(base, now) == (lines[0],)


def test_another_autotuner_choice_is_a_note_for_every_verdict_and_a_line_for_a_regression() -> None:
    base = entry(0.1, autotune={"matmul_kernel": "BLOCK_M=64, num_warps=4"})
    now = entry(0.115, autotune={"matmul_kernel": "BLOCK_M=128, num_warps=8"})
    expected = (
        "autotuner chose another config than in the baseline: matmul_kernel BLOCK_M=64, num_warps=4 -> "
        "BLOCK_M=128, num_warps=8 (autotune=baseline, the default when comparing, pins the baseline's "
        "configs to judge the code apart from the autotuner)"
    )
    assert context_notes(base, now) == (expected,)
    assert regression_details(base, ENV, None, current=now)[0] == expected
    assert context_notes(base, base) == ()
