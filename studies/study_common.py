"""What the study drivers share: running pytest in a subprocess, reading its JSON and JUnit files,
time budgets, and writing results as they come (a run cut short keeps what it measured).

The standard library and the plugin's own package (run files are read through its one gateway,
`pytest_kernelperf.results.runfile`; files are written with its atomic write), so that the drivers
run on the GPU machine as they are.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_kernelperf.atomic import write_atomic
from pytest_kernelperf.results import runfile

REPO = Path(__file__).resolve().parents[1]
SUITE = "studies/real_kernels"
# Verdicts that are judgements against a baseline (the others say why there was none).
JUDGED = ("same", "slower", "faster")


def out_dir(explicit: str | None = None) -> Path:
    folder = Path(explicit or os.environ.get("OUT") or "out")
    folder.mkdir(parents=True, exist_ok=True)
    return folder.resolve()


def study_folders(args: argparse.Namespace, name: str) -> tuple[Path, Path, Path, Path, str | None]:
    """(out, $OUT/<name>, the private baseline folder, the artefacts folder, the temporary folder to
    remove at the end or None) of a study: its own baselines and artefacts, so it touches no checkout."""
    out = out_dir(args.out)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    baselines = Path(args.baseline_dir).resolve() if args.baseline_dir else folder / "baselines"
    if args.artifacts_dir:
        return out, folder, baselines, Path(args.artifacts_dir).resolve(), None
    temporary = tempfile.mkdtemp(prefix=f"kernelperf-{name}-")
    return out, folder, baselines, Path(temporary), temporary


def common_arguments(parser: argparse.ArgumentParser, default_budget_s: float) -> None:
    parser.add_argument("--out", help="output folder (default: $OUT, else ./out)")
    parser.add_argument(
        "--budget-s",
        type=float,
        default=default_budget_s,
        help="wall-time budget in seconds: no new pytest process starts after it (default %(default)s)",
    )
    parser.add_argument(
        "--pytest-args",
        default="",
        help="extra pytest arguments for every process, as one shell-quoted string",
    )
    parser.add_argument("--suite", default=SUITE, help="test path given to pytest (default %(default)s)")
    parser.add_argument(
        "--python", default=sys.executable, help="Python that runs pytest (default: this one)"
    )
    parser.add_argument(
        "--process-timeout-s",
        type=float,
        default=400.0,
        help="a pytest process running longer is killed and recorded as timed out (default %(default)s)",
    )
    parser.add_argument(
        "--grace-s",
        type=float,
        default=90.0,
        help="a process may run this long past the budget before it is killed, so that the driver "
        "ends within budget + grace (default %(default)s)",
    )


class Budget:
    """A wall-time budget counted from its creation."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.start = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def left(self) -> float:
        return self.seconds - self.elapsed()

    def expired(self) -> bool:
        return self.left() <= 0


def process_timeout(args: argparse.Namespace, budget: Budget) -> float:
    """How long the next process may run: --process-timeout-s, cut to what is left of the budget
    plus --grace-s."""
    return float(max(1.0, min(args.process_timeout_s, budget.left() + args.grace_s)))


