"""The device a measurement ran on, and its measured copy bandwidth.

Baselines are keyed by the device name (a GPU model, or the CPU model): an A100's baselines never
judge an H200. Finding the device is measure/device.py's job, measuring its peak measure/roofline.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The environment key of a GPU's identity (its UUID).
CARD_KEY = "gpu_uuid"

# A CPU peak measured while other work ran is too low; such a peak is used for its run only.
BUSY_LOAD_PER_CORE = 0.5


@dataclass(frozen=True)
class DeviceInfo:
    kind: str  # "cuda" or "cpu"
    name: str  # baseline key: "NVIDIA H200", or the CPU model
    index: int | None = None  # CUDA ordinal in this process
    environment: dict[str, str] = field(default_factory=dict)


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

    @property
    def busy(self) -> bool:
        """Whether the machine was busy while this peak was measured (its figure is then too low)."""
        return self.load_per_core is not None and self.load_per_core > BUSY_LOAD_PER_CORE
