"""Calibration of the stored-baseline judge across occasions, with the test's own statistic.

Re-judges verdict studies' A/A runs (studies/verdict_study.py folders, one per card; the
`process_placement` contrast left out) with the package's judge and prints, per card set and size
class: false `slower` verdicts, runs with one, and the SD of z* (the judge's one-sided p-value on the
normal scale, which a calibrated judge spreads with SD 1). `--occasion-sd A,B,C` judges with other
occasion terms (1-10 us, 10-100 us, from 100 us) for comparison, `0,0,0` being the judge without one.
`--processes N` cuts every baseline to its first N recording processes (what a recording in N would
have stored); `--planted 1.03,1.10` also prints the share of judgements caught `slower` with each
run's rounds scaled by those factors, per size class.

    python3 studies/occasion_calibration.py DIR/GPU-... [DIR/GPU-...] [--occasion-sd 0,0.002,0.005]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_kernelperf.model.result import Verdict
from pytest_kernelperf.results import runfile
from pytest_kernelperf.results.saved_runs import judge_run
from pytest_kernelperf.verdict import noise
from studies.verdict_analysis import baselines_of, planted, schedule_of


def z_star(ratio: float, p_value: float) -> float:
    """The judge's one-sided p on the normal scale, signed by the change's direction."""
    from scipy.stats import norm

    p = min(max(p_value, 1e-300), 1 - 1e-16)
    return float(norm.isf(p)) if ratio >= 1 else -float(norm.isf(p))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cards", type=Path, nargs="+", help="verdict_study.py folders, one per card")
    parser.add_argument("--occasion-sd", help="three relative SDs: 1-10 us, 10-100 us, from 100 us")
    parser.add_argument("--processes", type=int, help="baselines cut to their first N recording processes")
    parser.add_argument("--planted", default="", help="slowdown factors to plant, e.g. 1.03,1.10")
    args = parser.parse_args()
    factors = [float(f) for f in args.planted.split(",") if f]
    caught: Counter[tuple[float, str]] = Counter()
    planted_n: Counter[tuple[float, str]] = Counter()
    if args.occasion_sd:
        small, mid, large = (float(v) for v in args.occasion_sd.split(","))
        noise.OCCASION_LEVEL_SD = ((1e-5, 0.0), (1e-2, small), (1e-1, mid), (math.inf, large))
    z: dict[str, list[float]] = defaultdict(list)
    slower: Counter[str] = Counter()
    judged = red = runs = 0
    for card in args.cards:
        for path in sorted(card.glob("[0-9]*_*.json")):
            schedule, side = schedule_of(path.stem)
            if side != "here" or schedule == "process_placement":
                continue
            run = runfile.load(path)
            baselines = baselines_of(card / "baselines", {r.module for r in run.results}, args.processes)
            runs += 1
            found = False
            for result in judge_run(baselines, run, source=str(card)):
                c = result.comparison
                if c is None or c.ratio is None or c.p_value is None or result.baseline_level_ms is None:
                    continue
                size = noise.size_class(result.baseline_level_ms).label
                z[size].append(z_star(c.ratio, c.p_value))
                judged += 1
                if result.verdict is Verdict.SLOWER:
                    slower[size] += 1
                    found = True
                    print(f"  false slower {c.change_pct:+.2f}% {card.name[:12]} {path.stem}: {result.label}")
            red += found
            for factor in factors:
                moved = tuple(planted(r, factor) if r.entry else r for r in run.results)
                scaled = replace(run, results=moved)
                for result in judge_run(baselines, scaled, source=str(card)):
                    if result.comparison is None or result.baseline_level_ms is None:
                        continue
                    key = (factor, noise.size_class(result.baseline_level_ms).label)
                    planted_n[key] += 1
                    caught[key] += result.verdict is Verdict.SLOWER
    total = sum(slower.values())
    print(
        f"{judged} judgements, {total} false slower ({1000 * total / max(judged, 1):.1f} per 1000), "
        f"{red} of {runs} runs with one"
    )
    for size, values in sorted(z.items()):
        spread = statistics.pstdev(values) if len(values) > 1 else float("nan")
        print(f"  {size:>14}: n {len(values):4d}  SD z* {spread:.2f}  slower {slower[size]}")
    for factor, size in sorted(planted_n):
        share = caught[(factor, size)] / planted_n[(factor, size)]
        print(f"  planted x{factor:.2f} {size:>14}: caught {share:.0%} of {planted_n[(factor, size)]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
