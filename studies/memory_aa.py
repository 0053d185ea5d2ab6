"""A/A study of the device-memory verdict (needs a CUDA GPU): how often would an unchanged kernel
fail `memory_threshold`?

The example GELUs (manual, built-in, torch.compile'd, Triton; 2^24 float32 elements) are measured by
the built-in probe (measure/memory.py) in several fresh processes, each warming a kernel up like a
timed call and then measuring it `--calls` times; the first process's first reading is the
baseline, and every other reading is judged against it with the default threshold (10%, 1 MiB).
The issue's target: 0 false verdicts in 1000.

    python studies/memory_aa.py --processes 10 --calls 100    # 4 kernels x 1000 judgements
"""

from __future__ import annotations

import argparse
import functools
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ("manual", "pytorch", "compiled", "triton")


def measure_here(calls: int) -> dict[str, list[int]]:
    """In this process: each kernel warmed up (first call, then 20 more), then measured `calls` times."""
    import torch

    from example_kernels.gelu import IMPLEMENTATIONS
    from pytest_kernelperf.measure.memory import MemoryRequest, peak_memory
    from pytest_kernelperf.model.device import DeviceInfo

    device = DeviceInfo("cuda", torch.cuda.get_device_name(0), 0)
    x = torch.randn(1 << 24, device="cuda")
    out: dict[str, list[int]] = {}
    for name in KERNELS:
        fn = IMPLEMENTATIONS[name]
        for _ in range(21):
            fn(x)
        torch.cuda.synchronize()
        readings = []
        request = MemoryRequest(functools.partial(fn, x), device, fn)
        for _ in range(calls):
            reading = peak_memory(request)
            assert reading is not None
            readings.append(reading.peak_bytes)
        out[name] = readings
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=10)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure_here(args.calls)))
        return 0
    import torch

    if not torch.cuda.is_available():
        print("memory_aa: needs a CUDA device; nothing measured")
        return 0
    from pytest_kernelperf.verdict.memory import format_bytes, judge_memory

    runs = []
    for number in range(args.processes):
        done = subprocess.run(
            [sys.executable, __file__, "--child", f"--calls={args.calls}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"process {number + 1} of {args.processes} measured", file=sys.stderr)
    false = Counter[str]()
    for name in KERNELS:
        baseline = runs[0][name][0]
        readings = [value for run in runs for value in run[name]]
        judged = [judge_memory(value, baseline, 0.1) for value in readings]
        false[name] = sum(check.exceeded for check in judged)
        spread = sorted(set(readings))
        print(
            f"{name:>9}: baseline {format_bytes(baseline)}; {len(readings)} readings, {len(spread)} distinct "
            f"({', '.join(format_bytes(v) for v in spread[:5])}); false verdicts {false[name]}"
        )
    print(f"false verdicts: {sum(false.values())} in {sum(len(r[n]) for r in runs for n in KERNELS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
