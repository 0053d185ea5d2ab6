"""Hooks other plugins may implement to swap a strategy.

Implement them in a conftest.py or a plugin; the first non-None answer wins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import pytest

    from pytest_kernelperf.measure.memory import MemoryReading, MemoryRequest
    from pytest_kernelperf.measure.timing import Timer
    from pytest_kernelperf.model.device import DeviceInfo
    from pytest_kernelperf.profiling.capture import CallProfile, ProfileRequest
    from pytest_kernelperf.settings import Settings

hookspec = pluggy.HookspecMarker("pytest")


@hookspec(firstresult=True)
def pytest_kernelperf_make_timer(
    config: pytest.Config, settings: Settings, device: DeviceInfo
) -> Timer | None:
    """Return the Timer that measures calls on `device` (see pytest_kernelperf.measure.timing.Timer).

    The built-in implementation returns the backend named by `settings.timer`. A timer must name
    its method in the Metric it returns: baselines are only compared with the same method.
    """


@hookspec(firstresult=True)
def pytest_kernelperf_device_info(config: pytest.Config, kind: str) -> DeviceInfo | None:
    """Return the DeviceInfo (baseline key and environment) for `kind`, "cuda" or "cpu".

    The built-in implementation names the GPU model or CPU model. Return another name to share
    baselines between devices you consider equivalent, or to split devices you do not.
    """


@hookspec(firstresult=True)
def pytest_kernelperf_profile_call(
    config: pytest.Config, profile_request: ProfileRequest
) -> CallProfile | None:
    """Profile one call after its timing; return its kernel inventory and the artefacts written.

    Called with ``--kernelperf-profile``, for a call whose verdict is slower or unreliable (to
    explain it), and on ``--kernelperf-update-baselines`` for the kernel inventory (then
    ``profile_request.folder`` is None: write no files). The built-in implementation runs
    torch.profiler (pytest_kernelperf.profiling.capture.capture); pytest_kernelperf.testing.FakeProfiler is
    a deterministic stand-in for tests.
    """


@hookspec(firstresult=True)
def pytest_kernelperf_peak_memory(
    config: pytest.Config, memory_request: MemoryRequest
) -> MemoryReading | None:
    """Measure the peak device memory of one call beyond what was allocated before it.

    Called once per timed call, after its timing; with ``memory_request.allocations`` (when the peak
    grew beyond ``memory_threshold``) also name the operators that allocated most. Return None where
    there is nothing to measure (a CPU). The built-in implementation reads the CUDA allocator's
    statistics around one call (pytest_kernelperf.measure.memory.peak_memory);
    pytest_kernelperf.testing.FakeMemoryProbe is a deterministic stand-in for tests.
    """
