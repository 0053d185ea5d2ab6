#!/usr/bin/env python3
"""A/A study: how often does an unchanged suite get a verdict other than "same"?

Records baselines once into a private folder, then runs N fresh `pytest --kernelperf` processes
against them, J at a time, and counts per measurement (test id + name) the verdicts over the
processes. Every "slower" here is a false alarm: nothing changed between the runs.

    OUT=out python3 studies/aa_study.py --runs 12 --budget-s 480
    OUT=out python3 studies/aa_study.py --runs 16 --jobs 2 --gpus 0,1 --record-gpu 0 --compare-gpus 0,1

Writes under $OUT (default ./out): aa/record.json (the recording run), aa/run_NNN.json and .xml (each
comparison process), aa/baselines/ (the recorded YAML), aa/pytest.log (each process's output,
shortened), aa_summary.json and aa_summary.md (rewritten after every process).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import threading
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studies.study_common import (
    JUDGED,
    Budget,
    Log,
    ProcessRun,
    common_arguments,
    gpu_env,
    junit_outcomes,
    level_ms,
    load_run,
    markdown_table,
    process_timeout,
    pytest_command,
    ratio_of,
    result_key,
    run_pytest,
    short_stdout,
    split_list,
    spread,
    study_folders,
    verdict_counts,
    write_json,
    write_text,
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    common_arguments(parser, default_budget_s=480.0)
    parser.add_argument("--runs", type=int, default=10, help="comparison processes (default %(default)s)")
    parser.add_argument("--jobs", type=int, default=1, help="processes at a time (default %(default)s)")
    parser.add_argument("--gpus", help="comma-separated CUDA_VISIBLE_DEVICES values to spread jobs over")
    parser.add_argument("--record-gpu", help="CUDA_VISIBLE_DEVICES of the recording process")
    parser.add_argument(
        "--compare-gpus", help="comma-separated GPUs for the comparison processes (overrides --gpus)"
    )
    parser.add_argument("--baseline-dir", help="private baseline folder (default $OUT/aa/baselines)")
    parser.add_argument(
        "--artifacts-dir",
        help="kernelperf artefacts folder shared by all processes (default: a temporary one)",
    )
    parser.add_argument(
        "--skip-record", action="store_true", help="reuse the baselines already in --baseline-dir"
    )
    parser.add_argument(
        "--record-args", default="", help="extra pytest arguments for the recording process only"
    )
    return parser.parse_args(argv)


class Study:
    def timeout(self) -> float:
        return process_timeout(self.args, self.budget)

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out, self.folder, self.baselines, self.artifacts, self._temporary = study_folders(args, "aa")
        self.budget = Budget(args.budget_s)
        self.log = Log(self.folder / "pytest.log")
        self.lock = threading.Lock()
        self.record: dict[str, Any] | None = None
        self.runs: list[dict[str, Any]] = []
        self.results: dict[int, list[dict[str, Any]]] = {}
        self.skipped_runs = 0

    # -- processes ---------------------------------------------------------------------------

    def base_options(self) -> list[str]:
        return [
            f"--kernelperf-baseline-dir={self.baselines}",
            f"--kernelperf-artifacts={self.artifacts}",
            "-q",
            "-rfE",
            "--tb=short",
        ]

    def record_baselines(self) -> None:
        if self.args.skip_record:
            self.log.write(f"using the baselines already in {self.baselines}", echo=True)
            return
        if self.baselines.exists():
            shutil.rmtree(self.baselines)
        json_path = self.folder / "record.json"
        junit = self.folder / "record.xml"
        argv = pytest_command(
            self.args.python,
            [self.args.suite],
            [
                "--kernelperf-update-baselines",
                f"--kernelperf-json={json_path}",
                f"--junitxml={junit}",
                *self.base_options(),
            ],
            f"{self.args.pytest_args} {self.args.record_args}",
        )
        gpu = self.args.record_gpu
        run = run_pytest("record", argv, gpu_env(gpu), self.timeout(), json_path, junit, self.budget)
        self.log.write(short_stdout(run))
        results, _ = load_run(json_path)
        self.record = {
            "gpu": gpu,
            "rc": run.rc,
            "wall_s": run.wall_s,
            "timed_out": run.timed_out,
            "verdicts": verdict_counts(results),
            "pytest": run.summary_line(),
        }
        print(
            f"record: rc={run.rc} {run.wall_s:.1f}s {self.record['verdicts']} ({run.summary_line()})",
            flush=True,
        )

    def compare(self, index: int, gpu: str | None) -> None:
        json_path = self.folder / f"run_{index:03d}.json"
        junit = self.folder / f"run_{index:03d}.xml"
        argv = pytest_command(
            self.args.python,
            [self.args.suite],
            ["--kernelperf", f"--kernelperf-json={json_path}", f"--junitxml={junit}", *self.base_options()],
            self.args.pytest_args,
        )
        run = run_pytest(
            f"run_{index:03d}", argv, gpu_env(gpu), self.timeout(), json_path, junit, self.budget
        )
        self.log.write(short_stdout(run))
        results, _ = load_run(json_path)
        self.finish(index, gpu, run, results)

    def finish(self, index: int, gpu: str | None, run: ProcessRun, results: list[dict[str, Any]]) -> None:
        outcomes = junit_outcomes(run.junit_path)
        failed = sorted(nodeid for nodeid, o in outcomes.items() if o["outcome"] in ("failed", "error"))
        slower = sorted(result_key(r) for r in results if r.get("verdict") == "slower")
        row = {
            "run": index,
            "gpu": gpu,
            "rc": run.rc,
            "wall_s": run.wall_s,
            "started_s": run.started_s,
            "timed_out": run.timed_out,
            "verdicts": verdict_counts(results),
            "slower": slower,
            "failed_tests": failed,
            "properties": {
                nodeid: o["properties"] for nodeid, o in sorted(outcomes.items()) if o["properties"]
            },
            "pytest": run.summary_line(),
        }
        with self.lock:
            self.runs.append(row)
            self.results[index] = results
            self.write_summary()
        print(
            f"run {index:03d} gpu={gpu or '-'}: rc={run.rc} {run.wall_s:.1f}s {row['verdicts']}"
            f"{' slower: ' + ', '.join(slower) if slower else ''}",
            flush=True,
        )

    def run_all(self) -> None:
        self.record_baselines()
        gpus = split_list(self.args.compare_gpus) or split_list(self.args.gpus) or [None]  # type: ignore[list-item]
        jobs = max(1, self.args.jobs)
        if jobs > len(gpus):
            # Processes timing on one GPU at once move each other's levels (up to 5.7% on an H200,
            # docs/results/aa_sequential.md): the study would measure that, not the suite's noise.
            print(
                f"warning: {jobs} processes at a time on {len(gpus)} GPU(s): their timings disturb "
                "each other; use --jobs 1 (or one GPU per job) to measure the suite's own noise",
                flush=True,
            )
        next_index = iter(range(1, self.args.runs + 1))
        index_lock = threading.Lock()

        def slot(number: int) -> None:
            gpu = gpus[number % len(gpus)]
            while True:
                with index_lock:
                    if self.budget.expired():
                        return
                    index = next(next_index, None)
                if index is None:
                    return
                self.compare(index, gpu)

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for future in [pool.submit(slot, number) for number in range(jobs)]:
                future.result()
        with self.lock:
            self.skipped_runs = self.args.runs - len(self.runs)
            self.write_summary(final=True)
        if self._temporary:
            shutil.rmtree(self._temporary, ignore_errors=True)

    # -- summary -----------------------------------------------------------------------------

    def write_summary(self, final: bool = False) -> None:
        per_key: dict[str, Counter[str]] = defaultdict(Counter)
        ratios: dict[str, list[float]] = defaultdict(list)
        levels: dict[str, list[float]] = defaultdict(list)
        slower_detail: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for index, results in sorted(self.results.items()):
            for result in results:
                key = result_key(result)
                per_key[key][str(result.get("verdict"))] += 1
                ratio = ratio_of(result)
                if ratio is not None:
                    ratios[key].append(ratio)
                value = level_ms(result)
                if value is not None:
                    levels[key].append(value)
                if result.get("verdict") == "slower":
                    comparison = result.get("comparison") or {}
                    slower_detail[key].append(
                        {"run": index, "ratio": comparison.get("ratio"), "p_value": comparison.get("p_value")}
                    )
        # Recorded test properties (the matmul's autotuned config, ...) over the runs: value -> runs.
        properties: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
        for row in self.runs:
            for nodeid, values in row.get("properties", {}).items():
                for name, value in values.items():
                    properties[nodeid][name][value] += 1
        judged = sum(count for counter in per_key.values() for v, count in counter.items() if v in JUDGED)
        slower = sum(counter["slower"] for counter in per_key.values())
        runs = sorted(self.runs, key=lambda row: int(row["run"]))
        failing = [row["run"] for row in runs if row["rc"] != 0]
        with_slower = [row["run"] for row in runs if row["slower"]]
        walls = [float(row["wall_s"]) for row in runs]
        document = {
            "study": "aa",
            "final": final,
            "settings": {
                "runs_asked": self.args.runs,
                "jobs": self.args.jobs,
                "gpus": self.args.gpus,
                "record_gpu": self.args.record_gpu,
                "compare_gpus": self.args.compare_gpus,
                "budget_s": self.args.budget_s,
                "pytest_args": self.args.pytest_args,
                "suite": self.args.suite,
                "baseline_dir": str(self.baselines),
            },
            "elapsed_s": round(self.budget.elapsed(), 1),
            "record": self.record,
            "totals": {
                "runs": len(runs),
                "runs_not_started": self.skipped_runs if final else None,
                "failing_runs": len(failing),
                "runs_with_slower": len(with_slower),
                "judgements": judged,
                "slower": slower,
                "slower_per_judgement": round(slower / judged, 5) if judged else None,
                "slower_per_run": round(slower / len(runs), 3) if runs else None,
                "verdicts": dict(sum(per_key.values(), Counter())),
                "wall_s_per_process": spread(walls),
            },
            "measurements": {
                key: {
                    "verdicts": dict(sorted(per_key[key].items())),
                    "ratio": spread(ratios[key]),
                    "level_ms": spread(levels[key]),
                    "slower": slower_detail.get(key, []),
                }
                for key in sorted(per_key)
            },
            "properties": {
                nodeid: {name: dict(counter.most_common()) for name, counter in sorted(values.items())}
                for nodeid, values in sorted(properties.items())
            },
            "runs": runs,
        }
        write_json(self.out / "aa_summary.json", document)
        write_text(self.out / "aa_summary.md", self.markdown(document))

    @staticmethod
    def markdown(document: dict[str, Any]) -> str:
        totals = document["totals"]
        verdicts = sorted({v for m in document["measurements"].values() for v in m["verdicts"]})
        lines = [
            "# A/A study: an unchanged suite judged against its own baselines\n",
            f"runs: {totals['runs']} (failing: {totals['failing_runs']}, with a slower verdict: "
            f"{totals['runs_with_slower']}); judgements: {totals['judgements']}, false slower: "
            f"{totals['slower']} ({totals['slower_per_judgement']} per judgement, "
            f"{totals['slower_per_run']} per run); elapsed {document['elapsed_s']} s; "
            f"wall per process {totals['wall_s_per_process']}\n",
        ]
        if document["record"]:
            record = document["record"]
            lines.append(f"record: rc={record['rc']}, {record['wall_s']} s, {record['verdicts']}\n")
        lines.append("## Per measurement\n")
        rows = []
        for key, entry in document["measurements"].items():
            ratio = entry["ratio"] or {}
            rows.append(
                [
                    key,
                    *(entry["verdicts"].get(v, 0) for v in verdicts),
                    ratio.get("min", ""),
                    ratio.get("median", ""),
                    ratio.get("max", ""),
                ]
            )
        lines.append(
            markdown_table(["measurement", *verdicts, "ratio min", "ratio median", "ratio max"], rows)
        )
        if document["properties"]:
            lines.append("\n## Test properties over the runs (value: runs)\n")
            rows = [
                [nodeid, name, "; ".join(f"{value}: {count}" for value, count in counts.items())]
                for nodeid, values in document["properties"].items()
                for name, counts in values.items()
            ]
            lines.append(markdown_table(["test", "property", "values"], rows))
        lines.append("\n## Per process\n")
        rows = [
            [
                row["run"],
                row["gpu"] or "",
                row["rc"],
                row["wall_s"],
                row["verdicts"].get("slower", 0),
                ", ".join(f"{v}={n}" for v, n in row["verdicts"].items()),
                row["pytest"],
            ]
            for row in document["runs"]
        ]
        lines.append(markdown_table(["run", "gpu", "rc", "wall s", "slower", "verdicts", "pytest"], rows))
        return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    study = Study(args)
    study.run_all()
    print(f"wrote {study.out / 'aa_summary.json'} and aa_summary.md", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
