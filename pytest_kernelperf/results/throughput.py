"""Roofline figures of a result: GB/s, TFLOP/s, and the fraction of its device's copy bandwidth.

A memory-bound kernel (GELU, softmax, any elementwise op) is as fast as it can be when it moves its
bytes at the device's copy bandwidth; "0.51 ms" says little across GPUs, "98% of copy bandwidth"
says it is done. The peak itself is measured by measure/roofline.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_kernelperf.model.device import Peak
from pytest_kernelperf.model.result import BenchResult


@dataclass(frozen=True)
class Figures:
    gb_per_s: float | None
    tflop_per_s: float | None
    peak_fraction: float | None  # gb_per_s over the device's copy bandwidth
    bytes_inferred: bool
    cache_resident: bool = False  # the call's bytes fit in the device's cache: no % of peak


def figures(result: BenchResult, peak: Peak | None) -> Figures:
    gbps, tflops = result.throughput
    resident = (
        peak is not None
        and peak.cache_bytes is not None
        and result.bytes is not None
        and result.cache != "cold"
        and result.bytes <= peak.cache_bytes
    )
    fraction = None
    if gbps is not None and peak is not None and peak.gb_per_s > 0 and not resident:
        fraction = gbps / peak.gb_per_s
    return Figures(gbps, tflops, fraction, result.bytes_inferred and result.bytes is not None, resident)
