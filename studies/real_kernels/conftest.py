"""Study suite set-up: Triton's interpreter without a GPU, test order and copies for the studies.

Environment variables (all optional):

- `KERNELPERF_STUDY_ORDER=reverse` runs the collected tests in reverse order;
  `KERNELPERF_STUDY_ORDER=shuffle:SEED` in an order shuffled deterministically by the integer SEED.
  Every pytest-xdist worker computes the same order, as xdist requires.
- `KERNELPERF_STUDY_REPEAT=K` (K >= 1) runs K copies of every test (ids end in `copy0`...`copyK-1`),
  each its own baseline entry: a longer suite for throughput studies.
- `KERNELPERF_STUDY_CPU_COMPILE=1` runs the torch.compile tests on a machine without CUDA too (they
  are skipped there by default: a cold Inductor compile on two CPU cores takes about 40 s).
"""

from __future__ import annotations

import os
import random

import pytest
import torch

# Triton reads TRITON_INTERPRET when it is imported: set it before any test module imports Triton,
# and only where there is no CUDA device (on a GPU, the kernels are compiled and timed).
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

ORDER_VARIABLE = "KERNELPERF_STUDY_ORDER"
REPEAT_VARIABLE = "KERNELPERF_STUDY_REPEAT"


def study_copies() -> int:
    raw = os.environ.get(REPEAT_VARIABLE, "").strip()
    if not raw:
        return 1
    try:
        copies = int(raw)
    except ValueError:
        raise pytest.UsageError(f"{REPEAT_VARIABLE}={raw!r}: expected a whole number >= 1") from None
    if copies < 1:
        raise pytest.UsageError(f"{REPEAT_VARIABLE}={raw!r}: expected a whole number >= 1")
    return copies


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    copies = study_copies()
    if copies > 1 and "study_copy" in metafunc.fixturenames:
        metafunc.parametrize("study_copy", range(copies), indirect=True, ids=lambda i: f"copy{i}")


@pytest.fixture(autouse=True)
def study_copy(request: pytest.FixtureRequest) -> int:
    """Which copy of the test this is under KERNELPERF_STUDY_REPEAT (0 otherwise)."""
    return int(getattr(request, "param", 0))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    order = os.environ.get(ORDER_VARIABLE, "").strip()
    if not order or order == "forward":
        return
    if order == "reverse":
        items.reverse()
        return
    kind, _, seed = order.partition(":")
    if kind == "shuffle":
        try:
            rng = random.Random(int(seed))
        except ValueError:
            raise pytest.UsageError(f"{ORDER_VARIABLE}={order!r}: expected shuffle:<integer seed>") from None
        items.sort(key=lambda item: item.nodeid)
        rng.shuffle(items)
        return
    raise pytest.UsageError(f"{ORDER_VARIABLE}={order!r}: expected forward, reverse or shuffle:<seed>")


def pytest_report_header(config: pytest.Config) -> str:
    order = os.environ.get(ORDER_VARIABLE, "") or "forward"
    return f"kernelperf study: order {order}, copies {study_copies()}"
