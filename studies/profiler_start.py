"""What the first CUPTI profiler session of a process costs, and what moves it (a GPU study).

studies/first_measurement.py showed that the run's one-time seconds are the first torch.profiler
session with CUDA activities (5.8 s on an H200, 2026-12-02; 6 ms the second time). CUPTI generates
its kernel-timing instrumentation when concurrent-kernel tracing is first enabled, for the modules
loaded by then, so when that first session runs may matter. Each variant runs in a fresh process:

  after_cuda       the CUDA context and a few kernels first, then the first session (what a run does)
  before_cuda      the first session before the CUDA context exists, then the context, then another
  after_triton     a Triton kernel compiled and run first, then the first session
  background       the first session on a thread while the main thread creates the context and runs
                   kernels; then the main thread's first session
  eager_modules    as after_cuda with CUDA_MODULE_LOADING=EAGER (every module loaded at the start)
  plugin_timer     as after_cuda, the first session through the timer's own profiler
                   (measure/timing.py: the autograd profiler, which leaves torch._inductor unimported)

Each line: the variant, the step, its seconds, and the device activities the session recorded.
On an H200 (2026-12-02) CUPTI started in 20-50 ms whenever it ran; the rest of a first session
(0.8-1.6 s with bytecode cached) was torch.profiler.profile importing torch._inductor, which the
timer's own session (plugin_timer) does not.

    python studies/profiler_start.py            # on a GPU
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

VARIANTS = ("after_cuda", "before_cuda", "after_triton", "background", "eager_modules", "plugin_timer")


def session(label: str, work: Callable[[], object] | None = None) -> None:
    """One profiler session with CUDA activities around `work`, each phase timed."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    began = time.perf_counter()
    prof = profile(activities=[ProfilerActivity.CUDA])
    prof.__enter__()
    entered = time.perf_counter()
    if work is not None:
        work()
        torch.cuda.synchronize()
    prof.__exit__(None, None, None)
    exited = time.perf_counter()
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]  # type: ignore[attr-defined]
    parsed = time.perf_counter()
    print(
        f"{label}: total {parsed - began:.3f} s (enter {entered - began:.3f}, exit {exited - entered:.3f}, "
        f"events {parsed - exited:.3f}); {len(events)} device activities; {_inductor()}",
        flush=True,
    )


def _inductor() -> str:
    return "torch._inductor imported" if "torch._inductor" in sys.modules else "no torch._inductor"


def variant(name: str) -> None:
    started = time.perf_counter()
    import torch

    print(f"import torch: {time.perf_counter() - started:.3f} s", flush=True)

    def kernels() -> None:
        x = torch.randn(1 << 20, device="cuda")
        (x * 2).sum().item()

    def timed(label: str, step: Callable[[], object]) -> None:
        began = time.perf_counter()
        step()
        print(f"{label}: {time.perf_counter() - began:.3f} s", flush=True)

    if name == "before_cuda":
        session("first session, no CUDA context yet")
        timed("context and first kernels", kernels)
        session("session after the context", kernels)
    elif name == "background":
        thread = threading.Thread(target=session, args=("first session, on a thread",))
        began = time.perf_counter()
        thread.start()
        timed("context and first kernels (main thread, meanwhile)", kernels)
        thread.join()
        print(f"thread joined after {time.perf_counter() - began:.3f} s", flush=True)
        session("main thread's first session", kernels)
    elif name == "plugin_timer":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from pytest_kernelperf.measure.timing import profile_device_activity

        timed("context and first kernels", kernels)
        timed("the timer's first session", lambda: print(len(profile_device_activity(kernels, 1))))
        print(_inductor(), flush=True)
    else:
        timed("context and first kernels", kernels)
        if name == "after_triton":
            timed("a Triton kernel compiled and run", _triton_kernel)
        session("first session", kernels)
    session("second session", kernels)


def _triton_kernel() -> None:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def double(x_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)

    x = torch.randn(1 << 20, device="cuda")
    double[(x.numel() // 1024,)](x, x.numel(), BLOCK=1024)
    torch.cuda.synchronize()


def main() -> None:
    if len(sys.argv) > 1:
        variant(sys.argv[1])
        return
    for name in VARIANTS:
        env = dict(os.environ)
        if name == "eager_modules":
            env["CUDA_MODULE_LOADING"] = "EAGER"
        print(f"== {name}", flush=True)
        began = time.perf_counter()
        subprocess.run([sys.executable, __file__, name], env=env, timeout=120, check=False)
        print(f"   process: {time.perf_counter() - began:.1f} s", flush=True)


if __name__ == "__main__":
    main()
