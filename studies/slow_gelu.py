"""The Triton GELU with a set amount of extra dependent arithmetic per element.

studies/verdicts.py uses it to slow a small kernel down by a chosen fraction: adding elements does
not (a 2^20-element GELU runs in waves of blocks, and 10% more elements cost 3%), extra arithmetic
on each element's critical path does, in steps small enough to calibrate.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def gelu_work_kernel(x_ptr, y_ptr, num_elements, WORK: tl.constexpr, BLOCK_SIZE: tl.constexpr):  # type: ignore[no-untyped-def]
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < num_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    a = 0.79788456 * (x + 0.044715 * x * x * x)
    e = tl.exp(2 * a)
    y = 0.5 * x * (1 + (e - 1) / (e + 1))
    acc = x
    for _ in tl.static_range(WORK):  # a dependent chain: each step waits for the last
        acc = acc * 0.999 + 0.001
    # Scaled to vanish against y, yet kept: the compiler cannot drop the chain.
    tl.store(y_ptr + offsets, y + acc * 1e-30, mask=mask)


def gelu_with_work(x: torch.Tensor, work: int) -> torch.Tensor:
    y = torch.empty_like(x)
    n = x.numel()
    gelu_work_kernel[(triton.cdiv(n, 1024),)](x, y, n, WORK=work, BLOCK_SIZE=1024)
    return y
