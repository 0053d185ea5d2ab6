"""Which device a measurement ran on, and the software around it.

Baselines are keyed by the device name (a GPU model, or the CPU model): an A100's baselines never
judge an H200. torch is imported inside functions so that loading the plugin stays cheap.
"""

from __future__ import annotations

import os
import platform
from functools import cache, lru_cache
from typing import Any

from pytest_kernelperf.model.device import CARD_KEY, DeviceInfo


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
    uuid = getattr(props, "uuid", None)
    if uuid is not None:
        # Which card: baselines are keyed by the model, and a baseline from another card of that
        # model is judged with the card-to-card part of the noise.
        env[CARD_KEY] = str(uuid)
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


@cache
def nvml_handle(index: int) -> Any | None:
    """An NVML handle for the CUDA device `index` of this process, or None without NVML.

    Cached: health is read before and after every measurement, and a handle lives as long as the
    process."""
    try:
        import pynvml
    except ImportError:
        return None
    entry = physical_id(index)
    try:
        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetHandleByIndex(int(entry) if entry.isdigit() else index)
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


def physical_id(index: int, visible: str | None = None) -> str:
    """How the host names CUDA device `index` of this process: its entry in CUDA_VISIBLE_DEVICES
    (a number, a UUID or a MIG id), or the index itself where the variable is unset. NVML numbers
    all GPUs of the host; CUDA only the visible ones."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") if visible is None else visible
    if not visible or not visible.strip():
        return str(index)
    entries = [entry.strip() for entry in visible.split(",") if entry.strip()]
    return entries[index] if index < len(entries) else str(index)
