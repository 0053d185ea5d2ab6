"""An in-place kernel timed with and without `restore_inputs=True` (run on a GPU by hand:
`pytest --kernelperf studies/demo/test_in_place.py`): with it, every timed call starts from the
original values, and the inputs are put back outside what is timed."""

from __future__ import annotations

from typing import Any

import pytest
import torch


def bump(x: torch.Tensor) -> torch.Tensor:
    return x.add_(1)


@pytest.mark.parametrize("restore", [True, False])
def test_bump(kernel_bench: Any, restore: bool) -> None:
    x = torch.zeros(1 << 20, device=kernel_bench.device)
    result = kernel_bench(bump, x, name=f"restore={restore}", restore_inputs=restore)
    calls = int(x[0].item())
    print(f"restore={restore}: {result.level_ms} ms, {calls} increments left in the input")
    if restore:  # put back before every timed call: only the last call's increment remains
        assert calls == 1, calls
    else:  # each call saw the previous call's output
        assert calls > 10, calls
