from __future__ import annotations

import pytest
import torch

from pytest_kernelperf.correctness import Mismatch, assert_matches, default_tolerances


def test_equal_outputs_pass() -> None:
    x = torch.randn(100)
    assert_matches(x.clone(), x)
    assert_matches((x, x * 2), [x, x * 2])


def test_one_percent_off_is_a_mismatch_with_counts_and_errors() -> None:
    expected = torch.linspace(1, 2, 1000)
    with pytest.raises(Mismatch) as info:
        assert_matches(expected * 1.01, expected)
    message = str(info.value)
    assert message.startswith("mismatch in output: 1000 of 1000 elements (100%)")
    assert "max abs error 0.02 at index (999,)" in message
    assert "max rel error 0.01" in message


def test_a_single_wrong_element_is_located() -> None:
    expected = torch.zeros(4, 5)
    actual = expected.clone()
    actual[2, 3] = 1.0
    with pytest.raises(Mismatch, match=r"1 of 20 elements .* at index \(2, 3\) \(got 1, expected 0\)"):
        assert_matches(actual, expected)


def test_nan_where_the_reference_has_none_is_a_mismatch() -> None:
    expected = torch.ones(8)
    actual = expected.clone()
    actual[5] = float("nan")
    with pytest.raises(Mismatch, match="1 NaN where the reference has none"):
        assert_matches(actual, expected)


def test_nan_matching_nan_and_equal_infinities_pass() -> None:
    values = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0])
    assert_matches(values.clone(), values)
    with pytest.raises(Mismatch):
        assert_matches(torch.tensor([float("inf")]), torch.tensor([-float("inf")]))


def test_dtype_aware_tolerances() -> None:
    assert default_tolerances(torch.bfloat16) == (1.6e-2, 1e-5)
    assert default_tolerances(torch.int32) == (0.0, 0.0)
    expected = torch.linspace(1, 2, 64, dtype=torch.bfloat16)
    assert_matches((expected.float() * 1.004).to(torch.bfloat16), expected)  # within bf16 rounding
    with pytest.raises(Mismatch):
        assert_matches((expected.float() * 1.004), expected.float())  # not within fp32's


def test_explicit_tolerances_override() -> None:
    expected = torch.ones(10)
    assert_matches(expected * 1.01, expected, rtol=0.02, atol=0)


def test_shape_dtype_and_structure_mismatches() -> None:
    with pytest.raises(Mismatch, match="shape"):
        assert_matches(torch.ones(3), torch.ones(4))
    with pytest.raises(Mismatch, match="dtype"):
        assert_matches(torch.ones(3, dtype=torch.float64), torch.ones(3))
    with pytest.raises(Mismatch, match="2 outputs, reference has 1"):
        assert_matches((torch.ones(1), torch.ones(1)), (torch.ones(1),))
    with pytest.raises(Mismatch, match="expected a tensor"):
        assert_matches([1.0], torch.ones(1))


def test_integer_outputs_compare_exactly() -> None:
    with pytest.raises(Mismatch, match="1 of 3"):
        assert_matches(torch.tensor([1, 2, 4]), torch.tensor([1, 2, 3]))
