"""Where the run's first timed measurement spends its one-time seconds (a GPU study).

On three H200s (2026-12-01) the first kernel a `pytest --kernelperf` run timed spent 4.6-6.2 s in
its 5 rounds and every later one about 0.25 s (docs/results.md, "Where the time goes"). Each candidate for
that one-time cost is started here alone, in a fresh process, in the order a run meets them, and
timed twice (the second time shows what is left once it has happened):

* NVML's first reading (measure/health.py reads clocks around every round);
* the first torch.profiler session with CUDA activities (the CUPTI timer's);
* the first CUDA graph capture and replay;
* the first memory pool of a fresh placement (measure/placement.py);
* one whole measurement of a small kernel with the plugin's own timer, after all of the above.

What it found (H200s, 2026-12-02; docs/results/cost_h200_2026-12-02.txt): the profiler session, 5.5-5.8
s (torch.profiler.profile imports torch._inductor on entering; the timer now opens the autograd
profiler, 0.04-0.05 s); then the whole measurement, 4.1 s (its recompile guard imported
torch._dynamo; now only where it was imported already: 0.27 s).

    python studies/first_measurement.py            # on a GPU; prints one line per step
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def timed(label: str, step: Callable[[], object]) -> None:
    for attempt in ("first", "again"):
        began = time.perf_counter()
        step()
        print(f"{label} ({attempt}): {time.perf_counter() - began:.3f} s", flush=True)


def main() -> None:
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA device")
    x = torch.randn(1 << 20, device="cuda")
    torch.cuda.synchronize()

    from pytest_kernelperf.measure import health

    timed("NVML reading", lambda: health.read(0))

    from pytest_kernelperf.measure.timing import profile_device_activity

    timed("profiler session (CUPTI)", lambda: profile_device_activity(lambda: x.mul_(1.0), 10))

    def graph() -> None:
        g = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            x.mul_(1.0)
        torch.cuda.current_stream().wait_stream(stream)
        with torch.cuda.graph(g):
            x.mul_(1.0)
        g.replay()
        torch.cuda.synchronize()

    timed("CUDA graph capture and replay", graph)

    def pool() -> None:
        with torch.cuda.use_mem_pool(torch.cuda.MemPool()):
            torch.empty(1 << 20, device="cuda").fill_(0)
        torch.cuda.synchronize()

    timed("memory pool", pool)

    from pytest_kernelperf.measure.timing import AutoTimer, Target
    from pytest_kernelperf.model.device import DeviceInfo
    from pytest_kernelperf.testing import sampling_plan

    device = DeviceInfo(kind="cuda", name=torch.cuda.get_device_name(0), index=0)

    def kernel() -> object:
        return x * 2

    target = Target(kernel, device, label="first", fn=kernel)
    timed("a whole measurement (5 rounds)", lambda: AutoTimer().measure(target, sampling_plan()))


if __name__ == "__main__":
    main()
