#!/usr/bin/env python3
"""Recording cost: a suite recorded at the defaults against one judging run of it, on a GPU.

The target (docs/measurement.md, "What recording costs"): recording a suite at the defaults
(`--kernelperf-update-baselines`, `--kernelperf-record-processes auto`) takes at most 3x the wall
time of one judging run of it (`--kernelperf`) in fresh processes, and a later recording process
costs no more than a judging run. The study runs, one process at a time, each with
`--kernelperf-durations=0` and a run JSON:

1. `warm-up`: the suite timed once against no baselines (every verdict `new`, nothing written), so
   that Triton's, inductor's and the CUDA extensions' caches hold the suite's kernels as a timed run
   keeps them (a recording on a fresh machine otherwise pays the compilation a judging run then
   finds cached); `--no-warm-up` leaves it out;
2. `record`: the suite recorded at the defaults into a private baseline folder;
3. `judge-1` .. `judge-N` (`--judges`, default 2): the suite judged against those baselines.

It prints, and writes to OUT/recording_cost.md and OUT/recording_cost.json: each process's wall
time; the recording's per-process table (each recording process's tests, wall, start-up,
collection, tests, and its kernel_bench phases: first call, warm-up, rounds, memory, profile,
judge, baseline I/O), which tests a third process recorded and why, the judging runs' phases and
seconds per judged measurement; and the ratio of the recording's wall to the median judging
run's, against the target of 3. Everything stays under OUT (baselines, artefacts, logs); nothing
needs the network. About 2-4 minutes on an H200 for the scoring suite (21 tests, 40 measurements);
no new process starts after `--budget-s` (default 300 s), and each is killed past the budget plus
`--grace-s`.

    python studies/recording_cost.py /tmp/recording_cost
    python studies/recording_cost.py /tmp/recording_cost --suite studies/real_kernels --judges 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_kernelperf.results import runfile
from studies.study_common import (
    REPO,
    Budget,
    ProcessRun,
    markdown_table,
    process_timeout,
    pytest_command,
    run_pytest,
    write_json,
    write_text,
)

SUITE = "studies/scoring_kernels"
TARGET_RATIO = 3.0
TABLE_TITLE = "recording processes (seconds;"
CHOICE = "recording process for "


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="folder for the baselines, artefacts, logs and summary")
    parser.add_argument("--suite", default=SUITE, help="test path given to pytest (default %(default)s)")
    parser.add_argument("--judges", type=int, default=2, help="judging runs after the recording (default 2)")
    parser.add_argument(
        "--no-warm-up", action="store_true", help="record without the untimed check run first"
    )
    parser.add_argument(
        "--budget-s", type=float, default=300.0, help="no process starts after this (default 300)"
    )
    parser.add_argument(
        "--grace-s", type=float, default=40.0, help="a process may run this long past the budget"
    )
    parser.add_argument(
        "--process-timeout-s", type=float, default=300.0, help="the longest one process may run"
    )
    parser.add_argument(
        "--python", default=sys.executable, help="the Python that runs pytest (default: this one)"
    )
    parser.add_argument("--pytest-args", default="", help="extra pytest arguments, one shell-quoted string")
    return parser.parse_args(argv)


def recording_table(stdout: str) -> list[dict[str, str]]:
    """The durations section's table of recording processes (results/cost.recording_lines), one
    dict per process keyed by the column titles."""
    lines = stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(TABLE_TITLE)), None)
    if start is None or start + 1 >= len(lines):
        return []
    # Titles of two words ("first call", "baseline I/O") are joined as the table prints them.
    header = (
        lines[start + 1].replace("first call", "first_call").replace("baseline I/O", "baseline_io").split()
    )
    rows = []
    for line in lines[start + 2 :]:
        cells = line.split()
        if len(cells) != len(header) or not cells[0].isdigit():
            break
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


def run_cost(run: ProcessRun) -> dict[str, Any] | None:
    """The run JSON's cost_s (the run's phases, its calls' phases, seconds per judged measurement)."""
    if run.json_path is None or not run.json_path.exists():
        return None
    try:
        cost = runfile.read(run.json_path).data.get("cost_s")
    except runfile.RunFileError:
        return None
    return cost if isinstance(cost, dict) else None


