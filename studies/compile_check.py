#!/usr/bin/env python3
"""Compile the suite's Triton kernels for an H200 (sm_90) without a GPU: a check, on a CPU
machine, that they get through Triton's compiler for the real target and not only its interpreter.

    python3 studies/compile_check.py            # every kernel and every matmul autotune config

Uses Triton's ahead-of-time entry point (`triton.compile` of an `ASTSource` for a `GPUTarget`),
whose signature format is Triton's own and may change between Triton versions. Prints one line per
kernel with the shared memory it needs; exits 1 if any fails to compile.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

os.environ["TRITON_INTERPRET"] = "0"  # the compiler, not the interpreter, even without a GPU
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from studies.real_kernels import triton_kernels as kernels

TARGET = GPUTarget("cuda", 90, 32)


def build(label: str, fn: Any, signature: dict[str, str], constants: dict[str, Any], **options: Any) -> bool:
    full = {**signature, **dict.fromkeys(constants, "constexpr")}
    try:
        compiled = triton.compile(
            ASTSource(fn=fn, signature=full, constexprs=constants), target=TARGET, options=options
        )
    except Exception as exc:  # report every kernel, then fail
        print(f"FAILED {label} {constants} {options}: {type(exc).__name__}: {exc}", flush=True)
        return False
    print(
        f"ok     {label} {constants} {options}: {compiled.metadata.shared} bytes of shared memory", flush=True
    )
    return True


def main() -> int:
    ok = True
    for dtype in ("fp32", "fp16"):
        pointers = dict.fromkeys(("x_ptr", "y_ptr", "out_ptr"), f"*{dtype}")
        ok &= build(f"vector add {dtype}", kernels._add_kernel, {**pointers, "n": "i32"}, {"BLOCK": 1024})
    for dtype in ("fp32", "bf16"):
        signature = {
            **dict.fromkeys(("in_ptr", "out_ptr"), f"*{dtype}"),
            **dict.fromkeys(("in_stride", "out_stride", "n_rows", "n_cols"), "i32"),
        }
        ok &= build(f"softmax {dtype}", kernels._softmax_kernel, signature, {"BLOCK": 4096}, num_warps=8)
    for dtype in ("fp16", "bf16"):
        signature = {
            **dict.fromkeys(("x_ptr", "y_ptr", "w_ptr", "b_ptr"), f"*{dtype}"),
            "stride": "i32",
            "n_cols": "i32",
            "eps": "fp32",
        }
        ok &= build(
            f"layer norm {dtype}", kernels._layer_norm_kernel, signature, {"BLOCK": 4096}, num_warps=8
        )
    signature = {
        **dict.fromkeys(("a_ptr", "b_ptr", "c_ptr"), "*fp16"),
        **dict.fromkeys(
            ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm"), "i32"
        ),
        "stride_cn": "i32",
    }
    for config in kernels._matmul_configs():
        ok &= build(
            "matmul fp16",
            kernels._matmul_kernel.fn,
            signature,
            dict(config.kwargs),
            num_warps=config.num_warps,
            num_stages=config.num_stages,
        )
    print("all compiled for sm_90" if ok else "some kernels did not compile", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
