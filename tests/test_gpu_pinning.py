"""Several GPUs: worker gwN measures on GPU N % count, and workers sharing a GPU take turns.

On this CPU machine the GPUs are fakes (torch.cuda functions replaced); the real run is
studies/gpu_xdist.sh on two H200s.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from pytest_kernelperf.measure import gpu
from pytest_kernelperf.measure.device import physical_id
from pytest_kernelperf.measure.gpu import GpuLock, GpuLockTimeout, GpuUsage, LockedTimer, choose
from pytest_kernelperf.measure.timing import Metric, SamplingPlan, Target, Timing
from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.testing import sampling_plan

ROOT = Path(gpu.__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("worker", "count", "index"),
    [
        ("gw0", 2, 0),
        ("gw1", 2, 1),
        ("gw2", 2, 0),
        ("gw7", 3, 1),
        ("gw5", 1, 0),
        (None, 2, None),
        ("main", 2, None),
    ],
)
def test_worker_n_gets_gpu_n_modulo_count(worker: str | None, count: int, index: int | None) -> None:
    assert choose(worker, count) == index


def test_no_visible_gpu_means_no_choice() -> None:
    assert choose("gw0", 0) is None


@pytest.mark.parametrize(
    ("visible", "index", "physical"),
    [
        ("", 1, "1"),
        ("3,1", 0, "3"),
        ("3,1", 1, "1"),
        (" 2 , 5 ", 1, "5"),
        ("GPU-aa,GPU-bb", 1, "GPU-bb"),
        ("4", 3, "3"),
    ],
)
def test_physical_gpu_follows_cuda_visible_devices(visible: str, index: int, physical: str) -> None:
    assert physical_id(index, visible) == physical


def fake_cuda(monkeypatch: pytest.MonkeyPatch, count: int) -> list[int]:
    chosen: list[int] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.cuda, "set_device", chosen.append)
    monkeypatch.setattr(
        torch.cuda,
        "get_device_properties",
        lambda index: SimpleNamespace(name="Fake H200", uuid=f"GPU-fake-{index}"),
    )
    return chosen


def test_pin_sets_the_device_among_the_visible_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = fake_cuda(monkeypatch, count=2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")
    choice = gpu.pin("gw3")
    assert chosen == [1]
    assert choice is not None
    assert (choice.index, choice.physical, choice.name, choice.uuid) == (1, "7", "Fake H200", "GPU-fake-1")
    assert choice.describe() == "cuda:1 (physical GPU 7, Fake H200, 2 visible)"


def test_pin_outside_xdist_leaves_the_device_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = fake_cuda(monkeypatch, count=2)
    assert gpu.pin(None) is None
    assert chosen == []


def test_pin_without_cuda_is_nothing() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert gpu.pin("gw0") is None


# --- the lock ------------------------------------------------------------------------------------


def test_lock_is_exclusive_and_names_its_holder(tmp_path: Path) -> None:
    path = tmp_path / "locks" / "gpu-x.lock"
    with GpuLock(path), pytest.raises(GpuLockTimeout) as caught:
        GpuLock(path, timeout_s=0.1).__enter__()
    assert str(path) in str(caught.value) and f"pid {os.getpid()}" in str(caught.value)
    with GpuLock(path, timeout_s=0.1) as again:  # released
        assert again.waited_s < 0.1


HOLDER = """
import sys, time
from pathlib import Path
from pytest_kernelperf.measure.gpu import GpuLock
with GpuLock(Path(sys.argv[1])):
    print("holding", flush=True)
    time.sleep(600)
"""


def test_a_killed_holder_releases_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "gpu-x.lock"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        with pytest.raises(GpuLockTimeout, match=f"pid {holder.pid}"):
            GpuLock(path, timeout_s=0.2).__enter__()
    finally:
        holder.kill()
        holder.wait()
    with GpuLock(path, timeout_s=5):
        pass


class SleepyTimer:
    """Records when each measurement ran."""

    method = "sleepy"

    def __init__(self, log: Path, lock: Path | None = None) -> None:
        self.log = log
        self.lock = lock

    def measure(self, target: Target, plan: SamplingPlan) -> Timing:
        if self.lock is not None:
            import fcntl

            with self.lock.open("a") as other, pytest.raises(BlockingIOError):
                fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # held by LockedTimer
        start = time.monotonic()
        time.sleep(0.15)
        with self.log.open("a") as log:
            log.write(json.dumps([start, time.monotonic()]) + "\n")
        return Timing(Metric(self.method, (1.0,)))


def fake_target(kind: str, index: int | None = 0) -> Target:
    return Target(
        lambda: None, DeviceInfo(kind=kind, name="Fake H200" if kind == "cuda" else "CPU", index=index)
    )


def test_a_cuda_measurement_holds_its_gpu_lock(tmp_path: Path) -> None:
    usage = GpuUsage()
    lock = tmp_path / "locks" / "gpu-GPU-fake-1.lock"
    timer = LockedTimer(SleepyTimer(tmp_path / "log", lock), tmp_path, usage, key=lambda i: f"GPU-fake-{i}")
    timer.measure(fake_target("cuda", 1), sampling_plan())
    assert usage.measurements == {1: 1}
    assert timer.method == "sleepy"  # the wrapped timer's attributes show through


def test_a_cpu_measurement_takes_no_lock(tmp_path: Path) -> None:
    usage = GpuUsage()
    LockedTimer(SleepyTimer(tmp_path / "log"), tmp_path, usage).measure(
        fake_target("cpu", None), sampling_plan()
    )
    assert not (tmp_path / "locks").exists() and not usage.measurements


SHARING_WORKER = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from test_gpu_pinning import SleepyTimer, fake_target
from pytest_kernelperf.measure.gpu import GpuUsage, LockedTimer
from pytest_kernelperf.testing import sampling_plan
timer = LockedTimer(SleepyTimer(Path(sys.argv[2])), Path(sys.argv[1]), GpuUsage(), key=lambda i: "GPU-shared")
for _ in range(3):
    timer.measure(fake_target("cuda", 0), sampling_plan())
"""


