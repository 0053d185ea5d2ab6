"""max_ratio: the kernel against its reference, timed in the same run; no baseline needed."""

from __future__ import annotations

import json

import pytest
from conftest import Project
from reportkit import setup, times

from pytest_kernelperf.verdict.ratio import check_ratio, validate_max_ratio

RATIO_MODULE = """
import os

import torch

def kernel(x):
    return x * 2

kernel.fake_ms = float(os.environ.get("MS_slow", "1.0"))

def reference(x):
    return x + x

reference.fake_ms = float(os.environ.get("MS_ref", "1.0"))

def test_ratio(kernel_bench):
    kernel_bench(kernel, torch.ones(1024), reference=reference, max_ratio=1.1)
"""


def test_a_slow_kernel_fails_on_its_ratio_without_any_baseline(project: Project) -> None:
    setup(project, RATIO_MODULE)
    times(project, slow=2.0, ref=1.0)
    result = project.run("--kernelperf", "--kernelperf-json=run.json", "--color=no")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*ratio to reference exceeded in test_kernels.py::test_ratio on Test CPU: "
            "median 2.00* ms is 2.00x the reference's 1.00* ms (max_ratio 1.1).",
            "*evidence: one-sided Mann-Whitney U that fn/1.1 is slower than the reference: p=* (alpha=0.01); "
            "reference 95% CI *-* ms over 50 samples; both timed in this run with scripted.",
            "*Speed up the kernel, or raise max_ratio=*",
        ]
    )
    # The ratio is in the table (no baseline: verdict new) and in the JSON.
    result.stdout.fnmatch_lines(["*Method*Time (ms)*Ref (ms)*Ratio*Verdict", "*2.00*1.00*2.00x > 1.1*new"])
    result.stdout.fnmatch_lines(["kernelperf: 1 new, 1 over max_ratio"])
    assert not (project.pytester.path / "baselines").exists()
    data = json.loads((project.pytester.path / "run.json").read_text())
    reference = data["results"][0]["reference"]
    assert reference["exceeded"] is True and reference["p_value"] < 0.01
    assert reference["ratio"] == pytest.approx(2.0, rel=0.01)


def test_a_kernel_within_its_ratio_passes_and_is_reported(project: Project) -> None:
    setup(project, RATIO_MODULE)
    times(project, slow=1.05, ref=1.0)
    result = project.run("--kernelperf", "-v", "--color=no")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_ratio PASSED (new, ratio 1.05x <= 1.1)*", "*1.05x <= 1.1*new"])


def test_the_ratio_holds_in_an_update_run_too(project: Project) -> None:
    setup(project, RATIO_MODULE)
    times(project, slow=2.0, ref=1.0)
    result = project.run("--kernelperf-update-baselines")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ratio to reference exceeded*"])


def test_without_timing_the_ratio_is_not_measured(project: Project) -> None:
    setup(project, RATIO_MODULE)
    times(project, slow=2.0, ref=1.0)
    project.run().assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("0", "max_ratio must be a finite number greater than 0 (e.g. 1.1), got 0"),
        ("-1.5", "max_ratio must be a finite number greater than 0 (e.g. 1.1), got -1.5"),
        ("float('inf')", "max_ratio must be a finite number greater than 0 (e.g. 1.1), got inf"),
        ("float('nan')", "max_ratio must be a finite number greater than 0 (e.g. 1.1), got nan"),
        ("'1.1'", "max_ratio must be a number such as 1.1, got '1.1'"),
        ("True", "max_ratio must be a number such as 1.1, got True"),
    ],
)
def test_bad_max_ratio_is_refused_clearly(project: Project, value: str, problem: str) -> None:
    setup(project, RATIO_MODULE.replace("max_ratio=1.1", f"max_ratio={value}"))
    times(project)
    result = project.run()  # validated even when not timing
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*kernel_bench in test_kernels.py::test_ratio: {problem}"])


def test_max_ratio_needs_a_reference(project: Project) -> None:
    setup(project, RATIO_MODULE.replace("reference=reference, ", ""))
    times(project)
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*max_ratio=1.1 needs reference=, the function to time fn against*"])


def test_check_ratio_needs_size_and_evidence() -> None:
    ref = tuple(1.0 + 0.001 * i for i in range(20))
    slow = tuple(2 * v for v in ref)
    assert check_ratio(slow, "m", ref, "m", max_ratio=1.1, alpha=0.01).exceeded
    within = check_ratio(ref, "m", ref, "m", max_ratio=1.1, alpha=0.01)
    assert not within.exceeded and within.p_value is None and within.reason == "within max_ratio"
    # Just past the limit but heavily overlapping: not significant, so not a failure.
    noisy_ref = tuple(1.0 + 0.05 * (i % 10) for i in range(20))
    edge = tuple(1.11 * v for v in reversed(noisy_ref))
    result = check_ratio(edge, "m", noisy_ref, "m", max_ratio=1.1, alpha=0.01)
    assert result.ratio > 1.1 and not result.exceeded and result.reason == "beyond max_ratio, not significant"
    other = check_ratio(slow, "cupti", ref, "cuda-event", max_ratio=1.1, alpha=0.01)
    assert not other.exceeded and other.reason.startswith("not compared")


def test_validate_max_ratio_accepts_positive_numbers() -> None:
    assert validate_max_ratio(1) == 1.0
    assert validate_max_ratio(0.5) == 0.5  # "at least twice as fast as the reference"
