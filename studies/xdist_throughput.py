#!/usr/bin/env python3
"""Throughput study: wall time of the suite with and without pytest-xdist, and where it goes.

Runs the suite (optionally K copies of every test, KERNELPERF_STUDY_REPEAT=K: with K=2 the suite has
44 tests and 80 measurements) under each worker count of `--workers` (default `0,2`), `--repeat`
times, with `--kernelperf` against an empty private baseline folder (every verdict `new`; nothing
is written). Per process it records the wall time; per worker (from the plugin's per-worker JSON
files and `--durations=0`) the tests run, the setup and call durations, and the part of the call
time spent inside kernelperf measurements (`wall_s` of each result; the rest of a call is inputs,
the checked first call, compilation and autotuning). `python -X importtime` of `import torch` and
`import triton` is recorded once.

    OUT=out python3 studies/xdist_throughput.py --copies 2 --workers 0,2 --budget-s 300

Writes under $OUT (default ./out): xdist/<label>.json (+ .gwN.json under xdist) and .log,
xdist/importtime_*.txt, xdist_summary.json and xdist_summary.md (rewritten after every process).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studies.study_common import (
    REPO,
    Budget,
    Log,
    common_arguments,
    load_run,
    markdown_table,
    out_dir,
    process_timeout,
    pytest_command,
    run_pytest,
    short_stdout,
    split_list,
    verdict_counts,
    workers_from_output,
    write_json,
    write_text,
)

DURATION = re.compile(r"^\s*([0-9.]+)s\s+(setup|call|teardown)\s+(\S.*?)\s*$")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    common_arguments(parser, default_budget_s=300.0)
    parser.add_argument("--workers", default="0,2", help="comma-separated -n values (default %(default)s)")
    parser.add_argument("--copies", type=int, default=1, help="KERNELPERF_STUDY_REPEAT: copies of every test")
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds over all worker counts (default %(default)s)"
    )
    parser.add_argument(
        "--mode",
        choices=["compare", "check"],
        default="compare",
        help="compare: --kernelperf against an empty baseline folder (timed); check: no timing at all",
    )
    return parser.parse_args(argv)


def durations(stdout: str) -> dict[str, dict[str, float]]:
    """Per node id, the seconds of setup, call and teardown from `--durations=0 --durations-min=0`."""
    found: dict[str, dict[str, float]] = defaultdict(dict)
    inside = False
    for line in stdout.splitlines():
        if "slowest durations" in line:
            inside = True
            continue
        if inside:
            match = DURATION.match(line)
            if match:
                found[match.group(3)][match.group(2)] = float(match.group(1))
            elif line.startswith("="):
                inside = False
    return dict(found)


def import_time(python: str, module: str, out: Path) -> dict[str, Any]:
    """Cumulative import time of `module` (python -X importtime) and the wall time of a bare import."""
    t0 = time.monotonic()
    done = subprocess.run(
        [python, "-X", "importtime", "-c", f"import {module}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - t0
    (out / f"importtime_{module}.txt").write_text(done.stderr)
    cumulative = None
    heaviest: list[tuple[int, str]] = []
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) != 3 or not line.startswith("import time:"):
            continue
        try:
            total = int(parts[1].strip())
        except ValueError:
            continue
        name = parts[2].rstrip()
        if name.strip() == module:
            cumulative = total
        if name.startswith("  ") and not name.startswith("   "):  # direct children of the top level
            heaviest.append((total, name.strip()))
    heaviest.sort(reverse=True)
    return {
        "module": module,
        "rc": done.returncode,
        "wall_s": round(wall, 3),
        "cumulative_s": round(cumulative / 1e6, 3) if cumulative is not None else None,
        "heaviest_children_s": [(name, round(us / 1e6, 3)) for us, name in heaviest[:8]],
    }


class Study:
    def timeout(self) -> float:
        return process_timeout(self.args, self.budget)

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = out_dir(args.out)
        self.folder = self.out / "xdist"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.budget = Budget(args.budget_s)
        self.log = Log(self.folder / "pytest.log")
        self.scratch = tempfile.TemporaryDirectory(prefix="kernelperf-xdist-")
        self.imports: list[dict[str, Any]] = []
        self.runs: list[dict[str, Any]] = []
        self.not_started: list[str] = []

    def one(self, label: str, workers: str) -> dict[str, Any]:
        json_path = self.folder / f"{label}.json"
        scratch = Path(self.scratch.name)
        mode = (
            ["--kernelperf", f"--kernelperf-json={json_path}", f"--kernelperf-baseline-dir={scratch / label}"]
            if self.args.mode == "compare"
            else []
        )
        argv = pytest_command(
            self.args.python,
            [self.args.suite],
            ["-n", workers, "-v", "--durations=0", "--durations-min=0", *mode,
             f"--kernelperf-artifacts={scratch / 'artifacts'}"],
            self.args.pytest_args,
        )  # fmt: skip
        env = {"KERNELPERF_STUDY_REPEAT": str(self.args.copies), "KERNELPERF_STUDY_ORDER": "forward"}
        run = run_pytest(label, argv, env, self.timeout(), json_path if mode else None, None, self.budget)
        (self.folder / f"{label}.log").write_text(run.stdout)
        self.log.write(short_stdout(run, max_lines=80))
        results, _ = load_run(json_path if mode else None)
        times = durations(run.stdout)
        worker_of = workers_from_output(run.stdout)
        measuring: dict[str, float] = defaultdict(float)
        for result in results:
            nodeid = str(result.get("nodeid"))
            wall = result.get("wall_s")
            if isinstance(wall, (int, float)):
                measuring[nodeid] += float(wall)
        per_worker: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for nodeid, phases in times.items():
            worker = worker_of.get(nodeid, "main" if workers == "0" else "unknown")
            entry = per_worker[worker]
            entry["tests"] += 1 if "call" in phases else 0
            for phase in ("setup", "call", "teardown"):
                entry[f"{phase}_s"] += phases.get(phase, 0.0)
            entry["measuring_s"] += measuring.get(nodeid, 0.0)
        for entry in per_worker.values():
            entry["call_outside_measuring_s"] = entry["call_s"] - entry["measuring_s"]
        tests_time = sum(sum(phases.values()) for phases in times.values())
        row = {
            "label": label,
            "workers": int(workers),
            "copies": self.args.copies,
            "rc": run.rc,
            "wall_s": run.wall_s,
            "timed_out": run.timed_out,
            "tests": sum(1 for phases in times.values() if "call" in phases),
            "sum_of_test_durations_s": round(tests_time, 2),
            # Wall time not explained by test durations shared evenly over the workers: start-up,
            # collection, worker start, teardown of the session.
            "wall_minus_test_time_per_worker_s": round(run.wall_s - tests_time / max(1, int(workers)), 2),
            "verdicts": verdict_counts(results),
            "per_worker": {
                worker: {key: round(value, 2) for key, value in sorted(entry.items())}
                for worker, entry in sorted(per_worker.items())
            },
            "slowest_setups": sorted(
                ((phases.get("setup", 0.0), nodeid) for nodeid, phases in times.items()), reverse=True
            )[:5],
            "pytest": run.summary_line(),
        }
        print(f"{label}: rc={run.rc} {run.wall_s:.1f}s, {row['tests']} tests, {row['verdicts']}", flush=True)
        return row

    def run_all(self) -> None:
        for module in ("torch", "triton"):
            self.imports.append(import_time(self.args.python, module, self.folder))
            print(f"import {module}: {self.imports[-1]['cumulative_s']} s (importtime)", flush=True)
        self.write_summary()
        for round_number in range(1, max(1, self.args.repeat) + 1):
            for workers in split_list(self.args.workers):
                label = f"n{workers}_k{self.args.copies}_r{round_number:02d}"
                if self.budget.expired():
                    self.not_started.append(label)
                    continue
                self.runs.append(self.one(label, workers))
                self.write_summary()
        self.write_summary(final=True)
        self.scratch.cleanup()

    def write_summary(self, final: bool = False) -> None:
        document = {
            "study": "xdist-throughput",
            "final": final,
            "settings": {
                "workers": self.args.workers,
                "copies": self.args.copies,
                "repeat": self.args.repeat,
                "mode": self.args.mode,
                "budget_s": self.args.budget_s,
                "pytest_args": self.args.pytest_args,
                "suite": self.args.suite,
            },
            "elapsed_s": round(self.budget.elapsed(), 1),
            "imports": self.imports,
            "runs": self.runs,
            "not_started": self.not_started,
        }
        write_json(self.out / "xdist_summary.json", document)
        lines = [
            "# Throughput with and without pytest-xdist\n",
            "imports: "
            + ", ".join(f"{i['module']} {i['cumulative_s']} s (wall {i['wall_s']} s)" for i in self.imports)
            + "\n",
        ]
        rows = [
            [
                r["label"],
                r["workers"],
                r["rc"],
                r["tests"],
                r["wall_s"],
                r["sum_of_test_durations_s"],
                r["pytest"],
            ]
            for r in self.runs
        ]
        lines.append(
            markdown_table(["run", "-n", "rc", "tests", "wall s", "sum of test durations s", "pytest"], rows)
        )
        lines.append("\n## Per worker\n")
        rows = [
            [r["label"], worker, int(entry.get("tests", 0)), entry.get("setup_s"), entry.get("call_s"),
             entry.get("measuring_s"), entry.get("call_outside_measuring_s")]
            for r in self.runs
            for worker, entry in r["per_worker"].items()
        ]  # fmt: skip
        header = ["run", "worker", "tests", "setup s", "call s", "measuring s", "call outside measuring s"]
        lines.append(markdown_table(header, rows))
        write_text(self.out / "xdist_summary.md", "\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    study = Study(args)
    study.run_all()
    print(f"wrote {study.out / 'xdist_summary.json'} and xdist_summary.md", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
