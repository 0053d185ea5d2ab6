"""Several GPUs, several workers: which GPU a pytest-xdist worker measures on, and a lock per GPU.

Pinning: worker `gwN` of pytest-xdist uses CUDA device `N % count`, where `count` is the number of
devices this process sees, so CUDA_VISIBLE_DEVICES is respected (CUDA numbers only the visible
ones, and the physical GPU is named from that variable). It is applied with torch.cuda.set_device
before the worker runs its first test, and only in workers that will use kernel_bench.

Locking: two processes timing on one GPU at once disturb each other's numbers. Every measurement
on a CUDA device holds an exclusive lock on `<artefacts folder>/locks/gpu-<GPU>.lock` (fcntl.flock,
released by the kernel even when the process is killed), named after the GPU's UUID where torch
knows it, so that processes with different CUDA_VISIBLE_DEVICES still agree. With one worker per
GPU the lock is never contended; with more workers than GPUs, workers sharing a GPU take turns.
The lock covers the timing only: a test's own setup and its first (checked) call run outside it,
and may overlap another worker's timing on the same GPU; `-n <number of GPUs>` avoids even that.
torch is imported inside functions.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pytest_kernelperf.ids import file_part
from pytest_kernelperf.measure.device import physical_id
from pytest_kernelperf.measure.timing import SamplingPlan, Target, Timer, Timing, TimingError

WORKER_VARIABLE = "PYTEST_XDIST_WORKER"  # set by pytest-xdist in each worker, inherited by children
LOCK_TIMEOUT_S = 1800.0
_WORKER = re.compile(r"^gw(?P<number>[0-9]+)$")


def worker_id() -> str | None:
    """The pytest-xdist worker this process is (or was started by), e.g. "gw3": it picks the GPU.
    Whether this process writes files is its role's question (plugins/role.py), not this one's."""
    return os.environ.get(WORKER_VARIABLE) or None


def choose(worker: str | None, count: int) -> int | None:
    """The CUDA device of worker `gwN` among `count` visible devices; None outside xdist."""
    if worker is None or count < 1:
        return None
    match = _WORKER.match(worker)
    return int(match["number"]) % count if match else None


@dataclass(frozen=True)
class GpuChoice:
    """The GPU a process measures on."""

    worker: str | None
    index: int  # CUDA device index in the process
    physical: str  # the host's name for it (CUDA_VISIBLE_DEVICES entry or index)
    name: str  # GPU model
    uuid: str | None = None
    visible: int = 1  # how many devices the process sees

    def describe(self) -> str:
        return f"cuda:{self.index} (physical GPU {self.physical}, {self.name}, {self.visible} visible)"


def pin(worker: str | None) -> GpuChoice | None:
    """Set this process's CUDA device for `worker`; None without a usable CUDA device.

    Called at the start of a worker session that uses kernel_bench, before any test allocates.
    """
    import torch

    if not torch.cuda.is_available():
        return None
    count = torch.cuda.device_count()
    if count < 1:
        return None
    index = choose(worker, count)
    if index is None:
        return None
    torch.cuda.set_device(index)
    return describe(worker, index, count)


def describe(worker: str | None, index: int, count: int | None = None) -> GpuChoice:
    import torch

    props = torch.cuda.get_device_properties(index)
    uuid = getattr(props, "uuid", None)
    return GpuChoice(
        worker=worker,
        index=index,
        physical=physical_id(index),
        name=str(props.name),
        uuid=str(uuid) if uuid is not None else None,
        visible=count if count is not None else torch.cuda.device_count(),
    )


# --- one measurement at a time per GPU -------------------------------------------------------------


class GpuLockTimeout(TimingError):
    """Another process held the GPU for longer than the timeout."""


class GpuLock:
    """An exclusive fcntl lock on a file, held while timing on one GPU."""

    def __init__(self, path: Path, timeout_s: float = LOCK_TIMEOUT_S, poll_s: float = 0.02) -> None:
        self.path = path
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self.waited_s = 0.0  # of the last acquisition
        self._handle: IO[str] | None = None

    def __enter__(self) -> GpuLock:
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+", encoding="utf-8")
        start = time.monotonic()
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - start
                if waited >= self.timeout_s:
                    holder = _holder(self.path)
                    handle.close()
                    raise GpuLockTimeout(
                        f"waited {waited:.0f} s for the GPU lock {self.path} (held by {holder}); "
                        "another process is timing on this GPU. Stop it, or remove stuck processes"
                    ) from None
                time.sleep(self.poll_s)
        self.waited_s = time.monotonic() - start
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}, worker {worker_id() or '-'}\n")
        handle.flush()
        self._handle = handle
        return self

    def __exit__(self, *exc: object) -> None:
        import fcntl

        if self._handle is not None:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


def _holder(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip() or "an unknown process"
    except OSError:
        return "an unknown process"


def lock_path(folder: Path, gpu: str) -> Path:
    return folder / "locks" / f"gpu-{file_part(gpu, 'unknown')}.lock"


def gpu_key(index: int) -> str:
    """The name of the lock of CUDA device `index`: its UUID, else its physical id."""
    try:
        return describe(None, index).uuid or f"physical-{physical_id(index)}"
    except Exception:  # no torch or no properties: the physical id still tells GPUs apart
        return f"physical-{physical_id(index)}"


@dataclass
class GpuUsage:
    """What this process measured on each CUDA device, for the summary."""

    measurements: Counter[int] = field(default_factory=Counter)
    lock_waits: Counter[int] = field(default_factory=Counter)
    lock_wait_s: dict[int, float] = field(default_factory=dict)


class LockedTimer:
    """A Timer whose measurements on a CUDA device hold that GPU's lock."""

    def __init__(
        self,
        timer: Timer,
        folder: Path,
        usage: GpuUsage,
        key: Callable[[int], str] = gpu_key,
        timeout_s: float = LOCK_TIMEOUT_S,
    ) -> None:
        self._timer = timer
        self._folder = folder
        self._usage = usage
        self._key = key
        self._timeout_s = timeout_s

    def __getattr__(self, name: str) -> Any:
        return getattr(self._timer, name)  # `method` and whatever else a timer plugin offers

    def measure(self, target: Target, plan: SamplingPlan) -> Timing:
        device = target.device
        if device.kind != "cuda":
            return self._timer.measure(target, plan)
        index = device.index if device.index is not None else 0
        lock = GpuLock(lock_path(self._folder, self._key(index)), timeout_s=self._timeout_s)
        with lock:
            self._usage.measurements[index] += 1
            if lock.waited_s > 0.001:
                self._usage.lock_waits[index] += 1
                self._usage.lock_wait_s[index] = self._usage.lock_wait_s.get(index, 0.0) + lock.waited_s
            return self._timer.measure(target, plan)
