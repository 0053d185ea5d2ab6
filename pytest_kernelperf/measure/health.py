"""GPU health around a measurement, read through NVML (nvidia-ml-py, optional).

A kernel timed while the GPU throttles is not slower code; such a measurement gets the verdict
"unreliable" with the reason instead of "slower".
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_kernelperf.measure.device import nvml_handle

# Clock-event reasons that mean the SM clock was held down. Idle, application-clock settings,
# sync boost and display clocks are benign and left out.
_THROTTLING = {
    0x4: "software power cap",
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
    start: HealthReading
    end: HealthReading

    @property
    def throttled(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.start.throttle_reasons + self.end.throttle_reasons))

    def describe(self) -> str:
        return (
            f"SM clock {self.start.sm_clock_mhz}->{self.end.sm_clock_mhz} MHz, "
            f"{self.start.temperature_c}->{self.end.temperature_c} C"
            + (f", throttled: {', '.join(self.throttled)}" if self.throttled else "")
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
