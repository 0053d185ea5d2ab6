"""Memory-bound kernels of several sizes (on an H200, 20-200 us): torch.cumsum (an int32 prefix sum
over 2^24 values, and fp32 rows of 8192 x 1024), a transposing copy of 8192 x 8192 fp16 (Triton
tiles, and torch's `.t().contiguous()`), an embedding gather of 16384 rows of 1024 bf16 from a
32000-row table, and a Triton residual add fused with RMSNorm on 16384 x 4096 bf16 against PyTorch's
two steps.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from studies.scoring_kernels.common import bench_triton, randint, randn, tolerance
from studies.scoring_kernels.triton_kernels import add_rms_norm, transpose

# By device.
CUMSUM_OFFSETS_SIZE = {"cuda": 1 << 24, "cpu": 5000}
CUMSUM_ROWS_SHAPE = {"cuda": (8192, 1024), "cpu": (16, 300)}
TRANSPOSE_SHAPE = {"cuda": (8192, 8192), "cpu": (40, 72)}  # the CPU's is ragged against 16 x 16 tiles
EMBEDDING_SHAPE = {"cuda": (32000, 1024, 16384), "cpu": (500, 64, 300)}  # table rows, width, tokens
ADD_RMS_NORM_SHAPE = {"cuda": (16384, 4096), "cpu": (8, 200)}


def cumsum_offsets(counts: torch.Tensor) -> torch.Tensor:
    return torch.cumsum(counts, dim=0, dtype=torch.int32)


def cumsum_rows(x: torch.Tensor) -> torch.Tensor:
    return torch.cumsum(x, dim=-1)


def torch_transpose(x: torch.Tensor) -> torch.Tensor:
    return x.t().contiguous()


def embedding(ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.embedding(ids, table)


def torch_add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    h = x + residual
    return torch.nn.functional.rms_norm(h, (h.shape[-1],), weight, eps=1e-6), h


def fused_add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    return add_rms_norm(x, residual, weight, eps=1e-6)


@pytest.mark.parametrize("kind", ["offsets", "rows"])
def test_cumsum(kernel_bench: Any, kind: str) -> None:
    device = kernel_bench.device
    if kind == "offsets":
        # Prefix sum of per-bucket counts (int32, exact): the offsets of a grouping or routing step.
        counts = randint(0, 16, CUMSUM_OFFSETS_SIZE[device], dtype=torch.int32, device=device, seed=60)
        moved = 2 * counts.numel() * 4
        kernel_bench(cumsum_offsets, counts, reference=cumsum_offsets, name="torch", bytes=moved)
    else:
        rows, cols = CUMSUM_ROWS_SHAPE[device]
        x = randn(rows, cols, dtype=torch.float32, device=device, seed=61)
        moved = 2 * x.numel() * 4
        kernel_bench(cumsum_rows, x, reference=cumsum_rows, name="torch", bytes=moved, rtol=1e-5, atol=1e-4)


def test_transpose(kernel_bench: Any) -> None:
    device = kernel_bench.device
    rows, cols = TRANSPOSE_SHAPE[device]
    x = randn(rows, cols, dtype=torch.float16, device=device, seed=62)
    moved = 2 * x.numel() * x.element_size()
    bench_triton(kernel_bench, transpose, x, reference=torch_transpose, bytes=moved)
    kernel_bench(torch_transpose, x, reference=torch_transpose, name="torch", bytes=moved)


def test_embedding(kernel_bench: Any) -> None:
    device = kernel_bench.device
    table_rows, width, tokens = EMBEDDING_SHAPE[device]
    table = randn(table_rows, width, dtype=torch.bfloat16, device=device, seed=63)
    ids = randint(0, table_rows, tokens, dtype=torch.int64, device=device, seed=64)
    moved = 2 * tokens * width * table.element_size() + ids.numel() * 8
    kernel_bench(embedding, ids, table, reference=embedding, name="torch", bytes=moved)


def test_add_rms_norm(kernel_bench: Any) -> None:
    device = kernel_bench.device
    rows, cols = ADD_RMS_NORM_SHAPE[device]
    x = randn(rows, cols, dtype=torch.bfloat16, device=device, seed=65)
    residual = randn(rows, cols, dtype=torch.bfloat16, device=device, seed=66)
    weight = randn(cols, dtype=torch.bfloat16, device=device, seed=67)
    moved = 4 * x.numel() * x.element_size()
    tol = tolerance(x.dtype)
    bench_triton(
        kernel_bench,
        fused_add_rms_norm,
        x,
        residual,
        weight,
        reference=torch_add_rms_norm,
        bytes=moved,
        **tol,
    )
    kernel_bench(
        torch_add_rms_norm,
        x,
        residual,
        weight,
        reference=torch_add_rms_norm,
        name="torch",
        bytes=moved,
        **tol,
    )
