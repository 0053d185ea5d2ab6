"""How times and numbers are written into files: UTC timestamps and significant-digit rounding.

One spelling each, so that a baseline's `recorded`, a run's `created` and the peak cache's date
compare and sort alike, and so that rounding in baselines, JSON and JUnit properties agrees.
"""

from __future__ import annotations

import datetime as _dt

STAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def utc_stamp(moment: _dt.datetime | None = None) -> str:
    """`moment` (default: now) as an ISO 8601 UTC timestamp to the second, e.g. 2026-11-30T00:27:27Z."""
    moment = moment if moment is not None else _dt.datetime.now(_dt.timezone.utc)
    if moment.tzinfo is not None:  # a naive moment is taken to be UTC already
        moment = moment.astimezone(_dt.timezone.utc)
    return moment.strftime(STAMP_FORMAT)


def significant(value: float, digits: int = 6) -> float:
    """`value` rounded to `digits` significant digits (six: far below any timing's noise, short diffs)."""
    return float(f"{value:.{digits}g}")
