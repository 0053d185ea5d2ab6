"""GPU behaviour of the timers: run on a CUDA machine (skipped elsewhere)."""

from __future__ import annotations

import pytest
import torch
from conftest import fresh_interpreter

from pytest_kernelperf.measure.device import fingerprint
from pytest_kernelperf.measure.timing import (
    AutoTimer,
    CudaEventTimer,
    CudaGraphTimer,
    CuptiTimer,
    Target,
    TimingError,
)
from pytest_kernelperf.testing import sampling_plan

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def gelu_target(elements: int) -> Target:
    x = torch.randn(elements, device="cuda")
    return Target(lambda: torch.nn.functional.gelu(x, approximate="tanh"), fingerprint("cuda"))


def test_methods_agree_on_a_large_kernel_beyond_the_events_launch_path() -> None:
    # CUPTI and graph replay time the kernel on the device. Events around each call also hold the
    # launch path (the host's time from the start event to the kernel's arrival), a fixed cost per
    # call rather than a share: on H200s 10-21 us beside a 0.13 ms GELU (8-16%), and about 28 us,
    # all of it, beside a 1 us one (studies/timer_agreement.py, docs/results/). So events may exceed
    # CUPTI by what a tiny kernel's events measure, and the device timers agree in proportion.
    large, tiny = gelu_target(1 << 26), gelu_target(1 << 10)
    plan = sampling_plan(max_time_s=0.3)
    medians = {
        timer.method: timer.measure(large, plan).device_time.summary.median_ms
        for timer in (CudaEventTimer(), CudaGraphTimer(), CuptiTimer())
    }
    launch_path_ms = CudaEventTimer().measure(tiny, plan).device_time.summary.median_ms
    assert abs(medians["cuda-graph"] / medians["cupti"] - 1) < 0.05, medians
    excess_ms = medians["cuda-event"] - medians["cupti"]
    assert -0.02 * medians["cupti"] < excess_ms < 1.5 * launch_path_ms, (medians, launch_path_ms)


def test_cupti_sees_kernel_time_below_launch_overhead() -> None:
    # A 2^16-element kernel runs ~1 us; per-call events time the launch path (tens of us).
    target = gelu_target(1 << 16)
    plan = sampling_plan(max_time_s=0.2)
    cupti = CuptiTimer().measure(target, plan).device_time.summary.median_ms
    events = CudaEventTimer().measure(target, plan).device_time.summary.median_ms
    assert 0 < cupti < events


def test_auto_reports_device_time_and_host_latency() -> None:
    timing = AutoTimer().measure(gelu_target(1 << 20), sampling_plan(max_time_s=0.2))
    assert timing.device_time.method == "cupti"
    assert timing.host_latency is not None and timing.host_latency.method == "cuda-event"
    assert timing.device_time.summary.median_ms < timing.host_latency.summary.median_ms


def test_graph_capture_failure_is_a_timing_error() -> None:
    x = torch.randn(1024, device="cuda")
    # .item() synchronizes, which stream capture forbids.
    target = Target(lambda: (x * 2).sum().item(), fingerprint("cuda"))
    with pytest.raises(TimingError, match="CUDA graph capture failed"):
        CudaGraphTimer().measure(target, sampling_plan(max_time_s=0.05))


def test_auto_falls_back_when_graph_and_cupti_are_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    def blocked(*args: object, **kwargs: object) -> list[float]:
        return []  # what a blocked CUPTI gives: no device records

    monkeypatch.setattr("pytest_kernelperf.measure.timing.profile_device_activity", blocked)
    x = torch.randn(1024, device="cuda")
    target = Target(lambda: (x * 2).sum().item(), fingerprint("cuda"))
    timing = AutoTimer().measure(target, sampling_plan(max_time_s=0.05))
    assert timing.device_time.method == "cuda-event"
    assert any("cupti unavailable" in note for note in timing.notes)
    assert any("cuda-graph unavailable" in note for note in timing.notes)
    assert timing.device_time.summary.median_ms > 0


def test_cold_cache_is_not_faster_than_hot() -> None:
    # 2^20 float32 (4 MiB in, 4 MiB out) fits in L2: a flushed L2 can only make it slower.
    target = gelu_target(1 << 20)
    hot = CuptiTimer().measure(target, sampling_plan(max_time_s=0.2)).device_time.summary.median_ms
    cold = (
        CuptiTimer()
        .measure(target, sampling_plan(max_time_s=0.2, cache="cold"))
        .device_time.summary.median_ms
    )
    assert cold >= 0.98 * hot


