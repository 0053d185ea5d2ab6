"""A Triton kernel on a machine without a GPU: in Triton's CPU interpreter it is checked and never
timed (its times are the interpreter's), and without the interpreter it skips saying how to check it
instead of failing with Triton's raw "0 active drivers"."""

from __future__ import annotations

import json

import pytest
from conftest import Project

triton = pytest.importorskip("triton")  # imported once here: each run below only decorates its kernel
torch = pytest.importorskip("torch")

TRITON_TEST = """
import torch
import triton
import triton.language as tl

@triton.jit
def add_one_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)

def launch(x, y):
    add_one_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK=64)

def add_one(x):
    y = torch.empty_like(x)
    launch(x, y)
    return y

add_one.fake_ms = 39.0  # what the interpreter takes; never to be timed or stored

def plain(x):
    return x + 1

plain.fake_ms = 1.0

def test_add(kernel_bench):
    kernel_bench(add_one, torch.ones(128), reference=lambda x: x + 1)

def test_plain(kernel_bench):
    kernel_bench(plain, torch.ones(128), reference=lambda x: x + 1)
"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without a GPU")
@pytest.mark.parametrize("mode", ["--kernelperf", "--kernelperf-update-baselines"])
def test_the_interpreter_is_checked_not_timed_nor_stored(project: Project, mode: str) -> None:
    project.monkeypatch.setenv("TRITON_INTERPRET", "1")
    project.module(TRITON_TEST, name="test_triton")
    result = project.run(mode, "--kernelperf-json=run.json", "-W", "ignore")
    result.assert_outcomes(passed=2)
    text = result.stdout.str()
    assert "add_one_kernel runs in Triton's CPU interpreter (TRITON_INTERPRET=1)" in text
    stored = project.pytester.path / "baselines" / "test_triton.yaml"
    if mode == "--kernelperf-update-baselines":
        assert stored.exists() and "test_add" not in stored.read_text()  # only the plain kernel
        assert "test_plain" in stored.read_text()
    verdicts = {
        r["nodeid"].split("::")[-1]: r["verdict"]
        for r in json.loads((project.pytester.path / "run.json").read_text())["results"]
    }
    assert verdicts["test_add"] == "checked"
    assert verdicts["test_plain"] != "checked"  # a kernel that is not Triton's is still timed


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without a GPU driver")
def test_a_triton_kernel_without_a_driver_skips_saying_how_to_check_it(project: Project) -> None:
    project.monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    project.module(TRITON_TEST, name="test_triton")
    result = project.run("-rs", "test_triton.py::test_add")
    result.assert_outcomes(skipped=1)
    text = result.stdout.str()
    assert "Triton found no GPU driver" in text
    assert "set TRITON_INTERPRET=1 before Triton is imported" in text
