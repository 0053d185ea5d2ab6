"""False alarms and power of the default verdict rule, by resampling measured rounds (CPU only).

Input: run JSON files (`--kernelperf-json`, several runs of the same suite: every result's rounds
pooled per device and test), or a JSONL file with one `{"kernel": ..., "rounds_ms": [...]}` per line.
Per kernel, a baseline of `baseline_rounds` rounds and a measurement of `rounds` rounds are drawn
from its pool (without replacement inside one draw) and judged with the defaults at the level of a
SUITE-kernel run (alpha / SUITE), unchanged and slowed by 1% and 3%.

    python studies/verdict_simulation.py runs/*.json [--suite 200] [--trials 2000] [--seed 0]

Prints per kernel the false "slower" rate, the power at each slowdown, and the expected false
alarms per run of a SUITE-kernel suite (SUITE x the mean per-judgement rate). Pools drawn from a
single process understate the between-process noise: pool rounds from several processes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_kernelperf.results import runfile  # noqa: E402  (after the path above)

SLOWDOWNS = (0.0, 0.01, 0.03)


def load(paths: list[Path]) -> dict[str, list[float]]:
    """Rounds per kernel, from run JSON files or JSONL lines."""
    pools: dict[str, list[float]] = {}
    for path in paths:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            for number, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    row = json.loads(line)
                    if "kernel" not in row or "rounds_ms" not in row:
                        raise SystemExit(f"{path}:{number}: expected an object with kernel and rounds_ms")
                    pools.setdefault(str(row["kernel"]), []).extend(map(float, row["rounds_ms"]))
            continue
        try:
            run = runfile.read(path).data
        except runfile.RunFileError as exc:
            raise SystemExit(str(exc)) from None
        for result in run["results"]:
            timing = result.get("device_time") or {}
            if timing.get("rounds_ms"):
                key = f"{result['test_id']} on {result['device']} ({result['cache']})"
                pools.setdefault(key, []).extend(map(float, timing["rounds_ms"]))
    return pools


def main() -> None:
    from pytest_kernelperf.settings import Settings
    from studies.resample import simulate

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("inputs", nargs="+", type=Path)
    parser.add_argument("--suite", type=int, default=200, help="kernels per run (the m of alpha / m)")
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    defaults = Settings()
    pools = load(args.inputs)
    need = defaults.rounds + defaults.baseline_rounds
    usable = {k: v for k, v in pools.items() if len(v) >= need}
    for kernel in sorted(set(pools) - set(usable)):
        print(f"skipped {kernel}: {len(pools[kernel])} rounds, {need} needed")
    if not usable:
        raise SystemExit("no kernel has enough rounds")
    results = simulate(
        usable,
        SLOWDOWNS,
        trials=args.trials,
        rounds=defaults.rounds,
        baseline_rounds=defaults.baseline_rounds,
        threshold=defaults.threshold,
        alpha=defaults.alpha,
        suite_size=args.suite,
        seed=args.seed,
    )
    print(
        f"defaults: {defaults.rounds} rounds vs {defaults.baseline_rounds} baseline rounds, threshold "
        f"{defaults.threshold:g}, alpha {defaults.alpha:g} over {args.suite} judgements; "
        f"{args.trials} draws each\n"
    )
    print("| kernel | rounds | false slower | caught at +1% | caught at +3% |")
    print("|---|---|---|---|---|")
    rates = {(r.kernel, r.slowdown): r.rate for r in results}
    for kernel, pool in usable.items():
        print(
            f"| {kernel} | {len(pool)} | " + " | ".join(f"{rates[(kernel, s)]:.2%}" for s in SLOWDOWNS) + " |"
        )
    false_rate = sum(rates[(k, 0.0)] for k in usable) / len(usable)
    print(
        f"\nper-judgement false alarms {false_rate:.4%}; expected false alarms per run of a "
        f"{args.suite}-kernel suite {false_rate * args.suite:.3f}"
    )


if __name__ == "__main__":
    main()
