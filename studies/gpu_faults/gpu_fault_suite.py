"""A Triton kernel that writes far out of bounds, between healthy tests: for studies/gpu_reliability.sh.

Not collected by default (the file name does not match test_*.py); run it by path on a CUDA
machine. Without --kernelperf-isolate the out-of-bounds store poisons the process: test_before
passes, test_out_of_bounds fails naming the kernel, the test_after_* tests error as not measured,
and an update writes nothing. With it, only test_out_of_bounds fails.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

ELEMENTS = 1 << 20
# Four TiB past the output tensor: no allocation is there, so the store is an illegal address.
FAR_ELEMENTS = 1 << 40


def gelu(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


@triton.jit
def store_far_away(x_ptr, y_ptr, n, far, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + far + offsets, x, mask=mask)  # deliberately out of bounds


def out_of_bounds_gelu(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    store_far_away[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), FAR_ELEMENTS, BLOCK=1024)
    return y


def make_input() -> torch.Tensor:
    return torch.randn(ELEMENTS, device="cuda", generator=torch.Generator("cuda").manual_seed(0))


def test_before(kernel_bench: Any) -> None:
    kernel_bench(gelu, make_input(), reference=gelu)


def test_out_of_bounds(kernel_bench: Any) -> None:
    kernel_bench(out_of_bounds_gelu, make_input(), reference=gelu)


def test_after_one(kernel_bench: Any) -> None:
    kernel_bench(gelu, make_input(), reference=gelu)


def test_after_two(kernel_bench: Any) -> None:
    kernel_bench(torch.relu, make_input(), reference=torch.relu)
