"""Whether rounds sample where a kernel's buffers land physically, or only within a process.

Each round copies the arguments to fresh memory behind random pads (measure/placement.py), but the
pads share one 20 MiB allocator segment, and a round's memory goes back to the driver when the next
round starts; if the driver then hands out the same physical pages, every round of a process reads
the same L2 slices and DRAM channels, and the process's level moves by what its pages are worth
(on GPU-612fe3e2, 2026-12-03, an NVRTC SAXPY over 48 MiB ranged 0.0119-0.0128 ms between processes,
its rounds within 3%). Here fresh processes alternate between the plugin as it is (`segment`) and
studies/page_pad_plugin.py (`pages`: the large pad is a segment of its own, a random number of
2 MiB pages), measuring the memory-bound and NVRTC tests (no baselines: every round kept in the
JSON), and compare per kernel the round SD within processes with the spread of processes' levels.

    python studies/physical_placement.py --out OUT --budget-s 280     # on a GPU
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_kernelperf.results import runfile
from studies.study_common import Budget, run_pytest_into

FILES = ["studies/scoring_kernels/test_sk_cuda_cpp.py", "studies/scoring_kernels/test_sk_memory.py"]
VARIANTS = {"segment": [], "pages": ["-p", "studies.page_pad_plugin"]}


def rounds_of(path: Path) -> dict[str, list[float]]:
    out = {}
    for result in runfile.load(path).results:
        if result.entry is not None and result.entry.device_time.rounds_ms:
            out[result.label] = list(result.entry.device_time.rounds_ms)
    return out


def summary(seen: dict[tuple[str, str], list[list[float]]]) -> str:
    """Per kernel and variant: processes, the pooled SD of a round within a process, the SD of the
    processes' levels, and that SD less what the rounds explain (all relative, in percent)."""
    lines = [f"{'kernel':62s} {'variant':8s} procs  round SD  level SD  beyond rounds"]
    for (label, variant), processes in sorted(seen.items()):
        logs = [[math.log(r) for r in rounds] for rounds in processes]
        within = [statistics.variance(p) for p in logs if len(p) > 1]
        round_var = statistics.fmean(within) if within else 0.0
        levels = [statistics.fmean(p) for p in logs]
        level_var = statistics.variance(levels) if len(levels) > 1 else 0.0
        per_level = round_var / statistics.fmean(len(p) for p in logs)
        beyond = math.sqrt(max(0.0, level_var - per_level))
        lines.append(
            f"{label[-62:]:62s} {variant:8s} {len(processes):5d}  {100 * math.sqrt(round_var):7.2f}%"
            f"  {100 * math.sqrt(level_var):7.2f}%  {100 * beyond:7.2f}%"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out")
    parser.add_argument("--budget-s", type=float, default=280)
    args = parser.parse_args()
    budget = Budget(args.budget_s)
    folder = Path(args.out).resolve() / "physical_placement"
    folder.mkdir(parents=True, exist_ok=True)
    common = ["-p", "no:cacheprovider", "-q", "--kernelperf", f"--kernelperf-baseline-dir={folder / 'none'}"]
    seen: dict[tuple[str, str], list[list[float]]] = defaultdict(list)
    index = 0
    while budget.left() > 30:
        variant = ("segment", "pages")[index % 2]
        label = f"{index:02d}_{variant}"
        json_path = folder / f"{label}.json"
        run_pytest_into(folder, label, [*FILES, *VARIANTS[variant], *common], {}, budget)
        index += 1
        if json_path.exists():
            for kernel, rounds in rounds_of(json_path).items():
                seen[(kernel, variant)].append(rounds)
            (folder / "summary.txt").write_text(summary(seen), encoding="utf-8")
    print(summary(seen), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
