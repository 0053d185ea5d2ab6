"""restore_inputs=True with inputs in containers: lists, dicts and tuples are put back whole (length,
keys, items), and what cannot be put back fails the test naming the argument, instead of each timed
call seeing what the previous one left."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from conftest import Project

from pytest_kernelperf.correctness import NotRestorable, restore, snapshot

# As a real timer does: every timed call is prepared first (ScriptedTimer alone calls once, unprepared).
PREPARING_TIMER = """
import pytest
from pytest_kernelperf.testing import ScriptedTimer

class PreparingTimer(ScriptedTimer):
    def measure(self, target, plan):
        timing = super().measure(target, plan)
        for _ in range(5):
            target.prepare()
            target.call()
        return timing

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_make_timer(config, settings, device):
    return PreparingTimer()
"""

IN_PLACE_CONTAINERS = """
import torch

def grow(cache):
    cache.append(cache[-1] + 1)
    return cache[-1].clone()

grow.fake_ms = 1.0

def test_list(kernel_bench):
    cache = [torch.ones(4)]
    kernel_bench(grow, cache, reference=lambda c: c[-1] + 1, restore_inputs=True)
    assert len(cache) == 2, len(cache)  # put back before each timed call: one call's entry remains
    assert torch.equal(cache[0], torch.ones(4))

def add_to(seen):
    seen.add(len(seen))
    return torch.ones(1)

add_to.fake_ms = 1.0

def test_set(kernel_bench):
    kernel_bench(add_to, {0}, restore_inputs=True)
"""


def test_an_in_place_kernel_on_a_list_is_timed_on_the_list_as_given(project: Project) -> None:
    project.pytester.makeconftest(PREPARING_TIMER)
    project.module(IN_PLACE_CONTAINERS)

    result = project.run("--kernelperf")

    result.assert_outcomes(passed=1, failed=1)
    assert (
        "kernel_bench in test_kernels.py::test_set: restore_inputs=True cannot put back args[0]: a set "
        "cannot be put back (restore_inputs copies tensors, and lists, tuples and dicts of them)"
    ) in result.stdout.str()


def mangle(args: Any) -> None:
    """What in-place kernels do to their containers: append, rebind, remove, add keys, write."""
    tensors, table, pair = args
    tensors.append(torch.zeros(2))
    tensors[0] = torch.full((2,), 7.0)
    tensors[1].add_(5)
    del table["keep"]
    table["new"] = 1
    pair[0].mul_(3)
    pair[1].pop()


def test_lists_dicts_and_tuples_get_their_items_back() -> None:
    kept = torch.ones(2)
    table: dict[str, Any] = {"keep": torch.ones(1), "n": 3}
    args = ([torch.ones(2), kept], table, (torch.ones(3), [torch.ones(1)]))
    saved = snapshot(args)

    for _ in range(3):  # a restored input restores again
        mangle(args)
        restore(args, saved)

    tensors, _, pair = args
    assert len(tensors) == 2 and tensors[1] is kept  # an item changed in place stays the same tensor
    assert all(torch.equal(t, torch.ones(2)) for t in tensors)
    assert set(table) == {"keep", "n"} and torch.equal(table["keep"], torch.ones(1)) and table["n"] == 3
    assert torch.equal(pair[0], torch.ones(3)) and len(pair[1]) == 1


def test_a_tensor_resized_in_place_is_named() -> None:
    x = torch.ones(4)
    args: tuple[tuple[torch.Tensor], dict[str, Any]] = ((x,), {})
    saved = snapshot(args)
    x.resize_(8)
    with pytest.raises(NotRestorable) as info:
        restore(args, saved)
    assert info.value.path == "[0][0]"
    assert info.value.problem == "fn changed it in place from (4,) torch.float32 to (8,) torch.float32"
