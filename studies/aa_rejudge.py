"""False alarms and power of the verdict's defaults, re-judged from an A/A study's recorded rounds.

Every process's measurement of a kernel is judged against every other process's measurement of it as
the baseline (N processes: N x (N - 1) judgements per kernel), with the one judge at its defaults and
the level of a run of `--suite` kernels; then again with the current rounds scaled by 1.01 and 1.03
(a planted slowdown on top of the real noise). Reads a JSONL of rounds (one line per measurement:
run, test, name, verdict, method, rounds_ms), e.g. docs/results/aa_real_kernels_rounds.jsonl, or the
`aa` folders of studies/aa_study.py (record.json and run_*.json; several folders are one study, their
runs named by folder) and writes that JSONL with `--write-rounds`. Measurements whose verdict was
`unreliable` (throttled rounds kept) are left out, as a run would not judge them either. Also prints,
per size class, how far a process's level moved beyond what its own rounds explain: the
between-process SD that `verdict/noise.py`'s PROCESS_LEVEL_SD stands for.

    python3 studies/aa_rejudge.py docs/results/aa_real_kernels_rounds.jsonl [--suite 40]
    python3 studies/aa_rejudge.py out1/aa out2/aa --write-rounds rounds.jsonl
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_kernelperf.model.result import Verdict
from pytest_kernelperf.settings import DEFAULTS
from pytest_kernelperf.verdict.judge import Rounds, judge
from pytest_kernelperf.verdict.noise import HISTORY_MIN_RUNS, geometric_mean, size_class
from pytest_kernelperf.verdict.prior import NoisePrior, history_variance
from studies.study_common import load_run

DEVICE = "recorded"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sources", type=Path, nargs="+", help="a rounds JSONL, or aa_study.py folders")
    parser.add_argument("--write-rounds", type=Path, help="write the rounds read as one JSONL")
    parser.add_argument("--suite", type=int, default=40, help="judgements per run (the m of alpha / m)")
    parser.add_argument(
        "--history",
        type=int,
        default=0,
        help="judge each pair with the rounds of up to N other processes as the kernel's run history",
    )
    parser.add_argument("--skip-run", action="append", default=["record"], help="runs left out")
    args = parser.parse_args()
    measured: dict[str, dict[str, Rounds]] = defaultdict(dict)
    prior = NoisePrior()
    if args.history < 0:
        parser.error("--history must be 0 or more")
    rows = list(read_rounds(args.sources))
    if not rows:
        raise SystemExit(f"no rounds in {', '.join(map(str, args.sources))}")
    if args.write_rounds:
        args.write_rounds.write_text("".join(json.dumps(row) + "\n" for row in rows))
    for row in rows:
        if row["verdict"] == "unreliable" or row["run"] in args.skip_run:
            continue
        rounds = Rounds(row["method"], tuple(row["rounds_ms"]))
        measured[f"{row['test']}::{row['name']}"][row["run"]] = rounds
        prior.add(DEVICE, row["method"], rounds.rounds_ms)
    slower: dict[tuple[str, float], int] = Counter()
    total: Counter[str] = Counter()
    lows: dict[str, float] = {}
    offenders: Counter[str] = Counter()
    p_slower: list[float] = []  # the A/A judgements' one-sided p-values for "slower"
    for kernel, runs in measured.items():
        for now, then in itertools.permutations(runs, 2):
            base = runs[then]
            others = [r.rounds_ms for run, r in runs.items() if run not in (now, then)]
            history = others[: args.history] if args.history else None
            size = size_class(geometric_mean(base.rounds_ms))
            label, lows[size.label] = size.label, size.low_ms
            total[label] += 1
            for slowdown in (0.0, 0.01, 0.03):
                current = Rounds(base.method, tuple(v * (1 + slowdown) for v in runs[now].rounds_ms))
                comparison = judge(
                    current,
                    base,
                    device=DEVICE,
                    threshold=DEFAULTS["threshold"],
                    alpha=DEFAULTS["alpha"],
                    planned_judgements=args.suite,
                    prior=prior,
                    history=history,
                )
                verdict = comparison.verdict
                if slowdown == 0.0 and comparison.p_value is not None and comparison.ratio is not None:
                    # p_value is one-sided in the direction of the change
                    slower_side = comparison.ratio >= 1
                    p_slower.append(comparison.p_value if slower_side else 1 - comparison.p_value)
                if verdict is Verdict.SLOWER:
                    slower[(label, slowdown)] += 1
                    offenders[kernel] += slowdown == 0.0
    threshold = DEFAULTS["threshold"]
    most = max((len(runs) - 2 for runs in measured.values()), default=0)
    used = min(args.history, most)
    learnt = ""
    if args.history:
        learnt = f", between-process SD learnt from up to {used} other processes"
        if used < HISTORY_MIN_RUNS:
            learnt += f" (fewer than {HISTORY_MIN_RUNS}: the class values are used)"
    print(f"judgements at level alpha/{args.suite}, threshold {threshold:g}, {len(measured)} kernels{learnt}")
    print("| size class | judgements | A/A false slower | +1% caught | +3% caught |")
    print("|---|---|---|---|---|")
    for label in sorted(total, key=lows.__getitem__):
        n = total[label]
        cells = [f"{slower[(label, s)]} ({slower[(label, s)] / n:.1%})" for s in (0.0, 0.01, 0.03)]
        print(f"| {label} | {n} | " + " | ".join(cells) + " |")
    false = sum(slower[(label, 0.0)] for label in total)
    judged = sum(total.values())
    print(
        f"A/A false slower: {false} of {judged} ({false / judged:.2%}); expected per run of 200 kernels: "
        f"{200 * false / judged:.2f}"
    )
    print("A/A false slower by kernel:", {k: n for k, n in offenders.most_common() if n})
    print_calibration(p_slower)
    print_between_process(measured)
    return 0


def print_calibration(p_values: list[float]) -> None:
    """How often an unchanged kernel's p-value for "slower" fell below q, against q itself: a
    calibrated (or conservative) p-value does so at most a fraction q of the time."""
    if not p_values:
        return
    print(f"calibration of the printed p-value over {len(p_values)} A/A judgements")
    print("| q | A/A p-values below q | nominal |")
    print("|---|---|---|")
    for q in (0.0001, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5):
        below = sum(p < q for p in p_values) / len(p_values)
        print(f"| {q:g} | {below:.3%} | {q:.2%} |")


def read_rounds(sources: list[Path]) -> Iterator[dict[str, Any]]:
    for number, source in enumerate(sources, 1):
        if source.is_file():
            yield from (json.loads(line) for line in source.read_text().splitlines() if line.strip())
            continue
        if not source.is_dir():
            raise SystemExit(f"{source}: no such rounds file or study folder")
        prefix = f"{number}/" if len(sources) > 1 else ""  # runs of several folders kept apart
        for path in sorted(source.glob("*.json")):
            if path.stem != "record" and not path.stem.startswith("run_"):
                continue
            results, _ = load_run(path)
            for result in results:
                timing = result.get("device_time") or {}
                if not timing.get("rounds_ms"):
                    continue
                yield {
                    "run": "record" if path.stem == "record" else prefix + path.stem,
                    "test": result["nodeid"],
                    "name": result.get("name"),
                    "verdict": result["verdict"],
                    "method": timing["method"],
                    "rounds_ms": timing["rounds_ms"],
                }


def print_between_process(measured: dict[str, dict[str, Rounds]]) -> None:
    """Per size class, the SD of a process's mean log level beyond what its rounds' own spread predicts
    (prior.history_variance over the processes), over the kernels of that class."""
    by_class: dict[str, list[float]] = defaultdict(list)
    lows: dict[str, float] = {}
    for runs in measured.values():
        # The estimator a run uses on its history (at least HISTORY_MIN_RUNS processes).
        estimate = history_variance([r.rounds_ms for r in runs.values()])
        if estimate is None:
            continue
        estimate = (math.sqrt(estimate[0]), estimate[1])
        size = size_class(geometric_mean([v for r in runs.values() for v in r.rounds_ms]))
        lows[size.label] = size.low_ms
        by_class[size.label].append(estimate[0])
    print("between-process SD of a measurement's level, beyond its rounds (per kernel)")
    print("| size class | kernels | median | upper quartile | max |")
    print("|---|---|---|---|---|")
    for label in sorted(by_class, key=lows.__getitem__):
        sds = sorted(by_class[label])
        quartile = sds[min(len(sds) - 1, (3 * len(sds)) // 4)]
        print(f"| {label} | {len(sds)} | {statistics.median(sds):.2%} | {quartile:.2%} | {sds[-1]:.2%} |")


if __name__ == "__main__":
    sys.exit(main())