@pytest.mark.slow
def test_workers_sharing_a_gpu_never_time_at_once(tmp_path: Path) -> None:
    log = tmp_path / "intervals.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    args = [sys.executable, "-c", SHARING_WORKER, str(tmp_path), str(log), str(Path(__file__).parent)]
    workers = [subprocess.Popen(args, env=env) for _ in range(3)]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0, 0]
    intervals = sorted(json.loads(line) for line in log.read_text().splitlines())
    assert len(intervals) == 9
    for (_, end), (start, _) in itertools.pairwise(intervals):
        assert end <= start  # each measurement ended before the next began


# --- in a run ------------------------------------------------------------------------------------

# What FAKE_GPU_CONFTEST replaces in torch.cuda, for as long as its run lasts.
CUDA_FAKED = ("is_available", "device_count", "set_device", "get_device_properties")

FAKE_GPU_CONFTEST = """
import pytest
import torch
from types import SimpleNamespace
from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.testing import ScriptedTimer

# Two fake GPUs: enough of torch.cuda for pinning, and a device hook that reports the current one.
# Put back at the end of the run: an in-process run shares torch with the tests that follow it,
# and on a machine with GPUs those measure with the real torch.cuda.
_current = [0]
_fakes = pytest.MonkeyPatch()
_fakes.setattr(torch.cuda, "is_available", lambda: True)
_fakes.setattr(torch.cuda, "device_count", lambda: 2)
_fakes.setattr(torch.cuda, "set_device", lambda index: _current.__setitem__(0, index))
_fakes.setattr(
    torch.cuda,
    "get_device_properties",
    lambda index: SimpleNamespace(name="Fake H200", uuid=f"GPU-fake-{index}"),
)

def pytest_unconfigure(config):
    _fakes.undo()

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_make_timer(config, settings, device):
    return ScriptedTimer()

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_device_info(config, kind):
    return DeviceInfo(kind="cuda", name="Fake H200", index=_current[0])
"""

FOUR_TESTS = """
import pytest
import torch

def kernel(x):
    return x * 2
kernel.fake_ms = 1.0

@pytest.mark.parametrize("n", range(6))
def test_k(kernel_bench, n):
    kernel_bench(kernel, torch.ones(4))
"""


@pytest.mark.slow
def test_xdist_workers_pin_to_their_gpus_and_the_summary_says_which(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(FAKE_GPU_CONFTEST)
    pytester.makepyfile(test_k=textwrap.dedent(FOUR_TESTS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)

    from conftest import SUBPROCESS_ARGS  # here: SHARING_WORKER's processes import this module

    result = pytester.runpytest_subprocess(*SUBPROCESS_ARGS, "-n", "3", "--kernelperf")

    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["*= kernelperf GPUs =*"])
    out = result.stdout.str()
    for worker, index in (("gw0", 0), ("gw1", 1), ("gw2", 0)):  # three workers, two GPUs
        assert f"{worker} pinned to cuda:{index} (physical GPU {index}, Fake H200, 2 visible)" in out
    lines = [line for line in out.splitlines() if " pinned to " in line]
    for line in lines:  # each worker measured on the GPU it was pinned to
        pinned = line.split("pinned to cuda:")[1][0]
        assert "measured" not in line or f"on cuda:{pinned} (Fake H200)" in line
    assert sorted(p.name for p in (pytester.path / ".kernelperf" / "locks").iterdir()) == [
        "gpu-GPU-fake-0.lock",
        "gpu-GPU-fake-1.lock",
    ]


def test_results_carry_the_gpu_index(pytester: pytest.Pytester) -> None:
    real = {name: getattr(torch.cuda, name) for name in CUDA_FAKED}
    pytester.makeconftest(FAKE_GPU_CONFTEST.replace("index=_current[0]", "index=1"))
    pytester.makepyfile(test_k=textwrap.dedent(FOUR_TESTS))
    # Placement "process": a fresh placement allocates on the fake cuda:1 for real, which a machine
    # with one GPU whose CUDA an earlier test initialised refuses (invalid device ordinal).
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--kernelperf", "-k", "test_k and 0", "-o", "kernelperf_placement=process"
    )
    result.assert_outcomes(passed=1, deselected=5)
    result.stdout.fnmatch_lines(["*= kernelperf GPUs =*", "main: 1 measured on cuda:1 (Fake H200)"])
    # The fake GPUs end with the run: the tests after this one get the real torch.cuda.
    assert {name: getattr(torch.cuda, name) for name in CUDA_FAKED} == real
