"""What differs between the environment a baseline was recorded in and this run's.

Pure (no torch, no pytest). A kernel that got slower after a driver update or on a GPU held at a
lower clock is not a code regression; the failure message names such differences first.
"""

from __future__ import annotations

from collections.abc import Mapping

# The keys that most often explain a change of speed, in the order a reader checks them.
ORDER = ("torch", "triton", "cuda", "driver", "capability", "sm_clock_mhz", "python", "threads")
LABELS = {"sm_clock_mhz": "SM clock", "capability": "compute capability", "threads": "torch threads"}
UNITS = {"sm_clock_mhz": " MHz"}
# Clocks read at the end of a measurement wobble by a few MHz; only a real drop or rise counts.
CLOCK_TOLERANCE = 0.03


def _label(key: str) -> str:
    return LABELS.get(key, key)


def _value(key: str, value: str | None) -> str:
    return "not recorded" if value is None else f"{value}{UNITS.get(key, '')}"


def _same(key: str, old: str, new: str) -> bool:
    if old == new:
        return True
    if key.endswith("_mhz"):
        try:
            before, after = float(old), float(new)
        except ValueError:
            return False
        return before > 0 and abs(after - before) <= CLOCK_TOLERANCE * before
    return False


def _keys(baseline: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    known = [k for k in ORDER if k in baseline or k in current]
    return known + sorted((baseline.keys() | current.keys()) - set(ORDER))


def differences(baseline: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """One "name old -> new" item per setting that differs; a setting recorded on one side only
    counts when it is one of the well-known keys (a new key in a newer plugin version is not news)."""
    items = []
    for key in _keys(baseline, current):
        old, new = baseline.get(key), current.get(key)
        if old is not None and new is not None:
            if not _same(key, old, new):
                items.append(f"{_label(key)} {_value(key, old)} -> {_value(key, new)}")
        elif key in ORDER and old is not None:
            items.append(f"{_label(key)} {_value(key, old)} -> {_value(key, new)}")
    return items


def describe(baseline: Mapping[str, str], current: Mapping[str, str]) -> str:
    """A line for a failure message: what changed, or that nothing of note did."""
    items = differences(baseline, current)
    if items:
        return f"environment differs from the baseline's: {'; '.join(items)}"
    if not baseline:
        return "environment: the baseline recorded none"
    shown = [f"{_label(k)} {_value(k, current[k])}" for k in _keys(baseline, current) if k in current]
    return f"environment: same as the baseline ({', '.join(shown)})"
