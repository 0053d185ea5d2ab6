"""Roofline figures of a result: GB/s, TFLOP/s, and the fraction of its device's copy bandwidth.

A memory-bound kernel (GELU, softmax, any elementwise op) is as fast as it can be when it moves its
bytes at the device's copy bandwidth; "0.51 ms" says little across GPUs, "98% of copy bandwidth"
says it is done. The peak itself is measured by measure/roofline.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_kernelperf.results.result import BenchResult


@dataclass(frozen=True)
class Peak:
    """The measured copy bandwidth of one device (GB/s, bytes read plus bytes written)."""

    device: str
    gb_per_s: float
    bytes: int  # bytes moved by one copy (read + write)
    method: str
    measured: str  # UTC date of the measurement
    # The device's last-level cache (an H200's 60 MiB L2, a CPU's L3): a call whose bytes fit in it
    # runs from the cache under a hot cache, and "% of memory bandwidth" means nothing for it.
    cache_bytes: int | None = None
    # Load average per core while a CPU copy was timed: a busy machine lowers the peak.
    load_per_core: float | None = None


# A CPU peak measured while other work ran is too low; such a peak is used for its run only.
BUSY_LOAD_PER_CORE = 0.5


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


def busy(peak: Peak) -> bool:
    """Whether the machine was busy while `peak` was measured (its figure is then too low)."""
    return peak.load_per_core is not None and peak.load_per_core > BUSY_LOAD_PER_CORE
