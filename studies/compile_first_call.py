"""Where a torch.compile'd call's first run spends its seconds in a fresh process (a GPU study).

The scoring suite's compiled MLP block (`studies/scoring_kernels/test_sk_compiled.py`) costs a
judged run 4-9 s in its first call on an H200, where a warm machine holds inductor's caches from
earlier runs. This starts fresh processes one after another (the first may fill the caches, the
later ones find them) and times, in each, the steps in the order kernel_bench meets them:

* importing torch._dynamo and the inductor entry point (what any compile pays first);
* the first call of `torch.compile(block)`: dynamo's trace, AOT autograd, inductor (or its FX graph
  cache) and loading the generated module, with dynamo's own per-phase seconds and inductor's
  cache counters;
* kernel_bench's fresh compile context (`dynamo_watch.fresh_context`) and the recompile it causes,
  twice, as the second and third measurement of a compiled function in one process would pay.

    python studies/compile_first_call.py --processes 3     # on a GPU
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(label: str, began: float) -> float:
    now = time.perf_counter()
    print(f"  {label}: {now - began:.3f} s", flush=True)
    return now


def child() -> None:
    began = time.perf_counter()
    import torch

    began = timed("import torch", began)
    sys.path.insert(0, str(ROOT))
    from studies.scoring_kernels.test_sk_compiled import SHAPES, make_block

    tokens, width, hidden = SHAPES["cuda"]
    block = make_block(width, hidden, "cuda")
    x = torch.randn(tokens, width, device="cuda", dtype=torch.bfloat16)
    block(x)
    torch.cuda.synchronize()
    began = timed("CUDA context, block, one eager call", began)
    import torch._dynamo

    began = timed("import torch._dynamo", began)
    import torch._inductor.compile_fx

    began = timed("import torch._inductor.compile_fx", began)
    compiled = torch.compile(block)
    compiled(x)
    torch.cuda.synchronize()
    began = timed("first compiled call", began)
    from torch._dynamo.utils import compile_times, counters

    print(f"  inductor counters: {dict(counters['inductor'])}", flush=True)
    print(f"  dynamo compile times:\n{compile_times(repr='str')}", flush=True)
    from pytest_kernelperf.profiling.dynamo_watch import fresh_context

    for attempt in ("second", "third"):
        note = fresh_context()
        began = timed(f"fresh compile context ({note or 'reset'})", began)
        compiled(x)
        torch.cuda.synchronize()
        began = timed(f"{attempt} measurement's first call (recompile after the reset)", began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child()
        return
    for process in range(args.processes):
        print(f"== process {process + 1} of {args.processes}", flush=True)
        began = time.perf_counter()
        subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child"], check=False)
        print(f"  process wall: {time.perf_counter() - began:.1f} s", flush=True)


if __name__ == "__main__":
    main()
