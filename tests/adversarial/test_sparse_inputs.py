"""Tensors that are not plain strided ones (sparse COO, CSR, CSC and BSR, nested, meta) as
kernel_bench's arguments and answers: the input snapshot, the in-place check, restore_inputs, the
recorded inputs and the reference check take them, and say what they cannot check; none crashes."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import torch
from conftest import Project

from pytest_kernelperf.correctness import Mismatch, Uncomparable, assert_matches, mutated, snapshot

MODULE = """
import pytest
import torch

LAYOUTS = {
    "coo": lambda: torch.eye(4).to_sparse(),
    "csr": lambda: torch.eye(4).to_sparse_csr(),
    "csc": lambda: torch.eye(4).to_sparse_csc(),
    "bsr": lambda: torch.eye(4).to_sparse_bsr((2, 2)),
}

def densify(x):
    return x.to_dense() * 2

densify.fake_ms = 1.0

def triple_in_place(x):
    x.values().mul_(3)
    return x.to_dense()

triple_in_place.fake_ms = 1.0

@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_read(kernel_bench, layout):
    kernel_bench(densify, LAYOUTS[layout](), reference=lambda x: x.to_dense() + x.to_dense())

@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_written(kernel_bench, layout):
    expected = lambda x: x.to_dense() * 3
    kernel_bench(triple_in_place, LAYOUTS[layout](), reference=expected, restore_inputs=True)

def first_doubled(x):
    x.unbind()[0].mul_(2)
    return x.unbind()[1]

first_doubled.fake_ms = 1.0

def test_nested(kernel_bench):
    x = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    kernel_bench(first_doubled, x, reference=lambda x: x.unbind()[1])

def doubled(x):
    return x * 2

doubled.fake_ms = 1.0

def test_meta(kernel_bench):
    kernel_bench(doubled, torch.ones(4, device="meta"), reference=lambda x: x + x)

def test_sparse_answer(kernel_bench):
    kernel_bench(doubled, torch.eye(4).to_sparse_csr(), reference=lambda x: (x.to_dense() * 2).to_sparse())
"""

IN_PLACE = "fn modified its input in place (args[0]); the reference was given the original values"


def test_sparse_nested_and_meta_arguments_are_checked_and_recorded(project: Project) -> None:
    project.module(MODULE)
    report = project.pytester.path / "run.json"

    result = project.run(
        "--kernelperf-update-baselines", f"--kernelperf-json={report}", "-W", "ignore::UserWarning"
    )

    result.assert_outcomes(passed=11)
    notes = {r["nodeid"].split("::")[1]: r["notes"] for r in json.loads(report.read_text())["results"]}
    for layout in ("coo", "csr", "csc", "bsr"):
        assert IN_PLACE not in notes[f"test_read[{layout}]"]
        assert IN_PLACE in notes[f"test_written[{layout}]"]  # the values changed, the pattern kept
    assert IN_PLACE in notes["test_nested"]  # a component changed
    assert not any("in place" in note for note in notes["test_meta"])  # no values, none changed
    assert "test_meta" in project.baseline_file.read_text()


def test_a_layout_it_cannot_compare_is_said_not_checked() -> None:
    x = torch.ones(4).to_mkldnn()
    before = snapshot(((x,), {}))

    found = mutated(before, ((x,), {}))

    assert found.changed == ()
    assert found.unchecked == (("[0][0]", "a tensor of layout torch._mkldnn"),)


def test_a_changed_sparsity_pattern_is_a_change() -> None:
    x = torch.eye(3).to_sparse()
    before = snapshot(((x,), {}))
    y = torch.ones(3, 3).to_sparse()  # more entries, same shape

    assert mutated(before, ((y,), {})).changed == ("[0][0]",)


# torch's own warnings that its sparse CSR and nested tensors are in beta and prototype.
BETA_LAYOUTS = pytest.mark.filterwarnings("ignore:.*(beta|prototype):UserWarning")
ANSWERS: dict[str, Callable[[], tuple[torch.Tensor, torch.Tensor]]] = {
    "csr-dense": lambda: (torch.eye(3).to_sparse_csr(), torch.eye(3)),
    "dense-coo": lambda: (torch.eye(3), torch.eye(3).to_sparse()),
    "nested": lambda: (
        torch.nested.nested_tensor([torch.ones(2)]),
        torch.nested.nested_tensor([torch.ones(2)]),
    ),
    "meta": lambda: (torch.ones(2, device="meta"), torch.ones(2, device="meta")),
}


@BETA_LAYOUTS
@pytest.mark.parametrize("kind", list(ANSWERS))
def test_answers_of_other_layouts_compare_by_value(kind: str) -> None:
    actual, expected = ANSWERS[kind]()
    assert_matches(actual, expected)
    if actual.device.type != "meta":
        with pytest.raises(Mismatch):
            assert_matches(actual * 2, expected)


@BETA_LAYOUTS
def test_large_sparse_answers_compare_by_their_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_kernelperf import correctness

    monkeypatch.setattr(correctness, "DENSE_COMPARE_LIMIT", 4)
    x = torch.eye(3).to_sparse_csr()
    assert_matches(x, x.clone())
    with pytest.raises(Mismatch, match=r"output\.values\(\)"):
        assert_matches(x * 2, x)
    with pytest.raises(Mismatch, match="indices differ"):
        assert_matches(torch.ones(3, 3).to_sparse_csr(), x)
    with pytest.raises(Uncomparable, match="of one layout"):
        assert_matches(x.to_sparse_coo(), x)
