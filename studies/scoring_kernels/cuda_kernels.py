"""CUDA C++ kernels compiled at run time with NVRTC through `torch.cuda._compile_kernel` (a private
torch API, torch >= 2.8): a grid-stride SAXPY and a warp-shuffle row sum.

`_compile_kernel(source, name)` returns a kernel launched as `kernel(grid=(x, y, z), block=(x, y, z),
args=[...], shared_mem=0)` on the current stream. Arguments are passed as torch does it in
torch/cuda/_utils.py: a tensor becomes its data pointer, a Python int a C `int`, a Python float a
C `double`, so the kernels below take `int` and `double` scalars. Each kernel is compiled once per
process, on its first use (well under a second). There is no CPU fallback.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

SAXPY_SOURCE = r"""
extern "C" __global__ void saxpy(const float* x, const float* y, float* out, double alpha, int n) {
    const float a = (float)alpha;
    const int step = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        out[i] = a * x[i] + y[i];
    }
}
"""

ROW_SUM_SOURCE = r"""
extern "C" __global__ void row_sum(const float* x, float* out, int rows, int cols) {
    // One warp per row: each lane adds every 32nd element (consecutive lanes read consecutive
    // addresses), then the warp adds its 32 partial sums with shuffles.
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= rows) {
        return;
    }
    const float* start = x + (long long)row * cols;
    float total = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        total += start[c];
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        total += __shfl_down_sync(0xffffffffu, total, offset);
    }
    if (lane == 0) {
        out[row] = total;
    }
}
"""


def unavailable_reason() -> str | None:
    """Why these kernels cannot run here, or None when they can. Compiles both kernels (once per
    process): a missing NVRTC library or CUDA headers (OSError) is a reason to skip, but an error in
    the kernels' source (RuntimeError with NVRTC's log) is raised, failing the test."""
    if not torch.cuda.is_available():
        return "CUDA C++ kernel compiled with NVRTC: needs a CUDA device (there is no CPU fallback)"
    if not hasattr(torch.cuda, "_compile_kernel"):
        return f"torch.cuda._compile_kernel (NVRTC) is missing from torch {torch.__version__} (added in 2.8)"
    try:
        _kernel(SAXPY_SOURCE, "saxpy")
        _kernel(ROW_SUM_SOURCE, "row_sum")
    except OSError as exc:
        return f"torch.cuda._compile_kernel could not load NVRTC or find the CUDA headers: {exc}"
    return None


@functools.cache
def _kernel(source: str, name: str) -> Any:
    return torch.cuda._compile_kernel(source, name)


def _blocks_for(n: int, threads: int, device: torch.device) -> int:
    # A grid-stride loop needs only enough blocks to fill the GPU: 8 per multiprocessor.
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    return max(1, min((n + threads - 1) // threads, 8 * sms))


def saxpy(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    """alpha * x + y for contiguous fp32 CUDA tensors of one shape, into a new tensor."""
    if x.shape != y.shape or x.dtype != torch.float32 or y.dtype != torch.float32:
        raise ValueError("saxpy needs two fp32 tensors of one shape")
    if not (x.is_cuda and x.is_contiguous() and y.is_contiguous()):
        raise ValueError("saxpy needs contiguous CUDA tensors")
    out = torch.empty_like(x)
    n = x.numel()
    threads = 256
    kernel = _kernel(SAXPY_SOURCE, "saxpy")
    kernel(
        grid=(_blocks_for(n, threads, x.device), 1, 1),
        block=(threads, 1, 1),
        args=[x, y, out, float(alpha), n],
    )
    return out


def torch_saxpy(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    return torch.add(y, x, alpha=alpha)


def row_sum(x: torch.Tensor) -> torch.Tensor:
    """Sum of each row of a contiguous 2-D fp32 CUDA tensor."""
    if x.dim() != 2 or x.dtype != torch.float32 or not (x.is_cuda and x.is_contiguous()):
        raise ValueError("row_sum needs a contiguous 2-D fp32 CUDA tensor")
    rows, cols = x.shape
    out = torch.empty(rows, dtype=x.dtype, device=x.device)
    threads = 256
    rows_per_block = threads // 32
    kernel = _kernel(ROW_SUM_SOURCE, "row_sum")
    grid = ((rows + rows_per_block - 1) // rows_per_block, 1, 1)
    kernel(grid=grid, block=(threads, 1, 1), args=[x, out, rows, cols])
    return out


def torch_row_sum(x: torch.Tensor) -> torch.Tensor:
    return x.sum(dim=1)
