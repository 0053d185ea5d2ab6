#!/usr/bin/env python3
"""Schedule study: do verdicts depend on how the suite was scheduled when recorded and when judged?

Records baselines once under one schedule (`--record-schedule`, `-n 2` by default), then judges the
unchanged suite under others against the same baselines: one process (`n0`), two pytest-xdist
workers (`n2`), the tests in reverse order (`reverse`, via KERNELPERF_STUDY_ORDER), a shuffled order
(`shuffle:SEED`), and each of a few chosen tests alone (`alone`). torch.compile'd tests, whose
generated code depends on the shapes the process saw before, are the expected casualties.

    OUT=out python3 studies/schedule_study.py --budget-s 480
    OUT=out python3 studies/schedule_study.py --record-schedule n0 --schedules n0,n2,reverse --repeat 2

Schedules: n0, nK (K workers, e.g. n2), reverse (one process), shuffle:SEED (one process),
alone (one process per test of --alone), alone:NODEID_OR_K_EXPRESSION (that one; a -k of its own in
--pytest-args would replace the expression, as pytest keeps the last -k).

Writes under $OUT (default ./out): schedule/record.json, schedule/<schedule>_rNN.json and .xml,
schedule/baselines/, schedule/pytest.log, schedule_summary.json and schedule_summary.md (rewritten
after every process).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studies.study_common import (
    Budget,
    Log,
    common_arguments,
    junit_outcomes,
    level_ms,
    load_run,
    markdown_table,
    process_timeout,
    pytest_command,
    result_key,
    run_pytest,
    short_stdout,
    split_list,
    spread,
    study_folders,
    verdict_counts,
    workers_from_output,
    write_json,
    write_text,
)

# Tests run alone by default: a torch.compile'd test whose shape comes after others (its kernel is the
# dynamic-shape one in a full run, a static one alone), the smallest Triton and cuBLAS measurements.
DEFAULT_ALONE = [
    "studies/real_kernels/test_rk_compiled.py::test_compiled_rmsnorm[bf16-large]",
    "studies/real_kernels/test_rk_compiled.py::test_compiled_softmax[bf16-large]",
    "studies/real_kernels/test_rk_matmul.py::test_matmul[small]",
    "studies/real_kernels/test_rk_vector_add.py::test_vector_add[fp32-small]",
]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    common_arguments(parser, default_budget_s=480.0)
    parser.add_argument(
        "--record-schedule", default="n2", help="schedule of the recording (default %(default)s)"
    )
    parser.add_argument(
        "--schedules",
        default="alone,reverse,n0,n2",
        help="comma-separated schedules to judge under, in this order (default %(default)s: the short "
        "single-test processes first, so that a tight budget still gets them)",
    )
    parser.add_argument(
        "--alone",
        action="append",
        help="a node id (or -k expression) run alone by the 'alone' schedule; repeatable "
        "(default: a compiled RMSNorm, a compiled softmax, the small matmul, the small vector add)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds over all schedules (default %(default)s)"
    )
    parser.add_argument("--baseline-dir", help="private baseline folder (default $OUT/schedule/baselines)")
    parser.add_argument("--artifacts-dir", help="kernelperf artefacts folder (default: a temporary one)")
    parser.add_argument(
        "--skip-record", action="store_true", help="reuse the baselines already in --baseline-dir"
    )
    return parser.parse_args(argv)


def expand(schedules: list[str], alone: list[str]) -> list[str]:
    expanded: list[str] = []
    for schedule in schedules:
        if schedule == "alone":
            expanded += [f"alone:{target}" for target in alone]
        else:
            expanded.append(schedule)
    return expanded


def slug(schedule: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", schedule).strip("_")[:80]


def schedule_options(schedule: str, suite: str) -> tuple[list[str], list[str], dict[str, str]]:
    """(targets, pytest options, environment) for a schedule."""
    order = {"KERNELPERF_STUDY_ORDER": "forward"}
    if re.fullmatch(r"n\d+", schedule):
        return [suite], ["-n", schedule[1:]], order
    if schedule == "reverse":
        return [suite], ["-n", "0"], {"KERNELPERF_STUDY_ORDER": "reverse"}
    if schedule.startswith("shuffle:"):
        return [suite], ["-n", "0"], {"KERNELPERF_STUDY_ORDER": schedule}
    if schedule.startswith("alone:"):
        target = schedule.partition(":")[2]
        if "::" in target or target.endswith(".py"):
            return [target], ["-n", "0"], order
        return [suite], ["-n", "0", "-k", target], order
    raise SystemExit(
        f"unknown schedule {schedule!r}: use n0, nK, reverse, shuffle:SEED, alone or alone:TARGET"
    )


class Study:
    def timeout(self) -> float:
        return process_timeout(self.args, self.budget)

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out, self.folder, self.baselines, self.artifacts, self._temporary = study_folders(
            args, "schedule"
        )
        self.budget = Budget(args.budget_s)
        self.log = Log(self.folder / "pytest.log")
        self.record: dict[str, Any] | None = None
        self.runs: list[dict[str, Any]] = []
        self.not_started: list[str] = []

    def options(self) -> list[str]:
        return [
            f"--kernelperf-baseline-dir={self.baselines}",
            f"--kernelperf-artifacts={self.artifacts}",
            "-v",
            "-rfE",
            "--tb=short",
        ]

    def one(self, label: str, schedule: str, mode: str) -> dict[str, Any]:
        targets, options, env = schedule_options(schedule, self.args.suite)
        json_path = self.folder / f"{label}.json"
        junit = self.folder / f"{label}.xml"
        argv = pytest_command(
            self.args.python,
            targets,
            [*options, mode, f"--kernelperf-json={json_path}", f"--junitxml={junit}", *self.options()],
            self.args.pytest_args,
        )
        run = run_pytest(label, argv, env, self.timeout(), json_path, junit, self.budget)
        self.log.write(short_stdout(run))
        results, _ = load_run(json_path)
        worker_of = workers_from_output(run.stdout)
        workers: dict[str, set[str]] = {}
        for nodeid, worker in worker_of.items():
            workers.setdefault(worker, set()).add(nodeid)
        outcomes = junit_outcomes(junit)
        unusual = []
        for result in results:
            if result.get("verdict") in ("same", "checked"):
                continue
            comparison = result.get("comparison") or {}
            outcome = outcomes.get(str(result.get("nodeid")), {})
            unusual.append(
                {
                    "key": result_key(result),
                    "verdict": result.get("verdict"),
                    "ratio": comparison.get("ratio"),
                    "p_value": comparison.get("p_value"),
                    "reason": comparison.get("reason"),
                    "level_ms": level_ms(result),
                    "baseline_level_ms": (result.get("baseline") or {}).get("level_ms"),
                    "worker": worker_of.get(str(result.get("nodeid")), "main"),
                    "notes": result.get("notes"),
                    "test_outcome": outcome.get("outcome"),
                    "properties": outcome.get("properties", {}),
                    "failure": outcome.get("message", "") if outcome.get("outcome") != "passed" else "",
                }
            )
        failed = {nodeid: o for nodeid, o in outcomes.items() if o["outcome"] in ("failed", "error")}
        row = {
            "label": label,
            "schedule": schedule,
            "mode": mode,
            "rc": run.rc,
            "wall_s": run.wall_s,
            "timed_out": run.timed_out,
            "verdicts": verdict_counts(results),
            "tests_per_worker": {worker: len(ids) for worker, ids in sorted(workers.items())}
            or {"main": len(outcomes)},
            "worker_of": worker_of,
            "properties": {
                nodeid: o["properties"] for nodeid, o in sorted(outcomes.items()) if o["properties"]
            },
            "not_same": unusual,
            "failed_tests": {nodeid: o["message"][:2000] for nodeid, o in sorted(failed.items())},
            "pytest": run.summary_line(),
        }
        print(
            f"{label}: rc={run.rc} {run.wall_s:.1f}s {row['verdicts']}"
            + "".join(
                f"\n    {u['verdict']}: {u['key']} ratio={u['ratio']}"
                for u in unusual
                if u["verdict"] != "new"
            ),
            flush=True,
        )
        return row

    def run_all(self) -> None:
        if self.args.skip_record:
            self.log.write(f"using the baselines already in {self.baselines}", echo=True)
        else:
            if self.baselines.exists():
                shutil.rmtree(self.baselines)
            self.record = self.one("record", self.args.record_schedule, "--kernelperf-update-baselines")
            self.write_summary()
        alone = self.args.alone or DEFAULT_ALONE
        schedules = expand(split_list(self.args.schedules), alone)
        for round_number in range(1, max(1, self.args.repeat) + 1):
            for schedule in schedules:
                label = f"{slug(schedule)}_r{round_number:02d}"
                if self.budget.expired():
                    self.not_started.append(label)
                    continue
                self.runs.append(self.one(label, schedule, "--kernelperf"))
                self.write_summary()
        self.write_summary(final=True)
        if self._temporary:
            shutil.rmtree(self._temporary, ignore_errors=True)

    def write_summary(self, final: bool = False) -> None:
        per_schedule: dict[str, dict[str, Any]] = {}
        for row in self.runs:
            entry = per_schedule.setdefault(
                row["schedule"],
                {"runs": 0, "verdicts": Counter(), "wall_s": [], "failing_runs": 0, "not_same": []},
            )
            entry["runs"] += 1
            entry["verdicts"].update(row["verdicts"])
            entry["wall_s"].append(row["wall_s"])
            entry["failing_runs"] += int(row["rc"] != 0)
            entry["not_same"] += [{"run": row["label"], **item} for item in row["not_same"]]
        schedules = {
            name: {
                "runs": entry["runs"],
                "failing_runs": entry["failing_runs"],
                "verdicts": dict(sorted(entry["verdicts"].items())),
                "wall_s": spread(entry["wall_s"]),
                "not_same": entry["not_same"],
            }
            for name, entry in per_schedule.items()
        }
        document = {
            "study": "schedule",
            "final": final,
            "settings": {
                "record_schedule": self.args.record_schedule,
                "schedules": self.args.schedules,
                "alone": self.args.alone or DEFAULT_ALONE,
                "repeat": self.args.repeat,
                "budget_s": self.args.budget_s,
                "pytest_args": self.args.pytest_args,
                "suite": self.args.suite,
                "baseline_dir": str(self.baselines),
            },
            "elapsed_s": round(self.budget.elapsed(), 1),
            "record": self.record,
            "schedules": schedules,
            "runs": self.runs,
            "not_started": self.not_started,
        }
        write_json(self.out / "schedule_summary.json", document)
        write_text(self.out / "schedule_summary.md", self.markdown(document))

    @staticmethod
    def markdown(document: dict[str, Any]) -> str:
        lines = [
            "# Schedule study: recorded under one schedule, judged under others\n",
            f"recorded with `{document['settings']['record_schedule']}`; elapsed {document['elapsed_s']} s"
            + (f"; not started: {', '.join(document['not_started'])}" if document["not_started"] else "")
            + "\n",
        ]
        record = document["record"]
        if record:
            lines.append(f"record: rc={record['rc']}, {record['wall_s']} s, {record['verdicts']}, "
                         f"tests per worker {record['tests_per_worker']}\n")  # fmt: skip
        verdicts = sorted({v for s in document["schedules"].values() for v in s["verdicts"]})
        rows = []
        for name, entry in document["schedules"].items():
            wall = entry["wall_s"] or {}
            rows.append(
                [name, entry["runs"], entry["failing_runs"], *(entry["verdicts"].get(v, 0) for v in verdicts),
                 wall.get("median", "")]
            )  # fmt: skip
        lines.append(markdown_table(["schedule", "runs", "failing", *verdicts, "wall s (median)"], rows))
        lines.append("\n## Verdicts other than same\n")
        rows = []
        for name, entry in document["schedules"].items():
            for item in entry["not_same"]:
                if item["verdict"] == "new":
                    continue
                failure = (item["failure"] or item["reason"] or "").strip().splitlines()
                rows.append(
                    [name, item["run"], item["key"], item["verdict"], item["ratio"], item["p_value"],
                     failure[0][:160] if failure else ""]
                )  # fmt: skip
        lines.append(
            markdown_table(["schedule", "run", "measurement", "verdict", "ratio", "p", "message"], rows)
        )
        return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    study = Study(args)
    study.run_all()
    print(f"wrote {study.out / 'schedule_summary.json'} and schedule_summary.md", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
