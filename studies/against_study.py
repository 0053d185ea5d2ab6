"""A/A' of `--kernelperf-against`: the same commit on both sides, in many fresh processes.

Does the process-level offset cancel when a kernel and its counterpart at another revision share
the process? The suite (the scoring suite by default) is copied into a private git repository (the
GPU machine's copy of the checkout need not be one) and committed; then each fresh process runs
`pytest SUITE --kernelperf-against HEAD` there, so both sides are the same code loaded twice, as a
pull request with no kernel change would be. Each process writes its run JSON under
$OUT/against/<card>/ as it finishes.

    python studies/against_study.py --budget-s 420            # on a GPU: as many processes as fit
    python studies/against_study.py --analyse out/against      # anywhere: the figures

The analysis, per kernel and per size class (verdict/noise.py's decades):

* the A/A' verdicts: how many judgements said slower or faster (the target: none in 1000);
* whether the offset cancels: the spread of each process's mean paired log ratio against what its
  pairs' own spread predicts (a ratio near 1: nothing is left between processes), beside the
  spread of the kernel's level itself between processes (what a stored baseline must absorb);
* power: each run's pairs re-judged by the fixed-pair rule (studies/fixed_pairs.py, the rule these
  runs were measured under) with this code's rounds scaled by 1 + delta, at the run's own level
  (alpha over its judgements), for delta 1% and 3%; the sequential gate's power is
  studies/sequential_gate_study.py's;
* cost: the seconds of warm-up and rounds per call, both sides together.
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_kernelperf.results import runfile
from pytest_kernelperf.verdict.noise import size_class
from studies.fixed_pairs import judge_paired
from studies.study_common import REPO, Budget, run_files, run_pytest

SUITE = "studies/scoring_kernels"
# What the suite's modules import from the repository.
COPIED = ("studies/__init__.py", "studies/real_kernels", "studies/scoring_kernels")
DELTAS = (0.01, 0.03)


def private_repository(into: Path) -> Path:
    """A git repository holding a copy of the suite, committed: HEAD is the code under test."""
    for part in COPIED:
        source, target = REPO / part, into / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", ".kernelperf"))
        else:
            shutil.copy2(source, target)
    who = ["-c", "user.name=study", "-c", "user.email=study@example.com"]
    for command in (["init", "-q"], ["add", "-A"], [*who, "commit", "-qm", "the suite"]):
        subprocess.run(["git", *command], cwd=into, check=True, capture_output=True)
    return into


def card() -> str:
    try:
        found = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return "cpu"
    line = found.stdout.strip().splitlines()[0] if found.returncode == 0 and found.stdout.strip() else ""
    return line.rpartition("UUID: ")[2].rstrip(")")[:12] or "cpu"


def measure(args: argparse.Namespace) -> None:
    budget = Budget(args.budget_s)
    out = Path(args.out).resolve() / "against" / card()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kernelperf-against-study-") as folder:
        repo = private_repository(Path(folder) / "repo")
        index = 0
        while not budget.expired() and (args.processes is None or index < args.processes):
            json_path = out / f"run-{index:03d}.json"
            argv = [args.python, "-m", "pytest", "-p", "no:cacheprovider", "-q", args.suite]
            argv += ["--kernelperf-against", "HEAD", f"--kernelperf-json={json_path}", *args.pytest_arg]
            process = run_pytest(
                f"against-{index}", argv, {}, min(400.0, budget.left() + 60), json_path=json_path, cwd=repo
            )
            (out / f"run-{index:03d}.log").write_text(process.stdout)
            print(f"process {index}: rc {process.rc}, {process.wall_s:.0f} s", flush=True)
            if index == 0 and not _paired_results(json_path):
                # Nothing paired in the first process: the rest would only repeat its failure.
                print(process.stdout[-4000:], flush=True)
                raise SystemExit("the first process timed no pair; stopped")
            index += 1


def _paired_results(json_path: Path) -> int:
    try:
        results = runfile.read(json_path).current["results"]
    except runfile.RunFileError:  # the process wrote no run file, or a cut one
        return 0
    return sum(1 for r in results if (r.get("against") or {}).get("level_ms") is not None)


def log_ratios(result: dict[str, Any]) -> list[float]:
    """The log ratios of a result's pairs: this code's round over the revision's."""
    mine = result["device_time"]["rounds_ms"]
    theirs = result["against"]["rounds_ms"]
    return [math.log(a / b) for a, b in zip(mine, theirs, strict=True)]


