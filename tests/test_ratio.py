"""max_ratio: the kernel against its reference, timed in the same run; no baseline needed."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

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
            "2 ms is 2.00x the reference's 1 ms (max_ratio 1.1).",
            "*evidence: paired 5 rounds: ratio 2.0* (CI *-*), p=* that it exceeds 1.1, against level 0.01; "
            "round noise SD *; both timed in this run with scripted, rounds interleaved.",
            "*Speed up the kernel, or raise max_ratio=*",
        ]
    )
    # The ratio is in the table (no baseline: verdict new) and in the JSON.
    result.stdout.fnmatch_lines(["*Method*Time (ms)*Ref (ms)*Ratio*Verdict", "*2 *1 *2.00x > 1.1*new [[]*]"])
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
    result.stdout.fnmatch_lines(["*test_ratio PASSED (new, ratio 1.05x <= 1.1)*", "*1.05x <= 1.1*new [[]*]"])


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


def test_check_ratio_is_a_paired_round_test_that_needs_size_and_evidence() -> None:
    ref = (0.130, 0.1302, 0.1299, 0.1301, 0.1300)
    slow = tuple(2 * v for v in ref)
    check = check_ratio(slow, "m", ref, "m", max_ratio=1.1, alpha=0.01, device="GPU")
    assert check.exceeded and check.ratio == pytest.approx(2.0)
    assert check.ratio_ci is not None and check.ratio_ci[0] < 2.0 < check.ratio_ci[1]
    within = check_ratio(ref, "m", ref, "m", max_ratio=1.1, alpha=0.01)
    assert not within.exceeded and within.reason == "within max_ratio"
    # Just past the limit but with rounds that disagree: not significant, so not a failure.
    noisy_ref = (0.13, 0.16, 0.11, 0.14, 0.12)
    edge = (0.15, 0.13, 0.16, 0.12, 0.18)
    result = check_ratio(edge, "m", noisy_ref, "m", max_ratio=1.1, alpha=0.01)
    assert result.ratio > 1.1 and not result.exceeded and result.reason == "beyond max_ratio, not significant"
    other = check_ratio(slow, "cupti", ref, "cuda-event", max_ratio=1.1, alpha=0.01)
    assert not other.exceeded and other.reason.startswith("not compared")


def test_the_level_of_a_ratio_check_is_alpha_over_the_planned_judgements() -> None:
    ref = (0.130, 0.1302, 0.1299)
    check = check_ratio(ref, "m", ref, "m", max_ratio=1.1, alpha=0.01, planned_judgements=10)
    assert check.level == pytest.approx(0.001)


def test_validate_max_ratio_accepts_positive_numbers() -> None:
    assert validate_max_ratio(1) == 1.0
    assert validate_max_ratio(0.5) == 0.5  # "at least twice as fast as the reference"


def test_interleaved_rounds_stay_paired_when_the_baseline_spread(monkeypatch: pytest.MonkeyPatch) -> None:
    # fn's baseline rounds spread 20%: more pairs are drawn (up to the cap), each of exactly one
    # round of fn and one of its reference, so the paired test always has as many of each.
    from pytest_kernelperf.measure import health, interleave
    from pytest_kernelperf.measure.timing import Target, WallClockTimer
    from pytest_kernelperf.model.device import DeviceInfo
    from pytest_kernelperf.testing import sampling_plan

    monkeypatch.setattr(health, "read", lambda index: None)
    cpu = DeviceInfo(kind="cpu", name="test CPU")
    plan = sampling_plan(
        rounds=3, min_samples=2, min_time_s=0.0, max_time_s=0.001, warmup_s=0.0, round_warmup_s=0.0
    )
    spread = replace(plan, max_rounds=12, known_round_sd=0.2)
    fn, ref = Target(lambda: None, cpu, label="fn"), Target(lambda: None, cpu, label="ref")
    timing, (reference,) = interleave.interleaved(WallClockTimer(), fn, [ref], spread)
    assert len(timing.device_time.round_locations_ms) == len(reference.device_time.round_locations_ms) == 12
    timing, (reference,) = interleave.interleaved(WallClockTimer(), fn, [ref], plan)
    assert len(timing.device_time.round_locations_ms) == len(reference.device_time.round_locations_ms) == 3


def scripted_target(label: str) -> Any:
    """A Target on the CPU whose rounds the ScriptedTimer states at 1 ms."""
    from pytest_kernelperf.measure.timing import Target
    from pytest_kernelperf.model.device import DeviceInfo

    def call() -> None:
        return None

    call.fake_ms = 1.0  # type: ignore[attr-defined]
    return Target(call, DeviceInfo(kind="cpu", name="test CPU"), label=label, fn=call)


def test_interleaved_rounds_rotate_the_order_of_three_functions() -> None:
    """fn, its counterpart at another revision and its reference: each group of rounds starts one
    place later, so no function always goes first."""
    from pytest_kernelperf.measure import interleave
    from pytest_kernelperf.measure.timing import Target, Timing
    from pytest_kernelperf.testing import ScriptedTimer, sampling_plan

    order: list[str] = []

    class Recording(ScriptedTimer):
        def measure(self, target: Target, plan: Any) -> Timing:
            order.append(target.label)
            return super().measure(target, plan)

    timing, others = interleave.interleaved(
        Recording(),
        scripted_target("fn"),
        [scripted_target("base"), scripted_target("ref")],
        sampling_plan(rounds=3),
    )
    assert order == ["fn", "base", "ref", "base", "ref", "fn", "ref", "fn", "base"]
    assert [len(t.device_time.round_locations_ms) for t in (timing, *others)] == [3, 3, 3]


def test_interleaved_rounds_draw_more_groups_while_more_asks() -> None:
    """`more` sees every function's rounds so far and decides on further groups after the plan's."""
    from pytest_kernelperf.measure import interleave
    from pytest_kernelperf.measure.timing import Timing
    from pytest_kernelperf.testing import ScriptedTimer, sampling_plan

    seen: list[tuple[int, int]] = []

    def more(fn_rounds: list[Timing], other_rounds: list[list[Timing]]) -> bool:
        seen.append((len(fn_rounds), len(other_rounds[0])))
        return len(fn_rounds) < 7

    timing, (base,) = interleave.interleaved(
        ScriptedTimer(), scripted_target("fn"), [scripted_target("base")], sampling_plan(rounds=3), more
    )
    assert [len(t.device_time.round_locations_ms) for t in (timing, base)] == [7, 7]
    # Asked only once the plan's own rounds were in, always with whole groups.
    assert seen == [(3, 3), (4, 4), (5, 5), (6, 6), (7, 7)]
