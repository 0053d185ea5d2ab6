"""Leave-one-kernel-out choice of the stored judge's class occasion term (verdict/noise.py
OCCASION_LEVEL_SD), from the archived A/A studies, with one-occasion baselines and with two.

Reads the verdict and power-capped studies' archives (extracted to a temporary folder; only their
run and baseline files) and re-judges every A/A run (verdict studies: `NN_schedule_here`, the
`process_placement` contrast left out; power-capped: the unchanged `NN_1.00` runs) against its card's
whole baseline set with the package's judge (results/saved_runs.judge_run, m the suite's entries on
the device), once per candidate tau (the same value in every class: a class's tau moves only its
own kernels' judgements). Per class (below 10 us, 10-100 us, from 100 us), the rule is the smallest
tau with no false `slower`; held out by kernel, each kernel (its judgements on every card) is
judged at the tau the rule picks on the other kernels. Printed per design: the values chosen on
all kernels, the held-out false `slower` with its one-sided 95% Clopper-Pearson upper bound, the z*
tail at the held-out values (|z*| > 3 against N(0,1)'s share, the largest z* against its critical
value), and the share of +3% caught (each run's rounds scaled, as the studies plant it) per size
class at the chosen and at the shipped values.

Designs: the cards whose baselines come from 3 recording processes (the defaults); the same with
a second occasion simulated, each entry given the rounds of the card's first two A/A runs as two
processes of a second recording occasion (the project's own `processes.another_occasion`) and
judged by the card's other runs; and, at the chosen values only, the cards recorded in one process.
The archives hold no card measured on two days: the two runs of the second occasion came minutes
after the recording, in the session of the runs judged against it, so the two-occasion figures
show what the judge does with occasions, not what a second day is worth.

    python3 studies/occasion_loko.py [ARCHIVE.tar.xz ...]   # default: docs/results' study archives
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tarfile
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_kernelperf.baselines import processes
from pytest_kernelperf.baselines.store import BaselineStore
from pytest_kernelperf.model.baseline import BaselineEntry
from pytest_kernelperf.model.result import Verdict
from pytest_kernelperf.results import runfile
from pytest_kernelperf.results.saved_runs import ResultKey, judge_run, key_of
from pytest_kernelperf.verdict import noise, occasions
from studies.occasion_calibration import z_star
from studies.verdict_analysis import planted, schedule_of

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
ARCHIVES = ("verdict_study_*.tar.xz", "power_capped_*.tar.xz")
GRID = tuple(round(0.0005 * i, 4) for i in range(17))  # 0 to 0.8% by 0.05%
CLASSES = ("below 10 us", "10-100 us", "from 100 us")
SHIPPED = tuple(sd for _, sd in noise.OCCASION_LEVEL_SD)
PLANTED = 1.03


@dataclass(frozen=True)
class Card:
    study: str
    name: str
    baselines: dict[ResultKey, BaselineEntry]
    runs: tuple[tuple[str, runfile.RunReport], ...]  # the A/A runs, in order

    @property
    def recording_processes(self) -> int:
        return max(len(e.device_time.process_rounds) or 1 for e in self.baselines.values())


@dataclass(frozen=True)
class Row:
    """One judgement."""

    kernel: str  # module::test id: the same kernel on every card
    card: str
    run: str
    tau_class: int  # index into CLASSES
    size: str  # the decade's label
    verdict: Verdict
    z: float
    critical: float  # z at the judgement's level alpha / m
    needs_occasions: bool
    detectable: float  # the smallest slowdown the judgement would catch with 95% power


def extract(archives: Sequence[Path], into: Path) -> list[Card]:
    """The cards of `archives`: each folder with baselines and A/A runs."""
    cards = []
    for archive in archives:
        target = into / archive.name.removesuffix(".tar.xz")
        with tarfile.open(archive) as tar:
            wanted = [m for m in tar.getmembers() if m.isfile() and m.name.endswith((".json", ".yaml"))]
            tar.extractall(target, members=wanted, filter="data")
        for folder in sorted(p.parent for p in target.rglob("baselines") if p.is_dir()):
            runs = tuple(
                (p.stem, runfile.load(p)) for p in sorted(folder.glob("[0-9]*_*.json")) if _aa(p.stem)
            )
            baselines = _entries(folder / "baselines")
            if runs and baselines:
                cards.append(Card(target.name, folder.name[:12], baselines, runs))
    return cards


def _aa(label: str) -> bool:
    if label.endswith("_1.00"):  # power_capped.py's unchanged code
        return True
    schedule, side = schedule_of(label)
    return side == "here" and schedule != "process_placement"


def _entries(folder: Path) -> dict[ResultKey, BaselineEntry]:
    """Every entry of the card's baseline set: m is the suite's, whichever tests a run selected."""
    store = BaselineStore(folder)
    entries: dict[ResultKey, BaselineEntry] = {}
    for path in sorted(folder.rglob("*.yaml")):
        module = path.relative_to(folder).with_suffix(".py").as_posix()
        for key, entry in store.entries(path).items():
            entries[(module, key.test, key.device, key.cache)] = entry
    return entries


def with_second_occasion(card: Card) -> Card | None:
    """The card with its first two A/A runs' rounds added to each entry as a second recording
    occasion of two processes, judged by its other runs; None with fewer than three runs."""
    if len(card.runs) < 3:
        return None
    (_, first), (_, second) = card.runs[:2]
    measured = [{key_of(r): r.entry for r in run.results if r.entry is not None} for run in (first, second)]
    baselines = {}
    for key, entry in card.baselines.items():
        a, b = (found.get(key) for found in measured)
        baselines[key] = (
            entry if a is None or b is None else processes.combine(processes.another_occasion(entry, a), b)
        )
    return replace(card, baselines=baselines, runs=card.runs[2:])


def set_tau(values: Sequence[float]) -> None:
    small, mid, large = values
    noise.OCCASION_LEVEL_SD = ((1e-2, small), (1e-1, mid), (math.inf, large))


def tau_class(level_ms: float) -> int:
    return 0 if level_ms < 1e-2 else 1 if level_ms < 1e-1 else 2


def judge_cards(cards: Iterable[Card], taus: Sequence[float], factor: float = 1.0) -> list[Row]:
    """Every A/A judgement of `cards` at class taus `taus`, the runs' rounds scaled by `factor`."""
    from scipy.stats import norm

    set_tau(taus)
    rows = []
    for card in cards:
        for label, measured in card.runs:
            run = measured
            if factor != 1.0:
                run = replace(run, results=tuple(planted(r, factor) if r.entry else r for r in run.results))
            for result in judge_run(card.baselines, run, source=card.name):
                c = result.comparison
                if c is None or c.ratio is None or c.p_value is None or result.baseline_level_ms is None:
                    continue
                base = card.baselines[key_of(result)].device_time
                rows.append(
                    Row(
                        f"{result.module}::{result.test_id}",
                        f"{card.study}/{card.name}",
                        label,
                        tau_class(result.baseline_level_ms),
                        noise.size_class(result.baseline_level_ms).label,
                        result.verdict,
                        z_star(c.ratio, c.p_value),
                        float(norm.isf(c.level)) if c.level else math.inf,
                        occasions.needs_occasions(base, base.resolution_ms) is not None,
                        c.detectable or math.inf,
                    )
                )
    return rows


