"""The compile context of a torch.compile'd call, and how it differs from the baseline's.

torch.compile specialises a graph on the shapes it first sees. When the same function meets a
second shape in the process, dynamo recompiles it with that dimension symbolic ("automatic
dynamic"), and inductor may then emit a looped reduction where it emitted a persistent one, 1.3-3x
slower. Which shapes a process saw first depends on test order and xdist sharding, so a verdict
must say when the cause is the compile context rather than the code. Pure: the torch side is
`dynamo_watch`.
"""

from __future__ import annotations

import re

from pytest_kernelperf.model.call import SHARED, STATIC, CompileContext

_TEXT = re.compile(r"^[^\x00-\x1f]{1,200}$")


def describe(context: CompileContext | None) -> str:
    if context is None:
        return "compile context unknown"
    compiles = f"{context.compiles} compile{'' if context.compiles == 1 else 's'}"
    return f"{context.summary()}{context.why()}; {compiles} ({context.mode} compile context)"


def differs(baseline: CompileContext | None, current: CompileContext | None) -> bool:
    """Whether the two were compiled differently (static against dynamic, or other symbolic dims)."""
    if baseline is None or current is None:
        return False
    return (baseline.shapes, baseline.dynamic) != (current.shapes, current.dynamic)


def context_line(baseline: CompileContext | None, current: CompileContext | None) -> str | None:
    """The regression message's line on the compile context; None where neither run compiled."""
    if current is None and baseline is None:
        return None
    if current is None:
        return (
            f"compile context: the baseline was {baseline.summary() if baseline else ''}; unknown in this run"
        )
    if baseline is None:
        return f"compile context: {describe(current)} (the baseline has none recorded)"
    if differs(baseline, current):
        hint = (
            " The process history changed the generated code, not the code under test: "
            "compile_context=fresh (the default) measures each call in a fresh compile context."
            if current.mode == SHARED
            else ""
        )
        base = "compiled static" if baseline.shapes == STATIC else baseline.summary() + baseline.why()
        return (
            f"compile context differs: {current.summary()} in this run{current.why()}; "
            f"the baseline was {base}.{hint}"
        )
    if baseline.code and current.code and baseline.code != current.code:
        return (
            f"compile context: {current.summary()} as in the baseline, but inductor generated other code "
            f"({baseline.code} -> {current.code}): the code under test, or torch, changed"
        )
    return f"compile context: {current.summary()}, as in the baseline"


def valid_text(value: object) -> bool:
    """A short single-line string, as the items of a stored context must be."""
    return isinstance(value, str) and bool(_TEXT.match(value))
