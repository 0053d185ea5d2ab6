"""Triton kernels of the scoring suite: atomic histogram and row scatter-add, flash-attention forward,
a matmul with one fixed config, RMSNorm (alone and fused with a residual add), SiLU-and-multiply, and a
tiled transpose.

Our own code, after ideas of the public Triton tutorials (online softmax for attention, grouped tile
order for the matmul, one program per row for the norms). Without a CUDA device Triton's interpreter
runs the same kernels on CPU tensors (right answers, meaningless timings): TRITON_INTERPRET has to be
set before Triton is imported, which this module does when no CUDA device is usable (the suite's
conftest.py does the same, earlier). Tile sizes are smaller in the interpreter, where the CPU sizes
are tiny and every program is run in Python.
"""

from __future__ import annotations

import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton
import triton.language as tl

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"

# --- histogram with atomics ---------------------------------------------------------------------


@triton.jit
def _histogram_kernel(values_ptr, bins_ptr, n, n_bins, BLOCK: tl.constexpr, SEM: tl.constexpr):  # type: ignore[no-untyped-def]
    # Every value adds one to its bin in global memory: no privatised copy per program, so the
    # kernel is bound by the atomics' throughput at the output's addresses.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    values = tl.load(values_ptr + offs, mask=inside, other=0)
    counted = inside & (values >= 0) & (values < n_bins)
    ones = tl.full((BLOCK,), 1, dtype=tl.int32)
    tl.atomic_add(bins_ptr + values, ones, mask=counted, sem=SEM)


def histogram(values: torch.Tensor, n_bins: int, sem: str = "relaxed") -> torch.Tensor:
    """Counts of each value of a 1-D int32 tensor in [0, n_bins) as int32 (values outside are left
    out). The output is allocated here, inside the timed call, so the caching allocator decides where
    it lands: the kernel's speed depends on that address."""
    if values.dim() != 1 or values.dtype != torch.int32 or not values.is_contiguous():
        raise ValueError("histogram needs a contiguous 1-D int32 tensor")
    if sem not in ("relaxed", "acquire", "release", "acq_rel"):
        raise ValueError(f"histogram: unknown memory order {sem!r}")
    bins = torch.zeros(n_bins, dtype=torch.int32, device=values.device)
    n = values.numel()
    block = 1024
    _histogram_kernel[(triton.cdiv(n, block),)](values, bins, n, n_bins, BLOCK=block, SEM=sem, num_warps=4)
    return bins


# --- scatter-add of rows (index_add along dim 0) -------------------------------------------------


@triton.jit
def _index_add_kernel(src_ptr, index_ptr, out_ptr, n_rows, D: tl.constexpr, ROWS: tl.constexpr):  # type: ignore[no-untyped-def]
    # ROWS source rows per program; each element is added to its destination row with a float atomic.
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    inside = rows < n_rows
    target = tl.load(index_ptr + rows, mask=inside, other=0)
    cols = tl.arange(0, D)
    values = tl.load(src_ptr + rows[:, None] * D + cols[None, :], mask=inside[:, None], other=0.0)
    tl.atomic_add(out_ptr + target[:, None] * D + cols[None, :], values, mask=inside[:, None], sem="relaxed")


def index_add_rows(src: torch.Tensor, index: torch.Tensor, n_out: int) -> torch.Tensor:
    """out[index[i]] += src[i] into a fresh zero (n_out, D) fp32 tensor (D a power of two)."""
    if src.dim() != 2 or src.dtype != torch.float32 or not src.is_contiguous():
        raise ValueError("index_add_rows needs a contiguous 2-D fp32 source")
    n_rows, d = src.shape
    if index.shape != (n_rows,) or d & (d - 1):
        raise ValueError("index_add_rows needs one index per source row and a power-of-two row width")
    out = torch.zeros(n_out, d, dtype=src.dtype, device=src.device)
    rows = 8 if INTERPRETED else 32
    _index_add_kernel[(triton.cdiv(n_rows, rows),)](src, index, out, n_rows, D=d, ROWS=rows, num_warps=4)
    return out


