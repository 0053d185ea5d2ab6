"""kernel_bench's arguments as a hostile or careless user passes them: every bad call fails its own
test with a message naming the argument; in-place kernels, odd outputs and several implementations
per test are judged correctly."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import Project

from pytest_kernelperf.correctness import Mismatch, Uncomparable, assert_matches

CALLS = """
import math
import torch

def double(x):
    return x * 2

double.fake_ms = 1.0

def test_ok(kernel_bench):
    kernel_bench(double, torch.ones(8), reference=lambda x: x + x)

def test_bytes_string(kernel_bench):
    kernel_bench(double, torch.ones(8), bytes="400")

def test_bytes_negative(kernel_bench):
    kernel_bench(double, torch.ones(8), bytes=-5)

def test_flops_nan(kernel_bench):
    kernel_bench(double, torch.ones(8), flops=math.nan)

def test_rtol_string(kernel_bench):
    kernel_bench(double, torch.ones(8), reference=double, rtol="1e-3")

def test_atol_negative(kernel_bench):
    kernel_bench(double, torch.ones(8), reference=double, atol=-1)

def test_max_ratio_bad(kernel_bench):
    kernel_bench(double, torch.ones(8), reference=double, max_ratio="fast")

def test_after(kernel_bench):
    kernel_bench(double, torch.ones(8), reference=double)
"""


def test_bad_arguments_fail_their_own_test_with_the_argument_named(project: Project) -> None:
    project.module(CALLS)
    result = project.run("--kernelperf")
    result.assert_outcomes(passed=2, failed=6)
    out = result.stdout.str()
    assert "INTERNALERROR" not in out and "During handling" not in out and "Traceback" not in out
    for expected in (
        "bytes='400' must be a number of bytes per call",
        "bytes=-5 must be a whole number of bytes per call, >= 0",
        "flops=nan must be a whole number of floating-point operations per call",
        "rtol='1e-3' must be a finite number >= 0",
        "atol=-1 must be a finite number >= 0",
        "max_ratio must be a number such as 1.1, got 'fast'",
    ):
        assert expected in out, expected


COLLISIONS = """
import torch

def labelled(x, name):
    return x * 2

labelled.fake_ms = 1.0

def with_default(x, bytes=0):
    return x * 2

with_default.fake_ms = 1.0

def takes_fn(x, fn=None):
    return x * (2 if fn == "double" else 1)

takes_fn.fake_ms = 1.0

def test_required_name(kernel_bench):
    kernel_bench(labelled, torch.ones(4), name="tagged")

def test_name_through_fn_kwargs(kernel_bench):
    result = kernel_bench(labelled, torch.ones(4), name="label", fn_kwargs={"name": "kernel"},
                          reference=lambda x, name: x + x)
    assert result.name == "label"

def test_default_taken_by_kernel_bench(kernel_bench):
    kernel_bench(with_default, torch.ones(4), bytes=16)

def test_fn_keyword_goes_to_the_kernel(kernel_bench):
    kernel_bench(takes_fn, torch.ones(4), fn="double", reference=lambda x, fn: x + x)

def test_twice(kernel_bench):
    kernel_bench(labelled, torch.ones(4), name="x", fn_kwargs={"name": 1}, **{"name2": 3})
"""


def test_keywords_of_the_kernel_that_collide_with_kernel_bench_s_own(project: Project) -> None:
    project.module(COLLISIONS)
    result = project.run("--kernelperf", "-W", "always")
    result.assert_outcomes(passed=3, failed=2)
    out = result.stdout.str()
    assert "name= is kernel_bench's own: pass fn's value in fn_kwargs={'name': ...}" in out
    assert "bytes= went to kernel_bench (its own keyword), while fn also has a parameter" in out
    assert "got an unexpected keyword argument 'name2'" in out


INPLACE = """
import torch

def double_in_place(x):
    return x.mul_(2)

double_in_place.fake_ms = 1.0

