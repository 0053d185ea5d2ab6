"""A comparison's reason as the notes a report prints under its table, each once.

A reason is the judge's notes joined into one text (verdict/judge.py, verdict/sequential.py), what
a failure or a run file keeps. A report cites notes rather than repeat them: the notes that read
alike for every call (an `undetermined` call's explanation and remedy, at one threshold; the
remedy of pairs that saw too little) are taken out of the reason so that every call citing them
cites one note, and what is left is the call's own.
"""

from __future__ import annotations

from pytest_kernelperf.model.result import Comparison, Verdict
from pytest_kernelperf.verdict.judge import (
    NOT_SIGNIFICANT,
    PROCESSES_REMEDY,
    ROUNDS_REMEDY,
    undetermined_note,
)
from pytest_kernelperf.verdict.sequential import PAIRED_REMEDY

SEPARATOR = "; "  # how the judge joins its notes into a reason
PAIRED_NOTE = f"for a verdict: {PAIRED_REMEDY}"
PAIRED_SHOWN = f"undetermined pairs: for a verdict, {PAIRED_REMEDY}"


def shared_notes(threshold: float | None) -> tuple[tuple[str, str], ...]:
    """(as a reason holds it, as a note reads) of the notes that read alike in every call at
    `threshold` (None: not known)."""
    paired = ((PAIRED_NOTE, PAIRED_SHOWN),)
    if threshold is None:
        return paired
    own = (undetermined_note(threshold, r) for r in (ROUNDS_REMEDY, PROCESSES_REMEDY))
    return (*((note, note) for note in own), *paired)


def reason_notes(comparison: Comparison) -> list[str]:
    """The comparison's reason as notes: the shared ones first, then the rest of it as one note
    (nothing where the reason is empty). An `undetermined` call's "beyond the threshold, not
    significant" is left out: its verdict says more."""
    rest = comparison.reason
    found = []
    for held, shown in shared_notes(comparison.threshold):
        if held in rest:
            found.append(shown)
            rest = rest.replace(held, "")
    if comparison.verdict is Verdict.UNDETERMINED:
        rest = rest.replace(NOT_SIGNIFICANT, "")
    parts = [part.strip() for part in rest.split(SEPARATOR)]
    left = SEPARATOR.join(part for part in parts if part).strip(" ;")
    return [*found, left] if left else found
