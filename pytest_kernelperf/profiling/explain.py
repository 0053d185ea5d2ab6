"""Why a call got slower: the lines a regression message adds below its numbers.

Pure (no torch, no pytest): the baseline entry's inputs, compile context, autotuner choices,
kernel inventory and environment against this run's, and where the profile's artefacts lie. The
causes that are not the code come first: a changed input, another compile context, another
autotuner choice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_kernelperf.formatting import artifact_line, duration
from pytest_kernelperf.model.baseline import BaselineEntry
from pytest_kernelperf.model.call import KernelRecord
from pytest_kernelperf.profiling import compile_context, envdiff, inventory, ncu_diff
from pytest_kernelperf.profiling.autotune import autotune_line
from pytest_kernelperf.profiling.capture import CallProfile
from pytest_kernelperf.profiling.inputs import input_line

INDENT = "  "
UPDATE_FLAG = "--kernelperf-update-baselines"


def _top(kernels: Sequence[KernelRecord], count: int = 3) -> str:
    ordered = sorted(kernels, key=lambda k: (-k.per_call_ms, k.name))
    text = ", ".join(f"{k.name} ({k.launches}x, {duration(k.per_call_ms, 3)})" for k in ordered[:count])
    return text + (f", and {len(ordered) - count} more" if len(ordered) > count else "")


def kernel_lines(
    baseline: tuple[KernelRecord, ...] | None,
    profiled: CallProfile | None,
    overall_ms: tuple[float, float] | None = None,
    context_changed: bool = False,
) -> list[str]:
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
    d = inventory.diff(baseline, current, overall_ms)
    lines = ["kernels against the baseline's:"] + [INDENT + line for line in inventory.describe(d)]
    code = inventory.describe_code(d)
    if code:
        if context_changed and d.code_changes:
            code += " (expected: the compile context differs, see above)"
        lines.append(code)
    return lines


def context_lines(baseline: BaselineEntry, current: BaselineEntry | None) -> list[str]:
    """Causes other than the code: inputs, compile context, autotuner choices (each where recorded)."""
    if current is None:
        return []
    lines = [
        input_line(baseline.inputs, current.inputs),
        compile_context.context_line(baseline.compile_context, current.compile_context)
        if baseline.compile_context is not None or current.compile_context is not None
        else None,
        autotune_line(baseline.autotune, current.autotune),
    ]
    return [line for line in lines if line]


def context_notes(baseline: BaselineEntry | None, current: BaselineEntry | None) -> tuple[str, ...]:
    """Notes for any verdict: a changed input, compile context or autotuner choice can hide a
    regression as well as fake one."""
    if baseline is None or current is None:
        return ()
    notes = [
        input_line(baseline.inputs, current.inputs),
        autotune_line(baseline.autotune, current.autotune),
    ]
    if compile_context.differs(baseline.compile_context, current.compile_context):
        notes.append(compile_context.context_line(baseline.compile_context, current.compile_context))
    return tuple(note for note in notes if note)


def regression_details(
    baseline: BaselineEntry,
    environment: Mapping[str, str],
    profiled: CallProfile | None,
    current: BaselineEntry | None = None,
    call_ms: tuple[float, float] | None = None,
) -> list[str]:
    """Inputs, compile context, autotuner choices, kernel inventory diff, generated code,
    environment diff and artefacts, one item a line. `current` is the entry this run makes.

    `call_ms`: the call's time (baseline, now) exactly as the message's headline states it, so that
    the kernels are set against the same change as the verdict's; without it, the figures judged
    (each entry's level, the geometric mean of its rounds), never the medians of samples."""
    lines = context_lines(baseline, current)
    overall = call_ms
    if overall is None and current is not None:
        overall = (baseline.device_time.level_ms, current.device_time.level_ms)
    changed = current is not None and compile_context.differs(
        baseline.compile_context, current.compile_context
    )
    lines += kernel_lines(baseline.kernels, profiled, overall, context_changed=changed)
    lines += ncu_diff.counter_lines(baseline.counters, profiled.counters if profiled is not None else None)
    lines.append(envdiff.describe(baseline.environment, environment))
    if profiled is not None:
        line = artifact_line(profiled.artifacts)
        if line:
            lines.append(f"profile: {line}")
        # A note already on a line (the reason nothing was profiled) is not repeated.
        lines.extend(f"note: {n}" for n in profiled.notes if not any(n in line for line in lines))
    return lines
