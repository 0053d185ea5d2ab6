"""What the plugins ask of a collected test."""

from __future__ import annotations

import pytest

KERNEL_BENCH = "kernel_bench"


def uses_kernel_bench(item: pytest.Item) -> bool:
    return KERNEL_BENCH in getattr(item, "fixturenames", ())
