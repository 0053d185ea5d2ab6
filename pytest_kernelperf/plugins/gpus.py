"""GPUs as pytest hooks: pin each pytest-xdist worker to its GPU, lock a GPU while timing on it,
count what each process measured where, and fail kernel_bench tests of a GPU job that has no GPU.

The mechanics are in measure/gpu.py; this module decides when they apply and what the summary says.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from pytest_kernelperf.measure import gpu
from pytest_kernelperf.measure.timing import Timer
from pytest_kernelperf.model.result import BenchResult
from pytest_kernelperf.plugins.items import uses_kernel_bench
from pytest_kernelperf.settings import Settings


def missing_gpu() -> str | None:
    """Why no CUDA device is usable here, or None when one is."""
    try:
        from pytest_kernelperf.measure.device import cuda_usable

        if cuda_usable():
            return None
        why = "torch.cuda.is_available() is False"
    except ImportError as exc:
        why = f"PyTorch cannot be imported: {exc}"
    except Exception as exc:  # a broken driver raises from CUDA's initialisation
        why = f"CUDA failed to start: {type(exc).__name__}: {exc}"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return (
        f"--kernelperf-require-gpu is set but no CUDA device is usable here ({why}; "
        f"CUDA_VISIBLE_DEVICES={'<unset>' if visible is None else repr(visible)}): a GPU job that "
        "lost its GPU must not pass"
    )


class RequireGpu:
    """--kernelperf-require-gpu: without a usable CUDA device, kernel_bench tests fail."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if uses_kernel_bench(item):
            problem = missing_gpu()
            if problem:
                pytest.fail(problem, pytrace=False)


class GpuPlacement:
    """Which GPU this process measures on, the per-GPU lock, and the GPU lines of the summary."""

    def __init__(self, settings: Settings, runs_kernels_here: bool) -> None:
        self.settings = settings
        self.runs_kernels_here = runs_kernels_here  # False in the parent of isolated tests
        self.usage = gpu.GpuUsage()
        self.pinned: str | None = None  # the GPU this process (or its isolated children) pinned
        self.other_processes: list[dict[str, Any]] = []  # GPU lines of xdist workers
        self.notes: list[str] = []

    def wrap_timer(self, timer: Timer) -> Timer:
        return gpu.LockedTimer(timer, self.settings.artifacts, self.usage)

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        worker = gpu.worker_id()
        if worker is None or not self.runs_kernels_here:
            return
        if not any(uses_kernel_bench(item) for item in session.items):
            return
        try:
            choice = gpu.pin(worker)
        except ImportError:
            return  # no torch: kernel_bench says so in each test
        except Exception as exc:  # CUDA failing to start must not stop the session here
            self.notes.append(f"could not pin {worker} to a GPU: {type(exc).__name__}: {exc}")
            return
        self.pinned = choice.describe() if choice is not None else None

    def summary(self, results: list[BenchResult]) -> list[dict[str, Any]]:
        """This process's GPU line (what it measured on which device), as sent to the controller."""
        names = {r.device_index: r.device for r in results if r.device_index is not None}
        devices = [
            {
                "index": index,
                "name": names.get(index, "?"),
                "measurements": count,
                "lock_waits": self.usage.lock_waits.get(index, 0),
                "lock_wait_s": round(self.usage.lock_wait_s.get(index, 0.0), 3),
            }
            for index, count in sorted(self.usage.measurements.items())
        ]
        if not devices and self.pinned is None:
            return []
        return [{"process": gpu.worker_id() or "main", "pinned": self.pinned, "devices": devices}]

    def absorb(self, lines: list[dict[str, Any]], isolated: bool) -> None:
        if not isolated:
            self.other_processes.extend(lines)
            return
        for line in lines:  # an isolated child measured for this process: count it as ours
            for device in line.get("devices", []):
                index = int(device["index"])
                self.usage.measurements[index] += int(device["measurements"])
                self.usage.lock_waits[index] += int(device["lock_waits"])
                waited = float(device["lock_wait_s"])
                self.usage.lock_wait_s[index] = self.usage.lock_wait_s.get(index, 0.0) + waited
            if self.pinned is None and line.get("pinned"):
                self.pinned = str(line["pinned"])

    def lines(self, results: list[BenchResult]) -> list[str]:
        processes = sorted([*self.other_processes, *self.summary(results)], key=_process_order)
        return [_gpu_line(line) for line in processes]


def _gpu_line(line: dict[str, Any]) -> str:
    text = str(line.get("process", "?"))
    if line.get("pinned"):
        text += f" pinned to {line['pinned']}"
    parts = []
    for device in line.get("devices", []):
        part = f"{device['measurements']} measured on cuda:{device['index']} ({device['name']})"
        if device.get("lock_waits"):
            part += f", waited {device['lock_waits']}x for its lock ({device['lock_wait_s']:.2f} s)"
        parts.append(part)
    return text + (": " + "; ".join(parts) if parts else ": nothing measured")


def _process_order(line: dict[str, Any]) -> tuple[int, str]:
    name = str(line.get("process", ""))
    return (int(name[2:]), name) if name.startswith("gw") and name[2:].isdigit() else (-1, name)
