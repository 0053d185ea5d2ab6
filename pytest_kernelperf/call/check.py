"""The reference check: fn's first call (it also pays for compilation), its answer compared with the
reference's on the inputs as they were before fn ran."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_kernelperf.call.context import CallRun
from pytest_kernelperf.call.spec import CallSpec, argument_name
from pytest_kernelperf.correctness import (
    Mismatch,
    Mutations,
    Uncomparable,
    assert_matches,
    mutated,
    snapshot,
)
from pytest_kernelperf.model.result import BenchResult, Verdict
from pytest_kernelperf.verdict.messages import mismatch_message, mismatch_problem, usage_error


@dataclass(frozen=True)
class Checked:
    """fn's first answer and the check's notes (an input it modified in place)."""

    output: Any
    notes: tuple[str, ...] = ()


class MismatchFound(Exception):
    """A wrong answer found by the check: recorded as a mismatch, and the test fails at its end."""

    def __init__(self, problem: str, notes: tuple[str, ...]) -> None:
        super().__init__(problem)
        self.problem = problem
        self.notes = notes


def first_call(spec: CallSpec, run: CallRun) -> Checked:
    """Run fn once and compare with the reference; raises MismatchFound.

    The reference gets a copy of the inputs as they were before fn ran, so an in-place kernel
    is checked against the right values, and a kernel that changes its inputs is named."""
    __tracebackhide__ = True
    reference, inputs = spec.reference, spec.arguments
    before = snapshot(inputs) if reference is not None else None
    output = spec.call()  # the first call also pays for compilation; a raise is the test's error
    if reference is None or before is None:
        return Checked(output)
    notes = _mutation_notes(mutated(before, inputs))
    expected = reference(*before[0], **before[1])
    try:
        assert_matches(output, expected, rtol=spec.rtol, atol=spec.atol)
    except Mismatch as exc:
        problem: str | None = mismatch_problem(exc, run.label)
        usage = False
    except Uncomparable as exc:
        problem, usage = usage_error(run.nodeid, exc), True
    else:
        problem, usage = None, False
    if problem is None:
        return Checked(output, notes)
    if usage:  # outside the except block: no chained traceback
        run.host.fail(problem)
    # Raised through the host's fault guard, which turns a mismatch read back from a broken CUDA
    # context into that CUDA error; the caller then records the mismatch and lets the test go on.
    raise MismatchFound(problem, notes)


def _mutation_notes(mutations: Mutations) -> tuple[str, ...]:
    """The notes on what fn did to its inputs: those it modified in place, those not checked."""
    notes = []
    if mutations.changed:
        where = ", ".join(argument_name(path) for path in mutations.changed)
        notes.append(f"fn modified its input in place ({where}); the reference was given the original values")
    notes.extend(
        f"whether fn modified {argument_name(path)} in place was not checked ({why})"
        for path, why in mutations.unchecked
    )
    return tuple(notes)


def mismatch(found: MismatchFound, run: CallRun, device: str) -> BenchResult:
    """The mismatch deferred to the test's end, and recorded."""
    run.host.defer(mismatch_message(found.problem, found.notes))
    return run.record(
        BenchResult(run.nodeid, run.name, device, Verdict.MISMATCH, notes=(found.problem, *found.notes))
    )
