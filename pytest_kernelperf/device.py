"""Which device a measurement ran on, and the software around it.

Baselines are keyed by the device name (a GPU model, or the CPU model): an A100's baselines never
judge an H200. torch is imported inside functions so that loading the plugin stays cheap.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any


@dataclass(frozen=True)
class DeviceInfo:
    kind: str  # "cuda" or "cpu"
    name: str  # baseline key: "NVIDIA H200", or the CPU model
    index: int | None = None  # CUDA ordinal in this process
    environment: dict[str, str] = field(default_factory=dict)

    @property
    def torch_device(self) -> str:
        return self.kind if self.index is None else f"{self.kind}:{self.index}"


def cuda_usable() -> bool:
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.device_count() > 0)


def default_device() -> str:
    return "cuda" if cuda_usable() else "cpu"


@lru_cache(maxsize=1)
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def fingerprint(kind: str) -> DeviceInfo:
    """Name and environment of the device that `kind` ("cuda" or "cpu") means in this process."""
    import torch

    env: dict[str, str] = {
        "python": platform.python_version(),
        "torch": torch.__version__.split("+")[0],
    }
    triton = _triton_version()
    if triton:
        env["triton"] = triton
    if kind == "cpu":
        env["threads"] = str(torch.get_num_threads())
        return DeviceInfo(kind="cpu", name=cpu_model(), environment=env)
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    env["capability"] = f"{props.major}.{props.minor}"
    if torch.version.cuda:
        env["cuda"] = str(torch.version.cuda)
    driver = nvml_driver_version()
    if driver:
        env["driver"] = driver
    return DeviceInfo(kind="cuda", name=str(props.name), index=index, environment=env)


def _triton_version() -> str | None:
    try:
        import triton
    except Exception:  # triton is optional, and a broken install must not stop timing
        return None
    return str(triton.__version__)


def nvml_handle(index: int) -> Any | None:
    """An NVML handle for the CUDA device `index` of this process, or None without NVML."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetHandleByIndex(_physical_index(index))
    except pynvml.NVMLError:
        return None


def nvml_driver_version() -> str | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
    except pynvml.NVMLError:
        return None
    return version.decode() if isinstance(version, bytes) else str(version)


def _physical_index(index: int) -> int:
    """NVML numbers all GPUs of the host; CUDA only the visible ones."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if not visible:
        return index
    entries = [v.strip() for v in visible.split(",") if v.strip()]
    if index < len(entries) and entries[index].isdigit():
        return int(entries[index])
    return index
