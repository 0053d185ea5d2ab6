"""Inputs of a call: recorded from its tensor arguments, and named first when they changed."""

from __future__ import annotations

import torch

from pytest_kernelperf.model.call import TensorInput
from pytest_kernelperf.profiling.inputs import describe_change, input_line, record


def gelu(x: torch.Tensor, *, scale: float = 1.0) -> torch.Tensor:
    return x * scale


def test_records_tensors_by_parameter_name_with_shape_stride_and_dtype() -> None:
    x = torch.zeros(4, 8, dtype=torch.bfloat16).t()
    recorded = record((x,), {"scale": 2.0, "out": torch.zeros(3)}, gelu)
    assert recorded == (
        TensorInput("x", (8, 4), (1, 8), "bfloat16"),
        TensorInput("out", (3,), (1,), "float32"),
    )


def test_positions_name_the_arguments_of_a_function_without_a_signature() -> None:
    assert [t.name for t in record((torch.zeros(2), 3, torch.zeros(1)), {}, None)] == ["#0", "#2"]
    assert [t.name for t in record((torch.zeros(2), torch.zeros(1)), {}, lambda *xs: xs)] == [
        "xs[0]",
        "xs[1]",
    ]


def test_a_grown_input_is_named_with_its_element_counts() -> None:
    old = (TensorInput("x", (67108864,), (1,), "float32"),)
    new = (TensorInput("x", (73819136,), (1,), "float32"),)
    line = input_line(old, new)
    assert line == (
        "inputs differ from the baseline's: x grew 10% (67108864 -> 73819136 elements, shape "
        "(67108864,) -> (73819136,)) (the test changed, not the kernel?)"
    )


def test_dtype_layout_added_and_gone_inputs() -> None:
    old = (TensorInput("x", (4, 8), (8, 1), "float32"), TensorInput("bias", (8,), (1,), "float32"))
    new = (TensorInput("x", (4, 8), (1, 4), "bfloat16"), TensorInput("w", (8,), (1,), "float32"))
    assert describe_change(old, new) == [
        "x float32 -> bfloat16",
        "x strides (8, 1) -> (1, 4) (no longer contiguous)",
        "w: float32 (8,) is new",
        "bias: float32 (8,) is gone",
    ]


def test_same_or_unrecorded_inputs_give_no_line() -> None:
    x = (TensorInput("x", (4,), (1,), "float32"),)
    assert input_line(x, x) is None
    assert input_line(None, x) is None
