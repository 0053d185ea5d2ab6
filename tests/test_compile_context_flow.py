"""kernel_bench and torch.compile's process history, end to end on CPU (separate processes, as CI).

One module-level compiled function, parametrized over two shapes: the big shape's baseline is
recorded alone; run after the small shape in one process it is compiled with dynamic shapes. The
default fresh compile context keeps its verdict; `compile_context=shared` measures the dynamic code
and the regression message says why."""

from __future__ import annotations

import pytest
import yaml
from conftest import Project

pytestmark = pytest.mark.slow

MODULE = """
import os

import pytest
import torch


def rms(x):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


compiled = torch.compile(rms)


def kernel(x):
    return compiled(x)


kernel.fake_ms = float(os.environ.get("FAKE_MS", "1.0"))


@pytest.mark.parametrize("rows", [8, 32], ids=["small", "big"])
def test_rms(kernel_bench, rows):
    kernel_bench(kernel, torch.randn(rows, 64), reference=rms)
"""


def run(project: Project, *args: str, ms: float = 1.0) -> pytest.RunResult:
    project.monkeypatch.setenv("FAKE_MS", str(ms))
    project.monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "1")  # no compile workers on 2 cores
    return project.pytester.runpytest_subprocess("-p", "no:cacheprovider", "-o", "log_level=INFO", *args)


def test_verdict_independent_of_order_unless_shared(project: Project) -> None:
    project.module(MODULE)
    run(project, "--kernelperf-update-baselines", "-k", "big").assert_outcomes(passed=1, deselected=1)
    stored = yaml.safe_load(project.baseline_file.read_text())["entries"]["test_rms[big]"]
    entry = next(iter(stored.values()))["hot"]
    assert entry["compile_context"]["shapes"] == "static"
    assert entry["compile_context"]["mode"] == "fresh"
    assert entry["compile_context"]["kernels"]
    assert entry["inputs"] == [{"name": "x", "dtype": "float32", "shape": [32, 64], "stride": [64, 1]}]

    # Fresh (default): the big shape compiles as it did alone, after the small one.
    result = run(project, "--kernelperf", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_rms?big? PASSED (same*"])

    # Shared, and slower: the message names the process history as the cause.
    result = run(project, "--kernelperf", "-o", "kernelperf_compile_context=shared", ms=2.0)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*compile context differs: compiled with dynamic shapes (x: dim 0) in this run because the same "
            "function saw shape (8, 64) earlier in this process*; the baseline was compiled static.*",
        ]
    )
