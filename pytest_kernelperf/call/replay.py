"""The child process's side of `--kernelperf-ncu`: one call replayed for Nsight Compute.

The parent (plugins/ncu.py) runs the test alone in a child under ncu, naming the call in
KERNELPERF_NCU_CALL (JSON: its name= and the autotuner choices it was timed with). The child's
fixture is a `Replay` instead of a KernelBench: the named call gets its first call (compiling, in
a fresh compile context as when timed), its autotuners pinned to the parent's choices, a few
warm-up calls, then exactly one call inside the NVTX range that ncu profiles; every other call of
the test returns at once without running. Nothing is timed, judged or recorded here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytest_kernelperf.call import spec as call_arguments
from pytest_kernelperf.correctness import restore, snapshot
from pytest_kernelperf.model.result import BenchResult, Verdict
from pytest_kernelperf.profiling.call_context import CallContext
from pytest_kernelperf.profiling.ncu import RANGE, nvtx_range, synchronize

CALL_VARIABLE = "KERNELPERF_NCU_CALL"
WARMUP_CALLS = 3  # after the first: caches, allocator and launch paths settled, as in the timed rounds
REPLAYED = "replayed once under Nsight Compute"
SKIPPED = "not run: another call of this test is replayed under Nsight Compute"


@dataclass(frozen=True)
class Target:
    """The call to replay: its name= (None for an unnamed call), and its autotuner choices."""

    name: str | None
    autotune: dict[str, str] | None = None

    def encode(self) -> str:
        return json.dumps({"name": self.name, "autotune": self.autotune})


def target() -> Target | None:
    """The call this process replays, or None outside a replay child (or with a damaged value)."""
    text = os.environ.get(CALL_VARIABLE)
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    name, autotune = data.get("name"), data.get("autotune")
    valid = isinstance(autotune, dict) and all(isinstance(v, str) for v in autotune.values())
    return Target(name if isinstance(name, str) else None, autotune if valid else None)


class Replay:
    """Stands in for KernelBench in a replay child: the same call signature, `.check` and `.device`."""

    def __init__(
        self, target: Target, *, nodeid: str, device: str, compile_context: str, autotune: str
    ) -> None:
        self.target = target
        self.nodeid = nodeid
        self.device = device
        self._modes = (compile_context, autotune)

    def __call__(
        self,
        fn: Callable[..., Any],
        /,
        *args: Any,
        name: str | None = None,
        restore_inputs: bool = False,
        fn_kwargs: dict[str, Any] | None = None,
        reference: Any = None,
        rtol: Any = None,
        atol: Any = None,
        bytes: Any = None,
        flops: Any = None,
        max_ratio: Any = None,
        **kwargs: Any,
    ) -> BenchResult:
        if name != self.target.name:
            return self._result(name, SKIPPED)
        keywords = call_arguments.fn_keywords(kwargs, fn_kwargs)
        saved = snapshot((tuple(args), keywords)) if restore_inputs else None

        def call() -> object:
            if saved is not None:
                restore((tuple(args), keywords), saved)
            return fn(*args, **keywords)

        compile_context, autotune = self._modes
        with CallContext(fn, args, keywords, compile_context=compile_context, autotune=autotune) as context:
            call()  # compiles and autotunes, as the timed call's first call did
            context.pin(self.target.autotune)
            for _ in range(WARMUP_CALLS):
                call()
            if saved is not None:
                restore((tuple(args), keywords), saved)
            synchronize()
            with nvtx_range(RANGE):
                fn(*args, **keywords)
                synchronize()
        return self._result(name, REPLAYED)

    def check(
        self, fn: Callable[..., Any], /, *args: Any, name: str | None = None, **kwargs: Any
    ) -> BenchResult:
        return self._result(name, SKIPPED)

    def _result(self, name: str | None, note: str) -> BenchResult:
        return BenchResult(self.nodeid, name, self.device, Verdict.CHECKED, notes=(note,))
