"""The pytest side of a run that must stay correct through workers, faults and stale baselines.

One Reliability object per pytest process, registered as a plugin by plugin.pytest_configure:

* pytest-xdist: workers never write baseline files. At the end of its session a worker puts its
  results, staged entries, collected test ids and GPU use into `config.workeroutput`; the
  controller merges them in `pytest_testnodedown`, then writes the files and prints the table
  once. The xdist hooks are optional, so the plugin works without xdist installed.
* GPU pinning and locking (gpu.py); sticky CUDA errors (faults.py); `--kernelperf-isolate`
  (isolate.py), whose children report to their parent the way workers report to the controller.
* Unused entries: entries of the baseline files of the modules that ran whose test id was not
  collected at all; reported, and removed only with `--kernelperf-prune` during an update.
* `--kernelperf-require-gpu`: without a usable CUDA device, kernel_bench tests error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from pytest_kernelperf.baselines.unused import split_nodeid, unused_tests
from pytest_kernelperf.baselines.yaml_io import BaselineError
from pytest_kernelperf.measure import gpu
from pytest_kernelperf.measure.faults import FaultGuard, Poison
from pytest_kernelperf.measure.timing import Timer
from pytest_kernelperf.plugins import isolate
from pytest_kernelperf.plugins.session import KernelperfSession
from pytest_kernelperf.results import transport
from pytest_kernelperf.settings import Settings

KERNEL_BENCH = "kernel_bench"
PAYLOAD_KEY = "kernelperf"
PAYLOAD_FORMAT = 1
PRUNE_HINT = "remove them with `pytest --kernelperf-update-baselines --kernelperf-prune`"


def uses_kernel_bench(item: pytest.Item) -> bool:
    return KERNEL_BENCH in getattr(item, "fixturenames", ())


def missing_gpu() -> str | None:
    """Why no CUDA device is usable here, or None when one is."""
    try:
        from pytest_kernelperf.measure.device import cuda_usable

        if cuda_usable():
            return None
        why = "torch.cuda.is_available() is False"
    except ImportError as exc:
        why = f"PyTorch cannot be imported: {exc}"
    except Exception as exc:  # a broken driver raises from CUDA's initialisation
        why = f"CUDA failed to start: {type(exc).__name__}: {exc}"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return (
        f"--kernelperf-require-gpu is set but no CUDA device is usable here ({why}; "
        f"CUDA_VISIBLE_DEVICES={'<unset>' if visible is None else repr(visible)}): a GPU job that "
        "lost its GPU must not pass"
    )


class Reliability:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.prune = bool(config.getoption("kernelperf_prune"))
        self.isolate = bool(config.getoption("kernelperf_isolate"))
        self.require_gpu = bool(config.getoption("kernelperf_require_gpu"))
        if self.prune and not settings.update:
            raise pytest.UsageError(
                "pytest-kernelperf: --kernelperf-prune removes unused baseline entries during an update; "
                "add --kernelperf-update-baselines (without it, unused entries are only reported)"
            )
        self.faults = FaultGuard()
        self.usage = gpu.GpuUsage()
        self.pinned: str | None = None  # the GPU this process (or its isolated children) pinned
        self.child = isolate.child_target()
        self.is_worker = hasattr(config, "workerinput")
        self.collected: list[str] = []
        self.kernel_modules: set[str] = set()  # modules with selected kernel_bench tests
        self.unused: dict[Path, list[str]] = {}
        self.notes: list[str] = []
        self.gpu_lines: list[dict[str, Any]] = []  # from workers and isolated children
        self.refused: str | None = None
        self._child_reports: list[dict[str, Any]] = []
        self._absorbed = False
        self._seen_workers: set[str] = set()
        self._state: KernelperfSession | None = None

    # --- wiring ------------------------------------------------------------------------------

    def attach(self, state: KernelperfSession) -> None:
        self._state = state

    @property
    def state(self) -> KernelperfSession:
        assert self._state is not None, "Reliability.attach was not called"
        return self._state

    def wrap_timer(self, timer: Timer) -> Timer:
        return gpu.LockedTimer(timer, self.settings.artifacts, self.usage)

    def guard(self, nodeid: str) -> Callable[[Callable[..., Any], str | None], AbstractContextManager[None]]:
        def around(fn: Callable[..., Any], name: str | None) -> AbstractContextManager[None]:
            return self.faults.around_call(nodeid, fn, name)

        return around

    @property
    def exporting(self) -> bool:
        """Results go to another process (the xdist controller, or an isolated test's parent)."""
        return self.is_worker or self.child is not None

    # --- collection --------------------------------------------------------------------------

    @pytest.hookimpl
    def pytest_itemcollected(self, item: pytest.Item) -> None:
        self.collected.append(item.nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if self.child is None:
            return
        nodeid = self.child[0]
        others = [item for item in items if item.nodeid != nodeid]
        if others:
            config.hook.pytest_deselected(items=others)
        items[:] = [item for item in items if item.nodeid == nodeid]

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        selected = [item for item in session.items if uses_kernel_bench(item)]
        self.kernel_modules = {split_nodeid(item.nodeid)[0] for item in selected}
        runs_kernels_here = selected and not (self.isolate and self.child is None)
        if runs_kernels_here and gpu.worker_id() is not None:
            self._pin()

    def _pin(self) -> None:
        try:
            choice = gpu.pin(gpu.worker_id())
        except ImportError:
            return  # no torch: kernel_bench says so in each test
        except Exception as exc:  # CUDA failing to start must not stop the session here
            self.notes.append(f"could not pin {gpu.worker_id()} to a GPU: {type(exc).__name__}: {exc}")
            return
        self.pinned = choice.describe() if choice is not None else None

    # --- each test ---------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if not uses_kernel_bench(item):
            return
        if self.require_gpu:
            problem = missing_gpu()
            if problem:
                pytest.fail(problem, pytrace=False)
        if self.faults.poisoned is not None:
            pytest.fail(self.faults.poisoned.not_measured_message(), pytrace=False)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
        if not self.isolate or self.child is not None or not uses_kernel_bench(item):
            return None
        child = isolate.run(self.config, item)
        reports = [
            self.config.hook.pytest_report_from_serializable(config=self.config, data=data)
            for data in child.reports
        ]
        reports = [report for report in reports if report is not None]
        if child.payload is not None:
            self.absorb(child.payload, origin=f"isolated {item.nodeid}")
        if not reports:
            message = (
                isolate.crash_message(child)
                if child.payload is None
                else f"{item.nodeid} was not run by its isolated process; its output:\n{child.output_tail}"
            )
            reports = [isolate.failure_report(item, message)]
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        for report in reports:
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "call" and uses_kernel_bench(item):
            poison = self.faults.after_test(item.nodeid)
            if poison is not None:
                if report.passed:
                    report.outcome = "failed"
                    report.longrepr = poison.fault_message()
                else:
                    report.sections.append(("kernelperf: CUDA context poisoned", poison.fault_message()))
        return report

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.child is not None and report.nodeid == self.child[0]:
            data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
            if data is not None:
                self._child_reports.append(data)

    # --- the end -----------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Generator[None, None, None]:
        state = self.state
        if self.exporting:
            state.blocked = "results are written by the pytest-xdist controller or the parent process"
            payload = self.payload()
            if self.child is not None:
                isolate.write_child_output(self.child[1], self._child_reports, payload)
            else:
                self.config.workeroutput[PAYLOAD_KEY] = payload  # type: ignore[attr-defined]
        else:
            poison = self.faults.poisoned
            if poison is not None and self.settings.update:
                self.refused = poison.refusal()
                state.blocked = self.refused
            if self.settings.timing:
                self.find_unused()
            if self.prune and state.blocked is None:
                state.remove = {path: set(tests) for path, tests in self.unused.items()}
            if self._absorbed:
                order = {nodeid: index for index, nodeid in enumerate(dict.fromkeys(self.collected))}
                state.results.sort(key=lambda result: order.get(result.nodeid, len(order)))
        return (yield)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        """pytest-xdist, on the controller: a worker finished (or died)."""
        name = str(getattr(getattr(node, "gateway", None), "id", "a worker"))
        if name in self._seen_workers:
            return
        self._seen_workers.add(name)
        payload = (getattr(node, "workeroutput", None) or {}).get(PAYLOAD_KEY)
        if payload is None:
            if error is not None:
                self.notes.append(
                    f"worker {name} died ({error}): its kernelperf results and entries are lost"
                )
            return
        self.absorb(payload, origin=f"worker {name}")

    def payload(self) -> dict[str, Any]:
        state = self.state
        poison = self.faults.poisoned
        return {
            "format": PAYLOAD_FORMAT,
            "worker": gpu.worker_id(),
            "pid": os.getpid(),
            "results": transport.results_to_data(state.results),
            "staged": transport.staged_to_data(state.store.staged, self.settings.baseline_dir),
            "collected": self.collected if self.child is None else [],
            "kernel_modules": sorted(self.kernel_modules),
            "poisoned": transport.encode(poison) if poison is not None else None,
            "gpus": self.gpu_summary(),
            "notes": self.notes,
        }

    def absorb(self, payload: dict[str, Any], origin: str) -> None:
        """Merge what another process (an xdist worker, an isolated child) measured."""
        if not isinstance(payload, dict) or payload.get("format") != PAYLOAD_FORMAT:
            self.notes.append(f"{origin}: kernelperf data of another plugin version, ignored")
            return
        state = self.state
        try:
            results = transport.results_from_data(payload.get("results", []))
            staged = transport.staged_from_data(payload.get("staged", []), self.settings.baseline_dir)
            poison = transport.decode(Poison, payload["poisoned"]) if payload.get("poisoned") else None
        except (transport.TransportError, KeyError, TypeError) as exc:
            self.notes.append(f"{origin}: unreadable kernelperf data ({exc}), ignored")
            return
        self._absorbed = True
        state.results.extend(results)
        entries = sum(len(found) for found in staged.values())
        if poison is not None:
            if entries and self.settings.update:
                self.notes.append(f"{origin}: {entries} baseline entries not written: {poison.refusal()}")
        else:
            for path, found in staged.items():
                for key, entry in found.items():
                    state.store.stage(path, key, entry)
        self.collected.extend(payload.get("collected", []))
        self.kernel_modules.update(payload.get("kernel_modules", []))
        self.notes.extend(f"{origin}: {note}" for note in payload.get("notes", []))
        self._absorb_gpus(payload.get("gpus", []), isolated=origin.startswith("isolated"))

    # --- unused entries ----------------------------------------------------------------------

    def narrowed_modules(self) -> set[str] | None:
        """Modules that a `path::test` argument narrowed, so that not all their tests were collected;
        None where an argument cannot be mapped to a module (--pyargs)."""
        narrowed = set()
        for arg in self.config.args:
            if "::" not in arg:
                continue
            if self.config.getoption("pyargs", False):
                return None
            target = (self.config.invocation_params.dir / arg.split("::")[0]).resolve()
            narrowed.add(Path(os.path.relpath(target, self.config.rootpath)).as_posix())
        return narrowed

    def find_unused(self) -> None:
        narrowed = self.narrowed_modules()
        if narrowed is None:
            self.notes.append("unused baseline entries not checked: --pyargs with a test id")
            return
        collected: dict[str, set[str]] = {}
        for nodeid in self.collected:
            module, test = split_nodeid(nodeid)
            collected.setdefault(module, set()).add(test)
        for module in sorted(self.kernel_modules - narrowed):
            path = self.state.store.path_for(module)
            try:
                entries = self.state.store.entries(path)
            except BaselineError:
                continue  # its tests already failed with the error
            unused = unused_tests((key.test for key in entries), collected.get(module, set()))
            if unused:
                self.unused[path] = unused

    # --- GPUs ----------------------------------------------------------------------------------

    def gpu_summary(self) -> list[dict[str, Any]]:
        names = {r.device_index: r.device for r in self.state.results if r.device_index is not None}
        devices = [
            {
                "index": index,
                "name": names.get(index, "?"),
                "measurements": count,
                "lock_waits": self.usage.lock_waits.get(index, 0),
                "lock_wait_s": round(self.usage.lock_wait_s.get(index, 0.0), 3),
            }
            for index, count in sorted(self.usage.measurements.items())
        ]
        if not devices and self.pinned is None:
            return []
        return [
            {
                "process": gpu.worker_id() or "main",
                "pinned": self.pinned,
                "devices": devices,
            }
        ]

    def _absorb_gpus(self, lines: list[dict[str, Any]], isolated: bool) -> None:
        if not isolated:
            self.gpu_lines.extend(lines)
            return
        for line in lines:  # an isolated child measured for this process: count it as ours
            for device in line.get("devices", []):
                index = int(device["index"])
                self.usage.measurements[index] += int(device["measurements"])
                self.usage.lock_waits[index] += int(device["lock_waits"])
                waited = float(device["lock_wait_s"])
                self.usage.lock_wait_s[index] = self.usage.lock_wait_s.get(index, 0.0) + waited
            if self.pinned is None and line.get("pinned"):
                self.pinned = str(line["pinned"])

    # --- the summary ---------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.exporting:
            return
        for title, lines in self.summary():
            terminalreporter.section(title)
            for line in lines:
                terminalreporter.write_line(line)

    def summary(self) -> Iterator[tuple[str, list[str]]]:
        if self.unused:
            pruned = self.prune and self.state.blocked is None
            lines = []
            for path, tests in sorted(self.unused.items()):
                verb = "removed" if pruned else "unused"
                lines.append(f"{path}: {len(tests)} {verb} (tests not collected in this run):")
                lines.extend(f"  {test}" for test in tests)
            if not pruned:
                lines.append(f"These tests no longer exist; {PRUNE_HINT}.")
            yield "kernelperf unused baselines", lines
        processes = sorted([*self.gpu_lines, *self.gpu_summary()], key=_process_order)
        gpu_lines = [_gpu_line(line) for line in processes]
        if gpu_lines:
            yield "kernelperf GPUs", gpu_lines
        trouble = list(self.notes)
        if self.refused:
            trouble.insert(0, f"baselines NOT updated: {self.refused}")
        if trouble:
            yield "kernelperf warnings", trouble


def _gpu_line(line: dict[str, Any]) -> str:
    text = str(line.get("process", "?"))
    if line.get("pinned"):
        text += f" pinned to {line['pinned']}"
    parts = []
    for device in line.get("devices", []):
        part = f"{device['measurements']} measured on cuda:{device['index']} ({device['name']})"
        if device.get("lock_waits"):
            part += f", waited {device['lock_waits']}x for its lock ({device['lock_wait_s']:.2f} s)"
        parts.append(part)
    return text + (": " + "; ".join(parts) if parts else ": nothing measured")


def _process_order(line: dict[str, Any]) -> tuple[int, str]:
    name = str(line.get("process", ""))
    return (int(name[2:]), name) if name.startswith("gw") and name[2:].isdigit() else (-1, name)
