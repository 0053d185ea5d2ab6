"""torch.compile's compile context on CPU: a module-level compiled function that saw another shape
earlier in the process is recompiled with dynamic shapes (automatic dynamic); `fresh` measures each
call as a new process would, `shared` records what the process really ran."""

from __future__ import annotations

import pytest
import torch

from pytest_kernelperf.model.call import DYNAMIC, FRESH, SHARED, STATIC, CompileContext
from pytest_kernelperf.profiling import inputs
from pytest_kernelperf.profiling.dynamo_watch import CompileWatch, compiled_codes, fresh_context

pytestmark = pytest.mark.slow


def rms(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


compiled = torch.compile(rms)


def calls_compiled(x: torch.Tensor) -> torch.Tensor:
    return compiled(x) + 0  # a plain function calling a module-level compiled one


def measure(fn: object, x: torch.Tensor, mode: str) -> CompileContext:
    watch = CompileWatch(fn, inputs.record((x,), {}, fn), mode)  # type: ignore[arg-type]
    fn(x)  # type: ignore[operator]
    fn(x)  # type: ignore[operator]
    context = watch.finish()
    assert context is not None, watch.notes
    return context


A, B = torch.randn(8, 64), torch.randn(32, 64)


def test_compiled_callables_are_found_directly_and_through_a_plain_function() -> None:
    code = rms.__code__
    assert compiled_codes(compiled) == [code]
    assert compiled_codes(calls_compiled) == [code]
    assert compiled_codes(rms) == []


def test_shared_context_turns_dynamic_and_fresh_matches_the_shape_alone() -> None:
    fresh_context()
    alone = measure(compiled, B, SHARED)  # B first in a clean process
    assert alone.shapes == STATIC and alone.compiles == 1 and alone.kernels

    fresh_context()
    measure(compiled, A, SHARED)
    shared = measure(compiled, B, SHARED)
    assert shared.shapes == DYNAMIC
    assert shared.dynamic == ("x: dim 0",)
    assert shared.seen == ("(8, 64)",)
    assert "size mismatch at index 0" in (shared.reason or "")
    assert shared.code != alone.code  # other generated code: the history changed it
    again = measure(compiled, A, SHARED)  # served by the dynamic graph: nothing compiles
    assert (again.shapes, again.compiles, again.dynamic) == (DYNAMIC, 0, ("x: dim 0",))

    first = measure(calls_compiled, A, FRESH)
    second = measure(calls_compiled, B, FRESH)
    assert (first.shapes, second.shapes) == (STATIC, STATIC)
    assert second.compiles == 1
    assert second.code == alone.code and second.kernels == alone.kernels


def test_a_call_without_compiled_code_has_no_compile_context() -> None:
    watch = CompileWatch(rms, (), FRESH)
    rms(A)
    assert watch.finish() is None
