"""What more seconds of pairs buy `--kernelperf-against`, from pairs measured on an H200 (no GPU).

The A/A' study's pairs (studies/against_study.py's run JSON files) are resampled per kernel: each
process's log ratios centred on that process's mean, pooled over the processes. A simulated
judgement draws the 5 planned pairs from the pool, decides how many it needs (the package's
`pairs_needed`, as a run does), stops where the seconds run out at the kernel's measured cost (its
warm-up, then its rounds' seconds per pair), and is judged by the package's
`judge_pair` at the suite's level (alpha 0.01 over the kernels judged), once as drawn (A/A') and
with +1% and +3% planted. Printed per kernel and per size class, for each `pair_seconds` given.
Resampling assumes pairs independent within a process and no offset left between processes
(docs/studies.md, "Does the process offset cancel?": the ratio of the two is about 1).

    python studies/pair_seconds_bootstrap.py FOLDER --seconds 1 2 4 --draws 1000
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_kernelperf.verdict.judgement import JudgementContext
from pytest_kernelperf.verdict.noise import size_class
from studies.against_study import log_ratios
from studies.fixed_pairs import judge_pair, pairs_needed
from studies.study_common import run_files

PLANNED = 5
DELTAS = (0.0, 0.01, 0.03)


@dataclass(frozen=True)
class Kernel:
    test_id: str
    device: str
    method: str
    level_ms: float
    residuals: tuple[float, ...]  # centred log ratios of every process, pooled
    fixed_s: float  # the warm-up before the rounds (median over the processes)
    pair_s: float  # the rounds' seconds per pair, both sides (median)

    def pairs_within(self, seconds: float) -> int:
        """The pairs a run draws: groups begin while measuring has taken at most `seconds`."""
        if self.pair_s <= 0:
            return PLANNED
        return max(PLANNED, math.floor((seconds - self.fixed_s) / self.pair_s) + 1)


def kernels(folder: Path) -> list[Kernel]:
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for _, run in run_files(folder):
        for result in run["results"]:
            if (result.get("against") or {}).get("level_ms") is not None:
                found[result["test_id"]].append(result)
    out = []
    for test_id, results in sorted(found.items()):
        residuals: list[float] = []
        warmups: list[float] = []
        per_pair: list[float] = []
        for result in results:
            ratios = log_ratios(result)
            centre = statistics.fmean(ratios)
            # Centring on the process's own mean shrinks the spread by (n - 1) / n: scaled back.
            inflate = math.sqrt(len(ratios) / (len(ratios) - 1)) if len(ratios) > 1 else 1.0
            residuals += [(r - centre) * inflate for r in ratios]
            cost = result.get("cost_s") or {}
            warmups.append(cost.get("warmup", 0.0))
            per_pair.append(cost.get("rounds", 0.0) / len(ratios))
        first = results[0]
        out.append(
            Kernel(
                test_id,
                first["device"],
                first["device_time"]["method"],
                statistics.median(r["against"]["level_ms"] for r in results),
                tuple(residuals),
                statistics.median(warmups),
                statistics.median(per_pair),
            )
        )
    return out


def judged(
    kernel: Kernel, seconds: float, most: int, context: JudgementContext, rng: random.Random
) -> list[str]:
    """One simulated judgement per planted delta, on the same draws; and the pairs drawn."""
    base = [kernel.level_ms] * most
    logs = [rng.choice(kernel.residuals) for _ in range(PLANNED)]
    verdicts = []
    for delta in DELTAS:
        shifted = [kernel.level_ms * math.exp(r + math.log1p(delta)) for r in logs[:PLANNED]]
        goal = pairs_needed(
            shifted, base[:PLANNED], context, device=kernel.device, method=kernel.method, most=most
        )
        count = min(goal, kernel.pairs_within(seconds))
        while len(logs) < count:
            logs.append(rng.choice(kernel.residuals))
        current = [kernel.level_ms * math.exp(r + math.log1p(delta)) for r in logs[:count]]
        comparison = judge_pair(current, base[:count], context, device=kernel.device, method=kernel.method)
        verdicts.append(str(comparison.verdict))
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("folder", type=Path, help="run JSON files of studies/against_study.py")
    parser.add_argument("--seconds", type=float, nargs="+", default=[1.0, 2.0, 4.0])
    parser.add_argument("--max-rounds", type=int, default=40, help="--kernelperf-max-rounds (pairs: x5)")
    parser.add_argument("--draws", type=int, default=1000)
    args = parser.parse_args()
    found = kernels(args.folder)
    context = JudgementContext(threshold=0.005, alpha=0.01, host_threshold=0.1, planned_judgements=len(found))
    most = PLANNED * args.max_rounds
    print(f"{len(found)} kernels from {args.folder}; {args.draws} draws each; at most {most} pairs")
    print(
        "kernel  class  pair SD  s per pair  "
        + "  ".join(f"{s:g} s: A/A' slower, +1%, +3%" for s in args.seconds)
    )
    by_class: dict[tuple[str, float, float], list[bool]] = defaultdict(list)
    for kernel in found:
        kind = size_class(kernel.level_ms).label
        cells = []
        for seconds in args.seconds:
            rng = random.Random(f"{kernel.test_id}:{seconds}")
            draws = [judged(kernel, seconds, most, context, rng) for _ in range(args.draws)]
            shares = []
            for index, delta in enumerate(DELTAS):
                slower = [d[index] == "slower" for d in draws]
                by_class[(kind, seconds, delta)] += slower
                shares.append(f"{sum(slower) / len(slower):.1%}")
            cells.append(", ".join(shares))
        print(
            f"{kernel.test_id}  {kind}  {statistics.pstdev(kernel.residuals):.2%}  {kernel.fixed_s:.2f}  "
            f"{kernel.pair_s:.3f}  " + "  ".join(cells),
            flush=True,
        )
    print()
    for (kind, seconds, delta), slower in sorted(by_class.items()):
        label = "A/A' slower" if delta == 0 else f"+{delta:.0%} caught"
        print(f"{kind}, {seconds:g} s: {label} {sum(slower) / len(slower):.1%}")


if __name__ == "__main__":
    main()
