"""Sticky CUDA errors: a kernel that faults poisons its process, and nothing after it is trusted.

An illegal memory access (or any error the device reports asynchronously) leaves the CUDA context
unusable: every later CUDA call in the process fails. Without care, the next tests would fail as
"mismatch" or "regression" of their own, and an update would record numbers from a broken process.
FaultGuard wraps each kernel_bench call: when the call raises, it asks the device whether the
context still works (`torch.cuda.synchronize()`); if not, the process is marked poisoned, the
faulting test's error names the kernel, later kernel_bench tests are reported as not measured, and
no baseline is written from this process. No pytest here; torch only once it is already in use.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

ISOLATE_HINT = "run with --kernelperf-isolate to give each kernel_bench test its own process"


class CudaContextPoisoned(RuntimeError):
    """A kernel_bench call left the CUDA context unusable."""


class NotMeasured(RuntimeError):
    """A kernel_bench test not run because an earlier test poisoned the process."""


@dataclass(frozen=True)
class Poison:
    nodeid: str  # the test that faulted
    kernel: str  # the kernel_bench call in flight, or what is known of it
    error: str  # what the device said

    def fault_message(self) -> str:
        return (
            f"CUDA error in kernel {self.kernel} ({self.nodeid}): {self.error}\n"
            "The CUDA context of this process is now unusable (a sticky error such as an illegal "
            "memory access): later kernel_bench tests in this process are not measured, and no "
            f"baseline is written from it. Fix the kernel, or {ISOLATE_HINT}."
        )

    def not_measured_message(self) -> str:
        return (
            f"not measured: CUDA context poisoned by {self.nodeid} (kernel {self.kernel}: "
            f"{_first_line(self.error)}); {ISOLATE_HINT}"
        )

    def refusal(self) -> str:
        return (
            f"the CUDA context of this process was poisoned by {self.nodeid} (kernel {self.kernel}: "
            f"{_first_line(self.error)}), so its measurements are not trusted; fix the kernel, or "
            f"{ISOLATE_HINT}"
        )


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def cuda_probe() -> str | None:
    """The error of an unusable CUDA context in this process, or None when it works.

    Never imports torch nor starts CUDA: a process that has not used CUDA cannot have poisoned it.
    Errors a launch reports at once (a bad argument) leave the context usable and pass this probe;
    what synchronize reports is sticky.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if not torch.cuda.is_initialized():
            return None
        torch.cuda.synchronize()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}".strip()
    return None


def kernel_name(fn: Callable[..., Any], name: str | None) -> str:
    module = getattr(fn, "__module__", None)
    # A callable object has neither name: its class names it (its repr may be anything, even
    # endless: a module that holds itself).
    qualname = (
        getattr(fn, "__qualname__", None)
        or getattr(fn, "__name__", None)
        or f"{type(fn).__qualname__} object"
    )
    label = f"{module}.{qualname}" if module and module != "builtins" else str(qualname)
    return f"{label} (name={name!r})" if name is not None else label


class FaultGuard:
    """Per-process poison state; `around_call` wraps every kernel_bench call."""

    def __init__(self) -> None:
        self.poisoned: Poison | None = None
        self._last_kernel: dict[str, str] = {}

    def refuse_if_poisoned(self) -> None:
        if self.poisoned is not None:
            raise NotMeasured(self.poisoned.not_measured_message())

    def around_call(self, nodeid: str, fn: Callable[..., Any], name: str | None) -> _CallGuard:
        """A context manager for one kernel_bench call of test `nodeid`."""
        self.refuse_if_poisoned()
        kernel = kernel_name(fn, name)
        self._last_kernel[nodeid] = kernel
        return _CallGuard(self, nodeid, kernel)

    def after_test(self, nodeid: str) -> Poison | None:
        """Probe after a kernel_bench test: the Poison when this test newly left the context broken
        (an error that surfaced outside kernel_bench, or not at all yet)."""
        if self.poisoned is not None:
            return None
        error = cuda_probe()  # a global looked up at call time: tests patch it
        if error is None:
            return None
        kernel = self._last_kernel.get(nodeid, "unknown (the error surfaced outside kernel_bench)")
        self.poisoned = Poison(nodeid, kernel, error)
        return self.poisoned


class _CallGuard:
    """Turns a raise from a call that left the CUDA context broken into CudaContextPoisoned."""

    def __init__(self, guard: FaultGuard, nodeid: str, kernel: str) -> None:
        self._guard = guard
        self._nodeid = nodeid
        self._kernel = kernel

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> Literal[False]:
        __tracebackhide__ = True
        if exc is None or isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit)):
            return False
        # Any exception, pytest's Failed included: a mismatch read back from a broken context is
        # the CUDA error, not a mismatch.
        if self._guard.poisoned is not None:
            return False
        error = cuda_probe()  # a global looked up at call time: tests patch it
        if error is None:
            return False
        self._guard.poisoned = Poison(self._nodeid, self._kernel, error)
        raise CudaContextPoisoned(self._guard.poisoned.fault_message()) from exc
