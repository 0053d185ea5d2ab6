"""Verdicts in the design users get, on the scoring suite: baselines from fixed recording runs,
judged by fresh processes under every schedule.

On a GPU, one process at a time (processes timing on one GPU at once disturb each other):

1. `record`: the suite recorded with `--kernelperf-record-processes` (3 by default) into a baseline
   folder of this card's own;
2. then fresh processes judge it, cycling through the schedules: file order, reversed, shuffled,
   `-n 2`, one placement-sensitive test alone, after tests that allocate and free memory, and file
   order with `--kernelperf-placement process` (the process's allocator deciding, for contrast).

Every process writes its run JSON (every round kept) under $OUT/verdicts/<card>/, named after its
schedule, as it finishes; studies/verdict_analysis.py re-judges them on any machine. A second call on
another card (`--judge-also DIR` names the first card's baseline folder) judges the first card's
baselines too, for card-to-card figures.

    python studies/verdict_study.py --budget-s 420           # on a GPU
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studies.study_common import Budget, run_pytest_into

SUITE = "studies/scoring_kernels"
CHURN = "studies/churn"
# One test of each placement-sensitive or tiny kind, each run alone in turn.
ALONE = (
    "studies/scoring_kernels/test_sk_histogram.py",
    "studies/scoring_kernels/test_sk_small.py",
    "studies/scoring_kernels/test_sk_attention.py",
)


def schedules() -> list[tuple[str, list[str], dict[str, str]]]:
    """(name, pytest arguments, environment) of each judging schedule, in the order they cycle."""
    alone = itertools.cycle(ALONE)
    shuffle = itertools.count(1)
    out = []
    for _ in range(8):
        out += [
            ("forward", [SUITE], {}),
            ("reverse", [SUITE], {"KERNELPERF_STUDY_ORDER": "reverse"}),
            ("alone", [next(alone)], {}),
            ("xdist2", [SUITE, "-n", "2"], {}),
            ("churn", [CHURN, SUITE], {}),
            ("shuffle", [SUITE], {"KERNELPERF_STUDY_ORDER": f"shuffle:{next(shuffle)}"}),
            ("process_placement", [SUITE, "--kernelperf-placement=process"], {}),
        ]
    return out


def card() -> str:
    """This GPU's UUID (nvidia-smi -L), to name the folder of its runs."""
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return "unknown"
    return listed.split("UUID: ")[-1].split(")")[0].strip() or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out")
    parser.add_argument("--budget-s", type=float, default=420)
    parser.add_argument("--record-processes", type=int, default=3)
    parser.add_argument("--without", action="append", default=[], help="a schedule to leave out; repeatable")
    parser.add_argument("--judge-also", type=Path, help="another card's baseline folder, judged too")
    parser.add_argument(
        "--judge-only", type=Path, help="another card's baseline folder, judged alone (nothing recorded)"
    )
    args = parser.parse_args()
    budget = Budget(args.budget_s)
    folder = Path(args.out).resolve() / "verdicts" / card()
    folder.mkdir(parents=True, exist_ok=True)
    baselines = folder / "baselines"
    common = ["-p", "no:cacheprovider", "-q", "-rs"]
    runs_log = folder / "runs.jsonl"

    def one(label: str, argv: list[str], env: dict[str, str]) -> None:
        run = run_pytest_into(folder, label, [*argv, *common], env, budget)
        line = {"label": label, "argv": argv, "env": env, "rc": run.rc, "wall_s": run.wall_s}
        with runs_log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")

    if (
        args.judge_only is None and not baselines.exists()
    ):  # a later call on the same (warm) machine adds judging runs only
        one(
            "record",
            [
                SUITE,
                "--kernelperf-update-baselines",
                f"--kernelperf-record-processes={args.record_processes}",
                f"--kernelperf-baseline-dir={baselines}",
            ],
            {},
        )
    targets = [("here", baselines)] if args.judge_only is None else [("other", args.judge_only.resolve())]
    if args.judge_also is not None:
        targets.append(("other", args.judge_also.resolve()))
    for index, (name, argv, env) in enumerate(schedules()):
        if name in args.without:
            continue
        for side, where in targets:
            if budget.left() < 40:
                print("budget spent", flush=True)
                return 0
            label = f"{index:02d}_{name}_{side}"
            one(label, [*argv, "--kernelperf", f"--kernelperf-baseline-dir={where}"], env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