def identity(x):
    return x

identity.fake_ms = 1.0

def test_in_place_kernel_is_checked_against_the_original_input(kernel_bench):
    result = kernel_bench(double_in_place, torch.full((4,), 2.0), reference=lambda x: x * 2)
    assert any("modified its input in place (args[0])" in note for note in result.notes)

def test_in_place_reference_cannot_make_a_wrong_kernel_pass(kernel_bench):
    kernel_bench(identity, torch.tensor([-1.0, 2.0]), reference=torch.relu_)
"""


def test_in_place_kernels_and_references(project: Project) -> None:
    project.module(INPLACE)
    result = project.run()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*mismatch in output: 1 of 2 elements*"])


ROWS = """
import os
import torch

def make(ms, scale=1.0):
    def kernel(x):
        return x * 2 * scale
    kernel.fake_ms = ms
    return kernel

def test_three(kernel_bench):
    slow = float(os.environ.get("FAKE_MS", "1"))
    x = torch.ones(16)
    scale = float(os.environ.get("FAKE_SCALE", "1"))
    kernel_bench(make(1.0, scale=scale), x, reference=lambda x: x + x, name="a")
    kernel_bench(make(slow), x, reference=lambda x: x + x, name="b")
    kernel_bench(make(1.0), x, reference=lambda x: x + x, name="c")
"""


def test_every_call_of_a_test_is_measured_and_each_failure_listed(project: Project) -> None:
    project.module(ROWS)
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    result = project.run("--kernelperf", "--kernelperf-json=run.json", ms=4.0, scale=1.5)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "2 kernel_bench failures in test_kernels.py::test_three" in out
    assert "1. mismatch in output" in out and "2. performance regression" in out
    run = json.loads((project.pytester.path / "run.json").read_text())
    verdicts = {r["name"]: r["verdict"] for r in run["results"]}
    assert verdicts == {"a": "mismatch", "b": "slower", "c": "same"}
    assert run["totals"] == {"slower": 1, "mismatch": 1, "same": 1}
    result.stdout.fnmatch_lines(["*kernelperf: 1 same, 1 slower, 1 mismatch*"])


def test_nan_mismatch_reports_no_fake_error_of_zero() -> None:
    expected = torch.ones(4)
    actual = expected.clone()
    actual[1] = float("nan")
    with pytest.raises(Mismatch) as info:
        assert_matches(actual, expected)
    message = str(info.value)
    assert "max abs error 0" not in message
    assert "each is a NaN or infinity, first at index (1,) (got nan, expected 1)" in message


def test_complex_mismatch_has_the_right_relative_error_and_no_warning(
    recwarn: pytest.WarningsRecorder,
) -> None:
    expected = torch.tensor([1 + 1j, 2 - 2j], dtype=torch.complex64)
    actual = expected * 1.1
    with pytest.raises(Mismatch, match=r"max rel error 0\.1\b"):
        assert_matches(actual, expected)
    assert not [w for w in recwarn if "cast" in str(w.message).lower()]


def test_numbers_and_dicts_compare_and_other_outputs_are_a_usage_error() -> None:
    assert_matches(2.0, 2.0)
    assert_matches({"y": torch.ones(2)}, {"y": torch.ones(2)})
    with pytest.raises(Mismatch, match=r"output\['y'\]"):
        assert_matches({"y": torch.zeros(2)}, {"y": torch.ones(2)})
    with pytest.raises(Mismatch):
        assert_matches(2.5, 2.0)
    with pytest.raises(Uncomparable, match="the reference returned str"):
        assert_matches("a", "a")


ODD_REFERENCE = """
import torch

def kernel(x):
    return x

def test_reference_returns_a_string(kernel_bench):
    kernel_bench(kernel, torch.ones(2), reference=lambda x: "text")

def test_reference_returns_a_float(kernel_bench):
    kernel_bench(lambda x: float(x.sum()), torch.ones(2), reference=lambda x: 2.0)
