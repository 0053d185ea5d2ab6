"""Round-to-round and process-to-process noise of real kernels: the data the verdict's noise model
is calibrated on.

A round is one warm-up plus one sampling window (what a measurement re-draws). Each process measures
every kernel for R rounds, kernels interleaved round by round so that slow drift spreads over all of
them, and writes one JSON line per round: the kernel, its size class, the round's median and midmean
(25%-trimmed mean) of the device time, the host latency, the sample count and NVML's throttle state.
Run several processes (`--processes`, each a fresh Python) to see the process-to-process part.

    OUT=out python3 studies/round_noise.py --processes 4 --rounds 10
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def kernels() -> dict[str, tuple[Callable[[], object], Callable[..., object]]]:
    """name -> (call, fn): real kernels from about 1 us to about 1 ms on an H200."""
    import torch
    import torch.nn.functional as F

    sys.path.insert(0, str(ROOT))
    from studies.real_kernels import triton_kernels as tk

    def randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        generator = torch.Generator(device="cuda").manual_seed(0)
        return torch.randn(*shape, device="cuda", generator=generator).to(dtype)

    def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * w

    compiled_rmsnorm = torch.compile(rmsnorm)
    out: dict[str, tuple[Callable[[], object], Callable[..., object]]] = {}

    def add(name: str, fn: Callable[..., object], *args: Any) -> None:
        out[name] = (lambda: fn(*args), fn)

    small16 = (randn(1 << 14, dtype=torch.float16), randn(1 << 14, dtype=torch.float16))
    add("vadd_triton_fp16_2^14", tk.vector_add, *small16)
    add("vadd_torch_fp16_2^14", torch.add, *small16)
    big32 = (randn(1 << 25), randn(1 << 25))
    add("vadd_triton_fp32_2^25", tk.vector_add, *big32)
    add("gelu_torch_fp32_2^20", F.gelu, randn(1 << 20))
    add("gelu_torch_fp32_2^26", F.gelu, randn(1 << 26))
    add("softmax_triton_bf16_256x1024", tk.softmax, randn(256, 1024, dtype=torch.bfloat16))
    add("softmax_triton_fp32_8192x4096", tk.softmax, randn(8192, 4096))
    a_small, b_small = randn(256, 256, dtype=torch.float16), randn(256, 256, dtype=torch.float16)
    add("matmul_triton_fp16_256", tk.matmul, a_small, b_small)
    a, b = randn(4096, 4096, dtype=torch.float16), randn(4096, 4096, dtype=torch.float16)
    add("matmul_triton_fp16_4096", tk.matmul, a, b)
    add("matmul_cublas_fp16_4096", torch.matmul, a, b)
    x, w, bias = (
        randn(8192, 8192, dtype=torch.float16),
        randn(8192, dtype=torch.float16),
        randn(8192, dtype=torch.float16),
    )
    add("layernorm_triton_fp16_8192", tk.layer_norm, x, w, bias)
    xr, wr = randn(4096, 4096, dtype=torch.bfloat16), randn(4096, dtype=torch.bfloat16)
    add("rmsnorm_compiled_bf16_4096", compiled_rmsnorm, xr, wr)
    return out


def measure_process(process: int, rounds: int, out: Path) -> None:
    import statistics

    import torch

    from pytest_kernelperf.measure import health
    from pytest_kernelperf.measure.device import fingerprint
    from pytest_kernelperf.measure.timing import AutoTimer, Target
    from pytest_kernelperf.testing import sampling_plan
    from pytest_kernelperf.verdict.noise import midmean

    device = fingerprint("cuda")
    # One round per measure() call: this script draws the rounds itself, interleaving the kernels.
    plan = sampling_plan(rounds=1, min_samples=10, min_time_s=0.04, max_time_s=0.08, warmup_s=0.01)
    timer = AutoTimer()
    table = kernels()
    for call, _ in table.values():  # compile and autotune before any round
        call()
    torch.cuda.synchronize()
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    with out.open("a") as sink:
        for round_index in range(rounds):
            for name, (call, fn) in table.items():
                began = time.perf_counter()
                timing = timer.measure(Target(call, device, label=name, fn=fn), plan)
                samples = list(timing.device_time.samples_ms)
                host = list(timing.host_latency.samples_ms) if timing.host_latency else []
                reading = timing.health
                row = {
                    "process": process,
                    "gpu": gpu,
                    "kernel": name,
                    "round": round_index,
                    "method": timing.device_time.method,
                    "n": len(samples),
                    "median_ms": statistics.median(samples),
                    "midmean_ms": midmean(samples),
                    "min_ms": min(samples),
                    "host_median_ms": statistics.median(host) if host else None,
                    "host_midmean_ms": midmean(host) if host else None,
                    "throttled": list(reading.throttled) if reading else None,
                    "sm_clock_mhz": reading.end.sm_clock_mhz if reading else None,
                    "wall_s": time.perf_counter() - began,
                }
                sink.write(json.dumps(row) + "\n")
                sink.flush()
    del health


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=1, help="processes at a time")
    parser.add_argument("--gpus", default="", help="comma-separated GPUs to spread processes over")
    parser.add_argument("--budget-s", type=float, default=300)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    out = Path(os.environ.get("OUT", "out"))
    out.mkdir(parents=True, exist_ok=True)
    sink = out / "round_noise.jsonl"
    if args.child is not None:
        measure_process(args.child, args.rounds, sink)
        return 0
    gpus = [g for g in args.gpus.split(",") if g] or [os.environ.get("CUDA_VISIBLE_DEVICES", "0")]
    began = time.monotonic()
    running: list[tuple[int, subprocess.Popen[bytes]]] = []
    next_process = 0
    while next_process < args.processes or running:
        while next_process < args.processes and len(running) < args.jobs:
            if time.monotonic() - began > args.budget_s:
                next_process = args.processes
                break
            env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpus[next_process % len(gpus)]}
            command = [sys.executable, __file__, "--child", str(next_process), "--rounds", str(args.rounds)]
            running.append((next_process, subprocess.Popen(command, env=env, cwd=ROOT)))
            next_process += 1
        time.sleep(0.5)
        for item in list(running):
            if item[1].poll() is not None:
                print(
                    f"process {item[0]} exit {item[1].returncode} at {time.monotonic() - began:.0f} s",
                    flush=True,
                )
                running.remove(item)
    return 0


if __name__ == "__main__":
    sys.exit(main())
