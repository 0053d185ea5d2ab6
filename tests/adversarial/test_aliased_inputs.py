"""Arguments that share memory (`fn(x, x)`, a view and its base) reach the reference sharing it: a
kernel checked against itself is never a mismatch because its inputs were copied apart."""

from __future__ import annotations

import pytest
from conftest import Project

ALIASED = """
import torch

def scale_into(x, out):
    out.copy_(x * 2)  # writes out, then reads x: with out=x this is 2x + 2x
    return out + x

scale_into.fake_ms = 1.0

def add_halves(lo, hi):
    lo.add_(hi)  # lo and hi are two views of one buffer
    return lo.clone()

add_halves.fake_ms = 1.0

def test_same_tensor_twice(kernel_bench):
    x = torch.arange(8, dtype=torch.float32)
    kernel_bench(scale_into, x, x, reference=scale_into)

def test_views_of_one_buffer(kernel_bench):
    buffer = torch.arange(8, dtype=torch.float32)
    kernel_bench(add_halves, buffer[:4], buffer[4:], reference=add_halves)
"""


@pytest.mark.parametrize("mode", [(), ("--kernelperf",)])
def test_a_kernel_checked_against_itself_on_aliased_inputs_matches(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: tuple[str, ...]
) -> None:
    project = Project(pytester, monkeypatch)
    project.module(ALIASED)
    result = project.run(*mode)
    result.assert_outcomes(passed=2)
    assert "mismatch" not in result.stdout.str()
