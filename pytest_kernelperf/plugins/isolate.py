"""--kernelperf-isolate: each test that uses kernel_bench runs in a fresh Python process.

A kernel that faults on the device (an illegal memory access) leaves its process's CUDA context
unusable. In its own process it takes only itself down: the parent runs `python -m pytest <module>`
with the test's node id in the environment; the child deselects every other test, runs that one
with the same kernelperf options, and writes its test reports (pytest's own serializable form, as
pytest-xdist sends them) and its kernelperf results and staged baseline entries to a JSON file.
The parent replays the reports, so the test passes, fails or errors there as it did in the child,
and merges the results, so that the summary table and the baseline update see every test. A child
that dies without a result (a segfault, os._exit) is reported as that test's failure, with the
exit code and the end of its output.

Each child pays for a Python start, imports and CUDA initialisation (seconds): isolation is for
kernels under development and for GPU CI runs that must survive a faulting kernel.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_kernelperf.settings import OPTIONS

NODEID_VARIABLE = "KERNELPERF_ISOLATE_NODEID"
OUTPUT_VARIABLE = "KERNELPERF_ISOLATE_OUTPUT"
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def child_target() -> tuple[str, Path] | None:
    """(node id, output file) when this process is an isolated test's child."""
    nodeid = os.environ.get(NODEID_VARIABLE)
    output = os.environ.get(OUTPUT_VARIABLE)
    return (nodeid, Path(output)) if nodeid and output else None


def forwarded_options(config: pytest.Config, extra: Sequence[str] = ()) -> list[str]:
    """The kernelperf options of this run, and the plugin and ini overrides a child needs."""
    args: list[str] = []
    if config.getoption("kernelperf"):
        args.append("--kernelperf")
    if config.getoption("kernelperf_update_baselines"):
        args.append("--kernelperf-update-baselines")
    for option in OPTIONS:
        value = config.getoption(f"kernelperf_{option.field}")
        if value is None or value is False:
            continue
        args.append(option.cli_name if option.flag else f"{option.cli_name}={value}")
    args.extend(extra)
    given = list(config.invocation_params.args)
    skip = False
    for index, arg in enumerate(given):
        if skip:
            skip = False
        elif arg in _WITH_VALUE:
            if index + 1 < len(given):
                args += [arg, given[index + 1]]
                skip = True
        elif arg.startswith(("-p", "-o", "-W")) and not arg.startswith("--"):
            args.append(arg)  # -pNAME
        elif arg.startswith(tuple(f"{name}=" for name in _WITH_VALUE if name.startswith("--"))):
            args.append(arg)
    return args


# Options of pytest itself that change how a test module is loaded or run.
_WITH_VALUE = ("-p", "-o", "--override-ini", "-W", "--pythonwarnings", "--import-mode")


def command(config: pytest.Config, module: Path, extra: Sequence[str] = ()) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", str(module), "-q", "-p", "no:cacheprovider"]
    cmd += [f"--rootdir={config.rootpath}"]
    if config.inipath is not None:
        cmd += ["-c", str(config.inipath)]
    if config.pluginmanager.hasplugin("xdist"):
        cmd += ["-n", "0"]  # the child runs one test; an `-n` in addopts must not spawn workers
    return cmd + forwarded_options(config, extra)


def environment(nodeid: str, output: Path) -> dict[str, str]:
    env = dict(os.environ)
    env[NODEID_VARIABLE] = nodeid
    env[OUTPUT_VARIABLE] = str(output)
    # The child must load this very plugin, even when it was imported from a source tree.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_PACKAGE_ROOT), env.get("PYTHONPATH")) if p)
    return env


@dataclass
class ChildRun:
    nodeid: str
    returncode: int
    output_tail: str
    reports: list[dict[str, Any]]
    payload: dict[str, Any] | None

    def describe_exit(self) -> str:
        if self.returncode < 0:
            try:
                return f"killed by {signal.Signals(-self.returncode).name}"
            except ValueError:
                return f"killed by signal {-self.returncode}"
        return f"exit code {self.returncode}"


def run(config: pytest.Config, item: pytest.Item, extra: Sequence[str] = ()) -> ChildRun:
    """Run `item` alone in a child process; what it reported, or how it died."""
    with tempfile.TemporaryDirectory(prefix="kernelperf-isolate-") as folder:
        output = Path(folder) / "result.json"
        done = subprocess.run(
            command(config, Path(item.path), extra),
            cwd=config.rootpath,
            env=environment(item.nodeid, output),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            check=False,
        )
        data: dict[str, Any] | None = None
        if output.exists():
            try:
                data = json.loads(output.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = None
    tail = "\n".join(done.stdout.splitlines()[-40:])
    return ChildRun(
        nodeid=item.nodeid,
        returncode=done.returncode,
        output_tail=tail,
        reports=[_tuples_back(report) for report in data.get("reports", [])] if data else [],
        payload=data.get("payload") if data else None,
    )


def write_child_output(path: Path, reports: list[dict[str, Any]], payload: dict[str, Any]) -> None:
    path.write_text(json.dumps({"reports": reports, "payload": payload}), encoding="utf-8")


def failure_report(item: pytest.Item, message: str) -> pytest.TestReport:
    """A failed call report for a test whose child gave no reports of its own."""
    return pytest.TestReport(
        nodeid=item.nodeid,
        location=item.location,
        keywords=dict.fromkeys(item.keywords, 1),
        outcome="failed",
        longrepr=message,
        when="call",
    )


def crash_message(child: ChildRun) -> str:
    return (
        f"the isolated process of {child.nodeid} ended without a result ({child.describe_exit()}); "
        f"the test's kernel crashed its process. Last output:\n{child.output_tail}"
    )


def _tuples_back(report: dict[str, Any]) -> dict[str, Any]:
    """JSON turned the (path, line, reason) longrepr of a skip into a list; pytest wants a tuple."""
    if isinstance(report.get("longrepr"), list):
        report["longrepr"] = tuple(report["longrepr"])
    return report
