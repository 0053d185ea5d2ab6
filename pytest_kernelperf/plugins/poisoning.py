"""Sticky CUDA errors as pytest hooks: the test that poisoned the process fails, and later
kernel_bench tests of the process fail as not measured (the mechanics are in measure/faults.py)."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from pytest_kernelperf.measure.faults import FaultGuard
from pytest_kernelperf.plugins.items import uses_kernel_bench


class PoisonWatch:
    def __init__(self, faults: FaultGuard) -> None:
        self.faults = faults

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if uses_kernel_bench(item) and self.faults.poisoned is not None:
            pytest.fail(self.faults.poisoned.not_measured_message(), pytrace=False)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "call" and uses_kernel_bench(item):
            poison = self.faults.after_test(item.nodeid)
            if poison is not None:
                if report.passed:
                    report.outcome = "failed"
                    report.longrepr = poison.fault_message()
                else:
                    report.sections.append(("kernelperf: CUDA context poisoned", poison.fault_message()))
        return report
