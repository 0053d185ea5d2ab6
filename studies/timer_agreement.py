"""How the three timers agree on one kernel across sizes, on a GPU.

CUPTI and CUDA-graph replay time the kernel on the device; CUDA events around each call (the host
latency timer) also hold the launch path: the host's time from the start event to the kernel's
arrival, a fixed cost per call. This prints, per size of a tanh-GELU, each method's median over
REPEATS measurements and the events' excess over CUPTI, the figure tests/test_gpu.py bounds.

    python studies/timer_agreement.py OUT_DIR
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import torch

from pytest_kernelperf.measure.device import fingerprint
from pytest_kernelperf.measure.timing import CudaEventTimer, CudaGraphTimer, CuptiTimer, Target
from pytest_kernelperf.testing import sampling_plan

SIZES = (1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 26)
REPEATS = 5


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for elements in SIZES:
        x = torch.randn(elements, device="cuda")
        target = Target(lambda x=x: torch.nn.functional.gelu(x, approximate="tanh"), fingerprint("cuda"))
        medians: dict[str, list[float]] = {}
        for _ in range(REPEATS):
            for timer in (CudaEventTimer(), CudaGraphTimer(), CuptiTimer()):
                timing = timer.measure(target, sampling_plan(max_time_s=0.3))
                medians.setdefault(timer.method, []).append(timing.device_time.summary.median_ms)
        row = {"elements": elements, **{m: statistics.median(v) for m, v in medians.items()}, "all": medians}
        row["event_excess_us"] = (row["cuda-event"] - row["cupti"]) * 1e3
        row["graph_over_cupti"] = row["cuda-graph"] / row["cupti"]
        rows.append(row)
        print(
            f"2^{elements.bit_length() - 1}: cupti {row['cupti']:.5f} ms, graph {row['cuda-graph']:.5f}, "
            f"events {row['cuda-event']:.5f}; events - cupti {row['event_excess_us']:.1f} us, "
            f"graph / cupti {row['graph_over_cupti']:.4f}",
            flush=True,
        )
    (out / "timer_agreement.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
