"""A device shift: most kernels of a run moved the same way by about the same amount, as a slower or
faster card, clock, driver or toolkit moves them all. Reported beside the verdicts, never instead of
them: each kernel keeps its own verdict, and those that moved beyond the shift are named. Pure
module: no torch, no pytest.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

# A shift is named when at least MIN_KERNELS kernels on one device were judged, at least AGREEMENT
# of them moved the way the median did, and the median moved at least MIN_SHIFT.
MIN_KERNELS = 5
AGREEMENT = 0.8
MIN_SHIFT = 0.01


@dataclass(frozen=True)
class DeviceShift:
    device: str
    kernels: int
    agreeing: int  # kernels that moved the way the median did
    ratio: float  # the median ratio (current / baseline)
    beyond: tuple[tuple[str, float], ...]  # (label, ratio) of kernels that moved beyond the shift


def device_shifts(judged: Iterable[tuple[str, str, float]], threshold: float) -> list[DeviceShift]:
    """The shifts among (device, label, ratio) judgements; a kernel is beyond the shift when its ratio
    to the median ratio is past `threshold` either way."""
    by_device: dict[str, list[tuple[str, float]]] = {}
    for device, label, ratio in judged:
        if ratio > 0 and math.isfinite(ratio):
            by_device.setdefault(device, []).append((label, ratio))
    shifts = []
    for device, items in by_device.items():
        if len(items) < MIN_KERNELS:
            continue
        logs = [math.log(r) for _, r in items]
        median = statistics.median(logs)
        if abs(median) < math.log1p(MIN_SHIFT):
            continue
        agreeing = sum(1 for x in logs if x * median > 0)
        if agreeing < AGREEMENT * len(items):
            continue
        bound = math.log1p(threshold)
        beyond = tuple((label, r) for label, r in items if abs(math.log(r) - median) > bound)
        shifts.append(DeviceShift(device, len(items), agreeing, math.exp(median), beyond))
    return shifts
