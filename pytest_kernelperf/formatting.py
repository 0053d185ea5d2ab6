"""How times, numbers, paths and outside text are written: UTC timestamps, significant-digit
rounding, durations and relative figures as a person reads them, the paths of a call's profile
artefacts, control characters as escapes.

One spelling each, so that a baseline's `recorded`, a run's `created` and the peak cache's date
compare and sort alike, so that rounding in baselines, JSON and JUnit properties agrees, so that a
time reads `8.7 ms` or `33 us` in every message (never `8.72e+06 ns`), and so that a regression
message and the terminal summary name a profile's files alike.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path

STAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# C0 and C1 controls and DEL: ESC starts the sequences that clear a terminal, colour it or make
# links (OSC 8); a line break or carriage return splits or overwrites a message's line.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")
_CONTROLS_BUT_LINE_BREAK = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def utc_stamp(moment: _dt.datetime | None = None) -> str:
    """`moment` (default: now) as an ISO 8601 UTC timestamp to the second, e.g. 2026-11-30T00:27:27Z."""
    moment = moment if moment is not None else _dt.datetime.now(_dt.timezone.utc)
    if moment.tzinfo is not None:  # a naive moment is taken to be UTC already
        moment = moment.astimezone(_dt.timezone.utc)
    return moment.strftime(STAMP_FORMAT)


def significant(value: float, digits: int = 6) -> float:
    """`value` rounded to `digits` significant digits (six: far below any timing's noise, short diffs)."""
    return float(f"{value:.{digits}g}")


# A duration's units, largest first, in milliseconds (ASCII "us", as the size classes write it).
_DURATION_UNITS = (("s", 1e3), ("ms", 1.0), ("us", 1e-3), ("ns", 1e-6))


def _figure(value: float, digits: int) -> str:
    """`value` to `digits` significant digits, never in exponent notation (1234, not 1.23e+03)."""
    if value != 0 and abs(value) >= 10**digits:
        return f"{value:.0f}"
    return f"{value:.{digits}g}"


def duration(ms: float, digits: int = 4) -> str:
    """A time given in milliseconds, in the unit that reads best: 8.7 ms, 33.1 us, 850 ns, 2.5 s.

    `digits` significant digits (4 for a kernel's level, 2 for a timer's step). Below a nanosecond
    it stays in ns; from a second on, in s."""
    if not math.isfinite(ms) or ms == 0:
        return f"{ms:g} ms"
    for unit, size in _DURATION_UNITS:
        value = float(_figure(ms / size, digits))
        if abs(value) >= 1 or unit == "ns":
            return f"{_figure(value, digits)} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def percent(fraction: float, digits: int = 2) -> str:
    """A relative figure as a reader takes it in: 4.1%, 12%, 0.71%, 140% (never 1.4e+02%)."""
    return f"{_figure(fraction * 100, digits)}%"


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


def escape_controls(text: str, *, keep_line_breaks: bool = False) -> str:
    """`text` from outside the plugin (a tool's output, a kernel name, a stored value) with every
    control character written as its Python escape (ESC as `\\x1b`), so that it cannot rewrite the
    terminal or a CI log; `keep_line_breaks` leaves the line breaks of a text of several lines."""
    controls = _CONTROLS_BUT_LINE_BREAK if keep_line_breaks else _CONTROLS
    return controls.sub(lambda m: ascii(m.group())[1:-1], text)
