"""What a regression message says about torch.compile's compile context (pure text)."""

from __future__ import annotations

from pytest_kernelperf.model.call import DYNAMIC, SHARED, STATIC, CompileContext
from pytest_kernelperf.profiling.compile_context import context_line, describe, differs

STATIC_CONTEXT = CompileContext(
    STATIC, compiles=1, kernels=("triton_per_fused_native_layer_norm_0",), code="aaaa1111"
)
DYNAMIC_CONTEXT = CompileContext(
    DYNAMIC,
    compiles=1,
    dynamic=("x: dim 0",),
    seen=("(64, 4096)", "(8192, 4096)"),
    kernels=("triton_red_fused_native_layer_norm_0",),
    code="bbbb2222",
    mode=SHARED,
)


def test_a_dynamic_context_caused_by_earlier_shapes_is_said_plainly() -> None:
    line = context_line(STATIC_CONTEXT, DYNAMIC_CONTEXT)
    assert line is not None
    assert line.startswith(
        "compile context differs: compiled with dynamic shapes (x: dim 0) in this run because the same "
        "function saw shapes (64, 4096) and (8192, 4096) earlier in this process; the baseline was "
        "compiled static."
    )
    assert "compile_context=fresh" in line  # the cure, for a shared context
    assert differs(STATIC_CONTEXT, DYNAMIC_CONTEXT)


def test_same_context_other_code_points_at_the_code() -> None:
    other = CompileContext(STATIC, compiles=1, code="cccc3333")
    assert context_line(STATIC_CONTEXT, other) == (
        "compile context: compiled with static shapes as in the baseline, but inductor generated other "
        "code (aaaa1111 -> cccc3333): the code under test, or torch, changed"
    )
    assert not differs(STATIC_CONTEXT, other)


def test_contexts_unknown_on_either_side() -> None:
    assert context_line(None, None) is None
    assert context_line(None, STATIC_CONTEXT) == (
        "compile context: compiled with static shapes; 1 compile (fresh compile context) "
        "(the baseline has none recorded)"
    )
    assert describe(None) == "compile context unknown"
