"""Attention forward, fp16, head dim 64, batch 4 x 16 heads, sequence 1024 and 2048, causal or not (on
an H200): a Triton flash-attention kernel (online softmax, one program per block of 128 queries and
batch*head) against torch.nn.functional.scaled_dot_product_attention on the same inputs.

FLOPs are those of the two matrix products (4 * batch * heads * seq^2 * head_dim), halved when causal;
bytes are q, k and v read once and the output written once.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from studies.scoring_kernels.common import bench_triton, randn, tolerance
from studies.scoring_kernels.triton_kernels import flash_attention

# (batch, heads, seq, head_dim). The CPU's sequences are 3 and 4 blocks of the interpreter's 16.
SHAPES = {
    "cuda": {"s1024": (4, 16, 1024, 64), "s2048": (4, 16, 2048, 64)},
    "cpu": {"s1024": (1, 2, 48, 16), "s2048": (2, 1, 64, 32)},
}


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("size", ["s1024", "s2048"])
def test_attention(kernel_bench: Any, size: str, causal: bool) -> None:
    device = kernel_bench.device
    batch, heads, seq, head_dim = SHAPES[device][size]
    q, k, v = (
        randn(batch, heads, seq, head_dim, dtype=torch.float16, device=device, seed=s) for s in (30, 31, 32)
    )
    flops = 4 * batch * heads * seq * seq * head_dim // (2 if causal else 1)
    moved = 4 * q.numel() * q.element_size()
    tol = tolerance(torch.float16)
    bench_triton(
        kernel_bench, flash_attention, q, k, v, causal, reference=sdpa, flops=flops, bytes=moved, **tol
    )
    kernel_bench(sdpa, q, k, v, causal, reference=sdpa, name="sdpa", flops=flops, bytes=moved, **tol)
