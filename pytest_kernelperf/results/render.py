"""Pure renderers of results: the end-of-run terminal table, markdown, JUnit properties, `-v` words.

Depends only on the result data types (no pytest, no torch). Results are grouped by test module,
then by test; a test that times several implementations (several names, or one parametrized test)
reads as one table, like the lecture's "Method | Time (ms)". Cells carry a style name ("bad",
"good", "warn") instead of colours: the plugin maps styles onto pytest's terminal markup, which
honours `--color` and plain terminals, and markdown onto bold text.

A cell holds a word and a number (`undetermined ±12%`, `slower +4.1%`); the reasons and remedies
are numbered notes under the tables (results/footnotes.py), each printed once however many rows
cite it, so that a terminal row stays within MAX_ROW characters and reads at a glance.
"""

from __future__ import annotations

import re
import statistics
import textwrap
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pytest_kernelperf.baselines.store import FileUpdate
from pytest_kernelperf.formatting import artifact_line, duration, percent, significant
from pytest_kernelperf.ids import display_name
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey, split_nodeid
from pytest_kernelperf.model.device import Peak
from pytest_kernelperf.model.result import JUDGEMENTS, MEASURED_TWICE, NOT_GATED, BenchResult, Verdict
from pytest_kernelperf.profiling import ncu_diff
from pytest_kernelperf.results.footnotes import Footnotes, cited
from pytest_kernelperf.results.throughput import Figures, figures
from pytest_kernelperf.verdict.judge import undetermined_beyond
from pytest_kernelperf.verdict.memory import memory_text
from pytest_kernelperf.verdict.messages import change_figure, verdict_figure
from pytest_kernelperf.verdict.noise import size_class
from pytest_kernelperf.verdict.notes import reason_notes
from pytest_kernelperf.verdict.occasions import ADD_OCCASION, needs_occasions
from pytest_kernelperf.verdict.shift import device_shifts

_PARAMS = re.compile(r"\[(?P<param>.*)\]$")

Segment = tuple[str, str]  # (text, style); style is "", "bad", "good", "warn", "bold" or "dim"
Line = tuple[Segment, ...]

VERDICT_STYLE = {
    Verdict.SLOWER: "bad",
    Verdict.MISMATCH: "bad",
    Verdict.FASTER: "good",
    Verdict.UNRELIABLE: "warn",
    Verdict.UNDETERMINED: "warn",
    Verdict.INCOMPARABLE: "warn",
}
# Verdicts of calls that were not timed: their rows carry no device, timer or cache.
UNTIMED = (Verdict.CHECKED, Verdict.MISMATCH)
CACHE_NOTE = "in cache: the call's bytes fit in the device's cache, so % of memory bandwidth does not apply"
INFERRED_NOTE = "bytes inferred from the input and output tensors (pass bytes= to state them)"
INFERRED_MARK = "*"
CLOCK_MARK = "~"  # a change adjusted for the clock (clock_lines says the time's)
NEW_NOTE = "new: no baseline for this device and cache mode; record one with --kernelperf-update-baselines"
# The widest a terminal table row may be: the Method column gives way (shortened in its middle).
MAX_ROW = 140
MIN_METHOD = 16  # the narrowest a shortened Method cell gets
# Columns a terminal table leaves out, in this order, where even the shortest Method cells leave a
# row wider than MAX_ROW (a paired run's Pairs beside GB/s, TFLOP/s, Host and Memory): the figures
# a verdict reads stay; the left-out ones are in the run file and the markdown summary.
NARROW_DROPS = ("Memory", "Host (ms)", "TFLOP/s", "Rounds (ms)")
TOTAL_ORDER = (
    Verdict.SAME,
    Verdict.SLOWER,
    Verdict.MISMATCH,
    Verdict.FASTER,
    Verdict.NEW,
    Verdict.INCOMPARABLE,
    Verdict.UNRELIABLE,
    Verdict.UNDETERMINED,
    Verdict.CHECKED,
)


def group_key(result: BenchResult) -> tuple[str, str]:
    """(test without parameters, row label): parametrized variants of one test share a table. A
    row is labelled by its parameters and name, else by the timed function's name (`gelu`)."""
    match = _PARAMS.search(result.nodeid)
    base = result.nodeid[: match.start()] if match else result.nodeid
    row = match["param"] if match else ""
    if result.name:
        name = display_name(result.name)  # a 500-character name must not widen every row
        row = f"{row}/{name}" if row else name
    return base, row or (display_name(result.function) if result.function else "-")


