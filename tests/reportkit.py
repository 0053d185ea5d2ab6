"""Helpers for the report tests: a project with a fixed device name, a known peak, and kernels whose
scripted time each test sets through the environment (MS_<name>)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from conftest import SCRIPTED_CONFTEST, Project

DEVICE = "Test CPU"
PEAK_GBPS = 100.0

# The device is renamed so that tests do not depend on this machine's CPU model.
CONFTEST = (
    SCRIPTED_CONFTEST
    + f'''
from pytest_kernelperf.model.device import DeviceInfo

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_device_info(config, kind):
    return DeviceInfo(kind="cpu", name="{DEVICE}", environment={{"torch": "test", "threads": "1"}})
'''
)

# Four parametrized variants and one test timing two named implementations. 2^20 float32 elements:
# 4 MiB read + 4 MiB written, so 1 ms is 8.39 GB/s.
KERNELS = """
import os

import pytest
import torch

def make(name):
    def kernel(x):
        return x * 2
    kernel.fake_ms = float(os.environ.get(f"MS_{name}", "1.0"))
    return kernel

def reference(x):
    return x + x

@pytest.mark.parametrize("which", ["a", "b", "c", "d"])
def test_param(kernel_bench, which):
    kernel_bench(make(which), torch.ones(1 << 20), reference=reference)

def test_named(kernel_bench):
    kernel_bench(make("first"), torch.ones(1 << 20), name="first")
    kernel_bench(make("second"), torch.ones(1 << 20), name="second", bytes=16 << 20, flops=1 << 30)
"""

# A kernel timed against its reference with max_ratio: MS_slow over MS_ref decides the ratio.
RATIO = """

reference.fake_ms = float(os.environ.get("MS_ref", "1.0"))

def test_ratio(kernel_bench):
    kernel_bench(make("slow"), torch.ones(1 << 20), reference=reference, max_ratio=1.5)
"""


def setup(project: Project, source: str = KERNELS, *, peak: float | None = PEAK_GBPS) -> Path:
    project.pytester.makeconftest(CONFTEST)
    if peak is not None:
        cache = project.pytester.path / ".kernelperf" / "peak_bandwidth.json"
        cache.parent.mkdir(parents=True, exist_ok=True)
        entry = {"device": DEVICE, "gb_per_s": peak, "bytes": 1, "method": "test", "measured": "now"}
        cache.write_text(json.dumps({"schema_version": 1, "devices": {DEVICE: entry}}))
    return project.module(textwrap.dedent(source))


def times(project: Project, **ms: float) -> None:
    """Set the scripted time of kernels by name (MS_a=4.0 makes kernel a take 4 ms)."""
    for name in ("a", "b", "c", "d", "first", "second", "ref", "slow"):
        project.monkeypatch.setenv(f"MS_{name}", str(ms.get(name, 1.0)))


def mixed_verdicts(project: Project) -> None:
    """Baselines for everything but param d; then b 4x slower and c 2x faster."""
    setup(project)
    times(project)
    update = project.run("--kernelperf-update-baselines", "--deselect", "test_kernels.py::test_param[d]")
    update.assert_outcomes(passed=4, deselected=1)
    times(project, b=4.0, c=0.5)
