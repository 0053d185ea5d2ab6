"""The five GELUs under kernel_bench: checked against PyTorch's built-in, timed, compared.

`pytest --kernelperf example_kernels` is the main job. On a machine without a GPU the CUDA kernel
skips, Triton is checked in interpreter mode (untimed), and the rest are timed on the CPU.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from example_kernels.gelu import IMPLEMENTATIONS, implementation, pytorch_gelu

# 2^24 float32 elements: 64 MiB in and 64 MiB out, past the H200's 60 MiB L2, so the kernels
# stream from device memory. Smaller on the CPU, where the Triton interpreter is slow.
SIZE = {"cuda": 1 << 24, "cpu": 1 << 20}


def make_input(device: str) -> torch.Tensor:
    generator = torch.Generator(device=device).manual_seed(0)
    return torch.randn(SIZE[device], device=device, generator=generator)


@pytest.mark.parametrize("name", IMPLEMENTATIONS)
def test_gelu(kernel_bench: Any, name: str) -> None:
    device = kernel_bench.device
    if name == "cuda" and device != "cuda":
        pytest.skip("the CUDA GELU needs a CUDA device (torch.cuda.is_available() is False here)")
    x = make_input(device)
    fn = implementation(name)
    if name == "triton" and device != "cuda":
        kernel_bench.check(fn, x, reference=pytorch_gelu, why="Triton interpreter on CPU: untimed")
        return
    # One read and one write of every element: the fewest bytes GELU can move.
    kernel_bench(fn, x, reference=pytorch_gelu, bytes=2 * x.numel() * x.element_size())
