"""Pure renderers of results: the end-of-run terminal table.

Depends only on the result data types. A test that times several implementations (several names,
or one parametrized test) reads as one table, like the lecture's "Method | Time (ms)".
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from .baselines import FileUpdate
from .compare import Verdict
from .results import BenchResult

_PARAMS = re.compile(r"\[(?P<param>.*)\]$")


def group_key(result: BenchResult) -> tuple[str, str]:
    """(test without parameters, row label): parametrized variants of one test share a table."""
    match = _PARAMS.search(result.nodeid)
    base = result.nodeid[: match.start()] if match else result.nodeid
    row = match["param"] if match else ""
    if result.name:
        row = f"{row}/{result.name}" if row else result.name
    return base, row or "-"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _change(value: float | None) -> str:
    return "" if value is None else f"{value:+.1f}%"


def totals(results: Iterable[BenchResult]) -> str:
    counts = Counter(r.verdict for r in results)
    order = [
        Verdict.SAME,
        Verdict.SLOWER,
        Verdict.FASTER,
        Verdict.NEW,
        Verdict.INCOMPARABLE,
        Verdict.UNRELIABLE,
        Verdict.CHECKED,
    ]
    return ", ".join(f"{counts[v]} {v}" for v in order if counts[v])


def table(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def terminal_lines(results: Sequence[BenchResult]) -> list[str]:
    """The summary table, grouped by test."""
    if not results:
        return []
    groups: dict[str, list[tuple[str, BenchResult]]] = {}
    for result in results:
        base, row = group_key(result)
        groups.setdefault(base, []).append((row, result))
    lines: list[str] = []
    for base, members in groups.items():
        lines.append(base)
        rows = [["Method", "Time (ms)", "Baseline", "Change", "Host (ms)", "Device", "Timer", "Verdict"]]
        for row, r in members:
            verdict = str(r.verdict)
            if r.verdict is Verdict.CHECKED and r.notes:
                verdict += f" ({r.notes[0]})"
            elif r.comparison is not None and r.comparison.reason and r.verdict is not Verdict.SAME:
                verdict += f" ({r.comparison.reason})"
            rows.append(
                [
                    row,
                    _ms(r.median_ms),
                    _ms(r.baseline_ms),
                    _change(r.change_pct),
                    _ms(r.host_median_ms),
                    r.device,
                    r.method or "-",
                    verdict,
                ]
            )
        lines.extend(table(rows))
    lines.append(f"kernelperf: {totals(results)}")
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


def artifact_lines(results: Sequence[BenchResult]) -> list[str]:
    """Where each profiled call's artefacts are (table, trace, stacks, generated code)."""
    lines = []
    for result in results:
        line = artifact_line(result.artifacts)
        if line is not None:
            lines.append(f"{result.label}: {line}")
    return lines


def display_path(path: Path | str) -> str:
    """`path` relative to the working directory when it lies below it (shorter messages)."""
    text = str(path)
    try:
        relative = os.path.relpath(text)
    except ValueError:  # another drive on Windows
        return text
    return text if relative.startswith("..") else relative


def artifact_line(artifacts: Sequence[str | Path]) -> str | None:
    """`<folder> (file, file, code/...)` for the files of one call's profile."""
    if not artifacts:
        return None
    paths = [Path(p) for p in artifacts]
    folder = Path(os.path.commonpath([str(p.parent) for p in paths]))
    names: list[str] = []
    for path in paths:
        relative = path.relative_to(folder).as_posix()
        top = relative.split("/", 1)[0] + "/" if "/" in relative else relative
        if top not in names:
            names.append(top)
    return f"{display_path(folder)} ({', '.join(names)})"
