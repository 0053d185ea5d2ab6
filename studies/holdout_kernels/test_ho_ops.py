"""A held-out suite: kernels that no study before 2026-12-04 measured or tuned the judge on, chosen to
span the size classes on an H200 (about 3 us to 1 ms): sorts, top-k, arg-reductions, convolutions,
batched GEMMs, FFTs, normalisations, a loss, pooling, resampling, gathers and scatters, and a Triton
kernel of our own at two sizes. Each is checked against another formulation of the same result.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F

from studies.real_kernels.common import bench_triton, randn

from .triton_kernels import clamp_leaky


def sizes(cuda: Any, cpu: Any, device: str) -> Any:
    return cuda if device == "cuda" else cpu


@pytest.mark.parametrize("size", ["small", "large"])
def test_sort(kernel_bench: Any, size: str) -> None:
    device = kernel_bench.device
    n = sizes({"small": 1 << 12, "large": 1 << 24}[size], 3000, device)
    x = randn(n, dtype=torch.float32, device=device, seed=1)
    kernel_bench(
        lambda x: torch.sort(x).values,
        x,
        reference=lambda x: -torch.sort(-x, descending=True).values,
        name="sort",
    )


def test_topk(kernel_bench: Any) -> None:
    device = kernel_bench.device
    x = randn(sizes(1 << 22, 5000, device), dtype=torch.float32, device=device, seed=2)
    kernel_bench(
        lambda x: torch.topk(x, 64).values,
        x,
        reference=lambda x: torch.sort(x, descending=True).values[:64],
        name="topk",
    )


def test_argmax_rows(kernel_bench: Any) -> None:
    device = kernel_bench.device
    x = randn(*sizes((256, 1024), (16, 64), device), dtype=torch.float32, device=device, seed=3)
    kernel_bench(
        lambda x: torch.argmax(x, dim=1),
        x,
        reference=lambda x: torch.max(x, dim=1).indices,
        name="argmax",
    )


@pytest.mark.parametrize("size", ["small", "large"])
def test_conv2d(kernel_bench: Any, size: str) -> None:
    device = kernel_bench.device
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    n, c, hw = sizes({"small": (8, 64, 28), "large": (64, 128, 56)}[size], (2, 8, 12), device)
    x = randn(n, c, hw, hw, dtype=dtype, device=device, seed=4).to(memory_format=torch.channels_last)
    w = randn(c, c, 3, 3, dtype=dtype, device=device, seed=5, scale=0.05)
    w = w.to(memory_format=torch.channels_last)
    kernel_bench(
        lambda x, w: F.conv2d(x, w, padding=1),
        x,
        w,
        reference=lambda x, w: F.conv2d(x.float(), w.float(), padding=1).to(x.dtype),
        name="conv2d",
        rtol=5e-2,
        atol=5e-2,
    )


def test_bmm(kernel_bench: Any) -> None:
    device = kernel_bench.device
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    b, n = sizes((16, 2048), (2, 32), device)
    a = randn(b, n, n, dtype=dtype, device=device, seed=6, scale=0.1)
    c = randn(b, n, n, dtype=dtype, device=device, seed=7, scale=0.1)
    kernel_bench(
        torch.bmm,
        a,
        c,
        reference=lambda a, c: torch.einsum("bij,bjk->bik", a.float(), c.float()).to(a.dtype),
        rtol=5e-2,
        atol=5e-2,
    )


def test_rfft(kernel_bench: Any) -> None:
    device = kernel_bench.device
    x = randn(*sizes((64, 1 << 16), (4, 256), device), dtype=torch.float32, device=device, seed=8)
    kernel_bench(
        lambda x: torch.fft.rfft(x).abs(),
        x,
        reference=lambda x: torch.fft.fft(x)[..., : x.shape[-1] // 2 + 1].abs(),
        name="rfft",
        rtol=1e-3,
        atol=1e-2,
    )


def test_group_norm(kernel_bench: Any) -> None:
    device = kernel_bench.device
    dtype = torch.float16 if device == "cuda" else torch.float32
    x = randn(*sizes((32, 256, 64, 64), (2, 64, 8, 8), device), dtype=dtype, device=device, seed=9)

    def by_hand(x: torch.Tensor) -> torch.Tensor:
        g = x.float().reshape(x.shape[0], 32, -1)
        mean, var = g.mean(-1, keepdim=True), g.var(-1, unbiased=False, keepdim=True)
        return ((g - mean) / torch.sqrt(var + 1e-5)).reshape(x.shape).to(x.dtype)

    kernel_bench(lambda x: F.group_norm(x, 32), x, reference=by_hand, name="group_norm", rtol=1e-2, atol=1e-2)


def test_cross_entropy(kernel_bench: Any) -> None:
    device = kernel_bench.device
    rows, classes = sizes((8192, 32000), (16, 50), device)
    logits = randn(rows, classes, dtype=torch.float32, device=device, seed=10)
    target = torch.arange(rows, device=device) % classes

    def by_hand(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return (torch.logsumexp(logits, 1) - logits.gather(1, target[:, None])[:, 0]).mean()

    kernel_bench(F.cross_entropy, logits, target, reference=by_hand, rtol=1e-4, atol=1e-4)


def test_avg_pool(kernel_bench: Any) -> None:
    device = kernel_bench.device
    shape = sizes((32, 128, 112, 112), (2, 4, 16, 16), device)
    x = randn(*shape, dtype=torch.float32, device=device, seed=11)
    kernel_bench(
        lambda x: F.avg_pool2d(x, 2),
        x,
        reference=lambda x: x.unflatten(3, (-1, 2)).unflatten(2, (-1, 2)).mean((3, 5)),
        name="avg_pool2d",
        rtol=1e-5,
        atol=1e-5,
    )


def test_upsample_nearest(kernel_bench: Any) -> None:
    device = kernel_bench.device
    x = randn(*sizes((8, 64, 256, 256), (1, 2, 8, 8), device), dtype=torch.float32, device=device, seed=12)
    kernel_bench(
        lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
        x,
        reference=lambda x: x.repeat_interleave(2, dim=2).repeat_interleave(2, dim=3),
        name="upsample",
    )


def test_index_select(kernel_bench: Any) -> None:
    device = kernel_bench.device
    rows, width, picks = sizes((65536, 512, 16384), (100, 8, 40), device)
    table = randn(rows, width, dtype=torch.float32, device=device, seed=13)
    index = (torch.arange(picks, device=device) * 7919) % rows
    kernel_bench(
        lambda t, i: torch.index_select(t, 0, i),
        table,
        index,
        reference=lambda t, i: t[i],
        name="index_select",
    )


def test_scatter_add(kernel_bench: Any) -> None:
    device = kernel_bench.device
    n, buckets = sizes((1 << 22, 4096), (1000, 16), device)
    values = torch.ones(n, device=device)
    index = (torch.arange(n, device=device) * 2654435761) % buckets

    def scatter(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return torch.zeros(buckets, device=values.device).scatter_add_(0, index, values)

    kernel_bench(
        scatter,
        values,
        index,
        reference=lambda v, i: torch.bincount(i, weights=v, minlength=buckets).float(),
        name="scatter_add",
    )


def test_masked_fill_small(kernel_bench: Any) -> None:
    device = kernel_bench.device
    x = randn(sizes(1 << 14, 300, device), dtype=torch.float32, device=device, seed=14)
    kernel_bench(
        lambda x: x.masked_fill(x < 0, 0.0),
        x,
        reference=lambda x: torch.clamp(x, min=0.0),
        name="masked_fill",
    )


@pytest.mark.parametrize("size", ["small", "large"])
def test_triton_clamp_leaky(kernel_bench: Any, size: str) -> None:
    device = kernel_bench.device
    n = sizes({"small": 1 << 16, "large": 1 << 26}[size], 4000, device)
    x = randn(n, dtype=torch.float32, device=device, seed=15, scale=4.0)
    bench_triton(
        kernel_bench,
        clamp_leaky,
        x,
        reference=lambda x: torch.where(x > 0, x, 0.1 * x).clamp(-3.0, 3.0),
        name="triton",
    )
