"""Re-judge the verdict study's runs (studies/verdict_study.py) on any machine, with the package's
own judge, and print what the data says about the verdicts users get:

- A/A: every judging run against the baselines of its card (and of another card, `*_other` runs):
  false "slower" and "faster" verdicts, per schedule;
- agreement with the verdicts the runs gave live (the same judge, so any difference is a bug);
- schedule stability: per kernel, how far its change moved between schedules (file order, reversed,
  alone, `-n 2`, after memory churn, shuffled);
- calibration: the change of each A/A judgement in units of the noise SD the judge used (a
  calibrated model gives about 5% beyond 2 SD);
- power: every run's rounds scaled by 1 + d (a slowdown planted on the real noise), judged again;
  the share caught per size class;
- a real slowdown: the histogram's acq_rel variant judged against the relaxed variant's baseline.

    python3 studies/verdict_analysis.py OUT/verdicts/<card> [OUT2/verdicts/<card> ...] [--json F]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_kernelperf.baselines.store import BaselineStore
from pytest_kernelperf.model.baseline import BaselineEntry, MetricRecord
from pytest_kernelperf.model.result import BenchResult, Verdict
from pytest_kernelperf.results import runfile
from pytest_kernelperf.results.saved_runs import ResultKey, judge_run, key_of
from pytest_kernelperf.settings import DEFAULTS
from pytest_kernelperf.verdict.judge import CARD_LEVEL_SD
from pytest_kernelperf.verdict.noise import size_class

PLANTED = (0.01, 0.02, 0.03, 0.05, 0.10)
DEFAULT_ROUNDS = DEFAULTS["rounds"]
# A real slowdown in the suite: the same histogram with acquire-release atomics (test id parts).
REAL_SLOWER = ("acq_rel", "relaxed")


def baselines_of(
    folder: Path, modules: set[str], processes: int | None = None
) -> dict[ResultKey, BaselineEntry]:
    """The baseline entries of `modules`; with `processes`, each entry cut to its first recording
    processes (what a recording with fewer processes would have stored)."""
    store = BaselineStore(folder)
    entries: dict[ResultKey, BaselineEntry] = {}
    for module in modules:
        for key, stored in store.entries(store.path_for(module)).items():
            cut = stored
            if processes is not None:
                cut = replace(stored, device_time=first_processes(stored.device_time, processes))
            entries[(module, key.test, key.device, key.cache)] = cut
    return entries


def first_processes(record: MetricRecord, count: int) -> MetricRecord:
    if not record.process_rounds or len(record.process_rounds) <= count:
        return record
    kept = record.process_rounds[:count]
    rounds = record.rounds_ms[: sum(kept)]
    return replace(record, rounds_ms=rounds, process_rounds=kept if count > 1 else ())


def first_rounds(result: BenchResult, count: int) -> BenchResult:
    """`result` as if `count` rounds had been planned: its first `count`, unless it drew more than
    the default plan's rounds (a placement-sensitive kernel), which it would have drawn anyway."""
    if result.entry is None or len(result.entry.device_time.rounds_ms) > DEFAULT_ROUNDS:
        return result
    record = result.entry.device_time
    return replace(
        result, entry=replace(result.entry, device_time=replace(record, rounds_ms=record.rounds_ms[:count]))
    )


def scaled(record: MetricRecord, factor: float) -> MetricRecord:
    return replace(
        record,
        median_ms=record.median_ms * factor,
        ci_ms=(record.ci_ms[0] * factor, record.ci_ms[1] * factor),
        quantiles_ms=tuple(q * factor for q in record.quantiles_ms),
        rounds_ms=tuple(r * factor for r in record.rounds_ms),
    )


def planted(result: BenchResult, factor: float) -> BenchResult:
    assert result.entry is not None
    entry = replace(result.entry, device_time=scaled(result.entry.device_time, factor))
    return replace(result, entry=entry)