class Log:
    """A text log written line by line and flushed at once, safe to share between threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")

    def write(self, text: str, echo: bool = False) -> None:
        with self._lock, self.path.open("a") as handle:
            handle.write(text if text.endswith("\n") else text + "\n")
            handle.flush()
        if echo:
            print(text, flush=True)


@dataclass
class ProcessRun:
    label: str
    argv: list[str]
    env: dict[str, str]
    rc: int | None
    wall_s: float
    timed_out: bool
    stdout: str
    json_path: Path | None
    junit_path: Path | None
    started_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def summary_line(self) -> str:
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        return lines[-1].strip("= ") if lines else ""


def pytest_command(
    python: str, targets: Sequence[str], options: Sequence[str], passthrough: str
) -> list[str]:
    return [python, "-m", "pytest", *targets, "-p", "no:cacheprovider", *options, *shlex.split(passthrough)]


def run_pytest(
    label: str,
    argv: list[str],
    env_extra: Mapping[str, str],
    timeout_s: float,
    json_path: Path | None = None,
    junit_path: Path | None = None,
    clock: Budget | None = None,
    cwd: Path = REPO,
) -> ProcessRun:
    """Run one pytest process (in the repository root unless `cwd`); its output is kept, never
    shown live."""
    env = dict(os.environ)
    env.update(env_extra)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("COLUMNS", "200")
    started = clock.elapsed() if clock else 0.0
    for stale in [*(json_files(json_path) if json_path else []), *([junit_path] if junit_path else [])]:
        stale.unlink(missing_ok=True)  # a file left by an earlier study in the same folder
    t0 = time.monotonic()
    # A session of its own, so that on a timeout the whole group (pytest-xdist workers too) is killed.
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        stdout, _ = process.communicate(timeout=max(timeout_s, 1.0))
        rc: int | None = process.returncode
        timed_out = False
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        stdout, _ = process.communicate()
        stdout = (stdout or "") + f"\n[killed after {timeout_s:.0f} s]\n"
        rc = None
        timed_out = True
    return ProcessRun(
        label=label,
        argv=argv,
        env=dict(env_extra),
        rc=rc,
        wall_s=round(time.monotonic() - t0, 2),
        timed_out=timed_out,
        stdout=stdout,
        json_path=json_path,
        junit_path=junit_path,
        started_s=round(started, 2),
    )


def run_pytest_into(
    folder: Path, label: str, argv: Sequence[str], env: Mapping[str, str], budget: Budget
) -> ProcessRun:
    """`python -m pytest ARGV` in the repository root within what is left of `budget`, its run JSON
    at FOLDER/LABEL.json and its output at FOLDER/LABEL.log; one line said when it ends."""
    json_path = folder / f"{label}.json"
    command = [sys.executable, "-m", "pytest", *argv, f"--kernelperf-json={json_path}"]
    run = run_pytest(label, command, env, budget.left(), json_path=json_path, clock=budget, cwd=REPO)
    (folder / f"{label}.log").write_text(run.stdout, encoding="utf-8")
    print(f"{label}: rc {run.rc} in {run.wall_s:.0f} s", flush=True)
    return run


def json_files(path: Path) -> list[Path]:
    """The run file, or under pytest-xdist the workers' files beside it (`run.gw0.json`, ...)."""
    if path.exists():
        return [path]
    return sorted(path.parent.glob(f"{path.stem}.gw*{path.suffix}"))


def load_run(path: Path | None) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """The results of a run (all workers), and the node ids each worker ran ("main" without xdist)."""
    results: list[dict[str, Any]] = []
    workers: dict[str, list[str]] = {}
    if path is None:
        return results, workers
    for file in json_files(path):
        try:
            document = runfile.read(file).current
        except runfile.RunFileError:  # not a run file (or a damaged one): not a worker's results
            continue
        worker = (document.get("environment") or {}).get("xdist_worker") or "main"
        for entry in document.get("results") or []:
            result = {**entry, "_worker": worker}
            results.append(result)
            workers.setdefault(worker, []).append(str(result.get("nodeid")))
    return results, workers


WORKER_LINE = re.compile(
    r"^\[(gw\d+)\]\s+(?:\[\s*\d+%\]\s+)?(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b(.*)$"
)


def workers_from_output(stdout: str) -> dict[str, str]:
    """Node id -> pytest-xdist worker, from the `[gw0] [ 50%] PASSED (...) nodeid` lines of `-v` output
    (the plugin may put its verdicts in parentheses before the node id)."""
    found: dict[str, str] = {}
    for line in stdout.splitlines():
        match = WORKER_LINE.match(line)
        if not match:
            continue
        tokens = [token for token in match.group(3).split() if "::" in token or token.endswith(".py")]
        if tokens:
            found.setdefault(tokens[-1], match.group(1))
    return found


