"""Which hardware counters moved: the lines a regression message adds for `--kernelperf-ncu`.

Per kernel (matched by name), the counters that moved beyond their noise band (model/counters.py)
against the baseline's: `DRAM read 64 MiB -> 128 MiB (+100%)`, `occupancy 62% -> 31%`,
`registers 64 -> 128`; kernels only in one of the two said so, and then (kernels fused or split)
the call's time and DRAM bytes summed over its kernels. Without baseline counters, this
run's counters of the kernels that took most time. Pure: no torch, no pytest.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_kernelperf.formatting import duration
from pytest_kernelperf.model.counters import ADDITIVE, BY_KEY, COUNTERS, Counter, KernelCounters

INDENT = "  "
SHOWN_KERNELS = 4  # the kernels taking most time; the rest are counted
SHOWN_STALLS = 3
RECORD_HINT = "record them with --kernelperf-update-baselines --kernelperf-ncu"
# The counters a kernel's summary line shows, in order (the stalls follow).
SUMMARY = (
    "duration_ns",
    "dram_read_bytes",
    "dram_write_bytes",
    "l2_hit_pct",
    "occupancy_pct",
    "registers",
    "shared_bytes",
    "sm_throughput_pct",
    "memory_throughput_pct",
    "sectors_per_request",
)


def value_text(counter: Counter, value: float) -> str:
    """A counter's value as a message writes it: 64 MiB, 12.3 us, 62%, 128, 4.0."""
    if counter.kind == "bytes":
        for unit, size in (("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10)):
            if value >= size:
                return f"{value / size:.3g} {unit}"
        return f"{value:.0f} B"
    if counter.kind == "ns":
        return duration(value / 1e6, 3)
    if counter.kind == "pct":
        return f"{value:.0f}%"
    if counter.kind == "count":
        return f"{value:.0f}"
    return f"{value:.3g}"


def moved(counter: Counter, before: float, after: float) -> bool:
    """Whether a change is beyond the counter's noise band (both its relative and absolute part)."""
    change = abs(after - before)
    return change > counter.absolute and change > counter.relative * max(abs(before), abs(after))


def change_text(counter: Counter, before: float, after: float) -> str:
    text = f"{counter.label} {value_text(counter, before)} -> {value_text(counter, after)}"
    if counter.kind in ("bytes", "ns", "ratio", "stall") and before > 0:
        text += f" ({(after / before - 1) * 100:+.0f}%)"
    return text


def kernel_changes(before: KernelCounters, after: KernelCounters) -> list[str]:
    """The counters of one kernel that moved beyond their noise band, in the set's order."""
    changes = []
    for counter in COUNTERS:
        old, new = before.get(counter.key), after.get(counter.key)
        if old is not None and new is not None and moved(counter, old, new):
            changes.append(change_text(counter, old, new))
    return changes


def summary(kernel: KernelCounters) -> str:
    """One kernel's counters on one line, its top stall reasons last."""
    parts = [
        f"{BY_KEY[key].label} {value_text(BY_KEY[key], kernel.values[key])}"
        for key in SUMMARY
        if key in kernel.values
    ]
    stalls = kernel.stalls()[:SHOWN_STALLS]
    if stalls:
        parts.append("top stalls " + ", ".join(f"{reason} {value:.3g}" for reason, value in stalls))
    return ", ".join(parts) or "no counter read"


def _by_time(kernels: Sequence[KernelCounters]) -> list[KernelCounters]:
    return sorted(kernels, key=lambda k: (-(k.get("duration_ns") or 0.0), k.name))


def counter_lines(
    baseline: Sequence[KernelCounters] | None, current: Sequence[KernelCounters] | None
) -> list[str]:
    """The message's lines about hardware counters; none where this run read none (the notes say why)."""
    if not current:
        return []
    if not baseline:
        shown = _by_time(current)[:SHOWN_KERNELS]
        lines = [f"hardware counters now (Nsight Compute; the baseline has none: {RECORD_HINT}):"]
        lines += [f"{INDENT}{k.name}: {summary(k)}" for k in shown]
        if len(current) > len(shown):
            lines.append(f"{INDENT}and {len(current) - len(shown)} more kernel(s)")
        return lines
    before = {k.name: k for k in baseline}
    after = {k.name: k for k in current}
    lines = []
    for kernel in _by_time(current):
        if kernel.name not in before:
            lines.append(f"{INDENT}+ {kernel.name}: new, {summary(kernel)}")
            continue
        changes = kernel_changes(before[kernel.name], kernel)
        if kernel.launches != before[kernel.name].launches:
            changes.insert(0, f"launches {before[kernel.name].launches} -> {kernel.launches}")
        if changes:
            lines.append(f"{INDENT}{kernel.name}: {', '.join(changes)}")
    for kernel in _by_time(baseline):
        if kernel.name not in after:
            lines.append(f"{INDENT}- {kernel.name}: gone (it had {summary(kernel)})")
    totals = total_changes(baseline, current)
    if totals and set(before) != set(after):  # kernels fused or split: only the call's totals compare
        lines.insert(0, f"{INDENT}all kernels of the call: {', '.join(totals)}")
    if not lines:
        return ["hardware counters (Nsight Compute): none moved beyond its noise band against the baseline's"]
    return ["hardware counters against the baseline's (Nsight Compute):", *lines]


def total_changes(baseline: Sequence[KernelCounters], current: Sequence[KernelCounters]) -> list[str]:
    """The call's time and DRAM bytes summed over its kernels, where they moved beyond their band."""
    changes = []
    for key in ADDITIVE:
        old = [k.values[key] for k in baseline if key in k.values]
        new = [k.values[key] for k in current if key in k.values]
        if old and new and moved(BY_KEY[key], sum(old), sum(new)):
            changes.append(change_text(BY_KEY[key], sum(old), sum(new)))
    return changes
