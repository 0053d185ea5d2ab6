"""The sequential paired gate of `--kernelperf-against` simulated (no GPU): seeded sequences of normal
pair log ratios run through the package's gate (pytest_kernelperf/verdict/sequential.py: replay) as a
run draws them, at alpha 0.01 over 40 judgements and threshold 0.5%, at most 320 pairs. Prints, per
pairs' SD and true change, the verdicts' shares and the median pairs drawn; then A/A at threshold 0
and level 0.05 over 200 looks, normal and Student t (3 degrees of freedom), beside a t test fixed in
advance but looked at as often (docs/measurement.md, "The sequential gate").

    python studies/sequential_gate_simulation.py --sequences 4000
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_kernelperf.model.result import Verdict
from pytest_kernelperf.verdict.sequential import VERDICTS, replay

PLANNED, MOST, LEVEL, THRESHOLD = 5, 320, 0.01 / 40, 0.005


def shares(codes: np.ndarray) -> str:
    counts = np.bincount(codes, minlength=len(VERDICTS)) / len(codes)
    return ", ".join(
        f"{verdict} {share:.1%}" for verdict, share in zip(VERDICTS, counts, strict=True) if share
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sequences", type=int, default=4000)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    print(f"alpha 0.01 over 40 (level {LEVEL:.2g}), threshold {THRESHOLD:.1%}, at most {MOST} pairs")
    for sd in (0.003, 0.005, 0.01, 0.02):
        for change in (0.0, 0.005, 0.01, 0.02):
            x = rng.normal(math.log1p(change), sd, (args.sequences, MOST))
            codes, pairs = replay(x, LEVEL, THRESHOLD, PLANNED)
            median = np.median(pairs)
            print(f"pairs' SD {sd:.1%}, change {change:+.1%}: {shares(codes)}; median pairs {median:.0f}")
    print("A/A, threshold 0, level 0.05, 200 looks: `slower` of the gate, and of a t test looked at as often")
    n = np.arange(1, 201)
    for tails in ("normal", "t3"):
        noise = (
            rng.normal(size=(args.sequences, 200))
            if tails == "normal"
            else rng.standard_t(3, (args.sequences, 200))
        )
        x = 0.01 * noise / (1 if tails == "normal" else math.sqrt(3))
        codes, _ = replay(x, 0.05, 0.0, PLANNED)
        mean = np.cumsum(x, axis=1) / n
        spread = np.sqrt(np.maximum(np.cumsum(x * x, axis=1) - n * mean**2, 0) / np.maximum(n - 1, 1))
        naive = mean - stats.t.ppf(0.95, np.maximum(n - 1, 1)) * spread / np.sqrt(n) > 0
        naive[:, : PLANNED - 1] = False
        gate = float(np.mean(codes == VERDICTS.index(Verdict.SLOWER)))
        print(f"{tails}: gate {gate:.2%}, repeated t test {np.mean(naive.any(axis=1)):.1%}")


if __name__ == "__main__":
    main()