def result_key(result: Mapping[str, Any]) -> str:
    name = result.get("name")
    return f"{result.get('nodeid')}::{name}" if name else str(result.get("nodeid"))


def junit_outcomes(path: Path | None) -> dict[str, dict[str, Any]]:
    """Per node id, from JUnit XML: outcome (passed, failed, error, skipped), the failure message,
    and the test's recorded properties (`record_property`: the matmul's autotuned config, ...)."""
    found: dict[str, dict[str, Any]] = {}
    if path is None or not path.exists():
        return found
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return found
    for case in root.iter("testcase"):
        classname = case.get("classname", "")
        nodeid = classname.replace(".", "/") + ".py::" + case.get("name", "")
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                # The element text holds the whole report (the plugin's message attribute is cut
                # to a few lines); for an error it is the traceback, whose end matters most.
                message = (child.text or "").strip() or child.get("message") or ""
                if len(message) > 4000:
                    message = message[:1500] + "\n...\n" + message[-2500:]
                break
        # The test's own properties; the plugin's (`kernelperf.*`: verdicts, medians) are in the run JSON.
        properties = {
            name: prop.get("value", "")
            for prop in case.iter("property")
            if (name := prop.get("name", "")) and not name.startswith("kernelperf.")
        }
        if nodeid in found and found[nodeid]["outcome"] != "passed":
            continue  # keep a call failure over a passing teardown
        found[nodeid] = {"outcome": outcome, "message": message, "properties": properties}
    return found


def ratio_of(result: Mapping[str, Any]) -> float | None:
    comparison = result.get("comparison") or {}
    ratio = comparison.get("ratio")
    return float(ratio) if isinstance(ratio, (int, float)) else None


def level_ms(result: Mapping[str, Any]) -> float | None:
    """A result's device-time level, the figure judged."""
    device_time = result.get("device_time") or {}
    value = device_time.get("level_ms")
    return float(value) if isinstance(value, (int, float)) else None


def spread(values: Iterable[float]) -> dict[str, float] | None:
    data = sorted(values)
    if not data:
        return None
    return {
        "min": round(data[0], 5),
        "median": round(statistics.median(data), 5),
        "max": round(data[-1], 5),
        "n": len(data),
    }


def verdict_counts(results: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    return dict(sorted(Counter(str(r.get("verdict")) for r in results).items()))


def write_json(path: Path, document: Any) -> None:
    """Write atomically: a reader never sees half a file."""
    write_atomic(path, json.dumps(document, indent=2, sort_keys=False, default=str) + "\n")


def write_text(path: Path, text: str) -> None:
    write_atomic(path, text)


def run_files(folder: Path, pattern: str = "run-*.json") -> list[tuple[Path, dict[str, Any]]]:
    """The run files under `folder`, in name order, each read and checked by the package's gateway:
    a damaged or foreign file stops the analysis with its name and field."""
    return [(path, runfile.read(path).current) for path in sorted(folder.rglob(pattern))]


def short_stdout(run: ProcessRun, max_lines: int = 400) -> str:
    """The process's output for the shared log: a header line, then at most max_lines lines (the
    first 40 and the last ones)."""
    lines = run.stdout.splitlines()
    if len(lines) > max_lines:
        lines = [
            *lines[:40],
            f"... ({len(lines) - max_lines} lines left out) ...",
            *lines[-(max_lines - 40) :],
        ]
    env = " ".join(f"{key}={value}" for key, value in sorted(run.env.items()))
    head = (
        f"===== {run.label}: rc={run.rc} wall={run.wall_s:.1f}s{' TIMED OUT' if run.timed_out else ''}\n"
        f"$ {env + ' ' if env else ''}{shlex.join(run.argv)}"
    )
    return head + "\n" + "\n".join(lines) + "\n"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    def cell(value: object) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def gpu_env(gpu: str | None) -> dict[str, str]:
    return {} if gpu is None or gpu == "" else {"CUDA_VISIBLE_DEVICES": gpu}


def split_list(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]
