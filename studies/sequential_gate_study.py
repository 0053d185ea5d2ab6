"""The sequential paired gate of `--kernelperf-against` measured on a GPU, beside the fixed-pair rule it
replaced (studies/fixed_pairs.py): planted +1% and +2% caught, A/A' false `slower`, and the seconds
of measuring per kernel.

Each fresh process runs `pytest SUITE --kernelperf-against HEAD` in a private git repository whose
HEAD is the suite (studies/against_study.py), so both sides are the same code, in two kinds:

* long, first: `--kernelperf-threshold=0 --kernelperf-pair-seconds=LONG`. At threshold 0 the gate
  settles on A/A' pairs almost never (`same` needs the 95% bound below no change), so each kernel
  draws pairs for LONG seconds: its pairs' spread and its seconds per pair, which the analysis
  resamples;
* gate, while the budget lasts: the defaults, as a pull request runs them: live A/A' verdicts, the
  pairs drawn, why they stopped, and the seconds.

The analysis (no GPU needed), per size class (verdict/noise.py's decades):

* the gate runs as they ran: judgements, false `slower` / `faster`, `undetermined`, why the pairs
  stopped, median pairs, mean seconds of measuring per kernel (warm-up and rounds, both sides);
* resampled from the long runs (studies/pair_seconds_bootstrap.py's kernels: each process's log
  ratios centred on its mean and pooled per kernel, with the kernel's warm-up and seconds per pair):
  DRAWS sequences per kernel with nothing, +1% and +2% planted, judged at alpha 0.01 over the
  kernels by the fixed-pair rule at 1 s (as the plugin judged before the gate) and by the gate
  (pytest_kernelperf/verdict/sequential.py: replay) at each budget: `slower` and `undetermined`
  shares and the mean seconds per kernel.

    python studies/sequential_gate_study.py OUT                # on a GPU: measure (< 6 min), analyse
    python studies/sequential_gate_study.py OUT --analyse      # anywhere: the table from OUT's runs

OUT/long/CARD/run-NNN.json and OUT/gate/CARD/run-NNN.json hold the runs (with their logs), and
OUT/sequential_gate_study.txt the table.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import zlib
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_kernelperf.model.result import Verdict
from pytest_kernelperf.settings import DEFAULTS
from pytest_kernelperf.verdict.judgement import JudgementContext
from pytest_kernelperf.verdict.noise import size_class
from pytest_kernelperf.verdict.sequential import VERDICTS, replay
from studies.against_study import SUITE, card, private_repository
from studies.fixed_pairs import judge_pair, pairs_needed
from studies.pair_seconds_bootstrap import PLANNED, Kernel, kernels
from studies.study_common import REPO, Budget, run_files, run_pytest

DELTAS = (0.0, 0.01, 0.02)
THRESHOLD = DEFAULTS["threshold"]
ALPHA = DEFAULTS["alpha"]
MOST = PLANNED * DEFAULTS["max_rounds"]  # the most pairs a run draws
FIXED_SECONDS = DEFAULTS["pair_seconds"]  # the fixed-pair rule as it ran: 1 s
CODES = {verdict: VERDICTS.index(verdict) for verdict in (Verdict.SLOWER, Verdict.UNDETERMINED)}


# --- measuring, on a GPU -------------------------------------------------------------------------


def measure(args: argparse.Namespace) -> None:
    """The long process, then gate processes while the budget lasts, into OUT/long and OUT/gate."""
    budget = Budget(args.budget_s)
    out = Path(args.out).resolve()
    long_args = ["--kernelperf-threshold=0", f"--kernelperf-pair-seconds={args.long_s:g}"]
    with tempfile.TemporaryDirectory(prefix="kernelperf-sequential-study-") as folder:
        repo = private_repository(Path(folder) / "repo")
        suite = _suite_in(repo, Path(args.suite))
        index = 0
        while not budget.expired() and (index < 2 or budget.left() > args.gate_s):
            kind, extra = ("long", long_args) if index == 0 else ("gate", [])
            where = out / kind / card()
            where.mkdir(parents=True, exist_ok=True)
            json_path = where / f"run-{index:03d}.json"
            argv = [args.python, "-m", "pytest", "-p", "no:cacheprovider", "-q", suite]
            argv += ["--kernelperf-against", "HEAD", f"--kernelperf-json={json_path}", *extra]
            process = run_pytest(f"{kind}-{index}", argv, {}, budget.left(), json_path=json_path, cwd=repo)
            (where / f"run-{index:03d}.log").write_text(process.stdout)
            print(f"{kind} process {index}: rc {process.rc}, {process.wall_s:.0f} s", flush=True)
            if process.rc not in (0, 1):  # interrupted, a collection or usage error: no verdicts to count
                print(process.stdout[-4000:], flush=True)
                raise SystemExit(f"the {kind} process {index} ended with exit status {process.rc}; stopped")
            if not json_path.exists():  # killed at the budget, or nothing ran
                print(process.stdout[-4000:], flush=True)
                if index < 2:
                    raise SystemExit(f"the first {kind} process wrote no run file; stopped")
                break
            index += 1


def _suite_in(repo: Path, suite: Path) -> str:
    """The suite's path inside the private repository: the scoring suite is there already; another
    folder is copied in (and committed) as `suite`."""
    if (REPO / suite).resolve() == (REPO / SUITE).resolve():
        return SUITE
    ignore = shutil.ignore_patterns("__pycache__", ".kernelperf")
    shutil.copytree(suite.resolve(), repo / "suite", ignore=ignore)
    who = ["-c", "user.name=study", "-c", "user.email=study@example.com"]
    for command in (["add", "-A"], [*who, "commit", "-qm", "the suite"]):
        subprocess.run(["git", *command], cwd=repo, check=True, capture_output=True)
    return "suite"


# --- the analysis ---------------------------------------------------------------------------------


def analyse(out: Path, budgets: list[float], draws: int) -> str:
    lines = [*_live(out / "gate"), ""]
    found = _costed(out / "long") if (out / "long").exists() else []
    if not found:
        return "\n".join([*lines, f"no long runs under {out / 'long'}: nothing to resample"])
    lines += _resampled(found, budgets, draws)
    return "\n".join(lines)


def _costed(folder: Path) -> list[Kernel]:
    """The long runs' kernels (pair_seconds_bootstrap.kernels), each pair costing its share of the
    whole measuring, warm-ups included: a long run's many warm-ups are per pair, not a fixed cost."""
    per_pair: dict[str, list[float]] = defaultdict(list)
    for _, run in run_files(folder):
        for result in run["results"]:
            pairs = len((result.get("against") or {}).get("rounds_ms") or ())
            if pairs:
                per_pair[result["test_id"]].append(_measuring_s(result) / pairs)
    return [
        dataclasses.replace(kernel, fixed_s=0.0, pair_s=statistics.median(per_pair[kernel.test_id]))
        for kernel in kernels(folder)
    ]