# --- flash attention, forward ---------------------------------------------------------------------


@triton.jit
def _attend(  # type: ignore[no-untyped-def]
    acc, row_sum, row_max, q, k_ptrs, v_ptrs, start_n, offs_m, offs_n, scale_log2, MASKED: tl.constexpr
):
    # One block of keys: scores in log2 units, then the online-softmax update of the running maximum,
    # the running sum of exponentials and the unnormalised output.
    k = tl.load(k_ptrs)
    scores = tl.dot(q, k) * scale_log2
    if MASKED:
        keep = offs_m[:, None] >= (start_n + offs_n)[None, :]
        scores = tl.where(keep, scores, -1.0e6)
    new_max = tl.maximum(row_max, tl.max(scores, 1))
    p = tl.exp2(scores - new_max[:, None])
    correction = tl.exp2(row_max - new_max)
    row_sum = row_sum * correction + tl.sum(p, 1)
    v = tl.load(v_ptrs)
    acc = acc * correction[:, None]
    acc = tl.dot(p.to(v.dtype), v, acc)
    return acc, row_sum, new_max


@triton.jit
def _attention_kernel(  # type: ignore[no-untyped-def]
    q_ptr, k_ptr, v_ptr, o_ptr, stride_bh, stride_s, seq, scale_log2,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):  # fmt: skip
    # One program per (block of BLOCK_M queries, batch*head). q, k, v and o share one layout:
    # (batch*heads, seq, HEAD_DIM) with contiguous rows.
    start_m = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64) * stride_bh
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + head + offs_m[:, None] * stride_s + offs_d[None, :])
    # K is read as its transpose (HEAD_DIM x BLOCK_N), V as is (BLOCK_N x HEAD_DIM).
    k_ptrs = k_ptr + head + offs_n[None, :] * stride_s + offs_d[:, None]
    v_ptrs = v_ptr + head + offs_n[:, None] * stride_s + offs_d[None, :]
    row_max = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    row_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    # Key blocks that every query of this block sees in full: no mask (all of them without CAUSAL).
    unmasked_end = start_m * BLOCK_M if CAUSAL else seq
    for start_n in range(0, unmasked_end, BLOCK_N):
        acc, row_sum, row_max = _attend(
            acc, row_sum, row_max, q, k_ptrs + start_n * stride_s, v_ptrs + start_n * stride_s,
            start_n, offs_m, offs_n, scale_log2, MASKED=False,
        )  # fmt: skip
    if CAUSAL:
        # The diagonal block: key j is seen by query i only when j <= i.
        for start_n in range(start_m * BLOCK_M, (start_m + 1) * BLOCK_M, BLOCK_N):
            acc, row_sum, row_max = _attend(
                acc, row_sum, row_max, q, k_ptrs + start_n * stride_s, v_ptrs + start_n * stride_s,
                start_n, offs_m, offs_n, scale_log2, MASKED=True,
            )  # fmt: skip
    out = acc / row_sum[:, None]
    tl.store(o_ptr + head + offs_m[:, None] * stride_s + offs_d[None, :], out.to(o_ptr.dtype.element_ty))


