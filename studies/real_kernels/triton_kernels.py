"""Triton kernels for the real-kernel study: vector add, fused softmax, matmul, layer norm.

Written after the ideas of the public Triton tutorials (one program per block or per row, masked
loads for ragged edges, grouped tile order for the matmul), in our own code. Without a CUDA device
Triton's interpreter runs the same kernels on CPU tensors (right answers, meaningless timings):
TRITON_INTERPRET has to be set before Triton is imported, which this module does when no CUDA device
is usable (the suite's conftest.py does the same, earlier).
"""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton
import triton.language as tl

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


# --- vector add ---------------------------------------------------------------------------------


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    start = tl.program_id(0) * BLOCK
    idx = start + tl.arange(0, BLOCK)
    inside = idx < n
    a = tl.load(x_ptr + idx, mask=inside)
    b = tl.load(y_ptr + idx, mask=inside)
    tl.store(out_ptr + idx, a + b, mask=inside)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x + y for two contiguous tensors of one shape and dtype, 1024 elements per program."""
    if x.shape != y.shape or not (x.is_contiguous() and y.is_contiguous()):
        raise ValueError("vector_add needs two contiguous tensors of the same shape")
    out = torch.empty_like(x)
    n = x.numel()
    block = 1024
    _add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    return out


# --- fused softmax over the last dimension --------------------------------------------------------


@triton.jit
def _softmax_kernel(  # type: ignore[no-untyped-def]
    in_ptr, out_ptr, in_stride, out_stride, n_rows, n_cols, BLOCK: tl.constexpr
):
    # One program per row, looping over rows with a stride of the grid size: the whole row lives in
    # registers (BLOCK is the next power of two of n_cols), read once, written once.
    first = tl.program_id(0)
    step = tl.num_programs(0)
    cols = tl.arange(0, BLOCK)
    inside = cols < n_cols
    for row in range(first, n_rows, step):
        x = tl.load(in_ptr + row * in_stride + cols, mask=inside, other=-float("inf")).to(tl.float32)
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        y = e / tl.sum(e, axis=0)
        tl.store(out_ptr + row * out_stride + cols, y.to(out_ptr.dtype.element_ty), mask=inside)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension of a 2-D tensor, computed in fp32, stored in x's dtype."""
    if x.dim() != 2 or x.stride(1) != 1:
        raise ValueError("softmax needs a 2-D tensor with contiguous rows")
    rows, cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
    # Enough programs to fill the GPU a few times over; each walks its share of the rows.
    programs = min(rows, 4 * _sm_count(x.device))
    _softmax_kernel[(programs,)](x, out, x.stride(0), out.stride(0), rows, cols, BLOCK=block, num_warps=warps)
    return out


def _sm_count(device: torch.device) -> int:
    if device.type != "cuda":
        return 4
    return int(torch.cuda.get_device_properties(device).multi_processor_count)


# --- matmul with autotuning -----------------------------------------------------------------------


def _matmul_configs() -> list[triton.Config]:
    if INTERPRETED:
        # One config: the autotuner then runs it without benchmarking (nothing to time on the CPU).
        return [triton.Config({"BM": 16, "BN": 16, "BK": 16, "GROUP": 4}, num_warps=1, num_stages=1)]
    shapes = [
        # BM, BN, BK, GROUP, warps, stages
        (128, 256, 64, 8, 8, 3),
        (128, 128, 64, 8, 4, 4),
        (128, 64, 32, 8, 4, 4),
        (64, 128, 32, 8, 4, 4),
        (64, 64, 64, 8, 4, 3),
        (32, 64, 32, 8, 2, 5),
    ]
    return [
        triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP": g}, num_warps=w, num_stages=s)
        for bm, bn, bk, g, w, s in shapes
    ]


@triton.autotune(configs=_matmul_configs(), key=["M", "N", "K"])
@triton.jit
def _matmul_kernel(  # type: ignore[no-untyped-def]
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
):  # fmt: skip
    # Tiles are visited in groups of GROUP rows of tiles, so that neighbouring programs share
    # A's rows and B's columns in the L2.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP * tiles_n
    group = pid // per_group
    first_m = group * GROUP
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP)
    tile_m = first_m + (pid % per_group) % rows_in_group
    tile_n = (pid % per_group) // rows_in_group

    offs_m = tile_m * BM + tl.arange(0, BM)
    offs_n = tile_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_tile = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_tile = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        left = K - k * BK
        a = tl.load(a_tile, mask=(offs_m[:, None] < M) & (offs_k[None, :] < left), other=0.0)
        b = tl.load(b_tile, mask=(offs_k[:, None] < left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BK * stride_ak
        b_tile += BK * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    c_tile = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_tile, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b for 2-D tensors, accumulated in fp32, stored in a's dtype; tile sizes autotuned per shape."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul needs (M, K) @ (K, N), got {tuple(a.shape)} @ {tuple(b.shape)}")
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), device=a.device, dtype=a.dtype)

    def grid(meta: dict[str, int]) -> tuple[int]:
        return (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)

    _matmul_kernel[grid](
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1)
    )
    return c


def autotuned_config() -> str:
    """The config the matmul's autotuner used for its last call, e.g. `BM=128 BN=256 BK=64 GROUP=8 w8 s3`."""
    config = getattr(_matmul_kernel, "best_config", None)
    if config is None:
        return "none"
    sizes = " ".join(f"{key}={value}" for key, value in sorted(config.kwargs.items()))
    return f"{sizes} w{config.num_warps} s{config.num_stages}"


# --- layer norm, forward ------------------------------------------------------------------------


@triton.jit
def _layer_norm_kernel(  # type: ignore[no-untyped-def]
    x_ptr, y_ptr, w_ptr, b_ptr, stride, n_cols, eps, BLOCK: tl.constexpr
):
    # One program per row; the row is read in BLOCK-wide chunks twice (statistics, then output),
    # so rows wider than BLOCK work too.
    row = tl.program_id(0)
    x_row = x_ptr + row * stride
    y_row = y_ptr + row * stride
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        total += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(total, axis=0) / n_cols
    squares = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        d = tl.where(cols < n_cols, x - mean, 0.0)
        squares += d * d
    inv_std = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        inside = cols < n_cols
        x = tl.load(x_row + cols, mask=inside, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=inside, other=0.0).to(tl.float32)
        y = (x - mean) * inv_std * w + b
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=inside)


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Layer norm over the last dimension of a 2-D tensor with contiguous rows (forward only)."""
    if x.dim() != 2 or x.stride(1) != 1:
        raise ValueError("layer_norm needs a 2-D tensor with contiguous rows")
    rows, cols = x.shape
    y = torch.empty_like(x)
    # Chunks of at most 4096 elements: wide rows take a few trips instead of spilling registers.
    block = min(4096, triton.next_power_of_2(cols))
    warps = 8 if block >= 2048 else 4
    _layer_norm_kernel[(rows,)](x, y, weight, bias, x.stride(0), cols, eps, BLOCK=block, num_warps=warps)
    return y


def torch_layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps=1e-5)
