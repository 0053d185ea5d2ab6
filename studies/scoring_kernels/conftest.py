"""Scoring suite set-up: the same environment variables as studies/real_kernels, with its code.

The order and copy logic (KERNELPERF_STUDY_ORDER, KERNELPERF_STUDY_REPEAT) is imported from
studies/real_kernels/conftest.py, not copied; see that file. KERNELPERF_STUDY_CPU_COMPILE=1 runs the
torch.compile test on a machine without CUDA too. Importing that conftest also sets TRITON_INTERPRET
where there is no CUDA device, before any test module imports Triton; it is set here as well, so that
this file says so itself.
"""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from studies.real_kernels import conftest as real_kernels_conftest
from studies.real_kernels.conftest import (
    ORDER_VARIABLE,
    pytest_generate_tests,
    study_copies,
    study_copy,
)

__all__ = ["pytest_generate_tests", "study_copy"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The hook sees every collected item, whichever conftest defines it. When both suites are
    # collected in one session, real_kernels' conftest already orders them all: ordering them a
    # second time here would undo a reverse.
    if config.pluginmanager.is_registered(real_kernels_conftest):
        return
    real_kernels_conftest.pytest_collection_modifyitems(config, items)


def pytest_report_header(config: pytest.Config) -> str | None:
    if config.pluginmanager.is_registered(real_kernels_conftest):
        return None  # real_kernels' header says the same
    order = os.environ.get(ORDER_VARIABLE, "") or "forward"
    return f"kernelperf scoring suite: order {order}, copies {study_copies()}"
