"""Demo of the reports on real kernels: roofline figures of the GELUs, TFLOP/s of a matmul, and
max_ratio failing a deliberately slow kernel. Run by studies/gpu_reports.sh; not part of `pytest`.

test_slow_kernel_fails_its_ratio is meant to FAIL: the manual GELU (about eight passes over memory
on a GPU) against the built-in with max_ratio=1.1, and no baseline anywhere.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from example_kernels import gelu
from example_kernels.gelu import manual_gelu, pytorch_gelu

# 2^28 float32 elements on a GPU: 1 GiB in, 1 GiB out, the size of the lecture's table. Smaller on
# a CPU, where this demo only checks that the reports render.
SIZE = {"cuda": 1 << 28, "cpu": 1 << 22}


def make_input(device: str) -> torch.Tensor:
    return torch.randn(SIZE[device], device=device, generator=torch.Generator(device=device).manual_seed(0))


@pytest.mark.parametrize("implementation", ["manual", "pytorch", "compiled", "cuda", "triton"])
def test_gelu_roofline(kernel_bench: Any, implementation: str) -> None:
    device = kernel_bench.device
    if device != "cuda" and implementation in ("cuda", "triton"):
        pytest.skip(f"the {implementation} GELU is timed on a CUDA device only")
    x = make_input(device)
    # One read and one write per element: at the copy bandwidth this is ~100% of peak.
    kernel_bench(gelu.implementation(implementation), x, reference=pytorch_gelu, bytes=2 * x.nbytes)


def test_gelu_bytes_inferred(kernel_bench: Any) -> None:
    # No bytes= given: the report counts the input and output tensors and says "inferred".
    kernel_bench(pytorch_gelu, make_input(kernel_bench.device))


def test_matmul_tflops(kernel_bench: Any) -> None:
    device = kernel_bench.device
    n = 8192 if device == "cuda" else 1024
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    kernel_bench(torch.matmul, a, b, flops=2 * n**3, bytes=3 * n * n * a.element_size())


def test_slow_kernel_fails_its_ratio(kernel_bench: Any) -> None:
    x = make_input(kernel_bench.device)
    kernel_bench(manual_gelu, x, reference=pytorch_gelu, max_ratio=1.1)


def test_fast_kernel_passes_its_ratio(kernel_bench: Any) -> None:
    device = kernel_bench.device
    x = make_input(device)
    fn = gelu.implementation("triton" if device == "cuda" else "pytorch")
    kernel_bench(fn, x, reference=pytorch_gelu, max_ratio=1.1)