def grouped(
    results: Iterable[BenchResult],
) -> dict[str, dict[str, list[tuple[str, BenchResult]]]]:
    """module -> test (without parameters) -> [(row label, result)], in the order tests ran."""
    modules: dict[str, dict[str, list[tuple[str, BenchResult]]]] = {}
    for result in results:
        base, row = group_key(result)
        module, test = split_nodeid(base)
        modules.setdefault(module, {}).setdefault(test, []).append((row, result))
    return modules


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def change_text(value: float | None) -> str:
    return change_figure(value)  # never "-0.0%"


def totals(results: Iterable[BenchResult]) -> str:
    """One line: "12 same, 1 slower, 2 faster, 3 new" (and any max_ratio failures)."""
    results = list(results)
    counts = Counter(r.verdict for r in results)
    parts = [f"{counts[v]} {v}" for v in TOTAL_ORDER if counts[v]]
    over = sum(1 for r in results if r.ratio is not None and r.ratio.exceeded)
    if over:
        parts.append(f"{over} over max_ratio")
    grew = sum(1 for r in results if r.memory is not None and r.memory.exceeded)
    if grew:
        parts.append(f"{grew} over memory_threshold")
    return ", ".join(parts) if parts else "no results"


# --- one row per result ------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    text: str
    style: str = ""


# Columns in display order. Device, Timer and Cache move into the group's heading when every row
# shares them; any other column that is empty in every row is left out.
COLUMNS = (
    "Method",
    "Time (ms)",
    "Rounds (ms)",
    "Base (ms)",
    "Pairs",
    "Baseline",
    "Change",
    "Ref (ms)",
    "Ratio",
    "GB/s",
    "% peak",
    "TFLOP/s",
    "Host (ms)",
    "Memory",
    "Device",
    "Timer",
    "Cache",
    "Verdict",
)
_ALWAYS = ("Method", "Time (ms)", "Verdict")
_SHARED = ("Device", "Timer", "Cache")


def verdict_notes(result: BenchResult) -> list[str]:
    """The notes a row's verdict cites: an untimed call's first note (why it was only checked, or
    its mismatch), a new call's hint, else its comparison's reason as notes (verdict/notes.py), the
    remedies among them shared with every row that has them. A `same` cites none: its number says
    what it could see, and a judged pair's reason is its Pairs, Change and number."""
    if result.verdict in UNTIMED:
        return list(result.notes[:1])
    comparison = result.comparison
    if result.verdict is Verdict.NEW and result.against is None:
        return [NEW_NOTE]
    paired = result.against is not None and result.against.timed
    if comparison is None or result.verdict is Verdict.SAME or (paired and result.verdict in JUDGEMENTS):
        return []
    return reason_notes(comparison)


def verdict_text(result: BenchResult, notes: Footnotes | None = None) -> str:
    """The verdict's cell: its word and number, and the notes it cites (`undetermined ±12% [1]`)."""
    notes = notes if notes is not None else Footnotes()
    return cited(verdict_figure(result), notes.cite(*verdict_notes(result)))


def memory_cell(result: BenchResult) -> Cell:
    """Peak device memory of one call beyond its inputs, and its growth over the baseline's."""
    memory = result.memory
    if memory is None:
        return Cell("")
    return Cell(memory_text(memory), "bad" if memory.exceeded else "")


def ratio_cell(result: BenchResult, notes: Footnotes) -> Cell:
    check = result.ratio
    if check is None:
        return Cell("")
    if check.exceeded:
        return Cell(check.describe(), "bad")
    if check.ratio > check.max_ratio:  # beyond the limit but not significant, or not comparable
        return Cell(cited(check.describe(), notes.cite(check.reason)), "warn")
    return Cell(check.describe())


