"""GELU as a Triton kernel.

Without a CUDA device, Triton's interpreter runs the same kernel on CPU tensors (correct answers,
meaningless timings): TRITON_INTERPRET must be set before `triton.jit` sees the kernel.
"""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton
import triton.language as tl

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


@triton.jit
def triton_gelu_kernel(x_ptr, y_ptr, num_elements, BLOCK_SIZE: tl.constexpr):  # type: ignore[no-untyped-def]
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < num_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    # tanh(a) = (e^2a - 1) / (e^2a + 1)
    a = 0.79788456 * (x + 0.044715 * x * x * x)
    e = tl.exp(2 * a)
    y = 0.5 * x * (1 + (e - 1) / (e + 1))
    tl.store(y_ptr + offsets, y, mask=mask)


def triton_gelu(x: torch.Tensor, block_size: int = 1024) -> torch.Tensor:
    if not x.is_contiguous():
        raise ValueError("triton_gelu needs a contiguous tensor")
    y = torch.empty_like(x)
    n = x.numel()
    triton_gelu_kernel[(triton.cdiv(n, block_size),)](x, y, n, BLOCK_SIZE=block_size)
    return y