def attention_blocks() -> tuple[int, int]:
    """(BLOCK_M, BLOCK_N) of the attention kernel: the sequence length must be a multiple of both."""
    return (16, 16) if INTERPRETED else (128, 64)


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """Softmax(q k^T / sqrt(d)) v for contiguous (batch, heads, seq, d) fp16/bf16 tensors, d a power
    of two and seq a multiple of the kernel's blocks; `causal` hides later keys from each query."""
    if not (q.shape == k.shape == v.shape) or q.dim() != 4:
        raise ValueError("flash_attention needs q, k and v of one (batch, heads, seq, head_dim) shape")
    if not (q.is_contiguous() and k.is_contiguous() and v.is_contiguous()):
        raise ValueError("flash_attention needs contiguous q, k and v")
    batch, heads, seq, head_dim = q.shape
    block_m, block_n = attention_blocks()
    if seq % block_m or head_dim & (head_dim - 1):
        raise ValueError(f"flash_attention needs seq a multiple of {block_m} and a power-of-two head_dim")
    out = torch.empty_like(q)
    scale_log2 = head_dim**-0.5 * math.log2(math.e)
    grid = (seq // block_m, batch * heads)
    _attention_kernel[grid](
        q, k, v, out, seq * head_dim, head_dim, seq, scale_log2,
        HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal,
        num_warps=1 if INTERPRETED else 4, num_stages=1 if INTERPRETED else 3,
    )  # fmt: skip
    return out


# --- matmul with one fixed config -----------------------------------------------------------------


@triton.jit
def _matmul_kernel(  # type: ignore[no-untyped-def]
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, EVEN: tl.constexpr,
    DOT_FP32: tl.constexpr,
):  # fmt: skip
    # Programs walk the output tiles column by column inside bands of GROUP tile rows, so that the
    # programs running at one time share rows of A and columns of B in the L2.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    band = pid // (GROUP * tiles_n)
    first_row = band * GROUP
    band_rows = tl.minimum(tiles_m - first_row, GROUP)
    within = pid - band * GROUP * tiles_n
    tile_m = first_row + within % band_rows
    tile_n = within // band_rows

    rows = tile_m * BM + tl.arange(0, BM)
    cols = tile_n * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BK)):
        if EVEN:  # every tile is whole: no masks on the loads
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_left = K - step * BK
            a = tl.load(a_ptrs, mask=(rows[:, None] < M) & (ks[None, :] < k_left), other=0.0)
            b = tl.load(b_ptrs, mask=(ks[:, None] < k_left) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc) if DOT_FP32 else tl.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


# BM, BN, BK, GROUP, warps, stages: one config for every shape (no autotuning, so no tuning time and
# no process-to-process choice). 128x256x64 in 3 stages needs 144 KiB of shared memory on sm_90.
MATMUL_CONFIG = (16, 16, 16, 4, 1, 1) if INTERPRETED else (128, 256, 64, 8, 8, 3)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b for 2-D fp16/bf16 tensors, accumulated in fp32, stored in a's dtype."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul needs (M, K) @ (K, N), got {tuple(a.shape)} @ {tuple(b.shape)}")
    m, k = a.shape
    n = b.shape[1]
    bm, bn, bk, group, warps, stages = MATMUL_CONFIG
    c = torch.empty((m, n), device=a.device, dtype=a.dtype)
    even = m % bm == 0 and n % bn == 0 and k % bk == 0
    # Triton's interpreter (3.9) multiplies bf16 tiles in tl.dot as if they were integers (their raw
    # bits): there, and only there, bf16 tiles are converted to fp32 before the product.
    dot_fp32 = INTERPRETED and a.dtype == torch.bfloat16
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    _matmul_kernel[grid](
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BM=bm, BN=bn, BK=bk, GROUP=group, EVEN=even, DOT_FP32=dot_fp32,
        num_warps=warps, num_stages=stages,
    )  # fmt: skip
    return c


# --- RMSNorm, and residual add fused with RMSNorm --------------------------------------------------


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, y_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    # One program per row, the whole row in registers (BLOCK >= n_cols).
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inside = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=inside, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    inv_rms = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * stride + cols, (x * inv_rms * w).to(y_ptr.dtype.element_ty), mask=inside)


