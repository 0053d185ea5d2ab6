"""Apache Otava against MongoDB's signal-processing-algorithms on the same synthetic histories.

Each library lives in its own environment (their pins conflict: Otava wants numpy 2.2.0 and
scipy < 1.17, signal-processing-algorithms numpy < 2 and setuptools < 71), so run this once in each:

    python studies/history/compare_libraries.py [--series 40]

It prints a markdown row per library found and kernel kind, and the time per 100-commit series.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synthetic  # type: ignore[import-not-found]  # the sibling script


def otava_detector(
    max_pvalue: float, window: int, min_magnitude: float
) -> Callable[[synthetic.History], list[int]]:
    from otava.analysis import compute_change_points  # type: ignore[import-not-found]

    def detect(history: synthetic.History) -> list[int]:
        points, _ = compute_change_points(
            history.means, window_len=window, max_pvalue=max_pvalue, min_magnitude=min_magnitude
        )
        return [int(p.index) for p in points]

    return detect


def spa_detector(pvalue: float, permutations: int) -> Callable[[synthetic.History], list[int]]:
    import numpy as np
    from signal_processing_algorithms.energy_statistics.energy_statistics import (  # type: ignore[import-not-found]
        e_divisive,
    )

    def detect(history: synthetic.History) -> list[int]:
        np.random.seed(0)  # its permutation test draws from numpy's global generator
        return sorted(
            int(i) for i in e_divisive(np.array(history.means), pvalue=pvalue, permutations=permutations)
        )

    return detect


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--series", type=int, default=40)
    args = parser.parse_args(argv)
    candidates: list[tuple[str, Callable[[synthetic.History], list[int]]]] = []
    for name, make in (
        ("otava p=0.001 window=30 min 0.5%", lambda: otava_detector(0.001, 30, 0.005)),
        ("otava p=0.001 window=50", lambda: otava_detector(0.001, 50, 0.0)),
        ("otava p=0.0001 window=30", lambda: otava_detector(0.0001, 30, 0.0)),
        ("spa p=0.05 perm=100", lambda: spa_detector(0.05, 100)),
        ("spa p=0.01 perm=100", lambda: spa_detector(0.01, 100)),
    ):
        try:
            candidates.append((name, make()))
        except ImportError:
            continue
    rows = []
    for name, detector in candidates:
        start = time.perf_counter()
        planted = synthetic.evaluate(detector, series=args.series, planted=True)
        flat = synthetic.evaluate(detector, series=args.series, planted=False)
        per_series = (time.perf_counter() - start) / (4 * args.series)
        for kind in synthetic.KERNELS:
            rows.append((f"{name} ({1000 * per_series:.0f} ms/series)", kind, planted[kind], flat[kind]))
    print("\n".join(synthetic.table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
