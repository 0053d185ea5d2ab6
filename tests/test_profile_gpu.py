"""Profiles on a real GPU: the torch.profiler inventory and Triton's generated code (H200 checks).

Times are scripted (ScriptedTimer) so that the verdict never hinges on real speed; the profiles are
real. Each pytest run is a subprocess, as in CI: kernels compiled by an earlier run must not linger
in the process the next run profiles.
"""

from __future__ import annotations

import json
import os
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import torch
from conftest import SCRIPTED_CONFTEST

# Each test records and judges in pytest subprocesses (the slow tier's rule): a fresh torch, CUDA
# context and Triton compile per process.
pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
    pytest.mark.slow,
]

REPO = Path(__file__).resolve().parents[1]

SCALE_AND_COPY = """
import os

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def kernel(x):
    block = int(os.environ.get("BLOCK_SIZE", "1024"))
    grid = (triton.cdiv(x.numel(), block),)
    y = torch.empty_like(x)
    scale_kernel[grid](x, y, x.numel(), BLOCK_SIZE=block)
    if os.environ.get("SECOND_LAUNCH") == "1":
        z = torch.empty_like(y)
        copy_kernel[grid](y, z, y.numel(), BLOCK_SIZE=block)  # a needless copy: the regression
        return z
    return y


kernel.fake_ms = float(os.environ.get("FAKE_MS", "1.0"))


def test_kernel(kernel_bench):
    x = torch.randn(1 << 20, device="cuda")
    kernel_bench(kernel, x, reference=lambda x: x * 2)
"""


def _plugin_args() -> list[str]:
    """Load the plugin by module when it is not installed as an entry point."""
    installed = any(ep.name == "kernelperf" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "pytest_kernelperf.plugin"]


@pytest.fixture
def gpu_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    pytester.makeconftest(SCRIPTED_CONFTEST)
    pytester.makepyfile(test_kernels=textwrap.dedent(SCALE_AND_COPY))
    return pytester


def _run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str, **env: str
) -> pytest.RunResult:
    for key in ("FAKE_MS", "BLOCK_SIZE", "SECOND_LAUNCH"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return pytester.runpytest_subprocess(*_plugin_args(), "-p", "no:cacheprovider", *args, timeout=600)


def test_a_second_launch_is_named_in_the_regression(
    gpu_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(gpu_project, monkeypatch, "--kernelperf-update-baselines").assert_outcomes(passed=1)
    stored = (gpu_project.path / "baselines" / "test_kernels.yaml").read_text()
    assert "name: scale_kernel" in stored and "code: " in stored and "copy_kernel" not in stored
    result = _run(gpu_project, monkeypatch, "--kernelperf", FAKE_MS="2.0", SECOND_LAUNCH="1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*kernels against the baseline's:",
            "*now launches 2 kernels per call instead of 1 (+copy_kernel: * ms)",
            "*+ copy_kernel: new, 1 launch*",
            "*generated code unchanged since the baseline (scale_kernel)*",
            "*profile: .kernelperf/test_kernels.py_test_kernel/default (*trace.json*",
        ]
    )
    folder = gpu_project.path / ".kernelperf" / "test_kernels.py_test_kernel" / "default"
    trace = json.loads((folder / "trace.json").read_text())
    assert any(event.get("name") == "copy_kernel" for event in trace["traceEvents"])
    assert (folder / "code" / "copy_kernel.ptx").read_text().count(".entry copy_kernel") == 1
    assert "scale_kernel" in (folder / "kernels.txt").read_text()


def test_a_new_block_size_is_reported_as_changed_code(
    gpu_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(gpu_project, monkeypatch, "--kernelperf-update-baselines", BLOCK_SIZE="1024").assert_outcomes(
        passed=1
    )
    result = _run(gpu_project, monkeypatch, "--kernelperf", FAKE_MS="2.0", BLOCK_SIZE="128")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*generated code changed since the baseline: scale_kernel (* -> *)*"])
    assert "now launches" not in result.stdout.str()  # the same one kernel, compiled differently


def test_profile_flag_writes_the_lecture_artefacts_on_cuda(
    gpu_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run(
        gpu_project, monkeypatch, "--kernelperf", "--kernelperf-profile", "--kernelperf-profile-stack"
    )
    result.assert_outcomes(passed=1)
    folder = gpu_project.path / ".kernelperf" / "test_kernels.py_test_kernel" / "default"
    names = {p.name for p in folder.iterdir()}
    assert {"profile.txt", "trace.json", "stacks.txt", "kernels.txt", "code"} <= names
    assert "scale_kernel" in (folder / "profile.txt").read_text()
    assert {"scale_kernel.ptx"} <= {p.name for p in (folder / "code").iterdir()}
