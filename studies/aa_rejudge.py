"""False alarms and power of the verdict's defaults, re-judged from an A/A study's recorded rounds.

Every process's measurement of a kernel is judged against every other process's measurement of it as
the baseline (N processes: N x (N - 1) judgements per kernel), with the one judge at its defaults and
the level of a run of `--suite` kernels; then again with the current rounds scaled by 1.01 and 1.03
(a planted slowdown on top of the real noise). Reads the JSONL that studies/aa_study.py's runs give
(one line per measurement: run, test, name, verdict, method, rounds_ms), e.g.
docs/results/aa_real_kernels_rounds.jsonl. Measurements whose verdict was `unreliable` (throttled
rounds kept) are left out, as a run would not judge them either.

    python3 studies/aa_rejudge.py docs/results/aa_real_kernels_rounds.jsonl [--suite 40]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_kernelperf.settings import DEFAULTS
from pytest_kernelperf.verdict.judge import Rounds, Verdict, judge
from pytest_kernelperf.verdict.noise import NoisePrior, geometric_mean, size_class

DEVICE = "recorded"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("rounds_file", type=Path)
    parser.add_argument("--suite", type=int, default=40, help="judgements per run (the m of alpha / m)")
    parser.add_argument("--skip-run", action="append", default=["record"], help="runs left out")
    args = parser.parse_args()
    measured: dict[str, dict[str, Rounds]] = defaultdict(dict)
    prior = NoisePrior()
    for line in args.rounds_file.read_text().splitlines():
        row = json.loads(line)
        if row["verdict"] == "unreliable" or row["run"] in args.skip_run:
            continue
        rounds = Rounds(row["method"], tuple(row["rounds_ms"]))
        measured[f"{row['test']}::{row['name']}"][row["run"]] = rounds
        prior.add(DEVICE, row["method"], rounds.rounds_ms)
    slower: dict[tuple[str, float], int] = Counter()
    total: Counter[str] = Counter()
    lows: dict[str, float] = {}
    offenders: Counter[str] = Counter()
    for kernel, runs in measured.items():
        for now, then in itertools.permutations(runs, 2):
            base = runs[then]
            size = size_class(geometric_mean(base.rounds_ms))
            label, lows[size.label] = size.label, size.low_ms
            total[label] += 1
            for slowdown in (0.0, 0.01, 0.03):
                current = Rounds(base.method, tuple(v * (1 + slowdown) for v in runs[now].rounds_ms))
                verdict = judge(
                    current,
                    base,
                    device=DEVICE,
                    threshold=DEFAULTS["threshold"],
                    alpha=DEFAULTS["alpha"],
                    planned_judgements=args.suite,
                    prior=prior,
                ).verdict
                if verdict is Verdict.SLOWER:
                    slower[(label, slowdown)] += 1
                    offenders[kernel] += slowdown == 0.0
    threshold = DEFAULTS["threshold"]
    print(f"judgements at level alpha/{args.suite}, threshold {threshold:g}, {len(measured)} kernels")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
