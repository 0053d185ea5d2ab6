"""Histogram with atomics: 2^24 int32 values in [0, 4096) into 4096 int32 bins (on an H200).

`triton_relaxed` adds one to each value's bin with a relaxed `tl.atomic_add` straight into global
memory, into an output made with `torch.zeros` inside the timed call: where the caching allocator
puts that output decides the speed (0.48 ms or 0.85 ms on an H200, by output address), so this
kernel's level can move between processes with nothing changed. `triton_acq_rel` is the same kernel
with acquire-release atomics. `torch` is torch.histc on the same values (for this many bins, the
same one-atomic-per-value algorithm in global memory; on the CPU, which has no integer histc,
torch.bincount). Every output is compared exactly with torch.bincount.
"""

from __future__ import annotations

from typing import Any

import torch

from studies.scoring_kernels.common import bench_triton, randint
from studies.scoring_kernels.triton_kernels import histogram

# (values, bins). The CPU size is not a multiple of the kernel's 1024-value block.
SIZES = {"cuda": (1 << 24, 4096), "cpu": (5000, 256)}


def bincount(values: torch.Tensor, n_bins: int) -> torch.Tensor:
    return torch.bincount(values, minlength=n_bins).to(torch.int32)


def torch_histogram(values: torch.Tensor, n_bins: int) -> torch.Tensor:
    """torch.histc on CUDA (int32 in, int32 out, no host synchronisation with min < max given)."""
    if values.is_cuda:
        return torch.histc(values, bins=n_bins, min=0, max=n_bins)
    return bincount(values, n_bins)


def histogram_acq_rel(values: torch.Tensor, n_bins: int) -> torch.Tensor:
    return histogram(values, n_bins, sem="acq_rel")


def test_histogram(kernel_bench: Any) -> None:
    device = kernel_bench.device
    n, n_bins = SIZES[device]
    values = randint(0, n_bins, n, dtype=torch.int32, device=device, seed=20)
    moved = values.numel() * values.element_size() + n_bins * 4
    bench_triton(
        kernel_bench, histogram, values, n_bins, reference=bincount, name="triton_relaxed", bytes=moved
    )
    bench_triton(
        kernel_bench,
        histogram_acq_rel,
        values,
        n_bins,
        reference=bincount,
        name="triton_acq_rel",
        bytes=moved,
    )
    kernel_bench(torch_histogram, values, n_bins, reference=bincount, name="torch", bytes=moved)
