"""How the number of paired rounds of `--kernelperf-against` is chosen, simulated (no GPU).

A/A' and +1% pairs with a stated spread per side are judged by the package's judge after three
draw rules: the 5 planned pairs; `pairs_needed` (topped up once, by the planned pairs' spread);
and one more pair at a time while the pairs cannot yet detect twice the threshold (drawing until
the spread happens to look small). Prints the share of `slower` and `faster` verdicts and the mean
number of pairs (docs/measurement.md, "Against another revision").

    python studies/paired_draw_simulation.py --runs 4000
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_kernelperf.verdict.judgement import JudgementContext
from studies.fixed_pairs import judge_pair, pairs_needed

DEVICE, METHOD, LEVEL_MS, MOST = "NVIDIA H200", "cupti", 0.05, 30


def one_run(
    side_sd: float, ratio: float, rule: str, context: JudgementContext, rng: random.Random
) -> tuple[str, int]:
    current: list[float] = []
    base: list[float] = []

    def draw(count: int) -> None:
        for _ in range(count):
            current.append(LEVEL_MS * ratio * math.exp(rng.gauss(0, side_sd)))
            base.append(LEVEL_MS * math.exp(rng.gauss(0, side_sd)))

    def needed() -> int:
        return pairs_needed(current, base, context, device=DEVICE, method=METHOD, most=MOST)

    draw(5)
    if rule == "decided once":
        draw(needed() - len(current))
    elif rule == "one at a time":
        while len(current) < MOST and needed() > len(current):
            draw(1)
    verdict = judge_pair(current, base, context, device=DEVICE, method=METHOD).verdict
    return str(verdict), len(current)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=4000)
    parser.add_argument("--alpha", type=float, default=0.01)
    args = parser.parse_args()
    context = JudgementContext(threshold=0.005, alpha=args.alpha, host_threshold=0.1)
    for side_sd in (0.003, 0.005, 0.007):
        for rule in ("planned 5", "decided once", "one at a time"):
            for ratio in (1.0, 1.01):
                rng = random.Random(11)
                runs = [one_run(side_sd, ratio, rule, context, rng) for _ in range(args.runs)]
                slower = sum(v == "slower" for v, _ in runs) / args.runs
                faster = sum(v == "faster" for v, _ in runs) / args.runs
                pairs = sum(n for _, n in runs) / args.runs
                print(
                    f"side SD {side_sd:.1%}, {rule}, ratio {ratio}: "
                    f"slower {slower:.2%}, faster {faster:.2%}, {pairs:.1f} pairs",
                    flush=True,
                )


if __name__ == "__main__":
    main()