def row_cells(
    label: str, result: BenchResult, peaks: Mapping[str, Peak], notes: Footnotes | None = None
) -> dict[str, Cell]:
    """A result's cells; the notes they cite numbered in `notes`."""
    notes = notes if notes is not None else Footnotes()
    fig = figures(result, peaks.get(result.device))
    style = VERDICT_STYLE.get(result.verdict, "")
    against = result.against
    inferred = notes.mark(INFERRED_NOTE, INFERRED_MARK) if fig.gb_per_s and fig.bytes_inferred else ""
    return {
        "Method": Cell(label),
        "Time (ms)": Cell(_ms(result.level_ms)),
        "Rounds (ms)": Cell(
            f"{result.round_range_ms[0]:.4g}-{result.round_range_ms[1]:.4g}" if result.round_range_ms else ""
        ),
        "Base (ms)": Cell(_ms(against.level_ms) if against and against.timed else ""),
        "Pairs": Cell(str(len(against.rounds_ms)) if against and against.timed else ""),
        "Baseline": Cell(
            _ms(result.baseline_level_ms) if result.baseline_level_ms is not None and not against else ""
        ),
        "Change": Cell(
            change_text(result.change_pct) + (CLOCK_MARK if _time_change_pct(result) is not None else ""),
            style,
        ),
        "Ref (ms)": Cell(_ms(result.ratio.reference_level_ms) if result.ratio else ""),
        "Ratio": ratio_cell(result, notes),
        "GB/s": Cell(f"{fig.gb_per_s:.4g}{inferred}" if fig.gb_per_s else ""),
        "% peak": Cell(_peak_cell(fig, notes)),
        "TFLOP/s": Cell(f"{fig.tflop_per_s:.4g}" if fig.tflop_per_s else ""),
        "Host (ms)": Cell(_ms(result.host_level_ms) if result.host_level_ms is not None else ""),
        "Memory": memory_cell(result),
        "Device": Cell(result.device),
        "Timer": Cell(result.method or "-"),
        "Cache": Cell(result.cache),
        "Verdict": Cell(verdict_text(result, notes), style),
    }


@dataclass(frozen=True)
class Group:
    module: str
    test: str
    shared: dict[str, str]  # Device/Timer/Cache common to every row
    columns: tuple[str, ...]
    rows: list[dict[str, Cell]]
    results: list[BenchResult]

    @property
    def heading(self) -> str:
        shared = [self.shared[c] for c in _SHARED if c in self.shared]
        if "Cache" in self.shared:
            shared[-1] = f"{shared[-1]} cache"
        return f"{self.test} ({', '.join(shared)})" if shared else self.test


def groups(
    results: Sequence[BenchResult], peaks: Mapping[str, Peak] | None = None, notes: Footnotes | None = None
) -> list[Group]:
    """The results' tables, one per test; the notes their cells cite numbered in `notes`."""
    peaks = peaks or {}
    notes = notes if notes is not None else Footnotes()
    out = []
    for module, tests in grouped(results).items():
        for test, members in tests.items():
            rows = [row_cells(label, r, peaks, notes) for label, r in members]
            out.append(_table(module, test, rows, [r for _, r in members]))
    return out


def _table(module: str, test: str, rows: list[dict[str, Cell]], results: list[BenchResult]) -> Group:
    """The table of `rows`: the Device, Timer and Cache that all its timed rows share go to its
    heading, and only the columns some row fills are shown."""
    timed = [row for row, r in zip(rows, results, strict=True) if r.verdict not in UNTIMED]
    shared = {}
    for column in _SHARED:
        values = {row[column].text for row in timed}
        if len(values) == 1:
            shared[column] = values.pop()
    if timed:
        columns = tuple(
            c
            for c in COLUMNS
            if c in _ALWAYS or (c not in shared and any(row[c].text not in ("", "-") for row in rows))
        )
    else:  # checked only: no times, no device to speak of
        columns = ("Method", "Verdict")
    return Group(module, test, shared, columns, rows, results)


# --- terminal ----------------------------------------------------------------------------------


def styled_lines(results: Sequence[BenchResult], peaks: Mapping[str, Peak] | None = None) -> list[Line]:
    """The summary table, grouped by module and test, as styled segments: every row within
    MAX_ROW characters, then the notes its cells cite, then what the run could see."""
    if not results:
        return []
    lines: list[Line] = []
    module = None
    notes = Footnotes()
    for whole in (part for table in groups(results, peaks, notes) for part in _apart(table)):
        if whole.module != module:
            module = whole.module
            lines.append(((module, "bold"),))
        group, left_out = _narrowed(whole, notes)
        lines.append((("  " + cited(group.heading, left_out), ""),))
        rows = _fitted(group, notes)
        widths = _widths(rows, group.columns)
        lines.append((("    " + "  ".join(c.ljust(widths[c]) for c in group.columns).rstrip(), "dim"),))
        for row in rows:
            segments: list[Segment] = [("    ", "")]
            for i, column in enumerate(group.columns):
                cell = row[column]
                last = i == len(group.columns) - 1
                segments.append((cell.text if last else cell.text.ljust(widths[column]), cell.style))
                if not last:
                    segments.append(("  ", ""))
            lines.append(tuple(segments))
    for label, note in notes.entries():
        lines.extend(_wrapped(f"{label} {note}", "dim", indent=len(label) + 1))
    for text, style in (
        *((line, "dim") for line in resolution_lines(results)),
        *((line, "dim") for line in against_lines(results)),
        *((line, "warn") for line in host_lines(results)),
        *((line, "dim") for line in clock_lines(results)),
        *((line, "warn") for line in second_measurement_lines(results)),
        *((line, "warn") for line in shift_lines(results)),
    ):
        lines.extend(_wrapped(text, style))
    overall = totals(results)
    worst = "bad" if any(_failing(r) for r in results) else ""
    lines.append((("kernelperf: ", "bold"), (overall, worst or "bold")))
    return lines


