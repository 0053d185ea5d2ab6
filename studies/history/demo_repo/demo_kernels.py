"""Kernels of the demo repository whose history `studies/history/real_history.py` records.

A Triton scale-add (out = alpha * x + y) and a torch.compile'd GELU. The driver edits the marked
lines in later commits: the block size (a planted slowdown) and the GELU approximation (a planted
change of generated code).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

BLOCK = 1024  # elements per Triton program
APPROXIMATE = "none"  # GELU approximation of the compiled kernel and its reference


@triton.jit
def _scale_add_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = idx < n
    x = tl.load(x_ptr + idx, mask=inside)
    y = tl.load(y_ptr + idx, mask=inside)
    tl.store(out_ptr + idx, alpha * x + y, mask=inside)


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float = 2.0) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    _scale_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, alpha, n, BLOCK=BLOCK)
    return out


def reference_scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float = 2.0) -> torch.Tensor:
    return torch.add(y, x, alpha=alpha)


def _gelu(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate=APPROXIMATE)


compiled_gelu = torch.compile(_gelu)


def reference_gelu(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate=APPROXIMATE)
