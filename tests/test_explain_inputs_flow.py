"""End to end with scripted times and the fake profiler: a test that builds 10% more elements is
told so, and its kernel's +10% is named rather than blamed on host work."""

from __future__ import annotations

import pytest
from conftest import SCRIPTED_CONFTEST, Project

FAKE_PROFILER = """
from pytest_kernelperf.testing import FakeProfiler

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_profile_call(config, profile_request):
    return FakeProfiler()(profile_request)
"""

MODULE = """
import os

import torch

ELEMENTS = int(os.environ["ELEMENTS"])


def kernel(x):
    return x * 2


kernel.fake_ms = ELEMENTS / 1000  # time grows with the input, as a memory-bound kernel's does
kernel.fake_kernels = [("triton_gelu_kernel", 1, ELEMENTS / 1000, None, (ELEMENTS // 16, 1, 1))]


def test_gelu(kernel_bench):
    kernel_bench(kernel, torch.zeros(ELEMENTS))
"""


def test_grown_input_kernel_and_grid_are_named(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    project.pytester.makeconftest(SCRIPTED_CONFTEST + FAKE_PROFILER)
    project.module(MODULE)
    monkeypatch.setenv("ELEMENTS", "1024")
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("ELEMENTS", "1120")  # +9.4%
    result = project.run("--kernelperf")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*inputs differ from the baseline's: x grew 9.38% (1024 -> 1120 elements, shape (1024,) -> "
            "(1120,))*",
            "*kernels against the baseline's:",
            "*  * triton_gelu_kernel: 1.02 ms -> 1.12 ms per call (+10%), 100% of device time",
            "*  # triton_gelu_kernel: grid 64 blocks -> 70 blocks",
        ]
    )
    assert "outside the kernels" not in result.stdout.str()
