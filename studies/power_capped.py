"""Power-capped GEMMs, unchanged and really slowed: whether a slowdown that the cycles also show is
caught at the power cap, and whether an unchanged one stays quiet.

On a GPU, one process at a time: `studies/power_capped/` (cuBLAS bf16 and fp8, 0.6-0.8 ms, at the
software power cap on an H200) is recorded once, then fresh processes judge it, cycling through
unchanged code (KERNELPERF_STUDY_PLANT=1.0) and code doing 7% and 10% more work (a deeper K: the
clock stays at the cap, time and cycles grow). Each process's run JSON (rounds and clocks kept) goes
to $OUT/power_capped/NN_<plant>.json as it finishes; `--analyse FOLDER` re-judges them with the
package's judge on any machine and prints what each verdict was.

    python studies/power_capped.py --budget-s 150            # on a GPU
    python studies/power_capped.py --analyse OUT/power_capped
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studies.study_common import Budget, out_dir, run_pytest_into

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


def analyse(folder: Path) -> int:
    from pytest_kernelperf.results import runfile
    from pytest_kernelperf.results.saved_runs import judge_run
    from studies.verdict_analysis import baselines_of

    verdicts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for path in sorted(folder.glob("[0-9]*_*.json")):
        plant = path.stem.split("_")[1]
        run = runfile.load(path)
        base = baselines_of(folder / "baselines", {r.module for r in run.results})
        for live, again in zip(run.results, judge_run(base, run, source="baseline"), strict=True):
            throttling = again.throttling
            clocks = (
                f"clock {throttling.clock_mhz} MHz, baseline {throttling.baseline_clock_mhz} MHz, "
                f"{throttling.rounds} throttled rounds"
                if throttling
                else "not throttled"
            )
            change = f"{again.change_pct:+.1f}%" if again.change_pct is not None else "-"
            print(
                f"{path.stem} {again.name}: live {live.verdict.value}, re-judged {again.verdict.value} "
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
    parser.add_argument("--analyse", type=Path, help="re-judge a finished study's folder")
    parser.add_argument(
        "--plants",
        type=lambda text: text.split(","),
        default=list(PLANTS),
        help="the judging processes' work factors, cycled (default %(default)s)",
    )
    args = parser.parse_args()
    if args.analyse:
        return analyse(args.analyse)
    started = time.time()
    code = measure(args)
    print(json.dumps({"wall_s": round(time.time() - started)}))
    return code


if __name__ == "__main__":
    sys.exit(main())
