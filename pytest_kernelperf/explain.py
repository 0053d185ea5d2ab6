"""Why a call got slower: the lines a regression message adds below its numbers.

Pure (no torch, no pytest): the baseline entry's kernel inventory and environment against this run's
profile and environment, and where the profile's artefacts lie.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from . import envdiff, inventory
from .baselines import BaselineEntry
from .inventory import KernelRecord
from .profile import CallProfile

INDENT = "  "
UPDATE_FLAG = "--kernelperf-update-baselines"


def display_path(path: Path | str) -> str:
    """`path` relative to the working directory when it lies below it (shorter messages)."""
    text = str(path)
    try:
        relative = os.path.relpath(text)
    except ValueError:  # another drive on Windows
        return text
    return text if relative.startswith("..") else relative


def _top(kernels: Sequence[KernelRecord], count: int = 3) -> str:
    ordered = sorted(kernels, key=lambda k: (-k.per_call_ms, k.name))
    text = ", ".join(f"{k.name} ({k.launches}x, {k.per_call_ms:.3g} ms)" for k in ordered[:count])
    return text + (f", and {len(ordered) - count} more" if len(ordered) > count else "")


def kernel_lines(baseline: tuple[KernelRecord, ...] | None, profiled: CallProfile | None) -> list[str]:
    current = profiled.kernels if profiled is not None else None
    if baseline is None and current is None:
        return []
    if current is None:
        why = "; ".join(profiled.notes) if profiled is not None and profiled.notes else "not profiled"
        return [f"kernels: the baseline lists {len(baseline or ())}, none profiled now ({why})"]
    if baseline is None:
        return [
            f"kernels now: {_top(current) or 'no device activity'} "
            f"(the baseline has no kernel inventory: record one with {UPDATE_FLAG})"
        ]
    d = inventory.diff(baseline, current)
    lines = ["kernels against the baseline's:"] + [INDENT + line for line in inventory.describe(d)]
    code = inventory.describe_code(d)
    if code:
        lines.append(code)
    return lines


def artifact_line(artifacts: Sequence[str | Path]) -> str | None:
    """`profile: <folder> (file, file, code/...)` for the files of one call's profile."""
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
    return f"profile: {display_path(folder)} ({', '.join(names)})"


def regression_details(
    baseline: BaselineEntry, environment: Mapping[str, str], profiled: CallProfile | None
) -> list[str]:
    """Kernel inventory diff, generated code, environment diff and artefacts, one item a line."""
    lines = kernel_lines(baseline.kernels, profiled)
    lines.append(envdiff.describe(baseline.environment, environment))
    if profiled is not None:
        line = artifact_line(profiled.artifacts)
        if line:
            lines.append(line)
        shown = {n for line in lines for n in profiled.notes if n in line}
        lines.extend(f"note: {n}" for n in profiled.notes if n not in shown and n != "")
    return lines
