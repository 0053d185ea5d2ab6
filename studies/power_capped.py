"""Power-capped GEMMs, unchanged and really slowed: whether a slowdown that the cycles also show is
caught at the power cap, and whether an unchanged one stays quiet.

On a GPU, one process at a time: `studies/power_capped/` (cuBLAS bf16 and fp8, 0.6-0.8 ms, at the
software power cap on an H200) is recorded once, then fresh processes judge it, cycling through
unchanged code (KERNELPERF_STUDY_PLANT=1.0) and code doing 7% and 10% more work (a deeper K: the
clock stays at the cap, time and cycles grow). Each process's run JSON (rounds and clocks kept) goes
to $OUT/power_capped/NN_<plant>.json as it finishes; `--analyse FOLDER...` re-judges them with the
package's judge on any machine and prints what each verdict was; with `--held-out`, each card's
judgements use the clock elasticity (verdict/judge.py) fitted on the other cards alone.

    python studies/power_capped.py --budget-s 150            # on a GPU
    python studies/power_capped.py --analyse OUT/power_capped [MORE/power_capped ...] [--held-out]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studies.study_common import Budget, out_dir, run_pytest_into

if TYPE_CHECKING:
    from pytest_kernelperf.model.result import BenchResult

SUITE = "studies/power_capped"
PLANTS = ("1.00", "1.10", "1.00", "1.07")


def measure(args: argparse.Namespace) -> int:
    folder = out_dir(args.out) / "power_capped"
    folder.mkdir(parents=True, exist_ok=True)
    baselines = folder / "baselines"
    budget = Budget(args.budget_s)
    common = ["-p", "no:cacheprovider", "-q", f"--kernelperf-baseline-dir={baselines}"]

    def one(label: str, argv: list[str], plant: str) -> None:
        run_pytest_into(folder, label, [SUITE, *argv, *common], {"KERNELPERF_STUDY_PLANT": plant}, budget)

    one("record", ["--kernelperf-update-baselines"], "1.00")
    index = 0
    while budget.left() > 25:
        plant = args.plants[index % len(args.plants)]
        one(f"{index:02d}_{plant}", ["--kernelperf"], plant)
        index += 1
    return 0


def rejudged(folder: Path) -> list[tuple[str, str, BenchResult, BenchResult]]:
    """(run, plant, live result, re-judged result) of every judging process in a study's folder."""
    from pytest_kernelperf.results import runfile
    from pytest_kernelperf.results.saved_runs import judge_run
    from studies.verdict_analysis import baselines_of

    out = []
    for path in sorted(folder.glob("[0-9]*_*.json")):
        run = runfile.load(path)
        base = baselines_of(folder / "baselines", {r.module for r in run.results})
        for live, again in zip(run.results, judge_run(base, run, source="baseline"), strict=True):
            out.append((path.stem, path.stem.split("_")[1], live, again))
    return out


def elasticity_points(folders: list[Path]) -> dict[Path, list[tuple[float, float]]]:
    """Per card, (log clock ratio, log time ratio) of each unchanged judgement at the power cap in
    both the run and its baseline, clocks known, judged with no clock adjustment: how far the clock
    alone moves time (a slowed run's real slowdown is not known exactly enough to take it out)."""
    from pytest_kernelperf.verdict import judge

    kept, judge.POWER_CAP_CLOCK_ELASTICITY = judge.POWER_CAP_CLOCK_ELASTICITY, 0.0
    try:
        points: dict[Path, list[tuple[float, float]]] = {}
        for folder in folders:
            points[folder] = []
            for _, plant, _, again in rejudged(folder):
                if float(plant) != 1.0:
                    continue
                throttling, ratio = again.throttling, again.comparison and again.comparison.ratio
                clock_ratio = throttling.clock_ratio() if throttling else None
                if throttling and throttling.at_power_cap() and clock_ratio and ratio:
                    points[folder].append((math.log(clock_ratio), math.log(ratio)))
        return points
    finally:
        judge.POWER_CAP_CLOCK_ELASTICITY = kept


def slope(points: list[tuple[float, float]]) -> float:
    """Least squares through the origin: how far log time follows log clock ratio (nan: no points)."""
    spread = sum(x * x for x, _ in points)
    return sum(x * y for x, y in points) / spread if spread else math.nan


def analyse(folders: list[Path], held_out: bool) -> int:
    """Each card's judgements re-judged, with the package's elasticity or (`held_out`) with one
    fitted on the other cards alone; verdicts counted per plant and GEMM."""
    from pytest_kernelperf.verdict import judge

    points = elasticity_points(folders)
    every = [p for found in points.values() for p in found]
    print(f"elasticity fitted on all {len(every)} judgements: {slope(every):.3f}")
    verdicts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for folder in folders:
        if held_out:
            others = [p for other, found in points.items() if other != folder for p in found]
            judge.POWER_CAP_CLOCK_ELASTICITY = slope(others) if others else 0.0
        print(f"{folder}: elasticity {judge.POWER_CAP_CLOCK_ELASTICITY:.3f}")
        for stem, plant, live, again in rejudged(folder):
            throttling = again.throttling
            clocks = (
                f"clock {throttling.clock_mhz} MHz, baseline {throttling.baseline_clock_mhz} MHz, "
                f"{throttling.rounds} throttled rounds"
                if throttling
                else "not throttled"
            )
            change = f"{again.change_pct:+.1f}%" if again.change_pct is not None else "-"
            print(
                f"  {stem} {again.name}: live {live.verdict.value}, re-judged {again.verdict.value} "
                f"{change} ({clocks})"
            )
            verdicts[(plant, again.name or "")][again.verdict.value] += 1
    print()
    for (plant, name), counts in sorted(verdicts.items()):
        print(f"plant x{plant} {name}: " + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    parser.add_argument("--budget-s", type=float, default=150)
    parser.add_argument(
        "--analyse", type=Path, nargs="+", help="re-judge finished studies' folders, one per card"
    )
    parser.add_argument(
        "--held-out",
        action="store_true",
        help="judge each card with the clock elasticity fitted on the others",
    )
    parser.add_argument(
        "--plants",
        type=lambda text: text.split(","),
        default=list(PLANTS),
        help="the judging processes' work factors, cycled (default %(default)s)",
    )
    args = parser.parse_args()
    if args.analyse:
        return analyse(args.analyse, args.held_out)
    started = time.time()
    code = measure(args)
    print(json.dumps({"wall_s": round(time.time() - started)}))
    return code


if __name__ == "__main__":
    sys.exit(main())
