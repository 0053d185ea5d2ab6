"""A later recording process costs no more than a judging run: it runs the first process's autotuner
choices from the first call on, measures only the rounds a further process adds, hands back the
seconds of its phases, and finds the compile caches the run's first process used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SCRIPTED_CONFTEST, Project

from pytest_kernelperf.plugins import compile_caches, handoff, isolate
from pytest_kernelperf.plugins.role import RECORD_NODEIDS, RECORD_OUTPUT

pytest.importorskip("triton")  # imported before any in-process run, which would drop it again

# The profile and memory hooks log each call; the autotuner's benchmark logs each config it times.
LOGGING = (
    SCRIPTED_CONFTEST
    + """
import os

from pytest_kernelperf.testing import FakeMemoryProbe, FakeProfiler

def _log(what):
    with open(os.environ["STAGE_LOG"], "a") as log:
        log.write(what + "\\n")

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_profile_call(config, profile_request):
    _log("profile")
    return FakeProfiler()(profile_request)

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_peak_memory(config, memory_request):
    _log("memory")
    return FakeMemoryProbe()(memory_request)
"""
)

MODULE = """
import os

import torch
import triton
import triton.language as tl


def fake_bench(call, quantiles=None):
    call()
    with open(os.environ["STAGE_LOG"], "a") as log:
        log.write("benchmark\\n")
    # WINNER names the BLOCK that benchmarks fastest; the config is not passed, so go by order.
    fake_bench.order = getattr(fake_bench, "order", 0) + 1
    fast = (fake_bench.order == 1) == (os.environ["WINNER"] == "16")
    return [1.0 if fast else 2.0] * 3


@triton.autotune(
    configs=[triton.Config({"BLOCK": 16}, num_warps=1), triton.Config({"BLOCK": 32}, num_warps=2)],
    key=["n"],
    do_bench=fake_bench,
)
@triton.jit
def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


def kernel(x):
    y = torch.empty_like(x)
    double[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, x.numel())
    return y


kernel.fake_ms = 1.0
kernel.fake_peak_bytes = 1 << 20
kernel.fake_kernels = [("double", 1, 0.9)]


def test_double(kernel_bench):
    kernel_bench(kernel, torch.arange(40, dtype=torch.float32), reference=lambda x: x * 2)
"""
CHOSEN_32 = "BLOCK=32, num_warps=2, num_stages=3"


def stages(log: Path) -> list[str]:
    stages = log.read_text().split() if log.exists() else []
    log.unlink(missing_ok=True)
    return stages


def test_a_later_process_pins_the_first_ones_choices_and_measures_only_rounds(project: Project) -> None:
    root = project.pytester.path
    project.pytester.makeconftest(LOGGING)
    project.module(MODULE)
    log = root / "stages.log"
    project.monkeypatch.setenv("STAGE_LOG", str(log))
    project.monkeypatch.setenv("TRITON_INTERPRET", "1")
    project.monkeypatch.setenv("WINNER", "32")
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)  # the first process
    assert sorted(set(stages(log))) == ["benchmark", "memory", "profile"]

    # This process as a later recording process of the same test: the first's entries its baselines.
    (root / "nodeids.txt").write_text("test_kernels.py::test_double")
    project.monkeypatch.setenv(RECORD_NODEIDS, str(root / "nodeids.txt"))
    project.monkeypatch.setenv(RECORD_OUTPUT, str(root / "payload.json"))
    project.monkeypatch.setenv("WINNER", "16")  # left free, the autotuner would pick the other one
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    assert stages(log) == []  # no autotuner benchmark, no profile, no peak memory: only its rounds
    handed = json.loads((root / "payload.json").read_text())
    assert handed["not_passed"] == {}  # the tests that failed or skipped there: none
    payload = handoff.decode(handed["payload"], root / "baselines")
    ((entry,),) = (found.values() for found in payload.staged.values())
    assert entry.autotune == {"double": CHOSEN_32}  # the first process's config ran, and was recorded
    assert entry.kernels is None and entry.peak_memory_bytes is None  # the first's stay in the entry
    assert payload.cost is not None and payload.cost.tests > 0  # its phases, for --kernelperf-durations


def test_children_find_the_compile_caches_this_process_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRITON_CACHE_DIR", ".triton")  # relative to where pytest was started
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "extensions"))
    monkeypatch.setenv("CUDA_CACHE_PATH", "~/.nv/ComputeCache")  # the library expands ~, if at all
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    env = isolate.child_environment()  # what an isolated, Nsight Compute or recording child gets
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / ".triton")
    assert env["TORCH_EXTENSIONS_DIR"] == str(tmp_path / "extensions")
    assert env["CUDA_CACHE_PATH"] == "~/.nv/ComputeCache"
    # Inductor, where loaded, says where it caches; where not, its variable is left to the child.
    inductor = "torch._inductor.runtime.cache_dir_utils"
    import sys

    loaded = sys.modules.get(inductor)
    if loaded is None:
        assert "TORCHINDUCTOR_CACHE_DIR" not in env
    else:
        assert env["TORCHINDUCTOR_CACHE_DIR"] == loaded.cache_dir()
    monkeypatch.setitem(sys.modules, inductor, type(sys)("fake", "x"))
    sys.modules[inductor].cache_dir = lambda: "/var/cache/inductor"  # type: ignore[attr-defined]
    assert compile_caches.shared_caches({}, tmp_path) == {"TORCHINDUCTOR_CACHE_DIR": "/var/cache/inductor"}
