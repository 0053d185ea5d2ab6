"""`--kernelperf-history`: every timed run lands in the history database, with its results."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kernelperf.history.store import HistoryStore

SCRIPTED = """
import pytest
from pytest_kernelperf.testing import ScriptedTimer

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_make_timer(config, settings, device):
    return ScriptedTimer()
"""

MODULE = """
import torch

def kernel(x):
    return x * 2

kernel.fake_ms = 1.0

def test_kernel(kernel_bench):
    kernel_bench(kernel, torch.ones(16), reference=lambda x: x + x)
"""


def test_each_timed_run_is_appended_and_a_check_only_run_is_not(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SCRIPTED)
    pytester.makepyfile(test_kernels=MODULE)
    database = pytester.path / "history.sqlite"
    flags = ("-p", "no:cacheprovider", f"--kernelperf-history={database}")
    pytester.runpytest(*flags, "--kernelperf-update-baselines").assert_outcomes(passed=1)
    pytester.runpytest(*flags, "--kernelperf").assert_outcomes(passed=1)
    pytester.runpytest(*flags).assert_outcomes(passed=1)  # checks only: nothing timed, nothing stored
    with HistoryStore(Path(database), create=False) as store:
        runs = store.runs()
        assert len(runs) == 2
        assert len(store.series()) >= 1
