"""A transformer MLP block (LayerNorm -> Linear -> GELU -> Linear, plus the residual) in bf16,
torch.compile'd against the same eager module, on an H200: 4096 tokens of width 1024, hidden 4096
(about 69 GFLOP per call in the two Linears, 0.1-0.2 ms).

The suite's only torch.compile call: one compile (a few seconds) per process. Without CUDA it skips
unless KERNELPERF_STUDY_CPU_COMPILE=1 (then tiny sizes, timed on the CPU).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from studies.scoring_kernels.common import Tolerance, randn, require_compile

# (tokens, width, hidden)
SHAPES = {"cuda": (4096, 1024, 4096), "cpu": (16, 64, 256)}


class MLPBlock(nn.Module):
    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = x + self.down(nn.functional.gelu(self.up(self.norm(x))))
        return out


def make_block(width: int, hidden: int, device: str) -> MLPBlock:
    """The block with weights from our own generator (the same whatever ran before), in bf16."""
    block = MLPBlock(width, hidden)
    with torch.no_grad():
        for seed, parameter in enumerate(block.parameters(), start=80):
            scale = parameter.shape[-1] ** -0.5 if parameter.dim() == 2 else 0.1
            parameter.copy_(
                randn(*parameter.shape, dtype=torch.float32, device="cpu", seed=seed, scale=scale)
            )
        block.norm.weight.add_(1.0)
    return block.to(device=device, dtype=torch.bfloat16).eval().requires_grad_(False)


def test_compiled_mlp(kernel_bench: Any) -> None:
    require_compile(kernel_bench)
    device = kernel_bench.device
    tokens, width, hidden = SHAPES[device]
    block = make_block(width, hidden, device)
    compiled = torch.compile(block)
    x = randn(tokens, width, dtype=torch.bfloat16, device=device, seed=90)
    flops = 4 * tokens * width * hidden
    moved = 2 * x.numel() * x.element_size() + 2 * width * hidden * 2
    # bf16 rounding at different points (Inductor fuses the bias, GELU and residual; eager rounds
    # after each op); the output is of order one.
    tol = Tolerance(rtol=3e-2, atol=3e-2)
    kernel_bench(compiled, x, reference=block, name="compiled", flops=flops, bytes=moved, **tol)
    kernel_bench(block, x, reference=block, name="eager", flops=flops, bytes=moved, **tol)