def upper_95(found: int, n: int) -> float:
    """The one-sided 95% Clopper-Pearson upper bound of a rate seen `found` times in `n`."""
    from scipy.stats import beta

    return float(beta.ppf(0.95, found + 1, n - found)) if n > found else 1.0


@dataclass(frozen=True)
class HeldOut:
    chosen: tuple[float, ...]  # per class, on all kernels
    held: dict[str, tuple[float, ...]]  # per kernel: per class, on the other kernels
    rows: list[Row]  # each judgement at its kernel's held-out value


def leave_one_kernel_out(by_tau: dict[float, list[Row]]) -> HeldOut:
    slower: dict[tuple[int, float], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for tau, rows in by_tau.items():
        for row in rows:
            slower[(row.tau_class, tau)][row.kernel] += row.verdict is Verdict.SLOWER
    kernels = sorted({row.kernel for row in by_tau[GRID[0]]})

    def pick(c: int, without: str | None) -> float:
        clean = [t for t in GRID if not any(n for k, n in slower[(c, t)].items() if k != without)]
        return clean[0] if clean else GRID[-1]

    chosen = tuple(pick(c, None) for c in range(len(CLASSES)))
    held = {k: tuple(pick(c, k) for c in range(len(CLASSES))) for k in kernels}
    rows = [row for tau, rs in by_tau.items() for row in rs if held[row.kernel][row.tau_class] == tau]
    return HeldOut(chosen, held, rows)


def tail_line(rows: Sequence[Row]) -> str:
    n = len(rows)
    beyond = sum(abs(r.z) > 3 for r in rows)
    worst = max(rows, key=lambda r: r.z - r.critical)
    return (
        f"|z*| > 3: {beyond} of {n} (N(0,1): {0.0027 * n:.1f}); largest z* against its cut: "
        f"{worst.z:.2f} vs {worst.critical:.2f} ({worst.z - worst.critical:+.2f}; {short(worst)})"
    )


def short(row: Row) -> str:
    return f"{row.kernel.rpartition('/')[2]} on {row.card.rpartition('/')[2]}, {row.run}"


def false_line(rows: Sequence[Row]) -> str:
    n, found = len(rows), [r for r in rows if r.verdict is Verdict.SLOWER]
    runs = {(r.card, r.run) for r in rows}
    red = {(r.card, r.run) for r in found}
    text = (
        f"false slower {len(found)} of {n} (95% upper {1000 * upper_95(len(found), n):.1f} per 1000); "
        f"runs red {len(red)} of {len(runs)}"
    )
    return text + "".join(f"\n      {r.z:+.2f} {short(r)}" for r in found)


def power_line(rows: Sequence[Row]) -> str:
    by_size: dict[str, list[Verdict]] = defaultdict(list)
    for row in rows:
        by_size[row.size].append(row.verdict)
    parts = []
    for size in sorted(by_size, key=_low):
        verdicts = by_size[size]
        caught = sum(v is Verdict.SLOWER for v in verdicts) / len(verdicts)
        undetermined = sum(v is Verdict.UNDETERMINED for v in verdicts)
        parts.append(f"{size} {caught:.0%} of {len(verdicts)} ({undetermined} undetermined)")
    return "; ".join(parts)


def kernel_power(rows: Sequence[Row]) -> str:
    """Per kernel of the largest class: the share of +3% caught and the median detectable slowdown."""
    by_kernel: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        if row.tau_class == 2:
            by_kernel[row.kernel.split("::", 1)[1]].append(row)
    parts = []
    for kernel, found in sorted(by_kernel.items(), key=lambda item: _caught(item[1])):
        detectable = statistics.median(r.detectable for r in found)
        parts.append(f"{kernel} {_caught(found):.0%} ({detectable:.1%})")
    return "; ".join(parts)


def _caught(rows: Sequence[Row]) -> float:
    return sum(r.verdict is Verdict.SLOWER for r in rows) / len(rows)


def _low(label: str) -> float:
    number, unit = label.split("-", maxsplit=1)[0].split()
    return float(number) * {"ns": 1e-6, "us": 1e-3, "ms": 1.0}[unit]


def percent(values: Iterable[float]) -> str:
    return " / ".join(f"{v:.2%}" for v in values)


def design(title: str, cards: list[Card], class_only: bool = False) -> tuple[float, ...]:
    """Print one design's leave-one-kernel-out figures; the values chosen on all its kernels."""
    by_tau = {tau: judge_cards(cards, (tau,) * 3) for tau in GRID}
    result = leave_one_kernel_out(by_tau)
    rows = by_tau[GRID[0]]
    runs = len({(r.card, r.run) for r in rows})
    print(f"\n## {title}: {len(cards)} cards, {runs} runs, {len(rows)} judgements")
    print(
        f"  per class ({', '.join(CLASSES)}): judgements "
        + " / ".join(str(sum(r.tau_class == c for r in rows)) for c in range(3))
    )
    for c, label in enumerate(CLASSES):
        line = "  ".join(
            f"{tau:.2%}:{sum(r.verdict is Verdict.SLOWER for r in by_tau[tau] if r.tau_class == c)}"
            for tau in GRID
        )
        print(f"  false slower by tau, {label}: {line}")
    print(f"  chosen on all kernels: {percent(result.chosen)}")
    moved = {k: v for k, v in result.held.items() if v != result.chosen}
    for kernel, values in sorted(moved.items()):
        print(f"    held out {kernel.rpartition('/')[2]}: the others choose {percent(values)}")
    print(f"  held out by kernel: {false_line(result.rows)}")
    print(f"    {tail_line(result.rows)}")
    for name, taus in (("chosen", result.chosen), ("shipped", SHIPPED)):
        at = judge_cards(cards, taus)
        caught = judge_cards(cards, taus, PLANTED)
        print(f"  at the {name} values ({percent(taus)}): {false_line(at)}")
        print(f"    {tail_line(at)}")
        print(f"    +3% caught: {power_line(caught)}")
        if name == "chosen":
            print(f"    +3% caught per kernel from 100 us: {kernel_power(caught)}")
    if class_only:  # what the kernels' own occasion spread adds: the class value alone in its place
        weight, noise.OCCASION_DF = noise.OCCASION_DF, 1e12
        at = judge_cards(cards, result.chosen)
        noise.OCCASION_DF = weight
        print(f"  at the chosen values, the class value alone (no kernel's own estimate): {false_line(at)}")
        print(f"    {tail_line(at)}")
    return result.chosen


def flag_lines(cards: list[Card], taus: Sequence[float]) -> None:
    """Which kernel baselines the needs-occasions check flags, and their A/A z* tail against the rest."""
    flagged = {
        (card.name, module, test)
        for card in cards
        for (module, test, _, _), entry in card.baselines.items()
        if occasions.needs_occasions(entry.device_time, entry.device_time.resolution_ms)
    }
    total = sum(len(card.baselines) for card in cards)
    rows = judge_cards(cards, taus)
    rule = f"p < {occasions.NEEDS_OCCASIONS_P:g}"
    print(f"\n## needs occasions ({rule}): {len(flagged)} of {total} kernel baselines flagged")
    for card, module, test in sorted(flagged):
        print(f"    {card} {module.rpartition('/')[2]}::{test}")
    for name, part in (
        ("flagged", [r for r in rows if r.needs_occasions]),
        ("others", [r for r in rows if not r.needs_occasions]),
    ):
        undetermined = sum(r.verdict is Verdict.UNDETERMINED for r in part)
        print(f"  {name}: {len(part)} judgements, {undetermined} undetermined; {tail_line(part)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("archives", type=Path, nargs="*", help="study archives (.tar.xz)")
    args = parser.parse_args()
    archives = args.archives or sorted(p for pattern in ARCHIVES for p in RESULTS.glob(pattern))
    with tempfile.TemporaryDirectory(prefix="occasion-loko-") as scratch:
        cards = extract(archives, Path(scratch))
    defaults = [c for c in cards if c.recording_processes >= 3]
    single = [c for c in cards if c.recording_processes == 1]
    print(f"# studies/occasion_loko.py; archives: {', '.join(a.name for a in archives)}")
    print(f"# tau grid {GRID[0]:.2%}-{GRID[-1]:.2%} by 0.05%; shipped {percent(SHIPPED)}")
    print("# +3% planted by scaling each run's rounds")
    print("# 3 recording processes: " + ", ".join(f"{c.study}/{c.name}" for c in defaults))
    chosen = design("one occasion, 3 recording processes (the defaults)", defaults)
    two = [card for card in map(with_second_occasion, defaults) if card is not None]
    design("two occasions (the first two A/A runs as a second occasion of 2 processes)", two, class_only=True)
    print("\n## one recording process (not the defaults; held out), at the values chosen above")
    print("# cards: " + ", ".join(f"{c.study}/{c.name}" for c in single))
    at = judge_cards(single, chosen)
    print(f"  {false_line(at)}\n    {tail_line(at)}")
    print(f"    +3% caught: {power_line(judge_cards(single, chosen, PLANTED))}")
    flag_lines(defaults, chosen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
