"""A run whose kernels all moved alike says so, and still names the kernel that moved more."""

from __future__ import annotations

from dataclasses import replace

from pytest_kernelperf.model.result import BenchResult, Comparison, Verdict
from pytest_kernelperf.results import render
from pytest_kernelperf.verdict.shift import device_shifts


def result(name: str, ratio: float, verdict: Verdict = Verdict.SAME) -> BenchResult:
    return BenchResult(
        "tests/test_k.py::test_k",
        name,
        "NVIDIA H200",
        verdict,
        method="cupti",
        level_ms=ratio,
        baseline_level_ms=1.0,
        comparison=Comparison(verdict, ratio=ratio, threshold=0.01),
    )


def test_a_run_that_moved_alike_names_the_shift_and_the_kernel_beyond_it() -> None:
    results = [result(f"k{i}", 0.98 + i * 0.001) for i in range(8)] + [result("slow", 1.05, Verdict.SLOWER)]
    lines = render.shift_lines(results)
    assert len(lines) == 1
    assert "device shift on NVIDIA H200: 8 of 9 kernels moved the same way, median -1.6%" in lines[0]
    assert "beyond the shift: tests/test_k.py::test_k [slow] +5.0%" in lines[0]
    assert "device shift on NVIDIA H200: 8 of 9 kernels" in render.markdown(results)


def test_no_shift_when_kernels_move_both_ways_or_too_little() -> None:
    both_ways = [("gpu", f"k{i}", 0.97 if i % 2 else 1.03) for i in range(10)]
    small = [("gpu", f"k{i}", 0.996) for i in range(10)]
    few = [("gpu", f"k{i}", 0.9) for i in range(4)]
    assert device_shifts(both_ways, 0.01) == []
    assert device_shifts(small, 0.01) == []
    assert device_shifts(few, 0.01) == []


def test_devices_are_judged_apart() -> None:
    judged = [("a", f"k{i}", 0.95) for i in range(6)] + [
        ("b", f"k{i}", 1.0 + (-1) ** i * 0.02) for i in range(6)
    ]
    shifts = device_shifts(judged, 0.01)
    assert [s.device for s in shifts] == ["a"] and shifts[0].beyond == ()


def test_a_shift_on_the_baselines_environment_points_at_a_shared_cause() -> None:
    same = [replace(result(f"k{i}", 1.05 + i * 0.001), environment_changes=()) for i in range(6)]
    (line,) = render.shift_lines(same)
    assert "on the same card, driver and software as the baselines: a cause the kernels share" in line
    assert "driver or toolkit change" not in line


def test_a_shift_where_the_environment_changed_names_what_changed() -> None:
    moved = [
        replace(result(f"k{i}", 1.05 + i * 0.001), environment_changes=("driver 570.1 -> 580.2",))
        for i in range(6)
    ]
    (line,) = render.shift_lines(moved)
    assert "the environment differs from the baselines' (driver 570.1 -> 580.2)" in line
