#!/usr/bin/env python3
"""Compile the scoring suite's Triton kernels for an H200 (sm_90) without a GPU, with the GPU sizes'
constants: a check, on a CPU machine, that they get through Triton's compiler for the real target and
not only its interpreter.

    python3 studies/scoring_kernels/compile_check.py

Like studies/compile_check.py (Triton's ahead-of-time entry point, whose signature format may change
between Triton versions). Prints one line per kernel with its shared memory and registers; exits 1 if
any fails to compile.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

os.environ["TRITON_INTERPRET"] = "0"  # the compiler, not the interpreter, even without a GPU
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from studies.scoring_kernels import triton_kernels as kernels

TARGET = GPUTarget("cuda", 90, 32)


def build(
    label: str,
    fn: Any,
    tensors: dict[str, str],
    scalars: dict[str, int | float],
    constants: dict[str, Any],
    **options: Any,
) -> bool:
    """Compile `fn` as the JIT would specialise it for a GPU call: tensors (name -> dtype) 16-byte
    aligned, integers that are multiples of 16 marked so, integers equal to 1 made constants."""
    signature: dict[str, str] = {}
    constexprs = dict(constants)
    attrs: dict[tuple[int, ...], list[list[Any]]] = {}
    for name in fn.arg_names:
        if name in tensors:
            signature[name] = f"*{tensors[name]}"
            attrs[(fn.arg_names.index(name),)] = [["tt.divisibility", 16]]
        elif name in scalars:
            value = scalars[name]
            if isinstance(value, float):
                signature[name] = "fp32"
            elif value == 1:
                signature[name] = "constexpr"
                constexprs[name] = 1
            else:
                signature[name] = "i32"
                if value % 16 == 0:
                    attrs[(fn.arg_names.index(name),)] = [["tt.divisibility", 16]]
        elif name in constants:
            signature[name] = "constexpr"
        else:
            raise KeyError(f"{label}: no value for argument {name}")
    try:
        compiled = triton.compile(
            ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs),
            target=TARGET,
            options=options,
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
    n, n_bins = 1 << 24, 4096
    for sem in ("relaxed", "acq_rel"):
        ok &= build(
            "histogram",
            kernels._histogram_kernel,
            {"values_ptr": "i32", "bins_ptr": "i32"},
            {"n": n, "n_bins": n_bins},
            {"BLOCK": 1024, "SEM": sem},
            num_warps=4,
        )
    ok &= build(
        "index add",
        kernels._index_add_kernel,
        {"src_ptr": "fp32", "index_ptr": "i64", "out_ptr": "fp32"},
        {"n_rows": 1 << 18},
        {"D": 64, "ROWS": 32},
        num_warps=4,
    )
    seq, head_dim = 2048, 64
    for causal in (False, True):
        ok &= build(
            "attention fp16",
            kernels._attention_kernel,
            dict.fromkeys(("q_ptr", "k_ptr", "v_ptr", "o_ptr"), "fp16"),
            {"stride_bh": seq * head_dim, "stride_s": head_dim, "seq": seq, "scale_log2": 0.18},
            {"HEAD_DIM": head_dim, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": causal},
            num_warps=4,
            num_stages=3,
        )
    bm, bn, bk, group, warps, stages = 128, 256, 64, 8, 8, 3
    m, n, k = 8192, 1024, 4096
    strides = {"stride_am": k, "stride_ak": 1, "stride_bk": n, "stride_bn": 1, "stride_cm": n, "stride_cn": 1}
    for dtype in ("fp16", "bf16"):
        ok &= build(
            f"matmul {dtype}",
            kernels._matmul_kernel,
            dict.fromkeys(("a_ptr", "b_ptr", "c_ptr"), dtype),
            {"M": m, "N": n, "K": k, **strides},
            {"BM": bm, "BN": bn, "BK": bk, "GROUP": group, "EVEN": True, "DOT_FP32": False},
            num_warps=warps,
            num_stages=stages,
        )
    ok &= build(
        "rms norm fp16",
        kernels._rms_norm_kernel,
        dict.fromkeys(("x_ptr", "w_ptr", "y_ptr"), "fp16"),
        {"stride": 1024, "n_cols": 1024, "eps": 1e-6},
        {"BLOCK": 1024},
        num_warps=4,
    )
    ok &= build(
        "add + rms norm bf16",
        kernels._add_rms_norm_kernel,
        dict.fromkeys(("x_ptr", "r_ptr", "w_ptr", "y_ptr", "h_ptr"), "bf16"),
        {"stride": 4096, "n_cols": 4096, "eps": 1e-6},
        {"BLOCK": 4096},
        num_warps=8,
    )
    ok &= build(
        "silu mul fp16",
        kernels._silu_mul_kernel,
        dict.fromkeys(("a_ptr", "b_ptr", "out_ptr"), "fp16"),
        {"n": 1 << 16},
        {"BLOCK": 1024},
        num_warps=4,
    )
    ok &= build(
        "transpose fp16",
        kernels._transpose_kernel,
        dict.fromkeys(("x_ptr", "out_ptr"), "fp16"),
        {"n_rows": 8192, "n_cols": 8192, "stride_x": 8192, "stride_out": 8192},
        {"TILE": 64},
        num_warps=4,
    )
    print("all compiled for sm_90" if ok else "some kernels did not compile", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
