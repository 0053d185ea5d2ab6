"""autotune=free records the Triton autotuner's choice and notes a change; autotune=baseline pins
the baseline's config (Triton's CPU interpreter, a fake benchmark deciding the winner)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import Project

pytest.importorskip("triton")  # imported before any in-process run, which would drop it again

MODULE = """
import os

import torch
import triton
import triton.language as tl


def fake_bench(call, quantiles=None):
    call()
    # WINNER names the BLOCK that benchmarks fastest; the config is not passed, so go by order.
    fake_bench.order = getattr(fake_bench, "order", 0) + 1
    fast = (fake_bench.order == 1) == (os.environ["WINNER"] == "16")
    return [1.0 if fast else 2.0] * 3


@triton.autotune(
    configs=[triton.Config({"BLOCK": 16}, num_warps=1), triton.Config({"BLOCK": 32}, num_warps=2)],
    key=["n"],
    do_bench=fake_bench,
)
@triton.jit
def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


def kernel(x):
    y = torch.empty_like(x)
    double[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, x.numel())
    return y


kernel.fake_ms = 1.0


def test_double(kernel_bench):
    kernel_bench(kernel, torch.arange(40, dtype=torch.float32), reference=lambda x: x * 2)
"""

CHOSEN_16 = "BLOCK=16, num_warps=1, num_stages=3"
CHOSEN_32 = "BLOCK=32, num_warps=2, num_stages=3"


def run(project: Project, winner: str, *args: str) -> dict[str, Any]:
    project.monkeypatch.setenv("TRITON_INTERPRET", "1")
    project.monkeypatch.setenv("WINNER", winner)
    project.run(*args, "--kernelperf-json=run.json").assert_outcomes(passed=1)
    result = json.loads((project.pytester.path / "run.json").read_text())["results"][0]
    assert isinstance(result, dict)
    return result


def test_choice_recorded_noted_when_it_changes_and_pinned_on_request(project: Project) -> None:
    project.module(MODULE)
    recorded = run(project, "32", "--kernelperf-update-baselines")
    assert recorded["baseline_entry"]["autotune"] == {"double": CHOSEN_32}
    assert f"double: {CHOSEN_32}\n" in project.baseline_file.read_text()

    free = run(project, "16", "--kernelperf", "-o", "kernelperf_autotune=free")
    assert free["baseline_entry"]["autotune"] == {"double": CHOSEN_16}
    assert any(
        f"autotuner chose another config than in the baseline: double {CHOSEN_32} -> {CHOSEN_16}" in note
        for note in free["notes"]
    )

    pinned = run(project, "16", "--kernelperf")  # the default pins to the baseline's config
    assert pinned["baseline_entry"]["autotune"] == {"double": CHOSEN_32}
    assert not any("autotuner chose" in note for note in pinned["notes"])

    # Recording is never pinned: a re-recorded baseline takes the autotuner's current pick.
    rerecorded = run(project, "16", "--kernelperf-update-baselines")
    assert rerecorded["baseline_entry"]["autotune"] == {"double": CHOSEN_16}
