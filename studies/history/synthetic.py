"""Synthetic run histories with planted slowdowns, and the scoring of a change point detector on them.

Stdlib only, so that the same histories can be fed to detectors installed in different environments.
A history is COMMITS runs of one series; each run is ROUNDS per-round location estimates (what a
run file's `rounds_ms` holds), each round drawn around the series' level with the relative standard
deviation of one round. The level takes planted steps (+1%, +2%, +5%) and a drift (+0.5% per commit
over 10 commits) at random, well separated commits.

Figures of round noise (relative SD of one round's median) were measured on an NVIDIA H200: 0.8%
for a 2 us Triton kernel, 0.08% for a 30 us one.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

KERNELS = {"2 us kernel": (0.002, 0.008), "30 us kernel": (0.030, 0.0008)}  # (ms, relative SD)
STEPS_PCT = (1.0, 2.0, 5.0)
DRIFT_PCT, DRIFT_LENGTH = 0.5, 10
COMMITS, ROUNDS, TOLERANCE = 100, 3, 3


@dataclass(frozen=True)
class Event:
    kind: str  # "step" or "drift"
    index: int  # first run at the new level (for a drift: its first step)
    pct: float  # size of the step (for a drift: of each of its steps)
    length: int = 1


@dataclass
class History:
    rounds: list[list[float]]  # per run: its rounds, in ms
    events: list[Event] = field(default_factory=list)

    @property
    def medians(self) -> list[float]:
        return [sorted(r)[len(r) // 2] for r in self.rounds]

    @property
    def means(self) -> list[float]:
        return [sum(r) / len(r) for r in self.rounds]


def make_history(
    rng: random.Random,
    base_ms: float,
    rsd: float,
    *,
    commits: int = COMMITS,
    rounds: int = ROUNDS,
    planted: bool = True,
) -> History:
    """One series; with `planted`, three steps and a drift at random commits at least 15 apart."""
    events: list[Event] = []
    if planted:
        kinds = [("step", pct, 1) for pct in STEPS_PCT] + [("drift", DRIFT_PCT, DRIFT_LENGTH)]
        rng.shuffle(kinds)
        while True:  # four starts in [10, commits - 20], each at least 15 after the end of the previous
            starts = sorted(rng.sample(range(10, commits - 20), len(kinds)))
            ends = [s + length for s, (_, _, length) in zip(starts, kinds, strict=True)]
            if all(starts[i + 1] - ends[i] >= 15 for i in range(len(starts) - 1)):
                break
        events = [Event(k, s, p, n) for s, (k, p, n) in zip(starts, kinds, strict=True)]
    level = [base_ms] * commits
    for event in events:
        for step in range(event.length):
            for i in range(event.index + step, commits):
                level[i] *= 1 + event.pct / 100
    runs = [[lv * (1 + rng.gauss(0, rsd)) for _ in range(rounds)] for lv in level]
    return History(runs, events)


@dataclass
class Score:
    steps_found: dict[float, int] = field(default_factory=dict)  # step % -> found within TOLERANCE
    steps_total: dict[float, int] = field(default_factory=dict)
    drifts_found: int = 0
    drifts_total: int = 0
    drifts_labelled: int = 0  # reported as a drift
    steps_called_drift: int = 0
    false_points: int = 0
    series: int = 0
    commits: int = 0

    def add(
        self,
        history: History,
        detected: Sequence[int | tuple[int, int, str]],
        tolerance: int = TOLERANCE,
    ) -> None:
        """Score one history. A detection is an index (first run after the change) or a span
        (first index, last index, "step" or "drift") for detectors that report drifts as one."""
        self.series += 1
        self.commits += len(history.rounds)
        spans = [d if isinstance(d, tuple) else (int(d), int(d), "") for d in detected]
        claimed: set[int] = set()
        for event in history.events:
            lo, hi = event.index - tolerance, event.index + event.length - 1 + tolerance
            near = [i for i, (a, b, _) in enumerate(spans) if a <= hi and b >= lo]
            claimed.update(near)
            if event.kind == "drift":
                self.drifts_total += 1
                self.drifts_found += bool(near)
                self.drifts_labelled += any(spans[i][2] == "drift" for i in near)
            else:
                self.steps_total[event.pct] = self.steps_total.get(event.pct, 0) + 1
                self.steps_found[event.pct] = self.steps_found.get(event.pct, 0) + bool(near)
                self.steps_called_drift += any(spans[i][2] == "drift" for i in near)
        self.false_points += sum(1 for i in range(len(spans)) if i not in claimed)

    @property
    def found_fraction(self) -> float:
        total = sum(self.steps_total.values())
        return sum(self.steps_found.values()) / total if total else float("nan")

    @property
    def false_per_100(self) -> float:
        return 100 * self.false_points / self.commits if self.commits else float("nan")


def evaluate(
    detector: Callable[[History], Sequence[int | tuple[int, int, str]]],
    *,
    series: int = 40,
    seed: int = 1,
    planted: bool = True,
) -> dict[str, Score]:
    """The detector's score per kernel kind over `series` histories each (fixed seed: same data)."""
    scores: dict[str, Score] = {}
    for kind, (base_ms, rsd) in KERNELS.items():
        rng = random.Random(f"{seed}:{kind}:{planted}")
        score = Score()
        for _ in range(series):
            history = make_history(rng, base_ms, rsd, planted=planted)
            score.add(history, detector(history))
        scores[kind] = score
    return scores


