"""Do rounds that NVML calls power-capped read slower, and is measuring them again worth its time?
(a GPU study)

NVML is read before and after every round (measure/health.py); a round with a throttle reason in
either reading is measured again after a 50 ms pause, at most `rounds` times, and past that the
throttled rounds are kept and the verdict can say "unreliable" (measure/timing.py run_rounds). On an
H200 the scoring suite's GEMMs show "software power cap" in most rounds, so each of their
measurements pays up to five more rounds and five pauses. Whether that buys anything depends on
whether the flagged rounds read differently. Per kernel, with the compare plan, alternating:

* `re-measured`: the timer as it is;
* `kept`: the same timer with NVML's readings recorded but their reasons hidden from it, so that
  every round is kept; each round's two readings (SM clock, reasons) are saved with its level.

The summary gives, per kernel: seconds per measurement under each policy; the share of rounds flagged
and their SM clocks against the clean rounds'; within the `kept` measurements that have both, the
flagged rounds' level against the clean rounds' (mean log ratio, with its standard error); and the
levels of the two policies (geometric mean ratio and each one's spread).

    python studies/throttle_rounds.py --out out/throttle --measurements 12   # on a GPU
    python studies/throttle_rounds.py --out out/throttle --summary
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

POLICIES = ("re-measured", "kept")


def kernels() -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    """The scoring suite's GEMM-heavy kernels, and a bandwidth-bound one that NVML leaves alone."""
    import torch

    from studies.scoring_kernels.common import randn
    from studies.scoring_kernels.test_sk_compiled import SHAPES, make_block
    from studies.scoring_kernels.triton_kernels import matmul

    def operands(dtype: torch.dtype, m: int, n: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        a = randn(m, k, dtype=dtype, device="cuda", seed=40)
        return a, randn(k, n, dtype=dtype, device="cuda", seed=41, scale=k**-0.5)

    square16 = operands(torch.float16, 4096, 4096, 4096)
    tall16 = operands(torch.float16, 8192, 1024, 4096)
    square_bf16 = operands(torch.bfloat16, 4096, 4096, 4096)
    tokens, width, hidden = SHAPES["cuda"]
    block = make_block(width, hidden, "cuda")
    x = randn(tokens, width, dtype=torch.bfloat16, device="cuda", seed=90)
    return {
        "cublas_fp16_square": (torch.matmul, square16),
        "cublas_bf16_square": (torch.matmul, square_bf16),
        "triton_fp16_square": (matmul, square16),
        "triton_fp16_tall": (matmul, tall16),
        "mlp_block_eager": (block, (x,)),
        "gelu_fp32_2^26": (
            torch.nn.functional.gelu,
            (randn(1 << 26, dtype=torch.float32, device="cuda", seed=7),),
        ),
    }


@contextlib.contextmanager
def recorded_readings(hide_reasons: bool) -> Iterator[list[dict[str, Any]]]:
    """Every NVML reading the timer takes, in order; with `hide_reasons`, the timer sees none."""
    from pytest_kernelperf.measure import health

    original = health.read
    seen: list[dict[str, Any]] = []

    def read(index: int | None) -> Any:
        reading = original(index)
        if reading is None:
            return None
        seen.append({"clock_mhz": reading.sm_clock_mhz, "reasons": list(reading.throttle_reasons)})
        return replace(reading, throttle_reasons=()) if hide_reasons else reading

    health.read = read  # type: ignore[assignment]
    try:
        yield seen
    finally:
        health.read = original  # type: ignore[assignment]


def measure(out: Path, measurements: int) -> None:
    from pytest_kernelperf.measure.timing import AutoTimer
    from pytest_kernelperf.settings import Settings
    from studies.round_cost import targets

    table = targets(kernels())
    plan = Settings().plan()  # the compare plan: 5 rounds, more where they disagree
    out.mkdir(parents=True, exist_ok=True)
    with (out / "rounds.jsonl").open("a") as sink:
        for index in range(measurements):
            for name, target in table.items():
                order = POLICIES if index % 2 == 0 else POLICIES[::-1]
                for policy in order:
                    with recorded_readings(hide_reasons=policy == "kept") as readings:
                        began = time.perf_counter()
                        timing = AutoTimer().measure(target, plan)
                        wall = time.perf_counter() - began
                    row = {
                        "index": index,
                        "kernel": name,
                        "policy": policy,
                        "wall_s": wall,
                        "rounds_ms": list(timing.device_time.round_locations_ms),
                        "throttled_rounds": timing.throttled_rounds,
                        "readings": readings,
                    }
                    sink.write(json.dumps(row) + "\n")
                    sink.flush()


def _level(rounds_ms: list[float]) -> float:
    return statistics.fmean(math.log(v) for v in rounds_ms)


def summary(folder: Path) -> str:
    rows = [json.loads(line) for line in (folder / "rounds.jsonl").read_text().splitlines() if line]
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by[row["kernel"], row["policy"]].append(row)
    kernels = list(dict.fromkeys(row["kernel"] for row in rows))
    lines = [
        f"{len(rows)} measurements (compare plan, fresh placement per round), policies alternating",
        "kernel: s per measurement (re-measured | kept); rounds flagged (kept); "
        "SM clock MHz, clean | flagged; "
        "flagged rounds' level against clean ones in the same measurement (mean log ratio +- SE, n); "
        "kept against re-measured level (geometric mean ratio), level SD re-measured | kept",
    ]
    for kernel in kernels:
        again, kept = by[kernel, "re-measured"], by[kernel, "kept"]
        if not again or not kept:
            continue
        flagged_share: list[float] = []
        clean_clocks: list[int] = []
        flagged_clocks: list[int] = []
        paired: list[float] = []
        for row in kept:
            readings = row["readings"]
            if len(readings) != 2 * len(row["rounds_ms"]):
                continue  # NVML missed a reading: rounds and readings no longer pair up
            flags = []
            for start, end in zip(readings[::2], readings[1::2], strict=True):
                flagged = bool(start["reasons"] or end["reasons"])
                flags.append(flagged)
                lowest = min(start["clock_mhz"], end["clock_mhz"])
                (flagged_clocks if flagged else clean_clocks).append(lowest)
            flagged_share.append(sum(flags) / len(flags))
            logs = [math.log(v) for v in row["rounds_ms"]]
            hit = [v for v, f in zip(logs, flags, strict=True) if f]
            clean = [v for v, f in zip(logs, flags, strict=True) if not f]
            if hit and clean:
                paired.append(statistics.fmean(hit) - statistics.fmean(clean))
        pair_text = "none with both"
        if len(paired) >= 2:
            se = statistics.stdev(paired) / math.sqrt(len(paired))
            pair_text = f"{100 * statistics.fmean(paired):+.2f}% +- {100 * se:.2f}% (n={len(paired)})"
        elif paired:
            pair_text = f"{100 * paired[0]:+.2f}% (n=1)"
        levels_again = [_level(r["rounds_ms"]) for r in again]
        levels_kept = [_level(r["rounds_ms"]) for r in kept]
        ratio = math.exp(statistics.fmean(levels_kept) - statistics.fmean(levels_again))
        sd = " | ".join(
            f"{100 * statistics.stdev(v):.2f}%" if len(v) > 1 else "-" for v in (levels_again, levels_kept)
        )
        clocks = " | ".join(
            f"{statistics.median(c):.0f}" if c else "-" for c in (clean_clocks, flagged_clocks)
        )
        seconds = " | ".join(f"{statistics.fmean(r['wall_s'] for r in rs):.3f}" for rs in (again, kept))
        share = statistics.fmean(flagged_share) if flagged_share else float("nan")
        lines.append(
            f"  {kernel:20s} {seconds} s; {share:.0%} flagged; clock {clocks}; flagged vs clean {pair_text}; "
            f"kept/re-measured x{ratio:.4f}; SD {sd}"
        )
    walls = {p: sum(r["wall_s"] for r in rows if r["policy"] == p) for p in POLICIES}
    lines.append("all kernels: " + ", ".join(f"{p} {s:.1f} s" for p, s in walls.items()))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("out/throttle"))
    parser.add_argument("--measurements", type=int, default=12, help="per kernel and policy")
    parser.add_argument("--summary", action="store_true", help="only print the summary of --out")
    args = parser.parse_args()
    if not args.summary:
        measure(args.out, args.measurements)
    print(summary(args.out))


if __name__ == "__main__":
    main()
