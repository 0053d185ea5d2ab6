"""How much of a kernel's level is where its buffers land: rounds at fresh placements against rounds
at the process's one placement, in one process, for kernels of every kind.

For each kernel, `--rounds` rounds with `placement=fresh` (each round its own copy of the arguments
and its own memory pool, measure/placement.py) and as many with `placement=process` (the buffers
where the test made them), alternating, timed with the plugin's own timer. The spread of the fresh
rounds against that of the fixed ones is the placement part of the level; a process's fixed rounds
against another process's are what a verdict without fresh placements sees. One JSON line per
kernel and mode goes to $OUT/placement/rounds.jsonl as it is measured.

    python studies/placement_study.py --rounds 12          # on a GPU; a few seconds per kernel
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_kernelperf.correctness import restore, snapshot
from pytest_kernelperf.measure.device import fingerprint
from pytest_kernelperf.measure.placement import Placements
from pytest_kernelperf.measure.timing import AutoTimer, Target
from pytest_kernelperf.testing import sampling_plan
from pytest_kernelperf.verdict import noise
from studies.scoring_kernels import triton_kernels as scoring

BINS = 4096
Case = tuple[Callable[..., Any], tuple[Any, ...]]


def cases(device: str) -> dict[str, Case]:
    """Kernels of each kind, with their arguments made the way a test makes them."""
    g = torch.Generator(device=device).manual_seed(0)
    values = torch.randint(0, BINS, (1 << 24,), device=device, dtype=torch.int32, generator=g)
    small = torch.randn(1 << 14, device=device, generator=g)
    large = torch.randn(1 << 25, device=device, generator=g)
    rows = torch.randn(8192, 4096, device=device, generator=g)
    a = torch.randn(4096, 4096, device=device, dtype=torch.bfloat16, generator=g)
    q = torch.randn(4, 16, 2048, 64, device=device, dtype=torch.float16, generator=g)
    norm = torch.randn(64, 1024, device=device, dtype=torch.float16, generator=g)
    weight = torch.ones(1024, device=device, dtype=torch.float16)
    return {
        "histogram_relaxed": (scoring.histogram, (values, BINS)),
        "histogram_acq_rel": (lambda v, n: scoring.histogram(v, n, sem="acq_rel"), (values, BINS)),
        "histc": (lambda v: torch.histc(v, bins=BINS, min=0, max=BINS), (values,)),
        "add_2^14": (torch.add, (small, small)),
        "add_2^25": (torch.add, (large, large)),
        "softmax_8192x4096": (lambda x: torch.softmax(x, -1), (rows,)),
        "gelu_2^25": (torch.nn.functional.gelu, (large,)),
        "cublas_bf16_4096": (torch.matmul, (a, a)),
        "sdpa_fp16_2048": (
            lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
            (q, q, q),
        ),
        "rmsnorm_triton_64x1024": (scoring.rms_norm, (norm, weight)),
    }


def binder(fn: Callable[..., Any]) -> Callable[[Any], tuple[Callable[[], object], None]]:
    """Binds `fn` to (args, kwargs): the call a round times."""

    def bind(arguments: Any) -> tuple[Callable[[], object], None]:
        args, kwargs = arguments
        return (lambda: fn(*args, **kwargs)), None

    return bind


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "out"))
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("-k", default="", help="only kernels whose name contains this")
    args = parser.parse_args()
    folder = Path(args.out) / "placement"
    folder.mkdir(parents=True, exist_ok=True)
    device = fingerprint("cuda")
    timer = AutoTimer()
    with open(folder / "rounds.jsonl", "a", encoding="utf-8") as out:
        for name, (fn, fn_args) in cases("cuda").items():
            if args.k not in name:
                continue
            fn(*fn_args)
            torch.cuda.synchronize()
            saved = snapshot((fn_args, {}))
            places = Placements((fn_args, {}), binder(fn), f"cuda:{device.index}")
            rounds: dict[str, list[float]] = {"fresh": [], "process": []}
            reserved: list[int] = []
            began = time.perf_counter()
            for index in range(args.rounds):
                for mode in ("fresh", "process"):
                    target = Target(
                        binder(fn)((fn_args, {}))[0],
                        device,
                        label=name,
                        fn=fn,
                        placements=places if mode == "fresh" else None,
                    )
                    one = timer.measure(target, sampling_plan(rounds=1, max_rounds=None, warm=index > 0))
                    rounds[mode].extend(one.device_time.round_locations_ms)
                reserved.append(torch.cuda.memory_reserved())
            restore((fn_args, {}), saved)
            for mode, values in rounds.items():
                squares, df = noise.log_sum_of_squares(values)
                line = {
                    "kernel": name,
                    "mode": mode,
                    "gpu": device.environment.get("gpu_uuid"),
                    "pid": os.getpid(),
                    "rounds_ms": values,
                    "sd": (squares / df) ** 0.5 if df else None,
                    "reserved_bytes": reserved,
                    "wall_s": time.perf_counter() - began,
                }
                out.write(json.dumps(line) + "\n")
                out.flush()
                print(
                    f"{name:24s} {mode:8s} {noise.geometric_mean(values):.5f} ms  "
                    f"range {min(values):.5f}-{max(values):.5f}  sd {100 * (line['sd'] or 0):.2f}%",
                    flush=True,
                )


if __name__ == "__main__":
    main()