def table(rows: Sequence[tuple[str, str, Score, Score]]) -> list[str]:
    """Markdown rows: detector, kernel, steps found (per size), drifts found, false change points."""
    lines = [
        "| detector | kernel | +1% found | +2% found | +5% found | steps >=1% found | drift found "
        "| false per 100 commits (planted) | false per 100 commits (flat) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, kind, planted, flat in rows:
        per_size = " | ".join(
            f"{planted.steps_found.get(p, 0)}/{planted.steps_total.get(p, 0)}" for p in STEPS_PCT
        )
        lines.append(
            f"| {name} | {kind} | {per_size} | {100 * planted.found_fraction:.1f}% "
            f"| {planted.drifts_found}/{planted.drifts_total} | {planted.false_per_100:.2f} "
            f"| {flat.false_per_100:.2f} |"
        )
    return lines


# --- the package's detector on these histories ----------------------------------------------------


def package_detector(params: Any) -> Callable[[History], list[tuple[int, int, str]]]:
    """pytest_kernelperf.history's change points (Otava + drift merging) as spans for `Score.add`."""
    from pytest_kernelperf.history.changepoints import change_points
    from pytest_kernelperf.history.points import Point

    def detect(history: History) -> list[tuple[int, int, str]]:
        points = [
            Point(
                run_id=i,
                created=f"{i:04d}",
                commit=f"{i:040x}",
                branch=None,
                level_ms=r[0],
                rounds_ms=tuple(r),
            )
            for i, r in enumerate(history.rounds)
        ]
        found = change_points(points, params)
        return [(c.drift_from if c.drift_from is not None else c.index, c.index, c.kind) for c in found]

    return detect


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    import dataclasses
    import sys
    import time
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from pytest_kernelperf.history.changepoints import Params

    parser = argparse.ArgumentParser(
        description="Score the history's change point detector on synthetic data."
    )
    parser.add_argument("--series", type=int, default=100, help="histories per kernel kind (default 100)")
    parser.add_argument("--tune", action="store_true", help="also score the parameter variants tried")
    args = parser.parse_args(argv)
    chosen = Params()
    variants = [("chosen " + _params_text(chosen), chosen)]
    if args.tune:
        for change in (
            {"max_pvalue": 0.01},
            {"max_pvalue": 0.0001},
            {"min_magnitude": 0.0},
            {"min_magnitude": 0.008},
            {"window": 50},
            {"window": 20},
            {"ramp_share": 0.3},
            {"ramp_share": 0.4},
            {"drift_gap": 5},
        ):
            params = dataclasses.replace(chosen, **change)
            variants.append((_params_text(params), params))
    rows = []
    for name, params in variants:
        detector = package_detector(params)
        start = time.perf_counter()
        planted = evaluate(detector, series=args.series, planted=True)
        flat = evaluate(detector, series=args.series, planted=False, seed=2)
        per_series = (time.perf_counter() - start) / (4 * args.series)
        for kind in KERNELS:
            rows.append((f"{name}, {1000 * per_series:.0f} ms/series", kind, planted[kind], flat[kind]))
        for kind in KERNELS:
            p = planted[kind]
            print(
                f"{name} {kind}: drifts labelled drift {p.drifts_labelled}/{p.drifts_total}, "
                f"steps labelled drift {p.steps_called_drift}/{sum(p.steps_total.values())}",
                flush=True,
            )
    print()
    print(
        f"{args.series} histories of {COMMITS} commits per kernel kind with planted steps (+1%, +2%, +5%) "
        f"and a drift (+{DRIFT_PCT}%/commit over {DRIFT_LENGTH} commits); as many flat ones; "
        f"{ROUNDS} rounds per run; found = within {TOLERANCE} commits."
    )
    print("\n".join(table(rows)))
    return 0


def _params_text(params: Any) -> str:
    return (
        f"p<{params.max_pvalue:g} window {params.window} min {100 * params.min_magnitude:g}% "
        f"ramp {params.ramp_share:g} gap {params.drift_gap}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
