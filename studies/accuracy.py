"""How close each timing method comes to the device's own kernel time, from 1 us to 1 ms kernels.

For the Triton and PyTorch GELU at 2^16, 2^20, 2^24 and 2^28 float32 elements, every method times
the same call REPEATS times in this process. The table gives, per method, the median of its
medians over the CUPTI kernel time (1.00x is exact), their spread ((max - min) / median over the
repeats) and the median wall time one measurement took.

    python studies/accuracy.py [--repeats 8] [--sizes 16,20,24,28] [--out DIR]

Needs a CUDA GPU, triton and (for one column) pytest-benchmark.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from example_kernels.gelu import pytorch_gelu, triton_gelu  # noqa: E402
from pytest_kernelperf.measure.device import fingerprint  # noqa: E402
from pytest_kernelperf.measure.timing import AutoTimer, Target, profile_device_activity  # noqa: E402
from pytest_kernelperf.settings import Settings  # noqa: E402

KERNELS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"triton": triton_gelu, "pytorch": pytorch_gelu}
Measure = Callable[[Callable[[], object]], float]


def cupti_kernel_ms(call: Callable[[], object], calls: int = 300) -> float:
    """Ground truth: the median over calls of the device activity each call launched."""
    for _ in range(5):
        call()
    per_call = len(profile_device_activity(call, 1))
    durations = profile_device_activity(call, calls)
    sums = [sum(durations[i * per_call : (i + 1) * per_call]) for i in range(calls)]
    return statistics.median(sums) / 1e3


def lecture_benchmark(call: Callable[[], object]) -> float:
    """The lecture's benchmark(): one warm-up, then the mean of 3 synchronized time.time() trials."""
    call()
    torch.cuda.synchronize()
    times = []
    for _ in range(3):
        start = time.time()
        call()
        torch.cuda.synchronize()
        times.append((time.time() - start) * 1000)
    return statistics.mean(times)


def events_per_call(call: Callable[[], object]) -> float:
    for _ in range(10):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(100):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return float(statistics.median(times))


def triton_do_bench(call: Callable[[], object]) -> float:
    import triton.testing

    return float(triton.testing.do_bench(call, return_mode="median"))


def triton_do_bench_cudagraph(call: Callable[[], object]) -> float:
    import triton.testing

    return float(triton.testing.do_bench_cudagraph(call, return_mode="median"))


def torch_blocked_autorange(call: Callable[[], object]) -> float:
    import torch.utils.benchmark as tbench

    timer = tbench.Timer(stmt="call()", globals={"call": call})
    return float(timer.blocked_autorange(min_run_time=0.2).median * 1e3)


def kernel_bench_device_time(call: Callable[[], object]) -> float:
    """The median of the samples of one measurement, with kernel_bench's default settings."""
    timing = AutoTimer().measure(Target(call, fingerprint("cuda")), Settings().plan())
    return timing.device_time.summary.median_ms


METHODS: dict[str, Measure] = {
    "lecture benchmark()": lecture_benchmark,
    "events per call": events_per_call,
    "triton do_bench": triton_do_bench,
    "do_bench_cudagraph": triton_do_bench_cudagraph,
    "torch blocked_autorange": torch_blocked_autorange,
    "kernel_bench": kernel_bench_device_time,
}

PYTEST_BENCHMARK_MODULE = """
import pytest
import torch
from example_kernels.gelu import pytorch_gelu, triton_gelu

KERNELS = {"triton": triton_gelu, "pytorch": pytorch_gelu}

@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize("log2", SIZES)
def test_gelu(benchmark, kernel, log2):
    x = torch.randn(1 << log2, device="cuda")
    fn = KERNELS[kernel]
    def run():
        fn(x)
        torch.cuda.synchronize()  # pytest-benchmark reads a host clock
    benchmark(run)
"""


