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
    rows: list[dict[str, object]] = []
    for elements in SIZES:
        x = torch.randn(elements, device="cuda")

        def gelu(x: torch.Tensor = x) -> torch.Tensor:
            return torch.nn.functional.gelu(x, approximate="tanh")

        target = Target(gelu, fingerprint("cuda"))
        medians: dict[str, list[float]] = {}
        for _ in range(REPEATS):
            for timer in (CudaEventTimer(), CudaGraphTimer(), CuptiTimer()):
                timing = timer.measure(target, sampling_plan(max_time_s=0.3))
                medians.setdefault(timer.method, []).append(timing.device_time.summary.median_ms)
        median = {method: statistics.median(values) for method, values in medians.items()}
        excess_us = (median["cuda-event"] - median["cupti"]) * 1e3
        graph_over_cupti = median["cuda-graph"] / median["cupti"]
        rows.append(
            {
                "elements": elements,
                **median,
                "all": medians,
                "event_excess_us": excess_us,
                "graph_over_cupti": graph_over_cupti,
            }
        )
        print(
            f"2^{elements.bit_length() - 1}: cupti {median['cupti']:.5f} ms, "
            f"graph {median['cuda-graph']:.5f}, "
            f"events {median['cuda-event']:.5f}; events - cupti {excess_us:.1f} us, "
            f"graph / cupti {graph_over_cupti:.4f}",
            flush=True,
        )
    (out / "timer_agreement.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