def _live(folder: Path) -> list[str]:
    """The gate runs as they ran, per size class."""
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    runs = run_files(folder) if folder.exists() else []
    for _, run in runs:
        for result in run["results"]:
            if (result.get("comparison") or {}).get("sequential") is not None:
                rows[size_class(result["against"]["level_ms"]).label].append(result)
    lines = [f"gate runs as they ran ({len(runs)} processes, the defaults): A/A'"]
    lines.append(
        "class  judgements  slower  faster  same  undetermined  stopped  pairs (median)  s per kernel"
    )
    for kind, results in sorted(rows.items()):
        verdicts = Counter(r["verdict"] for r in results)
        stops = Counter(r["comparison"]["sequential"]["stopped"] for r in results)
        seconds = [_measuring_s(r) for r in results]
        pairs = [r["comparison"]["rounds"] for r in results]
        lines.append(
            f"{kind}  {len(results)}  {verdicts['slower']}  {verdicts['faster']}  {verdicts['same']}  "
            f"{verdicts['undetermined']}  {dict(stops)}  {statistics.median(pairs):.0f}  "
            f"{statistics.fmean(seconds):.2f}"
        )
    return lines


def _measuring_s(result: dict[str, Any]) -> float:
    cost = result.get("cost_s") or {}
    return float(cost.get("warmup", 0.0) + cost.get("rounds", 0.0))


Tally = dict[
    tuple[str, str, float], list[float]
]  # (class, rule, delta) -> [slower, undetermined, seconds, n]


