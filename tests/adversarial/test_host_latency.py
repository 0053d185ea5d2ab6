"""A slower launch path is listed once under the summary table, not warned per test."""

from __future__ import annotations

from dataclasses import replace

from pytest_kernelperf.model.result import BenchResult, Comparison, Verdict
from pytest_kernelperf.results.render import host_lines, markdown, styled_lines


def result(name: str, host_verdict: Verdict) -> BenchResult:
    base = BenchResult("test_k.py::test_k", name, "Some GPU", Verdict.SAME, method="cupti", level_ms=1.0)
    return replace(
        base,
        baseline_level_ms=1.0,
        host_method="cuda-event",
        host_level_ms=0.08,
        host_baseline_level_ms=0.03,
        host_comparison=Comparison(host_verdict, ratio=8 / 3, threshold=0.5, alpha=0.01),
    )


def test_only_significantly_slower_launch_paths_are_listed_once() -> None:
    results = [result("slow_launch", Verdict.SLOWER), result("steady", Verdict.SAME)]
    lines = host_lines(results)
    assert lines == [
        "host latency slower: test_k.py::test_k [slow_launch]: 80 us per call vs baseline 30 us "
        "(+166.7%): the launch path got slower"
    ]
    text = ["".join(segment for segment, _ in line) for line in styled_lines(results)]
    assert sum("host latency slower" in line for line in text) == 1
    assert "host latency slower" in markdown(results, {})