"""


def test_odd_reference_outputs_fail_cleanly(project: Project) -> None:
    project.module(ODD_REFERENCE)
    result = project.run()
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "the reference returned str at output" in out
    assert "Traceback" not in out and "correctness.py" not in out


UNUSABLE = """
import pytest
import torch

@pytest.mark.kernelperf(threshold="fast")
def test_bad_marker(kernel_bench):
    kernel_bench(lambda x: x * 2, torch.ones(8))

def test_cuda_timer_on_a_cpu(kernel_bench):
    kernel_bench(lambda x: x * 2, torch.ones(8))
"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA timer on a machine without CUDA")
def test_unusable_settings_fail_cleanly_once(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_unusable=UNUSABLE)  # the real timers: no scripted conftest here
    # -rN: no short summary, whose width depends on the terminal; the message must appear once.
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-rN", "--kernelperf", "--kernelperf-timer=cuda-event"
    )
    out = result.stdout.str()
    assert out.count("threshold: expected a fraction such as 0.05") == 1
    assert "During handling" not in out and "Traceback" not in out
    assert "timer 'cuda-event' needs a CUDA device" in out and "(--kernelperf-timer)" in out


IN_PLACE_TIMED = """
import pytest
import torch

def bump(x):
    return x.add_(1)

@pytest.mark.parametrize("restore", [True, False])
def test_bump(kernel_bench, restore):
    x = torch.zeros(16)
    kernel_bench(bump, x, name=f"restore={restore}", restore_inputs=restore)
    calls = int(x[0])
    if restore:  # put back before every timed call: only the last call's increment remains
        assert calls == 1, calls
    else:  # each call saw the previous call's output
        assert calls > 10, calls
"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="times with the wall clock on a machine without CUDA")
def test_an_in_place_kernel_declared_so_is_timed_on_restored_inputs(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_in_place=IN_PLACE_TIMED)  # the real wall-clock timer: no scripted conftest
    result = pytester.runpytest("-p", "no:cacheprovider", "--kernelperf", "--kernelperf-rounds=2")
    result.assert_outcomes(passed=2)


FAKE_PROFILER_CONFTEST = """
import pytest
from pytest_kernelperf.testing import FakeProfiler

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_profile_call(config, profile_request):
    return FakeProfiler()(profile_request)
"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="times with the wall clock on a machine without CUDA")
def test_profiling_for_the_history_leaves_restored_inputs_as_timing_left_them(
    pytester: pytest.Pytester,
) -> None:
    # A run kept in the history profiles every call for its inventory: an in-place kernel's inputs
    # are restored first and profiled once, so they end as the timed calls left them.
    pytester.makeconftest(FAKE_PROFILER_CONFTEST)
    pytester.makepyfile(test_in_place=IN_PLACE_TIMED)
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--kernelperf",
        "--kernelperf-rounds=2",
        f"--kernelperf-history={pytester.path / 'history.sqlite'}",
    )
    result.assert_outcomes(passed=2)


NOISY_ON_THE_HOST = """
import random
import time

def jumpy(x):
    time.sleep(random.choice((0.0, 0.0005)))  # rounds that disagree, by far more than the target
    return x * 2

def test_jumpy(kernel_bench):
    import torch
    kernel_bench(jumpy, torch.ones(8), reference=lambda x: x * 2)
"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="times with the wall clock on a machine without CUDA")
def test_rounds_that_disagree_draw_no_more_where_there_are_no_placements_to_sample(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_noisy=NOISY_ON_THE_HOST)
    report = pytester.path / "run.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--kernelperf", "--kernelperf-rounds=2", f"--kernelperf-json={report}"
    )
    result.assert_outcomes(passed=1)
    (entry,) = [r["baseline_entry"] for r in json.loads(report.read_text())["results"]]
    assert len(entry["device_time"]["rounds_ms"]) == 2
