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
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_kernelperf.plugins.compile_caches import shared_caches
from pytest_kernelperf.plugins.items import uses_kernel_bench
from pytest_kernelperf.plugins.role import ISOLATED_NODEID, ISOLATED_OUTPUT
from pytest_kernelperf.settings import OPTIONS

NODEID_VARIABLE = ISOLATED_NODEID
OUTPUT_VARIABLE = ISOLATED_OUTPUT
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def child_target() -> tuple[str, Path] | None:
    """(node id, output file) when this process is an isolated test's child."""
    nodeid = os.environ.get(NODEID_VARIABLE)
    output = os.environ.get(OUTPUT_VARIABLE)
    return (nodeid, Path(output)) if nodeid and output else None


def forwarded_options(config: pytest.Config, extra: Sequence[str] = ()) -> list[str]:
    """The kernelperf options of this run, and the plugin and ini overrides a child needs."""
    args: list[str] = []
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
    env = child_environment()
    env[NODEID_VARIABLE] = nodeid
    env[OUTPUT_VARIABLE] = str(output)
    return env


def child_environment() -> dict[str, str]:
    """This process's environment, with which a child loads this very plugin, even when it was
    imported from a source tree, and finds the kernels this process compiled (compile_caches.py)."""
    env = dict(os.environ) | shared_caches(os.environ, Path.cwd())
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
        # Where the parent started: a relative path given on its command line means the same here.
        done = run_child(
            command(config, Path(item.path), extra),
            config.invocation_params.dir,
            environment(item.nodeid, output),
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


def run_child(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A child pytest process to its end: no input, its output and errors together as text."""
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        check=False,
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


class IsolatedChild:
    """In a child: run only the parent's test, and keep its reports for the parent."""

    def __init__(self, config: pytest.Config, nodeid: str) -> None:
        self.config = config
        self.nodeid = nodeid
        self.reports: list[dict[str, Any]] = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        others = [item for item in items if item.nodeid != self.nodeid]
        if others:
            config.hook.pytest_deselected(items=others)
        items[:] = [item for item in items if item.nodeid == self.nodeid]

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.nodeid == self.nodeid:
            data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
            if data is not None:
                self.reports.append(data)


class IsolatingParent:
    """In the main process: run each kernel_bench test in a child, replay its reports and hand its
    payload to `absorb`."""

    def __init__(
        self,
        config: pytest.Config,
        absorb: Callable[[Any, str], None],
        progress: Callable[[str], AbstractContextManager[None]] = lambda what: nullcontext(),
    ) -> None:
        self.config = config
        self.absorb = absorb
        self.progress = progress  # a child that runs long is said on the terminal (progress.py)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
        if not uses_kernel_bench(item):
            return None
        with self.progress(f"{item.nodeid} in a fresh process"):
            child = run(self.config, item)
        reports = [
            self.config.hook.pytest_report_from_serializable(config=self.config, data=data)
            for data in child.reports
        ]
        reports = [report for report in reports if report is not None]
        if child.payload is not None:
            self.absorb(child.payload, f"isolated {item.nodeid}")
        if not reports:
            message = (
                crash_message(child)
                if child.payload is None
                else f"{item.nodeid} was not run by its isolated process; its output:\n{child.output_tail}"
            )
            reports = [failure_report(item, message)]
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        for report in reports:
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True
