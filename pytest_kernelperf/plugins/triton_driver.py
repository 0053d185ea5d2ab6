"""A Triton kernel on a machine without a GPU driver: a skip that says what to do, not Triton's raw error.

Triton picks, when `triton.jit` decorates a kernel, between compiling it for a GPU and running it in
its CPU interpreter (TRITON_INTERPRET=1). A kernel decorated without the interpreter on a machine with
no GPU driver fails at its first launch with "0 active drivers ([]). There should only be one.",
which says nothing of the cause or the remedy. Raised through a kernel_bench call, that error skips
the test, naming the kernel and how to check it on a CPU: the kernel never ran, so no verdict on it
is possible here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager

import pytest

NO_DRIVER = "0 active drivers"  # triton/runtime/driver.py


@contextlib.contextmanager
def skipped_without_driver(inner: AbstractContextManager[None], kernel: str) -> Iterator[None]:
    """`inner` (the call's other guard), with Triton's "no driver" error turned into a skip."""
    try:
        with inner:
            yield
    except RuntimeError as exc:
        if NO_DRIVER not in str(exc):
            raise
        pytest.skip(
            f"{kernel}: Triton found no GPU driver ({exc}). On a machine without a GPU, Triton runs a "
            "kernel only in its CPU interpreter, chosen when the kernel is decorated: set "
            "TRITON_INTERPRET=1 before Triton is imported (e.g. os.environ.setdefault in conftest.py "
            "when torch.cuda.is_available() is False); kernel_bench then checks it, untimed"
        )
