"""Device memory as a judged metric: the peak a call allocates beyond its inputs, against its baseline.

Device memory is nearly deterministic: the same call on the same inputs allocates the same tensors
every time, so no statistics are needed. A call fails when its peak grew beyond the baseline's by
more than `memory_threshold` of the baseline and more than `MEMORY_FLOOR_BYTES` (1 MiB). The floor
keeps small, legitimate wobbles out: the caching allocator rounds every block up (to 512 bytes, more
with `roundup_power2_divisions`), and libraries keep small scratch buffers whose size follows the
kernel configuration chosen (a Triton autotuner's pick, cuBLAS's heuristics); a kernel that starts
allocating a workspace of its own is far above it. Pure: no torch, no pytest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MEMORY_FLOOR_BYTES = 1 << 20  # growth below this never fails, whatever the threshold
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


@dataclass(frozen=True)
class MemoryCheck:
    """A call's peak device memory beyond what was allocated before it, and its judgement.

    `baseline_bytes` is None when the baseline has no figure (no baseline, an entry recorded before
    memory was measured, or on another device): then nothing is judged.
    """

    peak_bytes: int
    baseline_bytes: int | None = None
    threshold: float = 0.1
    exceeded: bool = False
    # The operators that allocated most in one call now (torch.profiler), found for a failure.
    allocations: tuple[str, ...] = ()

    @property
    def allowed_growth_bytes(self) -> int | None:
        """The growth over the baseline that still passes: threshold x baseline, 1 MiB at least."""
        if self.baseline_bytes is None:
            return None
        return allowed_growth(self.baseline_bytes, self.threshold)

    @property
    def growth_bytes(self) -> int | None:
        return None if self.baseline_bytes is None else self.peak_bytes - self.baseline_bytes

    @property
    def change_pct(self) -> float | None:
        if self.baseline_bytes is None:
            return None
        if self.baseline_bytes == 0:
            return 0.0 if self.peak_bytes == 0 else math.inf
        return (self.peak_bytes / self.baseline_bytes - 1) * 100

    def cell(self) -> str:
        """ "192 MiB", or "192 MiB (+64 MiB)" when it differs from its baseline."""
        text = format_bytes(self.peak_bytes)
        growth = self.growth_bytes
        if growth:
            text += f" ({'+' if growth > 0 else '-'}{format_bytes(abs(growth))})"
        return text


def allowed_growth(baseline_bytes: int, threshold: float) -> int:
    return max(math.ceil(threshold * baseline_bytes), MEMORY_FLOOR_BYTES)


def judge_memory(peak_bytes: int, baseline_bytes: int | None, threshold: float) -> MemoryCheck:
    """The peak judged against the baseline's: exceeded when it grew beyond the allowed growth."""
    exceeded = baseline_bytes is not None and peak_bytes - baseline_bytes > allowed_growth(
        baseline_bytes, threshold
    )
    return MemoryCheck(peak_bytes, baseline_bytes, threshold, exceeded)


def format_bytes(count: int) -> str:
    """ "512 B", "1.5 KiB", "64 MiB", "1.25 GiB": binary units, three significant digits."""
    value = float(count)
    for unit in _UNITS:
        if abs(value) < 1024 or unit == _UNITS[-1]:
            return f"{int(value)} B" if unit == "B" else f"{value:.3g} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def memory_message(label: str, device: str, check: MemoryCheck, baseline_where: str) -> str:
    """The failure of a call whose device memory grew beyond its threshold, with the figures."""
    assert check.baseline_bytes is not None and check.growth_bytes is not None
    allowed = check.allowed_growth_bytes
    assert allowed is not None
    change = check.change_pct
    pct = f", {change:+.1f}%" if change is not None and math.isfinite(change) else ""
    if check.allocations:
        allocations = (
            "  largest allocations of one call now (torch.profiler, operator and its own net "
            f"allocation): {', '.join(check.allocations)}; the baseline keeps no per-allocation "
            "record, so which of them grew is not known.\n"
        )
    else:
        allocations = "  which allocations grew is not known (the profiler named none).\n"
    return (
        f"device memory grew in {label} on {device}: peak {format_bytes(check.peak_bytes)} "
        f"({check.peak_bytes} bytes) beyond the inputs vs baseline {format_bytes(check.baseline_bytes)} "
        f"({check.baseline_bytes} bytes): +{format_bytes(check.growth_bytes)}{pct}, more than the "
        f"+{format_bytes(allowed)} allowed (memory_threshold {check.threshold * 100:g}%, at least "
        f"{format_bytes(MEMORY_FLOOR_BYTES)}).\n" + allocations + f"  baseline: {baseline_where}.\n"
    )
