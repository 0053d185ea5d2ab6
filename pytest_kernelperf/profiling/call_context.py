"""What surrounds one measured call: its inputs, its torch.compile context, its autotuners.

KernelBench opens a CallContext before the call's first run and keeps it open until the call is
judged: it records the tensor arguments, gives torch.compile'd code a fresh compile context (or
watches the shared one), records the Triton autotuners' choices and, with `autotune=baseline`,
pins them to the baseline's once that is known. Inactive (check-only runs) it does nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_kernelperf.model.call import FRESH, CompileContext, TensorInput
from pytest_kernelperf.profiling import inputs
from pytest_kernelperf.profiling.autotune import BASELINE, FREE, AutotuneWatch
from pytest_kernelperf.profiling.dynamo_watch import CompileWatch


@dataclass(frozen=True)
class CallRecord:
    """The context of a measured call, as stored in its baseline entry (None: not recorded)."""

    compile_context: CompileContext | None = None
    autotune: dict[str, str] | None = None
    inputs: tuple[TensorInput, ...] | None = None
    notes: tuple[str, ...] = ()


class CallContext:
    def __init__(
        self,
        fn: Callable[..., Any],
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        *,
        compile_context: str = FRESH,
        autotune: str = FREE,
        active: bool = True,
        reference: Callable[..., Any] | None = None,
    ) -> None:
        self._fn, self._args, self._kwargs = fn, args, kwargs
        self._compile_mode, self._autotune_mode = compile_context, autotune
        self._active, self._reference = active, reference
        self._compile: CompileWatch | None = None
        self._autotune: AutotuneWatch | None = None
        self._inputs: tuple[TensorInput, ...] | None = None

    def __enter__(self) -> CallContext:
        if not self._active:
            return self
        self._inputs = inputs.record(self._args, self._kwargs, self._fn)
        self._compile = CompileWatch(self._fn, self._inputs, self._compile_mode, exclude=self._reference)
        autotune = AutotuneWatch(self._fn)
        self._autotune = autotune.__enter__() if autotune.tuners else None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._autotune is not None:
            self._autotune.__exit__(*exc)

    def pin(self, configs: Mapping[str, str] | None) -> None:
        """With autotune=baseline, run each autotuner with the baseline's recorded config."""
        if self._autotune is not None and self._autotune_mode == BASELINE and configs:
            self._autotune.pin(configs)

    def finish(self) -> CallRecord:
        """The record, after the timing's warm-up (later calls must not compile anything)."""
        if not self._active or self._compile is None:
            return CallRecord()
        context = self._compile.finish()
        notes = list(self._compile.notes)
        chosen = None
        if self._autotune is not None:
            notes += self._autotune.notes
            chosen = dict(sorted(self._autotune.chosen.items())) or None
        return CallRecord(
            compile_context=context, autotune=chosen, inputs=self._inputs or None, notes=tuple(notes)
        )