def pytest_benchmark(sizes: list[int], repeats: int) -> dict[tuple[str, int], tuple[list[float], float]]:
    """Medians from pytest-benchmark (one pytest process per repeat) and wall seconds per benchmark."""
    out: dict[tuple[str, int], tuple[list[float], float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        module = Path(tmp) / "test_pb.py"
        module.write_text(textwrap.dedent(PYTEST_BENCHMARK_MODULE).replace("SIZES", repr(sizes)))
        walls = []
        for repeat in range(repeats):
            report = Path(tmp) / f"pb{repeat}.json"
            began = time.perf_counter()
            command = [sys.executable, "-m", "pytest", str(module), "-q", "-p", "no:kernelperf"]
            command += ["-p", "no:cacheprovider", f"--benchmark-json={report}", f"--rootdir={tmp}"]
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            subprocess.run(command, check=True, cwd=ROOT, env=env, capture_output=True)
            walls.append(time.perf_counter() - began)
            for bench in json.loads(report.read_text())["benchmarks"]:
                key = (bench["params"]["kernel"], bench["params"]["log2"])
                out.setdefault(key, ([], 0.0))[0].append(bench["stats"]["median"] * 1e3)
        per_benchmark = statistics.median(walls) / (len(KERNELS) * len(sizes))
        return {key: (medians, per_benchmark) for key, (medians, _) in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--sizes", default="16,20,24,28", help="log2 of the element counts")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "out")))
    parser.add_argument("--skip-pytest-benchmark", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    device = fingerprint("cuda")
    rows: list[dict[str, Any]] = []
    pb = {} if args.skip_pytest_benchmark else pytest_benchmark(sizes, args.repeats)
    for kernel, fn in KERNELS.items():
        for log2 in sizes:
            x = torch.randn(1 << log2, device="cuda")

            def call(fn: Callable[[torch.Tensor], torch.Tensor] = fn, x: torch.Tensor = x) -> object:
                return fn(x)

            truth = cupti_kernel_ms(call)
            results: dict[str, tuple[list[float], list[float]]] = {}
            for name, measure in METHODS.items():
                medians, walls = [], []
                for _ in range(args.repeats):
                    began = time.perf_counter()
                    medians.append(measure(call))
                    walls.append(time.perf_counter() - began)
                results[name] = (medians, walls)
            if (kernel, log2) in pb:
                medians, wall = pb[(kernel, log2)]
                results["pytest-benchmark (+sync)"] = (medians, [wall])
            for name, (medians, walls) in results.items():
                center = statistics.median(medians)
                rows.append(
                    {
                        "kernel": kernel,
                        "log2_elements": log2,
                        "method": name,
                        "cupti_us": truth * 1e3,
                        "median_ms": center,
                        "ratio": center / truth,
                        "spread": (max(medians) - min(medians)) / center,
                        "wall_s": statistics.median(walls),
                        "medians_ms": medians,
                    }
                )
            print(f"{kernel} 2^{log2}: CUPTI {truth * 1e3:.2f} us", flush=True)
    stamp = time.strftime("%Y-%m-%d", time.gmtime())
    meta = {"device": device.name, "environment": device.environment, "date": stamp, "repeats": args.repeats}
    (args.out / "accuracy.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    table = render(rows, meta)
    (args.out / "accuracy.md").write_text(table)
    print(table)


def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    env = meta["environment"]
    lines = [
        f"Timing accuracy on {meta['device']} (torch {env.get('torch')}, triton {env.get('triton')}, "
        f"CUDA {env.get('cuda')}, driver {env.get('driver')}), {meta['date']}, {meta['repeats']} repeats.",
        "ratio: median over repeats / CUPTI kernel time; spread: (max-min)/median over repeats; "
        "wall: seconds per measurement.",
        "",
        "| kernel | elements | CUPTI kernel | method | ratio | spread | wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['kernel']} | 2^{row['log2_elements']} | {row['cupti_us']:.2f} us | {row['method']} | "
            f"{row['ratio']:.3f}x | {row['spread'] * 100:.2f}% | {row['wall_s']:.3f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