def schedule_of(label: str) -> tuple[str, str]:
    """(schedule, side) of a run file named NN_schedule_side."""
    parts = label.split("_")
    return "_".join(parts[1:-1]), parts[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cards", type=Path, nargs="+", help="verdict_study.py folders, one per card")
    parser.add_argument("--json", type=Path, help="write the figures as JSON")
    parser.add_argument(
        "--baseline-processes", type=int, help="judge against each entry's first N recording processes only"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        help="judge each run's first N rounds only (what N planned rounds would have given; a kernel "
        "that drew extra rounds over its placements keeps them)",
    )
    parser.add_argument(
        "--stop-early",
        type=int,
        help="a sequential rule: a kernel whose first N rounds are judged `same` with the ratio's upper "
        "confidence bound below 1 + twice the threshold stops there; the rest take all their rounds",
    )
    args = parser.parse_args()
    runs: list[tuple[str, str, Path, runfile.RunReport]] = []  # card, label, baseline dir, run
    for card in args.cards:
        others = [c for c in args.cards if c != card]
        for path in sorted(card.glob("[0-9]*_*.json")):
            schedule, side = schedule_of(path.stem)
            folder = card / "baselines" if side == "here" else others[0] / "baselines"
            run = runfile.load(path)
            if args.rounds:
                run = replace(run, results=tuple(first_rounds(r, args.rounds) for r in run.results))
            runs.append((card.name, path.stem, folder, run))
    if not runs:
        parser.error("no judging runs (NN_schedule_side.json) in the folders given")
    figures: dict[str, Any] = {"runs": [], "planted": {}, "calibration": {}, "stability": {}}
    live_disagree = 0
    aa: Counter[tuple[str, str]] = Counter()
    z_scores: dict[str, list[float]] = defaultdict(list)
    changes: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    caught: dict[tuple[float, str], list[bool]] = defaultdict(list)
    stopped: Counter[str] = Counter()  # "early": judgements stopped early, "judged": all judged

    def judged_under_rule(
        baselines: dict[ResultKey, BaselineEntry], run: runfile.RunReport, folder: Path
    ) -> list[BenchResult]:
        full = judge_run(baselines, run, source=str(folder))
        if not args.stop_early:
            return full
        short_run = replace(run, results=tuple(first_rounds(r, args.stop_early) for r in run.results))
        short = judge_run(baselines, short_run, source=str(folder))
        merged = []
        for whole, early in zip(full, short, strict=True):
            c = early.comparison
            clear = (
                early.verdict is Verdict.SAME
                and c is not None
                and c.ratio_ci is not None
                and c.threshold is not None
                and c.ratio_ci[1] < 1 + 2 * c.threshold
            )
            merged.append(early if clear else whole)
            if whole.comparison is not None and whole.comparison.ratio is not None:
                stopped["early"] += clear
                stopped["judged"] += 1
        return merged

    for card, label, folder, run in runs:
        modules = {r.module for r in run.results}
        baselines = baselines_of(folder, modules, args.baseline_processes)
        judged = judged_under_rule(baselines, run, folder)
        schedule, side = schedule_of(label)
        counts = Counter(r.verdict.value for r in judged)
        figures["runs"].append({"card": card, "run": label, "baseline": folder.parent.name, **counts})
        for live, again in zip(run.results, judged, strict=True):
            if live.verdict is not again.verdict and side == "here":
                live_disagree += 1
                print(f"  live {live.verdict.value} vs re-judged {again.verdict.value}: {live.label}")
            comparison = again.comparison
            if comparison is None or comparison.ratio is None or again.baseline_level_ms is None:
                continue
            aa[(side, again.verdict.value)] += 1
            if again.verdict in (Verdict.SLOWER, Verdict.FASTER):
                print(f"  A/A {again.verdict.value} {comparison.change_pct:+.2f}% {label}: {again.label}")
            klass = size_class(again.baseline_level_ms).label
            card_sd = CARD_LEVEL_SD if side == "other" else 0.0
            parts = (comparison.noise_sd or 0.0, comparison.process_sd or 0.0, card_sd)
            sd = math.sqrt(math.fsum(p**2 for p in parts))
            if sd > 0:
                z_scores[f"{side} {klass}"].append(math.log(comparison.ratio) / sd)
            changes[(side, again.label)][schedule].append(comparison.change_pct or 0.0)
        for factor in PLANTED:
            slower = replace(
                run, results=tuple(planted(r, 1 + factor) if r.entry else r for r in run.results)
            )
            for result in judged_under_rule(baselines, slower, folder):
                if result.baseline_level_ms is not None and result.comparison is not None:
                    klass = size_class(result.baseline_level_ms).label
                    caught[(factor, f"{side} {klass}")].append(result.verdict is Verdict.SLOWER)
        real = real_slowdown(run, baselines, folder)
        if real:
            figures.setdefault("real_slowdown", []).append({"run": label, **real})
    print(f"\n{len(runs)} runs; live verdicts re-judged differently: {live_disagree}")
    if args.stop_early:
        print(
            f"stopped after {args.stop_early} rounds: {stopped['early']} of {stopped['judged']} judgements "
            "(A/A and planted together)"
        )
    print("A/A verdicts (side, verdict): " + ", ".join(f"{k[0]} {k[1]} {v}" for k, v in sorted(aa.items())))
    figures["aa"] = {f"{k[0]} {k[1]}": v for k, v in aa.items()}
    print(
        "\ncalibration: share of A/A changes beyond 2 and 3 SD of the judge's noise"
        " (5% and 0.3% if calibrated)"
    )
    for klass, zs in sorted(z_scores.items()):
        beyond2 = sum(abs(z) > 2 for z in zs) / len(zs)
        beyond3 = sum(abs(z) > 3 for z in zs) / len(zs)
        spread = statistics.pstdev(zs) if len(zs) > 1 else float("nan")
        print(
            f"  {klass:>22}: n {len(zs):4d}  SD of z {spread:.2f}  >2 SD {beyond2:.1%}  >3 SD {beyond3:.1%}"
        )
        figures["calibration"][klass] = {"n": len(zs), "z_sd": spread, "beyond2": beyond2, "beyond3": beyond3}
    print(
        "\nschedule stability: kernels whose change moved most between schedules"
        " (max - min of schedule means)"
    )
    moved = []
    for (side, label), by_schedule in changes.items():
        means = {s: statistics.fmean(v) for s, v in by_schedule.items()}
        if len(means) > 1:
            moved.append((max(means.values()) - min(means.values()), side, label, means))
    moved.sort(reverse=True)
    for width, side, label, means in moved[:8]:
        shown = " ".join(f"{s} {m:+.2f}%" for s, m in sorted(means.items()))
        print(f"  {width:5.2f} pt  {side} {label}: {shown}")
    if moved:
        widths = [m[0] for m in moved]
        figures["stability"] = {
            "kernels": len(widths),
            "median_pt": statistics.median(widths),
            "max_pt": widths[0],
        }
        print(f"  median over {len(widths)} kernels: {statistics.median(widths):.2f} pt")
    print("\npower: share of planted slowdowns judged slower")
    for factor in PLANTED:
        row = []
        for klass in sorted({k for f, k in caught if f == factor}):
            hits = caught[(factor, klass)]
            row.append(f"{klass} {sum(hits)}/{len(hits)}")
            figures["planted"][f"+{factor:.0%} {klass}"] = sum(hits) / len(hits)
        print(f"  +{factor:.0%}: " + "; ".join(row))
    offsets = card_offsets(changes)
    if offsets:
        robust = statistics.median(abs(o - statistics.median(offsets)) for o in offsets) * 1.4826
        print(
            f"\ncard to card (placement-sensitive kernels left out): {len(offsets)} kernels, median offset "
            f"{statistics.median(offsets):+.2f}%, SD {statistics.stdev(offsets):.2f}%, "
            f"robust SD {robust:.2f}%, "
            f"range {min(offsets):+.2f}% to {max(offsets):+.2f}%"
        )
        figures["card"] = {
            "kernels": len(offsets),
            "sd_pct": statistics.stdev(offsets),
            "robust_sd_pct": robust,
        }
    for item in figures.get("real_slowdown", []):
        print(f"real slowdown (acq_rel against relaxed's baseline) in {item['run']}: {item['verdicts']}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


def card_offsets(changes: dict[tuple[str, str], dict[str, list[float]]]) -> list[float]:
    """Per kernel, its mean change on the other card less its mean change on the baseline's own card
    (schedules with fresh placements only; placement-sensitive kernels, whose rounds move by more
    than 5% between schedules, left out: their spread is not the card's)."""
    offsets = []
    for (side, label), by_schedule in changes.items():
        if side != "other" or ("here", label) not in changes:
            continue
        mine = [
            v for s, values in changes[("here", label)].items() if s != "process_placement" for v in values
        ]
        theirs = [v for s, values in by_schedule.items() if s != "process_placement" for v in values]
        means = [statistics.fmean(v) for s, v in by_schedule.items() if s != "process_placement"]
        if mine and theirs and max(means) - min(means) < 5:
            offsets.append(statistics.fmean(theirs) - statistics.fmean(mine))
    return offsets


def real_slowdown(
    run: runfile.RunReport, baselines: dict[ResultKey, BaselineEntry], folder: Path
) -> dict[str, Any]:
    """The acq_rel histogram's measurement judged against the relaxed one's baseline entry."""
    slow, fast = REAL_SLOWER
    swapped = []
    for result in run.results:
        if slow in result.test_id and result.entry is not None:
            key = key_of(result)
            relaxed = (key[0], key[1].replace(slow, fast), key[2], key[3])
            if relaxed in baselines:
                swapped.append((result, relaxed))
    if not swapped:
        return {}
    table = dict(baselines)
    for result, relaxed in swapped:
        table[key_of(result)] = baselines[relaxed]
    judged = judge_run(table, run, source=str(folder))
    verdicts = [
        f"{r.test_id} {r.verdict.value} {r.change_pct:+.1f}%"
        for r in judged
        if any(r.label == s.label for s, _ in swapped) and r.change_pct is not None
    ]
    return {"verdicts": verdicts}


if __name__ == "__main__":
    sys.exit(main())
