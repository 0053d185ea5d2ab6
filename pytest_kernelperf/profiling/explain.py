"""Why a call got slower: the lines a regression message adds below its numbers.

Pure (no torch, no pytest): the baseline entry's kernel inventory and environment against this run's
profile and environment, and where the profile's artefacts lie.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_kernelperf.baselines.schema import BaselineEntry
from pytest_kernelperf.profiling import envdiff, inventory
from pytest_kernelperf.profiling.capture import CallProfile
from pytest_kernelperf.profiling.inventory import KernelRecord
from pytest_kernelperf.results.render import artifact_line

INDENT = "  "
UPDATE_FLAG = "--kernelperf-update-baselines"


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


def regression_details(
    baseline: BaselineEntry, environment: Mapping[str, str], profiled: CallProfile | None
) -> list[str]:
    """Kernel inventory diff, generated code, environment diff and artefacts, one item a line."""
    lines = kernel_lines(baseline.kernels, profiled)
    lines.append(envdiff.describe(baseline.environment, environment))
    if profiled is not None:
        line = artifact_line(profiled.artifacts)
        if line:
            lines.append(f"profile: {line}")
        # A note already on a line (the reason nothing was profiled) is not repeated.
        lines.extend(f"note: {n}" for n in profiled.notes if not any(n in line for line in lines))
    return lines
