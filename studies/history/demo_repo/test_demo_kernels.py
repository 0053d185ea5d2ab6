"""The demo repository's suite: each kernel at a small and a large size, and a built-in softmax
that no commit touches (a series that should show no change point)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from demo_kernels import compiled_gelu, reference_gelu, reference_scale_add, scale_add

if not torch.cuda.is_available():
    pytest.skip("the demo kernels need a CUDA device", allow_module_level=True)

SIZES = {"small": 1 << 16, "large": 1 << 24}


def inputs(n: int, count: int) -> list[torch.Tensor]:
    generator = torch.Generator(device="cuda").manual_seed(0)
    return [torch.randn(n, device="cuda", generator=generator) for _ in range(count)]


@pytest.mark.parametrize("size", list(SIZES))
def test_scale_add(kernel_bench: Any, size: str) -> None:
    x, y = inputs(SIZES[size], 2)
    kernel_bench(scale_add, x, y, reference=reference_scale_add, bytes=3 * x.numel() * 4)


@pytest.mark.parametrize("size", list(SIZES))
def test_gelu(kernel_bench: Any, size: str) -> None:
    (x,) = inputs(SIZES[size], 1)
    kernel_bench(compiled_gelu, x, reference=reference_gelu, bytes=2 * x.numel() * 4)


def test_softmax(kernel_bench: Any) -> None:
    (x,) = inputs(4096 * 4096, 1)
    kernel_bench(torch.softmax, x.view(4096, 4096), -1, bytes=2 * x.numel() * 4)
