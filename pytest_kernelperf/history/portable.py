"""Figures that travel between GPUs: % of the device's copy bandwidth and the ratio to a reference.

A kernel's time on a new GPU says little by itself; its share of that GPU's measured copy bandwidth,
or its time over a reference timed in the same run, can be set beside the same figure on the GPUs
already in the history: "62% of copy bandwidth here; 97% on NVIDIA H200".
"""

from __future__ import annotations

from .store import HistoryStore


def _latest_by_device(
    store: HistoryStore, test: str, name: str | None, cache: str | None
) -> dict[str, tuple[float | None, float | None]]:
    """Device -> (peak fraction, reference ratio) of the newest run measuring the series."""
    out: dict[str, tuple[float | None, float | None]] = {}
    for sid, key in store.find_series(test, name):
        if cache is not None and key.cache != cache:
            continue
        points = store.points(sid).get(sid, [])
        for point in reversed(points):
            if point.peak_fraction is not None or point.reference_ratio is not None:
                out[key.device] = (point.peak_fraction, point.reference_ratio)
                break
    return out


def portable_note(
    store: HistoryStore, test: str, name: str | None, device: str, cache: str | None = None
) -> str | None:
    """A one-line comparison of `device`'s portable figures with other devices' (in the same cache
    mode, when given), or None when there is nothing to compare (no figure on `device`, or no other
    device with the same figure)."""
    figures = _latest_by_device(store, test, name, cache)
    here = figures.get(device)
    if here is None:
        return None
    others = sorted((d, f) for d, f in figures.items() if d != device)
    parts: list[str] = []
    fraction, ratio = here
    if fraction is not None:
        elsewhere = [f"{100 * f[0]:.0f}% on {d}" for d, f in others if f[0] is not None]
        if elsewhere:
            parts.append(f"{100 * fraction:.0f}% of copy bandwidth here; " + "; ".join(elsewhere))
    if ratio is not None:
        elsewhere = [f"{f[1]:.2f}x on {d}" for d, f in others if f[1] is not None]
        if elsewhere:
            parts.append(f"{ratio:.2f}x the reference here; " + "; ".join(elsewhere))
    return "; ".join(parts) or None
