"""Whether tests that allocate and free gigabytes before a kernel move its level.

On H200s (verdict studies of 2026-12-01..03, six cards), the scoring suite's torch transpose read
+3.2% after studies/churn's tests on every card, and +1.7% in reverse or shuffled order, while the
rounds drew fresh placements. The rounds now give the allocator's cache back to the driver before
they start (measure/placement.py); this study checks that on the kernels concerned:

1. `record`: the memory-bound tests (transpose, copy, saxpy) recorded in one fresh process;
2. then fresh processes judge them, alternating: alone (`plain`), after the churn tests (`churn`),
   and in reverse order (`reverse`).

Each run's JSON lands under OUT/churn_placement/ as it finishes; the summary (summary.txt) gives
each kernel's level per schedule against the recording, in percent.

    python studies/churn_placement.py --out OUT --budget-s 150     # on a GPU
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_kernelperf.results import runfile
from studies.study_common import Budget, run_pytest_into

FILES = ["studies/scoring_kernels/test_sk_memory.py", "studies/scoring_kernels/test_sk_cuda_cpp.py"]
CHURN = "studies/churn"
SCHEDULES = {
    "plain": ([*FILES], {}),
    "churn": ([CHURN, *FILES], {}),
    "reverse": ([*FILES], {"KERNELPERF_STUDY_ORDER": "reverse"}),
}


def levels(path: Path) -> dict[str, float]:
    """Each judged kernel's mean round against its baseline's, in percent."""
    out = {}
    for result in runfile.load(path).results:
        if result.comparison is not None and result.comparison.ratio is not None:
            out[result.label] = 100 * (result.comparison.ratio - 1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out")
    parser.add_argument("--budget-s", type=float, default=150)
    args = parser.parse_args()
    budget = Budget(args.budget_s)
    folder = Path(args.out).resolve() / "churn_placement"
    folder.mkdir(parents=True, exist_ok=True)
    baselines = folder / "baselines"
    common = ["-p", "no:cacheprovider", "-q", "-rs", f"--kernelperf-baseline-dir={baselines}"]

    def one(label: str, argv: list[str], env: dict[str, str]) -> Path:
        run = run_pytest_into(folder, label, [*argv, *common], env, budget)
        assert run.json_path is not None
        return run.json_path

    one("record", [*FILES, "--kernelperf-update-baselines"], {})
    seen: dict[tuple[str, str], list[float]] = defaultdict(list)
    index = 0
    while budget.left() > 45:
        name = ("plain", "churn", "reverse")[index % 3]
        argv, env = SCHEDULES[name]
        path = one(f"{index:02d}_{name}", [*argv, "--kernelperf"], env)
        index += 1
        if path.exists():
            for label, percent in levels(path).items():
                seen[(label, name)].append(percent)
        lines = [
            f"{label:60s} {name:8s} mean {statistics.mean(values):+6.2f}%  "
            f"runs {json.dumps([round(v, 2) for v in values])}"
            for (label, name), values in sorted(seen.items())
        ]
        (folder / "summary.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print((folder / "summary.txt").read_text() if seen else "nothing judged", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
