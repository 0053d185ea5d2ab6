"""A Triton kernel of the held-out suite: a leaky ReLU clamped to [-3, 3], one pass over memory."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _clamp_leaky_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.where(x > 0, x, 0.1 * x)
    y = tl.minimum(tl.maximum(y, -3.0), 3.0)
    tl.store(out_ptr + offsets, y, mask=mask)


def clamp_leaky(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    _clamp_leaky_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
    return out