def _row_warps(block: int) -> int:
    return 1 if INTERPRETED else 4 if block <= 1024 else 8 if block <= 4096 else 16


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last dimension of a contiguous 2-D tensor, computed in fp32."""
    if x.dim() != 2 or not x.is_contiguous():
        raise ValueError("rms_norm needs a contiguous 2-D tensor")
    rows, cols = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    _rms_norm_kernel[(rows,)](x, weight, y, x.stride(0), cols, eps, BLOCK=block, num_warps=_row_warps(block))
    return y


@triton.jit
def _add_rms_norm_kernel(  # type: ignore[no-untyped-def]
    x_ptr, r_ptr, w_ptr, y_ptr, h_ptr, stride, n_cols, eps, BLOCK: tl.constexpr
):
    # h = x + residual is stored in the input dtype and normalised as stored (rounded), as an unfused
    # `h = x + r; rms_norm(h)` would do.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inside = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=inside, other=0.0)
    r = tl.load(r_ptr + row * stride + cols, mask=inside, other=0.0)
    h = (x.to(tl.float32) + r.to(tl.float32)).to(h_ptr.dtype.element_ty)
    tl.store(h_ptr + row * stride + cols, h, mask=inside)
    hf = h.to(tl.float32)
    w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    inv_rms = tl.rsqrt(tl.sum(hf * hf, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * stride + cols, (hf * inv_rms * w).to(y_ptr.dtype.element_ty), mask=inside)


def add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """(rms_norm(x + residual), x + residual) in one pass, for contiguous 2-D tensors of one shape."""
    if x.dim() != 2 or x.shape != residual.shape or not (x.is_contiguous() and residual.is_contiguous()):
        raise ValueError("add_rms_norm needs two contiguous 2-D tensors of one shape")
    rows, cols = x.shape
    y = torch.empty_like(x)
    h = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    _add_rms_norm_kernel[(rows,)](
        x, residual, weight, y, h, x.stride(0), cols, eps, BLOCK=block, num_warps=_row_warps(block)
    )
    return y, h


# --- SiLU(a) * b ------------------------------------------------------------------------------------


@triton.jit
def _silu_mul_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    a = tl.load(a_ptr + offs, mask=inside, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=inside, other=0.0).to(tl.float32)
    y = a * tl.sigmoid(a) * b
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=inside)


def silu_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """silu(a) * b in one pass (the gate of a SwiGLU MLP), computed in fp32."""
    if a.shape != b.shape or not (a.is_contiguous() and b.is_contiguous()):
        raise ValueError("silu_mul needs two contiguous tensors of one shape")
    out = torch.empty_like(a)
    n = a.numel()
    block = 1024
    _silu_mul_kernel[(triton.cdiv(n, block),)](a, b, out, n, BLOCK=block, num_warps=4)
    return out


# --- transpose (a copy) ----------------------------------------------------------------------------


@triton.jit
def _transpose_kernel(  # type: ignore[no-untyped-def]
    x_ptr, out_ptr, n_rows, n_cols, stride_x, stride_out, TILE: tl.constexpr
):
    # One TILE x TILE tile per program: read along x's rows, write along out's rows (Triton moves the
    # tile through shared memory to change the layout in between).
    rows = tl.program_id(0) * TILE + tl.arange(0, TILE)
    cols = tl.program_id(1) * TILE + tl.arange(0, TILE)
    inside = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tile = tl.load(x_ptr + rows[:, None].to(tl.int64) * stride_x + cols[None, :], mask=inside)
    out_ptrs = out_ptr + cols[:, None].to(tl.int64) * stride_out + rows[None, :]
    tl.store(out_ptrs, tl.trans(tile), mask=tl.trans(inside))


def transpose(x: torch.Tensor) -> torch.Tensor:
    """x.T as a new contiguous tensor, for a 2-D tensor with contiguous rows."""
    if x.dim() != 2 or x.stride(1) != 1:
        raise ValueError("transpose needs a 2-D tensor with contiguous rows")
    rows, cols = x.shape
    out = torch.empty((cols, rows), dtype=x.dtype, device=x.device)
    tile = 16 if INTERPRETED else 64
    grid = (triton.cdiv(rows, tile), triton.cdiv(cols, tile))
    _transpose_kernel[grid](x, out, rows, cols, x.stride(0), out.stride(0), TILE=tile, num_warps=4)
    return out
