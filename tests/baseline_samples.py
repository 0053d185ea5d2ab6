"""Realistic baseline entries and their file text, for the fault-injection tests."""

from __future__ import annotations

from pytest_kernelperf.baselines.schema import as_stored
from pytest_kernelperf.baselines.yaml_io import dump
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey, MetricRecord
from pytest_kernelperf.model.call import KernelRecord

H200 = "NVIDIA H200"
CPU = "AMD EPYC 9654 96-Core Processor"
ENVIRONMENT = {"python": "3.11.7", "torch": "2.13.0", "triton": "3.6.0", "cuda": "13.0"}


def metric(method: str, median_ms: float, n: int = 57) -> MetricRecord:
    return MetricRecord(
        method=method,
        median_ms=median_ms,
        ci_ms=(median_ms * 0.995, median_ms * 1.004),
        n=n,
        quantiles_ms=tuple(median_ms * (0.97 + 0.01 * i) for i in range(7)),
    )


def sample_entries() -> dict[EntryKey, BaselineEntry]:
    """Entries as a real update writes them: GPU and CPU, hot and cold, a kernel inventory, odd test
    ids, as stored."""
    recorded = "2026-11-30T12:00:00Z"
    entries = {
        EntryKey("test_gelu[triton]", H200, "hot"): BaselineEntry(
            metric("cupti", 0.5081234),
            recorded,
            ENVIRONMENT,
            metric("cuda-event", 0.5213),
            kernels=(
                KernelRecord("triton_gelu_kernel", launches=1, share=0.97, ms=0.4928, code="3f2a9c01b7de"),
                KernelRecord("Memset (Device)", launches=1, share=0.03, ms=0.0151),
            ),
        ),
        EntryKey("test_gelu[triton]", H200, "cold"): BaselineEntry(
            metric("cupti", 0.5312), recorded, ENVIRONMENT, metric("cuda-event", 0.5499)
        ),
        EntryKey("test_gelu[manual]", CPU, "hot"): BaselineEntry(
            metric("wall-clock", 4.87, n=12), recorded, {"torch": "2.13.0", "threads": "2"}
        ),
        EntryKey("test_odd[a/../b:*é]::fast", H200, "hot"): BaselineEntry(
            metric("cupti", 1.0e-3), recorded, ENVIRONMENT, metric("cuda-event", 0.0123)
        ),
    }
    return {key: as_stored(entry) for key, entry in entries.items()}


def sample_text() -> str:
    return dump(sample_entries())