@pytest.mark.slow  # builds the example's CUDA extension where torch's cache has none: a minute or more
def test_example_cuda_gelu_matches_reference() -> None:
    from example_kernels.gelu import cuda_gelu, pytorch_gelu

    x = torch.randn(1 << 20, device="cuda")
    torch.testing.assert_close(cuda_gelu(x), pytorch_gelu(x))


def test_peak_memory_is_what_one_call_allocates_beyond_its_inputs() -> None:
    from pytest_kernelperf.measure.memory import MemoryRequest, peak_memory

    x = torch.ones(1 << 20, device="cuda")  # 4 MiB of input, allocated before: not counted

    def call() -> torch.Tensor:
        scratch = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")  # a 64 MiB workspace, freed
        scratch.zero_()
        return x * 2  # a 4 MiB output

    request = MemoryRequest(call, fingerprint("cuda"), call)
    readings = [peak_memory(request) for _ in range(5)]
    assert all(r is not None for r in readings)
    peaks = {r.peak_bytes for r in readings if r is not None}
    assert len(peaks) == 1, peaks  # the same call allocates the same bytes every time
    assert (68 << 20) <= peaks.pop() < (69 << 20)
    named = peak_memory(MemoryRequest(call, fingerprint("cuda"), call, allocations=True))
    assert named is not None
    assert named.allocations[0] == "aten::empty 64 MiB", named.allocations


def test_a_measurement_of_plain_code_imports_no_compiler() -> None:
    # torch.profiler.profile and torch.compiler.set_stance import inductor and dynamo (seconds each in
    # a run's first measurement); the timer's CUPTI session and recompile guard need neither.
    probe = (
        "import sys, torch\n"
        "from pytest_kernelperf.measure.device import fingerprint\n"
        "from pytest_kernelperf.measure.timing import AutoTimer, Target\n"
        "from pytest_kernelperf.testing import sampling_plan\n"
        "x = torch.randn(1 << 20, device='cuda')\n"
        "target = Target(lambda: x * 2, fingerprint('cuda'))\n"
        "timing = AutoTimer().measure(target, sampling_plan(max_time_s=0.05))\n"
        "print(timing.device_time.method, 'torch._dynamo' in sys.modules, 'torch._inductor' in sys.modules)\n"
    )
    assert fresh_interpreter(probe) == ["cupti", "False", "False"]


def test_rounds_give_their_memory_back_also_after_a_failed_graph_capture() -> None:
    """Each round copies the arguments into a pool of its own, given back at the next round: 40
    rounds of a kernel with 256 MiB of arguments would keep 10 GiB if the pools kept their memory. A
    failed capture first, as a kernel that cannot be captured leaves it (in a fresh interpreter: a
    pool given back after it used to abort the process)."""
    probe = (
        "import torch, torch.nn.functional as F\n"
        "from pytest_kernelperf.measure.device import fingerprint\n"
        "from pytest_kernelperf.measure.placement import Placements\n"
        "from pytest_kernelperf.measure.timing import AutoTimer, CudaGraphTimer, Target, TimingError\n"
        "from pytest_kernelperf.testing import sampling_plan\n"
        "plan = sampling_plan(rounds=10, min_time_s=0.001, max_time_s=0.002, warmup_s=0.001)\n"
        "y = torch.randn(1024, device='cuda')\n"
        "try:\n"
        "    CudaGraphTimer().measure(Target(lambda: (y * 2).sum().item(), fingerprint('cuda')), plan)\n"
        "except TimingError:\n"
        "    print('capture-failed')\n"
        "x = torch.randn(1 << 26, device='cuda')\n"
        "places = Placements(((x,), {}), lambda moved: ((lambda: F.gelu(moved[0][0])), None), 'cuda:0')\n"
        "target = Target(lambda: F.gelu(x), fingerprint('cuda'), placements=places)\n"
        "torch.cuda.synchronize()\n"
        "before = torch.cuda.memory_reserved()\n"
        "for _ in range(4):\n"
        "    AutoTimer().measure(target, plan)\n"
        "print(round((torch.cuda.memory_reserved() - before) / 2**30, 1))\n"
    )
    said = fresh_interpreter(probe)
    assert said[0] == "capture-failed" and float(said[1]) < 1.0, said