def analyse(folder: Path) -> str:
    runs = [run for _, run in run_files(folder)]
    by_kernel: dict[str, list[dict[str, Any]]] = defaultdict(list)
    verdicts: dict[str, int] = defaultdict(int)
    seconds = []
    for run in runs:
        for result in run["results"]:
            against = result.get("against")
            if not against or against.get("level_ms") is None:
                verdicts[result["verdict"]] += 1
                continue
            verdicts[result["verdict"]] += 1
            by_kernel[result["test_id"]].append(_at_every_measurement(result, len(run["results"])))
            seconds.append(_measuring_s(result))
    cards = {path.parent.name for path in folder.rglob("run-*.json")}
    lines = [f"{len(runs)} processes on {len(cards)} cards; verdicts: {dict(sorted(verdicts.items()))}"]
    judged = sum(verdicts[v] for v in ("same", "slower", "faster"))
    lines.append(f"A/A': {verdicts['slower']} slower and {verdicts['faster']} faster in {judged} judgements")
    again = [str(_rejudged(r, 0.0).verdict) for results in by_kernel.values() for r in results]
    lines.append(
        f"A/A' re-judged by the fixed-pair rule, m every measurement of the process: "
        f"{again.count('slower')} slower and {again.count('faster')} faster in {len(again)}"
    )
    if seconds:
        lines.append(
            f"measuring per call, both sides: median {statistics.median(seconds):.2f} s, "
            f"max {max(seconds):.2f} s"
        )
    lines.append("")
    lines.append(
        "kernel  class  processes  pair SD  offset SD left  predicted  ratio  level SD between processes  "
        "pairs (median, max)  measuring s (median, max)  caught +1%  caught +3%"
    )
    classes: dict[str, list[float]] = defaultdict(list)
    power: dict[float, list[bool]] = defaultdict(list)
    power_by_class: dict[tuple[str, float], list[bool]] = defaultdict(list)
    for test_id, results in sorted(by_kernel.items()):
        ratios = [log_ratios(r) for r in results]
        pair_sd = (
            math.sqrt(statistics.fmean(statistics.variance(r) for r in ratios if len(r) > 1))
            if any(len(r) > 1 for r in ratios)
            else float("nan")
        )
        means = [statistics.fmean(r) for r in ratios]
        n = statistics.fmean(len(r) for r in ratios)
        left = statistics.stdev(means) if len(means) > 1 else float("nan")
        predicted = pair_sd / math.sqrt(n)
        levels = [math.log(r["device_time"]["level_ms"]) for r in results]
        level_sd = statistics.stdev(levels) if len(levels) > 1 else float("nan")
        kind = size_class(statistics.median(r["device_time"]["level_ms"] for r in results)).label
        classes[kind].append(left / predicted if predicted else float("nan"))
        catches = {delta: [str(_rejudged(r, delta).verdict) == "slower" for r in results] for delta in DELTAS}
        pairs = [len(r) for r in ratios]
        spent = [_measuring_s(r) for r in results]
        lines.append(
            f"{test_id}  {kind}  {len(results)}  {pair_sd:.3%}  {left:.3%}  {predicted:.3%}  "
            f"{left / predicted if predicted else float('nan'):.2f}  {level_sd:.3%}  "
            f"{statistics.median(pairs):.0f}, {max(pairs)}  "
            f"{statistics.median(spent):.2f}, {max(spent):.2f}  "
            + "  ".join(f"{sum(catches[delta])}/{len(results)}" for delta in DELTAS)
        )
        for delta in DELTAS:
            power[delta] += catches[delta]
            power_by_class[(kind, delta)] += catches[delta]
    lines.append("")
    for kind, values in sorted(classes.items()):
        finite = [v for v in values if math.isfinite(v)]
        if finite:
            lines.append(
                f"class {kind}: offset left / predicted, median {statistics.median(finite):.2f} "
                f"over {len(finite)} kernels"
            )
    for delta, caught in sorted(power.items()):
        lines.append(
            f"planted +{delta:.0%}: caught {sum(caught)} of {len(caught)} ({sum(caught) / len(caught):.1%})"
        )
    for (kind, delta), caught in sorted(power_by_class.items()):
        lines.append(f"  {kind}, +{delta:.0%}: caught {sum(caught)} of {len(caught)}")
    return "\n".join(lines)


def _measuring_s(result: dict[str, Any]) -> float:
    """Seconds of warm-up and rounds of one call, both sides together."""
    cost = result.get("cost_s") or {}
    return float(cost.get("warmup", 0.0) + cost.get("rounds", 0.0))


def _at_every_measurement(result: dict[str, Any], measurements: int) -> dict[str, Any]:
    """The result with m counting every measurement of its process (runs before that count said one
    per test), so that re-judging applies the level the paired mode uses now."""
    comparison = result["comparison"]
    m = max(comparison["planned_judgements"], measurements)
    return {**result, "comparison": {**comparison, "planned_judgements": m}}


def _rejudged(result: dict[str, Any], delta: float) -> Any:
    """The pair judged by the fixed-pair rule, with this code's rounds scaled by 1 + delta."""
    comparison = result["comparison"]
    return judge_paired(
        [x * (1 + delta) for x in result["device_time"]["rounds_ms"]],
        result["against"]["rounds_ms"],
        device=result["device"],
        method=result["device_time"]["method"],
        threshold=comparison["threshold"],
        alpha=comparison["alpha"],
        planned_judgements=comparison["planned_judgements"],
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default="out")
    parser.add_argument("--budget-s", type=float, default=420.0)
    parser.add_argument("--processes", type=int, default=None, help="at most this many (default: the budget)")
    parser.add_argument("--suite", default=SUITE)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--pytest-arg", action="append", default=[], help="an extra pytest argument")
    parser.add_argument("--analyse", type=Path, help="a folder of run JSON files: print the figures")
    args = parser.parse_args()
    if args.analyse:
        print(analyse(args.analyse))
    else:
        measure(args)


if __name__ == "__main__":
    main()
