"""GPU health around a measurement, read through NVML (nvidia-ml-py, optional).

Read around every round: a round the GPU throttled in is measured again (measure/timing.py), and a
measurement that keeps throttled rounds gets the verdict "unreliable" unless throttling cannot explain
the change (verdict/judge.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_kernelperf.measure.device import nvml_handle
from pytest_kernelperf.model.result import POWER_CAP

# Clock-event reasons that mean the SM clock was held down. Idle, application-clock settings,
# sync boost and display clocks are benign and left out.
_THROTTLING = {
    0x4: POWER_CAP,
    0x8: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
}


@dataclass(frozen=True)
class HealthReading:
    sm_clock_mhz: int
    temperature_c: int
    throttle_reasons: tuple[str, ...]


@dataclass(frozen=True)
class Health:
    """Readings before the first and after the last round kept; throttling seen in any kept round."""

    start: HealthReading
    end: HealthReading
    kept_reasons: tuple[str, ...] = ()  # throttle reasons of kept rounds between start and end
    throttled_rounds: int = 0  # kept rounds with a throttle reason
    lowest_clock_mhz: int | None = None
    # The SM clock read right after each round kept, while the clock still holds the load's level.
    round_clocks_mhz: tuple[int, ...] = ()

    @property
    def clock_mhz(self) -> int:
        """The measurement's clock: the median of the readings after its rounds (the end reading
        where there are none)."""
        clocks = sorted(self.round_clocks_mhz) or [self.end.sm_clock_mhz]
        return clocks[len(clocks) // 2]

    @property
    def throttled(self) -> tuple[str, ...]:
        return tuple(
            dict.fromkeys(self.start.throttle_reasons + self.end.throttle_reasons + self.kept_reasons)
        )

    @property
    def clock_drop(self) -> float | None:
        """How far the SM clock fell below the highest reading, as a fraction (None: no drop seen)."""
        clocks = [self.start.sm_clock_mhz, self.end.sm_clock_mhz]
        if self.lowest_clock_mhz is not None:
            clocks.append(self.lowest_clock_mhz)
        top = max(clocks)
        return (top - min(clocks)) / top if top > 0 and min(clocks) < top else None

    def describe(self) -> str:
        return (
            f"SM clock {self.start.sm_clock_mhz}->{self.end.sm_clock_mhz} MHz, "
            f"{self.start.temperature_c}->{self.end.temperature_c} C"
            + (f", lowest {self.lowest_clock_mhz} MHz" if self.clock_drop else "")
            + (f", throttled: {', '.join(self.throttled)}" if self.throttled else "")
        )


def combine(rounds: list[Health]) -> Health:
    """The health of a measurement from the readings around each of its rounds."""
    throttled = [h for h in rounds if h.throttled]
    return Health(
        start=rounds[0].start,
        end=rounds[-1].end,
        kept_reasons=tuple(dict.fromkeys(r for h in throttled for r in h.throttled)),
        throttled_rounds=sum(h.throttled_rounds or 1 for h in throttled),
        lowest_clock_mhz=min(min(h.start.sm_clock_mhz, h.end.sm_clock_mhz) for h in rounds),
        round_clocks_mhz=tuple(c for h in rounds for c in (h.round_clocks_mhz or (h.end.sm_clock_mhz,))),
    )


def read(index: int | None) -> HealthReading | None:
    """One reading of the CUDA device `index`, or None where NVML cannot answer."""
    if index is None:
        return None
    handle = nvml_handle(index)
    if handle is None:
        return None
    import pynvml

    try:
        clock = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
        temperature = pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)
        reasons = pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle)
    except pynvml.NVMLError:
        return None
    names = tuple(name for bit, name in _THROTTLING.items() if reasons & bit)
    return HealthReading(sm_clock_mhz=int(clock), temperature_c=int(temperature), throttle_reasons=names)