def _resampled(found: list[Kernel], budgets: list[float], draws: int) -> list[str]:
    context = JudgementContext(THRESHOLD, ALPHA, 0.1, planned_judgements=len(found))
    rules = [f"fixed {FIXED_SECONDS:g} s", *(f"gate {b:g} s" for b in budgets)]
    tally: Tally = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for kernel in found:
        kind = size_class(kernel.level_ms).label
        rng = np.random.default_rng(zlib.crc32(kernel.test_id.encode()))
        longest = min(MOST, max(kernel.pairs_within(b) for b in [FIXED_SECONDS, *budgets]))
        x = rng.choice(np.asarray(kernel.residuals), size=(draws, longest))
        for delta in DELTAS:
            y = x + math.log1p(delta)
            for budget, rule in zip(budgets, rules[1:], strict=True):
                count = min(MOST, kernel.pairs_within(budget))
                codes, pairs = replay(y[:, :count], context.alpha / len(found), THRESHOLD, PLANNED)
                _add(tally[(kind, rule, delta)], codes, kernel.fixed_s + pairs * kernel.pair_s)
            codes, pairs = _fixed(kernel, y, context)
            _add(tally[(kind, rules[0], delta)], codes, kernel.fixed_s + pairs * kernel.pair_s)
    header = "class  rule  judgements  " + "  ".join(
        f"{'A/A' if not d else f'+{d:.0%}'}: slower, undetermined, s per kernel" for d in DELTAS
    )
    lines = [
        f"resampled from {len(found)} kernels' long-run pairs, {draws} sequences each, alpha {ALPHA:g} "
        f"over {len(found)} judgements, threshold {THRESHOLD:.1%}, at most {MOST} pairs",
        header,
    ]
    for kind in sorted({k for k, _, _ in tally}):
        for rule in rules:
            cells = []
            for delta in DELTAS:
                slower, undetermined, seconds, n = tally[(kind, rule, delta)]
                cells.append(f"{slower / n:.2%}, {undetermined / n:.1%}, {seconds / n:.2f}")
            lines.append(f"{kind}  {rule}  {tally[(kind, rule, 0.0)][3]:.0f}  " + "  ".join(cells))
    return lines


def _add(cell: list[float], codes: np.ndarray, seconds: np.ndarray) -> None:
    cell[0] += float(np.sum(codes == CODES[Verdict.SLOWER]))
    cell[1] += float(np.sum(codes == CODES[Verdict.UNDETERMINED]))
    cell[2] += float(np.sum(seconds))
    cell[3] += len(codes)


def _fixed(kernel: Kernel, y: np.ndarray, context: JudgementContext) -> tuple[np.ndarray, np.ndarray]:
    """The fixed-pair rule on each row: the planned pairs topped up once to pairs_needed, within
    its 1 s, then judged once; (verdict codes, pairs)."""
    within = min(MOST, kernel.pairs_within(FIXED_SECONDS), y.shape[1])
    codes, counts = [], []
    for row in y:
        current = list(kernel.level_ms * np.exp(row))
        base = [kernel.level_ms] * len(current)
        where = {"device": kernel.device, "method": kernel.method}
        goal = pairs_needed(current[:PLANNED], base[:PLANNED], context, most=within, **where)
        count = min(goal, within)
        verdict = judge_pair(current[:count], base[:count], context, **where).verdict
        codes.append(VERDICTS.index(verdict) if verdict in VERDICTS else 0)
        counts.append(count)
    return np.asarray(codes), np.asarray(counts)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="the folder the runs and the table are written to")
    parser.add_argument("--analyse", action="store_true", help="only analyse OUT's runs (no GPU)")
    parser.add_argument("--budget-s", type=float, default=300.0, help="wall seconds of measuring")
    parser.add_argument("--long-s", type=float, default=3.0, help="pair seconds of the long process")
    parser.add_argument("--gate-s", type=float, default=90.0, help="a gate process's expected seconds")
    parser.add_argument("--budgets", type=float, nargs="+", default=[1.0, 4.0, 8.0])
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--suite", default=SUITE)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    if not args.analyse:
        measure(args)
    table = analyse(args.out, args.budgets, args.draws)
    (args.out / "sequential_gate_study.txt").write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
