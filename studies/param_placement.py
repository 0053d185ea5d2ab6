"""Does a module's time depend on where its weights land? (a GPU study)

kernel_bench gives each round a fresh placement of the call's tensor arguments, but a module's
parameters are not arguments: `kernel_bench(block, x)` moves only `x`. In the same-card A/A of
2026-12-02 the scoring suite's MLP block (LayerNorm, Linear, GELU, Linear, bf16, 4096x1024x4096)
read 0.7-2% apart between recording and judging processes, and across 17 fresh processes its level
had an SD of 0.7% in clusters about 1% apart, where a cuBLAS GEMM and SDPA of its size had 0.15-0.23%
(docs/results/verdict_study_2026-12-02.txt). If the weights' placement is the cause, then in one
process:

* measuring the block with its weights copied to a fresh random placement before each measurement
  spreads the levels as the processes did;
* measuring it again and again with the weights where they are does not.

Each measurement is the plugin's own (`AutoTimer`, 5 rounds, arguments at fresh placements), the
two kinds alternating so that drift falls on both. One JSON line per measurement; the summary at the
end compares the two spreads.

    python studies/param_placement.py --out out/param_placement --measurements 16   # on a GPU
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ALIGNMENT = 512
PAD_MAX = 8 << 20  # as measure/placement.py pads a round's large allocations


def move_weights(block: Any, rng: random.Random) -> None:
    """Copy every parameter and buffer of `block` to fresh memory at a random 512-byte offset."""
    import torch

    with torch.no_grad():
        for tensor in [*block.parameters(), *block.buffers()]:
            offset = rng.randrange(PAD_MAX // ALIGNMENT) * ALIGNMENT
            nbytes = tensor.numel() * tensor.element_size()
            raw = torch.empty(offset + nbytes, dtype=torch.uint8, device=tensor.device)
            fresh = raw[offset:].view(tensor.dtype).view(tensor.shape)
            fresh.copy_(tensor)
            tensor.data = fresh


def measure(out: Path, measurements: int, seed: int) -> None:
    import torch

    from pytest_kernelperf.measure.device import fingerprint
    from pytest_kernelperf.measure.placement import Placements
    from pytest_kernelperf.measure.timing import AutoTimer, Target
    from pytest_kernelperf.testing import sampling_plan
    from studies.scoring_kernels.common import randn
    from studies.scoring_kernels.test_sk_compiled import SHAPES, make_block

    tokens, width, hidden = SHAPES["cuda"]
    block = make_block(width, hidden, "cuda")
    x = randn(tokens, width, dtype=torch.bfloat16, device="cuda", seed=90)
    block(x)
    torch.cuda.synchronize()
    rng = random.Random(seed)
    device = fingerprint("cuda")
    plan = sampling_plan(rounds=5)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "levels.jsonl").open("a") as sink:
        for index in range(measurements):
            for kind in (
                ("weights moved", "weights kept") if index % 2 == 0 else ("weights kept", "weights moved")
            ):
                if kind == "weights moved":
                    move_weights(block, rng)
                places = Placements(((x,), {}), lambda moved: ((lambda: block(moved[0][0])), None), "cuda:0")
                target = Target(lambda: block(x), device, label="mlp", fn=block, placements=places)
                timing = AutoTimer().measure(target, plan)
                rounds = list(timing.device_time.round_locations_ms)
                row = {
                    "index": index,
                    "kind": kind,
                    "rounds_ms": rounds,
                    "weight_address_mod_2mib": block.up.weight.data_ptr() % (2 << 20),
                }
                sink.write(json.dumps(row) + "\n")
                sink.flush()


def summary(folder: Path) -> str:
    rows = [json.loads(line) for line in (folder / "levels.jsonl").read_text().splitlines() if line]
    lines = [f"{len(rows)} measurements of the MLP block (5 rounds each, arguments at fresh placements)"]
    for kind in ("weights kept", "weights moved"):
        mine = [r for r in rows if r["kind"] == kind]
        if len(mine) < 2:
            continue
        levels = [statistics.fmean(math.log(v) for v in r["rounds_ms"]) for r in mine]
        within = math.sqrt(
            statistics.fmean(statistics.variance([math.log(v) for v in r["rounds_ms"]]) for r in mine)
        )
        shown = " ".join(f"{1e3 * math.exp(v):.1f}" for v in sorted(levels))
        lines.append(
            f"{kind}: {len(mine)} levels (us) {shown}; SD of the levels "
            f"{100 * statistics.stdev(levels):.2f}%, of the rounds within a measurement {100 * within:.2f}%"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("out/param_placement"))
    parser.add_argument("--measurements", type=int, default=16, help="of each kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--summary", action="store_true", help="only print the summary of --out")
    args = parser.parse_args()
    if not args.summary:
        measure(args.out, args.measurements, args.seed)
    print(summary(args.out))


if __name__ == "__main__":
    main()
