"""Kernel inventory: the device kernels one call launches, and how that list changed.

Pure logic over names and numbers (no torch, no pytest): the profiler turns its device events into
`DeviceEvent`s, `summarize` makes the small list stored in a baseline entry, and `diff` / `describe`
explain a regression against the baseline's list ("now launches 2 kernels instead of 1").

The list is meant to be reviewed in pull requests, so it is small and stable: names exactly as the
profiler reports them, launches per call, share of the call's device time and the mean duration of
one launch, rounded to three significant digits, at most `MAX_KERNELS` entries, sorted by name.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from pytest_kernelperf.formatting import duration, significant
from pytest_kernelperf.model.call import KernelRecord

MAX_KERNELS = 24
# Below these, a per-kernel time change is profiler noise and not worth a line. Without the
# call's overall change, a kernel must change by TIME_CHANGE_REL; with it, a kernel counts once its
# change is a fair part (SHARE_OF_CHANGE) of the call's and above the profiler's noise (NOISE_REL):
# a kernel given 10% more work runs about +10%, exactly what a fixed 10% bar would miss.
TIME_CHANGE_REL = 0.10
TIME_CHANGE_MS = 0.0005
NOISE_REL = 0.02
SHARE_OF_CHANGE = 0.25
# With no kernel named, the slowdown is said to lie outside the kernels only when their summed time
# changed by less than this share (in %) of the call's change.
OUTSIDE_SHARE = 50
# Names at least this similar are one kernel renamed (a new tiling, a new fusion) rather than one
# kernel removed and an unrelated one added.
RENAME_SIMILARITY = 0.6
MAX_LINES = 8


@dataclass(frozen=True)
class DeviceEvent:
    """One kernel, memcpy or memset on the device, as the profiler recorded it."""

    name: str
    duration_us: float
    grid: tuple[int, ...] | None = None


def summarize(events: Iterable[DeviceEvent], calls: int) -> tuple[KernelRecord, ...]:
    """The inventory of `calls` profiled calls: the `MAX_KERNELS` kernels taking the most time."""
    if calls < 1:
        raise ValueError(f"calls must be at least 1, got {calls}")
    counts: dict[str, int] = {}
    totals: dict[str, float] = {}
    grids: dict[str, Counter[tuple[int, ...] | None]] = {}
    for event in events:
        counts[event.name] = counts.get(event.name, 0) + 1
        totals[event.name] = totals.get(event.name, 0.0) + max(event.duration_us, 0.0)
        grids.setdefault(event.name, Counter())[event.grid] += 1
    everything = sum(totals.values())
    # A kernel seen fewer times than there were calls (a one-off initialisation) still counts once.
    records = [
        KernelRecord(
            name=name,
            launches=max(1, round(counts[name] / calls)),
            share=round(totals[name] / everything, 3) if everything > 0 else 0.0,
            ms=significant(totals[name] / counts[name] / 1e3, 3),
            grid=_one_grid(grids[name]),
        )
        for name in counts
    ]
    records.sort(key=lambda r: (-r.per_call_ms, r.name))
    return tuple(sorted(records[:MAX_KERNELS], key=lambda r: r.name))


def _one_grid(grids: Counter[tuple[int, ...] | None]) -> tuple[int, ...] | None:
    """The kernel's grid when all its launches had the same one (a kernel launched with several
    grids per call has no one grid to compare)."""
    return next(iter(grids)) if len(grids) == 1 else None


def with_codes(kernels: Sequence[KernelRecord], codes: dict[str, str]) -> tuple[KernelRecord, ...]:
    """The same records, each with its code hash where `codes` has one for its name."""
    return tuple(replace(k, code=codes.get(k.name, k.code)) for k in kernels)


def launches(kernels: Sequence[KernelRecord]) -> int:
    return sum(k.launches for k in kernels)


@dataclass(frozen=True)
class InventoryDiff:
    baseline: tuple[KernelRecord, ...]
    current: tuple[KernelRecord, ...]
    added: tuple[KernelRecord, ...]
    removed: tuple[KernelRecord, ...]
    renamed: tuple[tuple[KernelRecord, KernelRecord], ...]  # (baseline, current)
    kept: tuple[tuple[KernelRecord, KernelRecord], ...]  # same name in both
    overall_ms: tuple[float, float] | None = None  # the call's median, baseline and now

    def _counts(self, old: KernelRecord, new: KernelRecord) -> bool:
        delta = abs(new.per_call_ms - old.per_call_ms)
        if delta < TIME_CHANGE_MS:
            return False
        if self.overall_ms is None:
            return delta >= TIME_CHANGE_REL * old.per_call_ms
        overall = abs(self.overall_ms[1] - self.overall_ms[0])
        return delta >= NOISE_REL * old.per_call_ms and delta >= SHARE_OF_CHANGE * overall

    @property
    def grid_changes(self) -> tuple[tuple[KernelRecord, KernelRecord], ...]:
        return tuple(
            (old, new)
            for old, new in (*self.kept, *self.renamed)
            if old.grid and new.grid and old.grid != new.grid
        )

    @property
    def launch_changes(self) -> tuple[tuple[KernelRecord, KernelRecord], ...]:
        return tuple((old, new) for old, new in self.kept if old.launches != new.launches)

    @property
    def time_changes(self) -> tuple[tuple[KernelRecord, KernelRecord], ...]:
        """Kernels (kept or renamed) whose time per call changed beyond noise, largest change first."""
        pairs = [(old, new) for old, new in (*self.kept, *self.renamed) if self._counts(old, new)]
        pairs.sort(key=lambda pair: (-abs(pair[1].per_call_ms - pair[0].per_call_ms), pair[1].name))
        return tuple(pairs)

    @property
    def code_changes(self) -> tuple[tuple[KernelRecord, KernelRecord], ...]:
        return tuple((old, new) for old, new in self.kept if old.code and new.code and old.code != new.code)

    @property
    def code_unchanged(self) -> tuple[KernelRecord, ...]:
        return tuple(new for old, new in self.kept if old.code and new.code and old.code == new.code)

    @property
    def unchanged(self) -> bool:
        return not (
            self.added
            or self.removed
            or self.renamed
            or self.launch_changes
            or self.time_changes
            or self.code_changes
            or self.grid_changes
        )


def diff(
    baseline: Sequence[KernelRecord],
    current: Sequence[KernelRecord],
    overall_ms: tuple[float, float] | None = None,
) -> InventoryDiff:
    """Compare two inventories by kernel name, pairing removed and added kernels by name similarity.

    `overall_ms` (the call's baseline and current median) lets a kernel's time change be judged
    against the call's change rather than a fixed bar."""
    old = {k.name: k for k in baseline}
    new = {k.name: k for k in current}
    kept = tuple((old[name], new[name]) for name in sorted(old.keys() & new.keys()))
    removed = [old[name] for name in sorted(old.keys() - new.keys())]
    added = [new[name] for name in sorted(new.keys() - old.keys())]
    candidates = sorted(
        (
            (difflib.SequenceMatcher(None, a.name, b.name).ratio(), a.name, b.name)
            for a in removed
            for b in added
        ),
        key=lambda c: (-c[0], c[1], c[2]),
    )
    renamed: list[tuple[KernelRecord, KernelRecord]] = []
    paired_old: set[str] = set()
    paired_new: set[str] = set()
    for ratio, a_name, b_name in candidates:
        if ratio < RENAME_SIMILARITY:
            break
        if a_name in paired_old or b_name in paired_new:
            continue
        paired_old.add(a_name)
        paired_new.add(b_name)
        renamed.append((old[a_name], new[b_name]))
    return InventoryDiff(
        baseline=tuple(baseline),
        current=tuple(current),
        added=tuple(k for k in added if k.name not in paired_new),
        removed=tuple(k for k in removed if k.name not in paired_old),
        renamed=tuple(sorted(renamed, key=lambda pair: pair[1].name)),
        kept=kept,
        overall_ms=overall_ms,
    )


def _ms(value: float) -> str:
    return duration(value, 3)


def _plural(count: int, word: str) -> str:
    if count == 1:
        return f"1 {word}"
    return f"{count} {word}{'es' if word.endswith(('s', 'sh', 'ch')) else 's'}"


def _change(old: float, new: float) -> str:
    if old <= 0:
        return ""
    return f" ({(new / old - 1) * 100:+.0f}%)"


def describe(d: InventoryDiff) -> list[str]:
    """Lines for a failure message: what the call launches now that it did not, or not as often."""
    before, after = launches(d.baseline), launches(d.current)
    lines: list[str] = []
    if before != after:
        parts = [f"+{k.name}: {_ms(k.per_call_ms)}" for k in d.added]
        parts += [f"-{k.name}: {_ms(k.per_call_ms)}" for k in d.removed]
        detail = f" ({'; '.join(parts)})" if parts else ""
        lines.append(f"now launches {_plural(after, 'kernel')} per call instead of {before}{detail}")
    items: list[str] = []
    for k in d.added:
        items.append(
            f"+ {k.name}: new, {_plural(k.launches, 'launch')}, {_ms(k.per_call_ms)} per call "
            f"({k.share * 100:.0f}% of device time)"
        )
    for k in d.removed:
        items.append(f"- {k.name}: gone (was {_plural(k.launches, 'launch')}, {_ms(k.per_call_ms)} per call)")
    for a, b in d.renamed:
        items.append(
            f"~ {a.name} -> {b.name}: a different kernel in its place (another tiling or fusion?), "
            f"{_ms(a.per_call_ms)} -> {_ms(b.per_call_ms)} per call{_change(a.per_call_ms, b.per_call_ms)}"
        )
    for a, b in d.launch_changes:
        items.append(f"# {b.name}: {a.launches} -> {_plural(b.launches, 'launch')} per call")
    renamed_new = {b.name for _, b in d.renamed}
    for a, b in d.time_changes:
        if b.name in renamed_new:
            continue  # its time is on the rename's line
        items.append(
            f"* {b.name}: {_ms(a.per_call_ms)} -> {_ms(b.per_call_ms)} per call"
            f"{_change(a.per_call_ms, b.per_call_ms)}, {b.share * 100:.0f}% of device time"
        )
    for a, b in d.grid_changes:
        items.append(f"# {b.name}: grid {_grid(a)} -> {_grid(b)}")
    if len(items) > MAX_LINES:
        items = [*items[:MAX_LINES], f"... and {len(items) - MAX_LINES} more (see the profile artefacts)"]
    lines.extend(items)
    if not lines:
        lines.append(_outside(d, after))
    return lines


def _percent(old: float, new: float) -> str:
    return f"{(new / old - 1) * 100:+.1f}%" if old > 0 else "a change"


def _grid(kernel: KernelRecord) -> str:
    """`72089 blocks`, or `256x4 (1024 blocks)` for a grid of several dimensions."""
    grid = kernel.grid or ()
    if sum(1 for g in grid if g != 1) <= 1:
        return f"{kernel.blocks} blocks"
    return f"{'x'.join(str(g) for g in grid)} ({kernel.blocks} blocks)"


def _outside(d: InventoryDiff, launched: int) -> str:
    """No kernel changed enough to be named: say how much the kernels' time changed against the
    call's, in ms, and conclude only what those figures show. The kernels' share of the call's change
    decides: under half, the rest lies outside the kernels; from half on, the kernels account for it."""
    same = f"the same {_plural(launched, 'kernel launch')} as the baseline"
    if d.overall_ms is None:
        return (
            f"{same}, each within {TIME_CHANGE_REL * 100:.0f}% of its time: the slowdown is outside "
            "the kernels (launch overhead, gaps between kernels, host work?)"
        )
    before = sum(k.per_call_ms for k in d.baseline)
    after = sum(k.per_call_ms for k in d.current)
    call_before, call_after = d.overall_ms
    kernels = after - before
    call = call_after - call_before
    call_figures = (
        f"{duration(call_before)} -> {duration(call_after)} ({_delta_ms(call)}, {_percent(*d.overall_ms)})"
    )
    figures = (
        f"{same}; their time per call {_ms(before)} -> {_ms(after)} ({_delta_ms(kernels)}) against "
        f"{call_figures} for the call"
    )
    outside = "so the slowdown is outside the kernels (launch overhead, gaps between kernels, host work?)"
    if call <= 0:
        return figures
    if kernels <= 0:
        return f"{figures}: the kernels' time did not grow, {outside}"
    share = round(kernels / call * 100)
    if share < OUTSIDE_SHARE:
        return f"{figures}: the kernels account for {share}% of the call's change, {outside}"
    small = f"{NOISE_REL:.0%} of its time, {duration(TIME_CHANGE_MS)} or a quarter of the call's change"
    return (
        f"{figures}: the kernels account for {share}% of the call's change, so the slowdown is in the "
        f"kernels, though no one kernel's change is large enough to name (each is under {small})"
    )


def _delta_ms(value: float) -> str:
    return ("+" if value >= 0 else "") + duration(value, 3)


def describe_code(d: InventoryDiff) -> str | None:
    """One line on the generated code of kernels in both inventories, or None without hashes."""
    changed = d.code_changes
    same = d.code_unchanged
    if not changed and not same:
        return None
    if changed:
        names = ", ".join(f"{new.name} ({old.code} -> {new.code})" for old, new in changed)
        text = f"generated code changed since the baseline: {names}"
        if same:
            text += f"; unchanged: {', '.join(k.name for k in same)}"
        return text
    return f"generated code unchanged since the baseline ({', '.join(k.name for k in same)})"


def table(kernels: Sequence[KernelRecord]) -> list[str]:
    """The inventory as aligned text lines, most time first (for the artefacts folder)."""
    rows = [("launches", "ms/launch", "share", "code", "kernel")]
    for k in sorted(kernels, key=lambda r: (-r.per_call_ms, r.name)):
        rows.append((str(k.launches), f"{k.ms:.3g}", f"{k.share * 100:.1f}%", k.code or "-", k.name))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return [
        "  ".join(cell.rjust(w) for cell, w in zip(row[:4], widths, strict=True)) + "  " + row[4]
        for row in rows
    ]