class Study:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = args.out.resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        self.baselines = self.out / "baselines"
        self.budget = Budget(args.budget_s)
        self.runs: list[ProcessRun] = []

    def run(self, label: str, options: list[str]) -> ProcessRun | None:
        if self.budget.expired():
            print(f"{label}: not started, the {self.args.budget_s:.0f} s budget is spent", flush=True)
            return None
        json_path = self.out / f"{label}.json"
        common = [
            f"--kernelperf-baseline-dir={self.baselines}",
            f"--kernelperf-artifacts={self.out / 'artifacts'}",
            "--kernelperf-durations=0",
            f"--kernelperf-json={json_path}",
        ]
        argv = pytest_command(self.args.python, [self.args.suite], [*options, *common], self.args.pytest_args)
        timeout = process_timeout(self.args, self.budget)
        done = run_pytest(
            label, argv, {"PYTHONPATH": str(REPO)}, timeout, json_path=json_path, clock=self.budget
        )
        write_text(self.out / f"{label}.log", done.stdout)
        print(
            f"{label}: rc {done.rc}, {done.wall_s:.1f} s wall{' (timed out)' if done.timed_out else ''}",
            flush=True,
        )
        self.runs.append(done)
        return done

    def main(self) -> int:
        if not self.args.no_warm_up:
            self.run("warm-up", ["--kernelperf"])  # against no baselines yet: compiles and caches
        record = self.run("record", ["--kernelperf-update-baselines"])
        judges = [
            run for i in range(self.args.judges) if (run := self.run(f"judge-{i + 1}", ["--kernelperf"]))
        ]
        summary = self.summary(record, judges)
        write_json(self.out / "recording_cost.json", summary)
        text = self.markdown(summary)
        write_text(self.out / "recording_cost.md", text)
        print(text)
        return 0 if record is not None and record.rc == 0 and judges else 1

    def summary(self, record: ProcessRun | None, judges: list[ProcessRun]) -> dict[str, Any]:
        judge_walls = [run.wall_s for run in judges if not run.timed_out]
        judge_wall = statistics.median(judge_walls) if judge_walls else None
        record_wall = record.wall_s if record is not None and not record.timed_out else None
        stdout = record.stdout if record is not None else ""
        return {
            "suite": self.args.suite,
            "command": " ".join(sys.argv),
            "walls_s": {run.label: run.wall_s for run in self.runs},
            "return_codes": {run.label: run.rc for run in self.runs},
            "record_processes": recording_table(stdout),
            "processes_chosen": [
                line.strip() for line in stdout.splitlines() if CHOICE in line and "tests" in line
            ],
            "record_cost_s": run_cost(record) if record is not None else None,
            "judge_cost_s": {run.label: run_cost(run) for run in judges},
            "record_wall_s": record_wall,
            "judge_wall_s": judge_wall,
            "ratio": round(record_wall / judge_wall, 2) if record_wall and judge_wall else None,
            "target_ratio": TARGET_RATIO,
        }

    @staticmethod
    def markdown(summary: dict[str, Any]) -> str:
        lines = [f"# Recording cost: {summary['suite']}", "", f"`{summary['command']}`", ""]
        lines += [
            markdown_table(
                ("process", "wall s", "rc"),
                ((label, wall, summary["return_codes"][label]) for label, wall in summary["walls_s"].items()),
            ),
            "",
        ]
        table = summary["record_processes"]
        if table:
            header = list(table[0])
            lines += ["Recording processes (the recording's --kernelperf-durations):", ""]
            lines += [markdown_table(header, ([row[h] for h in header] for row in table)), ""]
        lines += [f"- {line}" for line in summary["processes_chosen"]] or [
            "- no third recording process chosen"
        ]
        for label, cost in summary["judge_cost_s"].items():
            if cost:
                calls = cost.get("calls") or {}
                lines.append(
                    f"- {label}: {cost.get('total')} s wall, first calls {calls.get('first_call')} s, rounds "
                    f"{calls.get('rounds')} s, {cost.get('per_judged_measurement')} s per judged measurement"
                )
        ratio = summary["ratio"]
        verdict = "n/a" if ratio is None else ("within" if ratio <= TARGET_RATIO else "BEYOND")
        lines += [
            "",
            f"recording {summary['record_wall_s']} s / judging {summary['judge_wall_s']} s (median) = "
            f"{ratio}x: {verdict} the target of {TARGET_RATIO:g}x",
        ]
        return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(Study(parse_args()).main())
