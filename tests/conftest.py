"""Shared helpers: a pytester project whose kernels state their own time (ScriptedTimer)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

# Imported here, before any in-process pytester run: pytester restores sys.modules after each run,
# and a second import of torch's or numpy's C extensions in one process fails or crashes.
import scipy.stats  # noqa: F401
import torch
from torch.profiler import ProfilerActivity, profile

# The profiler's first use imports about 900 modules (dynamo, inductor); one of them registers a
# TORCH_LIBRARY, which fails when pytester drops it after a run and a later run imports it again.
with profile(activities=[ProfilerActivity.CPU]):
    torch.zeros(1)

SCRIPTED_CONFTEST = """
import pytest
from pytest_kernelperf.testing import ScriptedTimer

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_make_timer(config, settings, device):
    return ScriptedTimer()
"""

# A kernel whose time (FAKE_MS) and answer (FAKE_SCALE) the test sets through the environment.
KERNEL_MODULE = """
import os

import torch

def kernel(x):
    return x * 2 * float(os.environ.get("FAKE_SCALE", "1"))

kernel.fake_ms = float(os.environ.get("FAKE_MS", "1.0"))

def reference(x):
    return x + x

def test_kernel(kernel_bench):
    kernel_bench(kernel, torch.linspace(-3, 3, 64), reference=reference)
"""


class Project:
    """A throwaway pytest project using kernel_bench with scripted times."""

    def __init__(self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pytester = pytester
        self.monkeypatch = monkeypatch
        # A project's runs must not append to the step summary of a CI job running these tests.
        monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
        pytester.makeconftest(SCRIPTED_CONFTEST)

    def module(self, source: str = KERNEL_MODULE, name: str = "test_kernels") -> Path:
        return self.pytester.makepyfile(**{name: textwrap.dedent(source)})

    def run(self, *args: str, ms: float = 1.0, scale: float = 1.0) -> pytest.RunResult:
        self.monkeypatch.setenv("FAKE_MS", str(ms))
        self.monkeypatch.setenv("FAKE_SCALE", str(scale))
        return self.pytester.runpytest("-p", "no:cacheprovider", *args)

    @property
    def baseline_file(self) -> Path:
        return self.pytester.path / "baselines" / "test_kernels.yaml"


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Project:
    return Project(pytester, monkeypatch)


@pytest.fixture(autouse=True)
def _no_outer_xdist_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under `pytest -n`, this process is an xdist worker; in-process pytester runs must not
    inherit that identity (the plugin pins GPUs and routes results by it)."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow: takes more than about 5 s (torch.compile on CPU); -m 'not slow' skips"
    )
