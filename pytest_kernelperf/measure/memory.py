"""The peak device memory of one call beyond what was allocated before it (its inputs included).

Around one dedicated call, made after the call's timing (so that its compilation, autotuning and
the libraries' lazily made workspaces are behind it): read `torch.cuda.memory_allocated`, reset
the device's peak statistics, run the call, synchronize, and read `torch.cuda.max_memory_allocated`.
Peak beyond the inputs = max - before: every tensor the call allocates, the output and the
temporaries freed before it returns alike, whether the caching allocator reused a cached block or
asked the driver for a new one (allocated bytes, not reserved ones). On a CPU there is nothing to
measure: None, not 0.

Resetting the peak statistics is visible to the test's own code: a test that reads
`torch.cuda.max_memory_allocated` itself reads the peak since kernel_bench's probe.

The probe is the `pytest_kernelperf_peak_memory` hook (hookspec.py), so that tests on a CPU state
a call's memory with `pytest_kernelperf.testing.FakeMemoryProbe`. torch is imported inside functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.verdict.memory import format_bytes

# Operators listed in a memory failure: the ones that allocated most in one call.
LISTED_ALLOCATIONS = 5


@dataclass(frozen=True)
class MemoryRequest:
    """One call to measure: the closure making it, where it runs, and the user's function."""

    call: Callable[[], object]
    device: DeviceInfo
    fn: Callable[..., object] | None = None
    label: str = ""
    # Also name the operators that allocated most (one more call, under torch.profiler): asked for
    # when the peak grew beyond its threshold, to say where the memory goes.
    allocations: bool = False
    # Run before each call the probe makes, outside what it measures: puts an in-place kernel's
    # inputs back (restore_inputs=True). A probe that makes no call must not run it either.
    prepare: Callable[[], object] | None = None


@dataclass(frozen=True)
class MemoryReading:
    peak_bytes: int  # allocated at the call's peak beyond what was allocated before it
    allocations: tuple[str, ...] = ()  # "aten::empty 64 MiB", largest first


def peak_memory(request: MemoryRequest) -> MemoryReading | None:
    """The built-in probe: CUDA allocator statistics around one call; None on a CPU."""
    if request.device.kind != "cuda":
        return None
    import torch

    device = torch.device("cuda", request.device.index or 0)
    if request.prepare is not None:
        request.prepare()
    torch.cuda.synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    output = request.call()
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device)
    del output
    allocations: tuple[str, ...] = ()
    if request.allocations:
        if request.prepare is not None:
            request.prepare()
        allocations = largest_allocations(request.call, cuda=True)
    return MemoryReading(max(0, int(peak) - int(before)), allocations)


def largest_allocations(call: Callable[[], object], *, cuda: bool) -> tuple[str, ...]:
    """The operators that allocated most in one call, with their own net allocation (what they
    allocated less what they freed themselves), from torch.profiler with profile_memory=True:
    device memory on CUDA, host memory otherwise."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from pytest_kernelperf.measure.timing import one_cycle_profiler_warning_silenced

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    sync: Callable[[], None] = torch.cuda.synchronize if cuda else (lambda: None)
    sync()
    with one_cycle_profiler_warning_silenced(), profile(activities=activities, profile_memory=True) as prof:
        output = call()
        sync()
    del output
    return allocation_lines(prof.key_averages(), cuda=cuda)


def allocation_lines(
    averages: Sequence[Any], *, cuda: bool, count: int = LISTED_ALLOCATIONS
) -> tuple[str, ...]:
    """ "aten::empty 64 MiB" for the operators whose own net allocation is largest (positive only)."""
    names = ("self_device_memory_usage", "self_cuda_memory_usage") if cuda else ("self_cpu_memory_usage",)
    sizes: list[tuple[int, str]] = []
    for average in averages:
        size = next((getattr(average, name) for name in names if getattr(average, name, None) is not None), 0)
        if isinstance(size, (int, float)) and size > 0:
            sizes.append((int(size), str(average.key)))
    sizes.sort(key=lambda item: (-item[0], item[1]))
    return tuple(f"{name} {format_bytes(size)}" for size, name in sizes[:count])
