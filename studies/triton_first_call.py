"""What a Triton kernel's first call costs in a process, with Triton's disk cache warm (a GPU study).

In judged runs of the scoring suite on H200s (2026-12-02) each Triton kernel's "first call" phase
(kernel_bench's check: fn once, the reference once, the comparison) took 0.35-0.77 s, the same with
Triton's cache cold or warm, where the tests before the compiled MLP block paid 0.07-0.08 s for a new
specialisation of the attention kernel. This times, in fresh processes, each kernel's first call
(fn once and a synchronize):

* `plain`: torch and the kernels imported, nothing else;
* `after compile`: after torch._dynamo was imported and a function compiled, as in the suite after
  its compiled test; then with kernel_bench's fresh compile context before each call.

and prints a cProfile of the slowest first call of each process.

    python studies/triton_first_call.py        # on a GPU, after the suite has filled Triton's cache
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODES = ("plain", "after compile", "after compile, fresh context")


def calls() -> list[tuple[str, Callable[[], Any]]]:
    import torch

    from studies.scoring_kernels import triton_kernels as tk
    from studies.scoring_kernels.common import randn

    def r(*shape: int, seed: int, dtype: torch.dtype = torch.float16) -> torch.Tensor:
        return randn(*shape, dtype=dtype, device="cuda", seed=seed)

    x, w = r(64, 1024, seed=1), r(1024, seed=2)
    a, b = r(1 << 16, seed=3), r(1 << 16, seed=4)
    m1, m2 = r(4096, 4096, seed=5), r(4096, 4096, seed=6)
    values = torch.randint(0, 256, (1 << 20,), device="cuda", dtype=torch.int32)
    return [
        ("rms_norm", lambda: tk.rms_norm(x, w)),
        ("silu_mul", lambda: tk.silu_mul(a, b)),
        ("matmul", lambda: tk.matmul(m1, m2)),
        ("transpose", lambda: tk.transpose(m1)),
        ("histogram", lambda: tk.histogram(values, 256)),
    ]


def child(mode: str) -> None:
    began = time.perf_counter()
    import torch

    sys.path.insert(0, str(ROOT))
    table = calls()
    torch.cuda.synchronize()
    print(f"  import torch, kernels and inputs: {time.perf_counter() - began:.2f} s")
    fresh: Callable[[], object] | None = None
    if mode != "plain":
        t0 = time.perf_counter()
        compiled = torch.compile(lambda t: torch.nn.functional.gelu(t) * 2)
        compiled(torch.ones(1024, device="cuda"))
        torch.cuda.synchronize()
        print(f"  torch._dynamo imported and a function compiled: {time.perf_counter() - t0:.2f} s")
        if mode.endswith("fresh context"):
            from pytest_kernelperf.profiling.dynamo_watch import fresh_context

            fresh = fresh_context
    slowest: tuple[float, str, str] = (0.0, "", "")
    for name, call in table:
        if fresh is not None:
            t0 = time.perf_counter()
            fresh()
            print(f"  fresh compile context: {time.perf_counter() - t0:.3f} s")
        profiler = cProfile.Profile()
        t0 = time.perf_counter()
        profiler.enable()
        call()
        torch.cuda.synchronize()
        profiler.disable()
        seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        call()
        torch.cuda.synchronize()
        again = time.perf_counter() - t0
        print(f"  {name}: first call {seconds:.3f} s, second {1e3 * again:.1f} ms")
        if seconds > slowest[0]:
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(18)
            slowest = (seconds, name, text.getvalue())
    print(f"  cProfile of the slowest first call ({slowest[1]}, {slowest[0]:.3f} s):")
    print("\n".join("    " + line for line in slowest[2].splitlines() if line.strip()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    for mode in MODES:
        print(f"== {mode}", flush=True)
        began = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--child", mode], check=False, cwd=ROOT)
        print(f"  process: {time.perf_counter() - began:.1f} s", flush=True)


if __name__ == "__main__":
    main()
