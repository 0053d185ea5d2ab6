"""Scatter-add of rows with float atomics: out[index[i]] += src[i], 2^18 source rows of 64 fp32 into
8192 destination rows (64 MiB read, a 2 MiB output that lives in the L2; on an H200).

`triton` adds each element with a relaxed `tl.atomic_add`; `torch_index_add` is
`zeros(...).index_add_(0, index, src)` and `torch_scatter_add` is `zeros(...).scatter_add_(0,
index expanded over the row, src)`, both atomics in PyTorch's CUDA kernels. Every output is made inside
the timed call. The order of the atomic additions varies, so fp32 sums are compared with a tolerance.
"""

from __future__ import annotations

from typing import Any

import torch

from studies.scoring_kernels.common import Tolerance, bench_triton, randint, randn
from studies.scoring_kernels.triton_kernels import index_add_rows

# (source rows, row width, destination rows)
SIZES = {"cuda": (1 << 18, 64, 8192), "cpu": (1000, 16, 37)}
TOLERANCE = Tolerance(rtol=1e-4, atol=1e-4)


def torch_index_add(src: torch.Tensor, index: torch.Tensor, n_out: int) -> torch.Tensor:
    out = torch.zeros(n_out, src.shape[1], dtype=src.dtype, device=src.device)
    return out.index_add_(0, index, src)


def torch_scatter_add(src: torch.Tensor, index: torch.Tensor, n_out: int) -> torch.Tensor:
    out = torch.zeros(n_out, src.shape[1], dtype=src.dtype, device=src.device)
    return out.scatter_add_(0, index[:, None].expand_as(src), src)


def test_index_add(kernel_bench: Any) -> None:
    device = kernel_bench.device
    n_rows, width, n_out = SIZES[device]
    src = randn(n_rows, width, dtype=torch.float32, device=device, seed=21)
    index = randint(0, n_out, n_rows, dtype=torch.int64, device=device, seed=22)
    moved = src.numel() * 4 + index.numel() * 8 + n_out * width * 4
    bench_triton(
        kernel_bench, index_add_rows, src, index, n_out, reference=torch_index_add, bytes=moved, **TOLERANCE
    )
    for name, fn in {"torch_index_add": torch_index_add, "torch_scatter_add": torch_scatter_add}.items():
        kernel_bench(fn, src, index, n_out, reference=torch_index_add, name=name, bytes=moved, **TOLERANCE)
