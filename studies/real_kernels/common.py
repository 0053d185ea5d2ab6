"""Helpers shared by the study's test modules: inputs, tolerances, and Triton's CPU fallback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

import torch

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}

CPU_CHECK = "Triton interpreter on CPU: untimed"


def randn(*shape: int, dtype: torch.dtype, device: str, seed: int = 0, scale: float = 1.0) -> torch.Tensor:
    """Normal random numbers, the same for a given seed whatever ran before (own generator)."""
    generator = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(*shape, device=device, generator=generator, dtype=torch.float32)
    if scale != 1.0:
        x = x * scale
    return x.to(dtype)


class Tolerance(TypedDict):
    rtol: float
    atol: float


def tolerance(dtype: torch.dtype) -> Tolerance:
    """rtol/atol for comparing two kernels that compute in fp32 and store in `dtype`: a rounding
    difference of one unit in the last place must pass."""
    if dtype in (torch.float16, torch.bfloat16):
        return {"rtol": 1e-2, "atol": 1e-2}
    return {"rtol": 1e-5, "atol": 1e-6}


def bench_triton(
    kernel_bench: Any,
    fn: Callable[..., Any],
    *args: Any,
    reference: Callable[..., Any],
    name: str = "triton",
    **options: Any,
) -> None:
    """Time a Triton kernel on a GPU; check it untimed in Triton's interpreter on the CPU."""
    if kernel_bench.device == "cuda":
        kernel_bench(fn, *args, reference=reference, name=name, **options)
        return
    tolerances = {key: options[key] for key in ("rtol", "atol") if key in options}
    kernel_bench.check(fn, *args, reference=reference, name=name, why=CPU_CHECK, **tolerances)