def wrapped(text: str, indent: int = 2) -> list[str]:
    """A line under the tables, wrapped within MAX_ROW characters (its own lines kept), the lines
    after its first indented; a word longer than a line (a node id) is never split."""
    out: list[str] = []
    for paragraph in text.splitlines() or [""]:
        pieces = textwrap.wrap(
            paragraph,
            MAX_ROW,
            subsequent_indent=" " * indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
        out.extend(pieces or [""])
    return out


def _wrapped(text: str, style: str, indent: int = 2) -> list[Line]:
    return [((piece, style),) for piece in wrapped(text, indent)]


def _widths(rows: Sequence[Mapping[str, Cell]], columns: Iterable[str]) -> dict[str, int]:
    """Each column's width: its header's or its widest cell's."""
    return {c: max(len(c), *(len(row[c].text) for row in rows)) for c in columns}


def _beside_method(group: Group, columns: Sequence[str]) -> int:
    """The characters a row of `group` shown in `columns` takes beside its Method cell: its
    indent, the other cells and the gaps between all of them."""
    others = _widths(group.rows, (c for c in columns if c != "Method"))
    return 4 + sum(others.values()) + 2 * (len(columns) - 1)


def _row_width(group: Group, columns: Sequence[str]) -> int:
    """The widest row of `group` shown in `columns`, its Method cells at their shortest."""
    method = min(max(len(row["Method"].text) for row in group.rows), max(MIN_METHOD, len("Method")))
    return _beside_method(group, columns) + method


def _kept(group: Group) -> tuple[list[str], list[str]]:
    """(the columns shown, those left out): the columns of NARROW_DROPS, in order, that the
    group's rows need left out to fit MAX_ROW."""
    columns = list(group.columns)
    dropped = []
    for column in NARROW_DROPS:
        if _row_width(group, columns) <= MAX_ROW:
            break
        if column in columns:
            columns.remove(column)
            dropped.append(column)
    return columns, dropped


def _apart(group: Group) -> list[Group]:
    """The group, or where its rows differ in Device, Timer or Cache (a merged run of several GPUs
    or cache modes) and would not fit MAX_ROW even with NARROW_DROPS left out, one table for each
    of their values, each with them in its heading."""
    apart = [c for c in _SHARED if c in group.columns]
    if not apart or _row_width(group, _kept(group)[0]) <= MAX_ROW:
        return [group]
    parts: dict[tuple[str, ...], list[int]] = {}
    for i, row in enumerate(group.rows):
        parts.setdefault(tuple(row[c].text for c in apart), []).append(i)
    return [
        _table(group.module, group.test, [group.rows[i] for i in part], [group.results[i] for i in part])
        for part in parts.values()
    ]


def _narrowed(group: Group, notes: Footnotes) -> tuple[Group, str]:
    """The group without the columns of NARROW_DROPS, in order, that its rows need left out to fit
    MAX_ROW, and the citation of the note that names them ("" where none is left out)."""
    columns, dropped = _kept(group)
    if not dropped:
        return group, ""
    mark = notes.cite(
        f"left out of a table wider than {MAX_ROW} characters: {', '.join(dropped)} "
        "(in the run file, --kernelperf-json, and the markdown summary)"
    )
    return replace(group, columns=tuple(columns)), mark


def _fitted(group: Group, notes: Footnotes) -> list[dict[str, Cell]]:
    """The group's rows with their Method cells shortened in the middle where a row would be wider
    than MAX_ROW; labels that would then read alike cite a note with the whole label."""
    room = max(MAX_ROW - _beside_method(group, group.columns), MIN_METHOD, len("Method"))
    labels = [row["Method"].text for row in group.rows]
    if all(len(label) <= room for label in labels):
        return group.rows
    short = [_middle_cut(label, room) for label in labels]
    alike = {s for s in short if short.count(s) > 1}
    out = []
    for row, label, cut in zip(group.rows, labels, short, strict=True):
        text = cut
        if cut in alike and cut != label:  # the whole label in a note, cited
            text = cited(_middle_cut(label, max(room - 6, 8)), notes.cite(label))
        out.append({**row, "Method": Cell(text, row["Method"].style)})
    return out


def _middle_cut(text: str, width: int) -> str:
    """`text` within `width` characters, its middle left out (parameters differ at both ends)."""
    if len(text) <= width:
        return text
    head = width // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail > 0 else "")


def resolution_lines(results: Sequence[BenchResult]) -> list[str]:
    """What the run could see, per size class of the kernels it judged: the smallest slowdown each
    judgement would have caught (95% power), against the threshold; and which calls were not gated
    (undetermined). A `same` column reads "unchanged" only as far as this line says."""
    by_class: dict[tuple[float, str], list[float]] = {}
    threshold = None
    for result in results:
        comparison = result.comparison
        level = result.baseline_level_ms or result.level_ms
        if comparison is None or comparison.detectable is None or not level or result.verdict in UNTIMED:
            continue
        size = size_class(level)
        by_class.setdefault((size.low_ms, size.label), []).append(comparison.detectable)
        threshold = comparison.threshold if threshold is None else threshold
    lines = []
    parts = []
    for (_, label), seen in sorted(by_class.items()):
        calls = f"{len(seen)} call{'s' if len(seen) != 1 else ''}"
        median, worst = percent(statistics.median(seen)), percent(max(seen))
        parts.append(f"{label}: {calls}, median {median}, worst {worst}")
    if parts:
        floor = ""
        if threshold is not None:  # the threshold fails a test; the bar turns a `same` undetermined
            bar = undetermined_beyond(threshold)
            floor = f"; threshold {percent(threshold, 3)}, undetermined beyond {percent(bar, 3)}"
        lines.append(f"smallest slowdown this run could detect (95% power{floor}): " + "; ".join(parts))
    undetermined = [
        r.label + "".join(f" ({n.removeprefix(NOT_GATED)})" for n in r.notes if n.startswith(NOT_GATED))
        for r in results
        if r.verdict is Verdict.UNDETERMINED
    ]
    if undetermined:
        lines.append(f"not gated: {len(undetermined)} undetermined ({', '.join(undetermined)})")
    return lines


def against_lines(results: Sequence[BenchResult]) -> list[str]:
    """What "Base (ms)" and "Change" mean in a --kernelperf-against run, and answers that changed."""
    revisions = dict.fromkeys(r.against.revision for r in results if r.against is not None)
    paired = {r.against.revision for r in results if r.against is not None and r.against.timed}
    placed = " (each pair at one memory placement)" if any(r.placements for r in results) else ""
    lines = [
        f"Base (ms): the same function at {revision}, timed in this process in rounds paired with "
        f"this code's{placed} (Pairs: how many); Change and Verdict judge the pairs"
        if revision in paired
        else f"no call was paired with {revision}: nothing was compared (each row says why)"
        for revision in revisions
    ]
    for result in results:
        if result.against is not None and result.against.answers.startswith("differs"):
            lines.append(f"{result.label}: the answer changed against {result.against.revision}")
    return lines


def _failing(result: BenchResult) -> bool:
    """Slower, over its max_ratio, or grown beyond its memory threshold."""
    return (
        result.verdict is Verdict.SLOWER
        or (result.ratio is not None and result.ratio.exceeded)
        or (result.memory is not None and result.memory.exceeded)
    )


def _shift_cause(results: Sequence[BenchResult]) -> str:
    """What a device shift points at: the environment where it differs from the baselines', else a
    cause the kernels share in the code or the machine."""
    known = [r.environment_changes for r in results if r.environment_changes is not None]
    changed = sorted({change for changes in known for change in changes})
    if changed:
        items = "; ".join(changed)
        return f"the environment differs from the baselines' ({items}), which moves every kernel alike"
    if known:
        return (
            "on the same card, driver and software as the baselines: a cause the kernels share (a common "
            "helper, a build flag, the machine's load)"
        )
    return "a card, clock, driver or toolkit change moves every kernel alike"


def shift_lines(results: Sequence[BenchResult]) -> list[str]:
    """A device shift, where most kernels on a device moved alike (verdict/shift.py)."""
    judged = [
        (r.device, r.label, r.comparison.ratio)
        for r in results
        if r.comparison is not None
        and r.comparison.ratio is not None
        and r.baseline_level_ms is not None
        and r.against is None  # a pair in one process says nothing of the device
    ]
    thresholds = [
        r.comparison.threshold for r in results if r.comparison and r.comparison.threshold is not None
    ]
    lines = []
    for found in device_shifts(judged, min(thresholds, default=0.01)):
        line = (
            f"device shift on {found.device}: {found.agreeing} of {found.kernels} kernels moved the same "
            f"way, median {change_text((found.ratio - 1) * 100)}; "
            + _shift_cause([r for r in results if r.device == found.device and r.against is None])
            + ", and each verdict stands on its own"
        )
        if found.beyond:
            line += "; beyond the shift: " + ", ".join(
                f"{label} {change_text((ratio - 1) * 100)}" for label, ratio in found.beyond
            )
        lines.append(line)
    return lines


def _time_change_pct(result: BenchResult) -> float | None:
    return None if result.comparison is None else result.comparison.time_change_pct


def clock_lines(results: Sequence[BenchResult]) -> list[str]:
    """One line per call whose change is adjusted for the clock (at the power cap in run and
    baseline, at other clocks): the table's Change is the adjusted one, this says the time's."""
    return [
        f"{CLOCK_MARK} {result.label}: {result.comparison.change()}"
        for result in results
        if result.comparison is not None and result.comparison.time_ratio is not None
    ]


def second_measurement_lines(results: Sequence[BenchResult]) -> list[str]:
    """One line per call whose first measurement read slower and that passed on both measurements
    pooled: a level that wanders is worth knowing about."""
    return [
        f"{result.label}: {note}"
        for result in results
        if result.readings
        and result.readings[0].verdict is Verdict.SLOWER
        and result.verdict is not Verdict.SLOWER
        for note in result.notes
        if note.startswith(MEASURED_TWICE)
    ]


def host_lines(results: Sequence[BenchResult]) -> list[str]:
    """One line per call whose launch path (host latency per call) got significantly slower; it
    never fails a test (device time decides), so it is told here once rather than warned per test."""
    lines = []
    for result in results:
        host, now, then = result.host_comparison, result.host_level_ms, result.host_baseline_level_ms
        if host is None or host.verdict is not Verdict.SLOWER or now is None or then is None:
            continue
        lines.append(
            f"host latency slower: {result.label}: {duration(now)} per call vs baseline {duration(then)} "
            f"({result.host_change_pct:+.1f}%): the launch path got slower"
        )
    return lines


def _peak_cell(fig: Figures, notes: Footnotes) -> str:
    if fig.cache_resident:
        return cited("in cache", notes.cite(CACHE_NOTE))
    return f"{fig.peak_fraction:.0%}" if fig.peak_fraction is not None else ""


def peak_lines(peaks: Mapping[str, Peak]) -> list[str]:
    lines = []
    for name, peak in peaks.items():
        line = f"{name}: copy bandwidth {peak.gb_per_s:.4g} GB/s ({peak.method})"
        if peak.busy:
            line += f"; measured while the machine was busy (load {peak.load_per_core:.2g} per core)"
        lines.append(line)
    return lines


def update_lines(updates: Sequence[FileUpdate]) -> list[str]:
    lines = []
    for update in updates:
        if update.error:
            lines.append(f"{update.path}: NOT written: {update.error}")
            continue
        text = (
            f"{update.path}: {len(update.added)} added, {len(update.changed)} changed, "
            f"{update.unchanged} unchanged, {update.kept} kept"
        )
        if update.removed:
            text += f", {len(update.removed)} unused removed"
        if update.replaced_unreadable:
            text += f" (replaced an unreadable file: {update.replaced_unreadable})"
        lines.append(text)
    return lines


def needs_occasions_lines(staged: Mapping[Path, Mapping[EntryKey, BaselineEntry]]) -> list[str]:
    """After an update: the entries written from one occasion whose recording processes disagree
    far beyond their rounds (verdict/occasions.py), named, with the remedy."""
    found = []
    for entries in staged.values():
        for key, entry in entries.items():
            record = entry.device_time
            offset = needs_occasions(record, record.resolution_ms)
            if offset is not None:
                found.append(
                    f"{key.test} on {key.device} ({offset.processes} processes {offset.own_sd:.2%} apart, "
                    f"{offset.excess})"
                )
    if not found:
        return []
    return [
        f"needs occasions: {len(found)} {'entry' if len(found) == 1 else 'entries'} whose recording "
        f"processes disagree far beyond their rounds: {'; '.join(found)}; their verdicts say so until "
        f"they are recorded again {ADD_OCCASION}"
    ]


# --- markdown ----------------------------------------------------------------------------------


# Test ids, names, notes and device names are user data: in a table cell, or in a step summary that
# GitHub renders, `<b>` or `<img src=...>` would be HTML, `|` a new cell and `[x](y)` a link. HTML
# becomes entities, and markdown's inline punctuation is escaped with a backslash. In a pull
# request's comment `@name` would notify someone and `#12` link an issue: a zero-width space after
# the `@` or `#` keeps the text as it reads and GitHub from acting on it.
_MD_ENTITIES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\n": " "})
_MD_PUNCTUATION = re.compile(r"([\\`*_\[\]~|])")
_MD_REFERENCE = re.compile(r"(@(?=[A-Za-z0-9-])|#(?=[0-9]))")
_ZERO_WIDTH_SPACE = "\u200b"


def _md(text: str) -> str:
    escaped = _MD_PUNCTUATION.sub(r"\\\1", text.translate(_MD_ENTITIES))
    return _MD_REFERENCE.sub(r"\1" + _ZERO_WIDTH_SPACE, escaped)


def _code(text: str) -> str:
    """A code span outside tables: no escapes apply inside one, so only backticks are replaced."""
    return "`" + text.replace("`", "'").replace("\n", " ") + "`"


def _code_cell(text: str) -> str:
    """A code span in a table cell: GitHub splits cells at every `|` not escaped, code spans
    included, and shows `\\|` there as `|`."""
    return _code(text).replace("|", "\\|")


def _md_cell(cell: Cell) -> str:
    text = _md(cell.text)
    return f"**{text}**" if cell.style == "bad" and text else text


def markdown(
    results: Sequence[BenchResult],
    peaks: Mapping[str, Peak] | None = None,
    *,
    title: str = "pytest-kernelperf",
    environment: Mapping[str, Mapping[str, str]] | None = None,
) -> str:
    """A summary for a pull request or `$GITHUB_STEP_SUMMARY`: totals, then one table per test."""
    peaks = peaks or {}
    lines = [f"### {title}: {totals(results)}", ""]
    if not results:
        lines.append("No kernel_bench results.")
        return "\n".join(lines) + "\n"
    failing = [r for r in results if _failing(r)]
    if failing:
        lines.append("**Failing:** " + ", ".join(_code(r.label) for r in failing))
        lines.append("")
    notes = Footnotes()
    for group in groups(results, peaks, notes):
        lines.append(f"#### {_code(f'{group.module}::{group.heading}')}")
        lines.append("")
        lines.append("| " + " | ".join(group.columns) + " |")
        lines.append(
            "|" + "|".join("---" if c in ("Method", "Verdict") else "--:" for c in group.columns) + "|"
        )
        for row in group.rows:
            lines.append("| " + " | ".join(_md_cell(row[c]) for c in group.columns) + " |")
        lines.append("")
    lines.extend(markdown_notes(notes))
    for line in clock_lines(results):
        lines.extend([line.replace(CLOCK_MARK, "\\" + CLOCK_MARK, 1), ""])
    for line in (*resolution_lines(results), *against_lines(results)):
        lines.extend([_md(line), ""])
    for line in (*host_lines(results), *second_measurement_lines(results), *shift_lines(results)):
        lines.extend([_md(line), ""])
    lines.extend(counter_markdown(results))
    if peaks or environment:
        lines.extend(["<details><summary>Environment</summary>", ""])
        for name, env in (environment or {}).items():
            details = ", ".join(f"{k} {v}" for k, v in sorted(env.items()))
            lines.append(f"- **{_md(name)}**: {_md(details)}")
        for line in peak_lines(peaks):
            lines.append(f"- {_md(line)}")
        lines.extend(["", "</details>", ""])
    return "\n".join(lines)


def markdown_notes(notes: Footnotes) -> list[str]:
    """The notes the tables' cells cite, as a list under them (`[1] ...`), each once."""
    entries = notes.entries()
    if not entries:
        return []
    return [*(f"- {_md(label)} {_md(note)}" for label, note in entries), ""]


def counter_markdown(results: Sequence[BenchResult]) -> list[str]:
    """The Nsight Compute counters read in the run (--kernelperf-ncu), per call and kernel, folded."""
    rows = [
        f"| {_code_cell(result.label)} | {_code_cell(kernel.name)} | {_md(ncu_diff.summary(kernel))} |"
        for result in results
        if result.entry is not None and result.entry.counters
        for kernel in result.entry.counters
    ]
    if not rows:
        return []
    head = ["<details><summary>Hardware counters (Nsight Compute)</summary>", ""]
    return [*head, "| Call | Kernel | Counters |", "|---|---|---|", *rows, "", "</details>", ""]


# --- JUnit properties and -v words --------------------------------------------------------------

PROPERTY_PREFIX = "kernelperf"


def _round(value: float) -> float:
    return significant(value, 6)


def properties(result: BenchResult) -> list[tuple[str, object]]:
    """(name, value) pairs for item.user_properties: JUnit XML shows them per test case.

    Named calls get their name in the property: `kernelperf.level_ms`, `kernelperf.triton.level_ms`.
    """
    prefix = PROPERTY_PREFIX if result.name is None else f"{PROPERTY_PREFIX}.{result.name}"
    out: list[tuple[str, object]] = [(f"{prefix}.verdict", str(result.verdict))]
    values: dict[str, object | None] = {
        "level_ms": result.level_ms,
        "baseline_level_ms": result.baseline_level_ms,
        "change_pct": result.change_pct,
        "time_change_pct": _time_change_pct(result),
        "method": result.method,
        "device": result.device if result.verdict not in UNTIMED else None,
        "gb_per_s": result.throughput[0],
        "tflop_per_s": result.throughput[1],
    }
    if result.ratio is not None:
        values["ratio"] = result.ratio.ratio
        values["max_ratio"] = result.ratio.max_ratio
        values["max_ratio_exceeded"] = "yes" if result.ratio.exceeded else "no"
        values["reference_level_ms"] = result.ratio.reference_level_ms
    if result.memory is not None:
        values["peak_memory_bytes"] = result.memory.peak_bytes
        values["memory_exceeded"] = "yes" if result.memory.exceeded else "no"
    for key, value in values.items():
        if value is not None:
            out.append((f"{prefix}.{key}", _round(value) if isinstance(value, float) else value))
    return out


def status_word(user_properties: Iterable[tuple[str, object]]) -> tuple[str, str] | None:
    """ "same +0.4%" (and "2.0x > 1.1 ratio") per kernel_bench call, from a test report's
    properties; with its style, or None when the test made no kernel_bench call."""
    calls: dict[str, dict[str, object]] = {}
    for name, value in user_properties:
        if not isinstance(name, str) or not name.startswith(PROPERTY_PREFIX + "."):
            continue
        call, _, key = name[len(PROPERTY_PREFIX) + 1 :].rpartition(".")
        calls.setdefault(call, {})[key] = value
    if not calls:
        return None
    parts, styles = [], set()
    for call, values in calls.items():
        verdict = str(values.get("verdict", ""))
        text = verdict
        change, time_change = values.get("change_pct"), values.get("time_change_pct")
        if isinstance(change, (int, float)):
            text += f" {change:+.1f}%"
        if isinstance(time_change, (int, float)):
            text += f" adjusted for the clock (time {time_change:+.1f}%)"
        ratio, limit = values.get("ratio"), values.get("max_ratio")
        if isinstance(ratio, (int, float)) and isinstance(limit, (int, float)):
            text += f", ratio {ratio:#.3g}x {'>' if ratio > limit else '<='} {limit:g}"
            if values.get("max_ratio_exceeded") == "yes":
                styles.add("bad")
        if values.get("memory_exceeded") == "yes":
            text += ", memory over its threshold"
            styles.add("bad")
        parts.append(f"{call}: {text}" if call else text)
        styles.add({"slower": "bad", "faster": "good"}.get(verdict, ""))
    style = "bad" if "bad" in styles else "good" if "good" in styles else ""
    return "; ".join(parts), style


def artifact_lines(results: Sequence[BenchResult]) -> list[str]:
    """Where each profiled call's artefacts are (table, trace, stacks, generated code)."""
    lines = []
    for result in results:
        line = artifact_line(result.artifacts)
        if line is not None:
            lines.append(f"{result.label}: {line}")
    return lines
