"""One pytest process's part of a kernelperf run: the plugin objects of each concern, and the end
of the session in one explicit order.

Which objects are registered depends on the process's role (role.py), decided once: the main
process judges, writes baselines and reports; an xdist worker or an isolated child measures and
hands its payload over. The end of the session is one function, so that what each step needs
(the poison state, the unused entries, the files written) is passed to it, not left in shared
state for a later hook to find.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import pytest

from pytest_kernelperf.atomic import make_ignored_folder
from pytest_kernelperf.baselines.yaml_io import UnwritableEntry
from pytest_kernelperf.measure.faults import FaultGuard
from pytest_kernelperf.plugins import handoff, isolate, recording
from pytest_kernelperf.plugins.costs import RunCosts
from pytest_kernelperf.plugins.gpus import GpuPlacement, RequireGpu
from pytest_kernelperf.plugins.outcomes import Outcomes
from pytest_kernelperf.plugins.poisoning import PoisonWatch
from pytest_kernelperf.plugins.reporting import Reports
from pytest_kernelperf.plugins.role import RECORD_OUTPUT, Role
from pytest_kernelperf.plugins.session import KernelperfSession
from pytest_kernelperf.plugins.triton_cache import TritonCacheHeld
from pytest_kernelperf.plugins.unused_entries import Findings, UnusedEntries, summary_lines
from pytest_kernelperf.results.cost import ProcessCost, add_up
from pytest_kernelperf.settings import GPU_MOST_RECORD_PROCESSES


class KernelperfRun:
    def __init__(
        self,
        config: pytest.Config,
        session: KernelperfSession,
        role: Role,
        faults: FaultGuard,
        gpus: GpuPlacement,
    ) -> None:
        self.config = config
        self.session = session
        self.settings = session.settings
        self.role = role
        self.faults = faults
        self.gpus = gpus
        self.unused = UnusedEntries(config)
        self.outcomes = Outcomes()
        self.reports = Reports(config, session, self.outcomes)
        self.costs = RunCosts(session)
        self.notes: list[str] = []
        self.child: isolate.IsolatedChild | None = None
        self.findings: Findings | None = None
        self.pruned = False
        self.refused: str | None = None  # why no baseline file was written
        self._absorbed = False
        self._seen_workers: set[str] = set()
        self.processes: list[ProcessCost] = []  # an update's recording processes, for the durations
        self.recording_lines: list[str] = []  # which tests a further recording process chose, and why
        self.unrecorded: set[str] = set()  # tests a later recording process did not record: not written

    def register(self) -> None:
        """Register the plugin objects this process's role needs."""
        manager = self.config.pluginmanager
        manager.register(self, "kernelperf-run")
        manager.register(self.reports, "kernelperf-reports")
        manager.register(self.outcomes, "kernelperf-outcomes")
        manager.register(self.unused, "kernelperf-unused")
        manager.register(self.gpus, "kernelperf-gpus")
        manager.register(PoisonWatch(self.faults), "kernelperf-poisoning")
        manager.register(self.costs, "kernelperf-costs")
        if self.session.progress is not None:
            manager.register(self.session.progress, "kernelperf-progress")
        if self.settings.timing and self.role is Role.MAIN:  # before any worker or child writes there
            make_ignored_folder(self.settings.artifacts)
        if self.settings.timing:
            triton_cache = TritonCacheHeld()
            triton_cache.hold()
            manager.register(triton_cache, "kernelperf-triton-cache")
        if self.settings.require_gpu:
            manager.register(RequireGpu(), "kernelperf-require-gpu")
        if self.role is Role.CHILD:
            target = isolate.child_target()
            assert target is not None
            self.child = isolate.IsolatedChild(self.config, target[0])
            manager.register(self.child, "kernelperf-isolated-child")
        elif self.role is Role.RECORDER:
            nodeids = recording.recorded_tests()
            assert nodeids is not None
            manager.register(recording.RecordingProcess(nodeids), "kernelperf-recording-process")
        elif self.settings.isolate:  # the main process or an xdist worker isolates its tests
            parent = isolate.IsolatingParent(self.config, self.absorb, self._step)
            manager.register(parent, "kernelperf-isolate")

    # --- payloads of other processes ------------------------------------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        """pytest-xdist, on the controller: a worker finished (or died)."""
        name = str(getattr(getattr(node, "gateway", None), "id", "a worker"))
        if name in self._seen_workers:
            return
        self._seen_workers.add(name)
        payload = (getattr(node, "workeroutput", None) or {}).get(handoff.PAYLOAD_KEY)
        if payload is None:
            if error is not None:
                self.notes.append(
                    f"worker {name} died ({error}): its kernelperf results and entries are lost"
                )
            return
        self.absorb(payload, f"worker {name}")

    def absorb(self, data: Any, origin: str) -> None:
        """Merge what another process (an xdist worker, an isolated child) measured."""
        payload = self._decode(data, origin)
        if payload is None:
            return
        self._absorbed = True
        self.session.results.extend(payload.results)
        entries = sum(len(found) for found in payload.staged.values())
        if payload.poisoned is not None:
            if entries and self.settings.update:
                self.notes.append(
                    f"{origin}: {entries} baseline entries not written: {payload.poisoned.refusal()}"
                )
        else:
            for path, found in payload.staged.items():
                for key, entry in found.items():
                    self.session.store.stage(path, key, entry)
        self.unused.absorb(payload.collected, payload.deselected, payload.collect_errors)
        self.notes.extend(f"{origin}: {note}" for note in payload.notes)
        self.gpus.absorb(payload.gpus, isolated=origin.startswith("isolated"))

    def _decode(self, data: Any, origin: str) -> handoff.Payload | None:
        try:
            return handoff.decode(data, self.settings.baseline_dir)
        except handoff.PayloadError as exc:
            self.notes.append(f"{origin}: {exc}, ignored")
            return None

    def record_more_processes(self, say: Callable[[str], AbstractContextManager[None]]) -> None:
        """--kernelperf-record-processes: record the tests again in fresh processes, one after
        another, and add their entries to this process's as further recording processes; with
        auto, the last process records only the tests whose processes so far call for it."""
        settings = self.settings
        wanted = recording.processes_wanted(self.session.results, settings)
        fixed = max(wanted.values(), default=1)
        chooses = settings.chooses_more_processes and fixed > 1
        most = max(fixed, GPU_MOST_RECORD_PROCESSES) if chooses else fixed
        staged = self.session.store.staged
        if most < 2 or not staged:
            return
        self.processes = [self._first_process(len(wanted))]
        with tempfile.TemporaryDirectory(prefix="kernelperf-first-process-") as pins:
            try:
                recording.write_first_process(staged, settings.baseline_dir, Path(pins))
            except UnwritableEntry as exc:  # the update reports it for its file; no later processes
                self.notes.append(f"no further recording processes: {exc}")
                return
            every = sorted(nodeid for nodeid, count in wanted.items() if count > 1)
            for number in range(2, most + 1):
                if number <= fixed:
                    nodeids = sorted(
                        nodeid
                        for nodeid, count in wanted.items()
                        if count >= number and nodeid not in self.unrecorded
                    )
                    what = f"recording process {number} of {'up to ' * chooses}{most} ({len(nodeids)} tests)"
                else:  # auto: the tests whose processes so far call for one more
                    chosen = recording.chosen_for_another(
                        self.session.results, self.session.store, every, settings
                    )
                    self.recording_lines.append(recording.choice_line(number, chosen, len(every)))
                    nodeids = list(chosen)
                    what = f"recording process {number} of {most} ({len(nodeids)} of {len(every)} tests)"
                if not nodeids:
                    break
                self._record_process(number, nodeids, Path(pins), say, what)

    def _first_process(self, tests: int) -> ProcessCost:
        """This process as the first recording process: its own phases and calls, so far."""
        run = self.costs.clock.run_cost()
        wall = run.startup + run.collection + run.tests
        calls = add_up(result.cost for result in self.session.results if result.cost is not None)
        return ProcessCost(1, tests, wall, run, calls)

    def _record_process(
        self,
        number: int,
        nodeids: list[str],
        pins: Path,
        say: Callable[[str], AbstractContextManager[None]],
        what: str,
    ) -> None:
        """One later recording process of `nodeids` (said as `what`): its entries staged as one more
        process of each, its costs kept for --kernelperf-durations."""
        asked = recording.staged_keys(self.session.results, self.session.store, nodeids)
        done = recording.run_process(self.config, nodeids, pins, say, what)
        origin = f"recording process {number}"
        payload = self._decode(done.data, origin) if done.data is not None else None
        results = payload.results if payload is not None else []
        calls = add_up(result.cost for result in results if result.cost is not None)
        cost = payload.cost if payload is not None else None
        self.processes.append(ProcessCost(number, len(nodeids), done.wall_s, cost, calls))
        staged = {} if payload is None or payload.poisoned is not None else payload.staged
        if payload is not None and payload.poisoned is not None:
            self.notes.append(f"{origin}: {payload.poisoned.refusal()}; left out")
        for path, found in staged.items():
            for key, entry in found.items():
                self.session.store.stage_process(path, key, entry)
        if payload is not None:
            self.notes.extend(f"{origin}: {note}" for note in payload.notes)
        given = {(path, key) for path, found in staged.items() for key in found}
        short = recording.shortfall(done, asked, given)
        if short:  # fewer processes than asked: the stored entries stay, and the run fails
            self.recording_lines.append(recording.shortfall_line(number, short, len(nodeids), done.tail))
            self.unrecorded |= set(short)
            for path, key in (found for nodeid in short for found in asked[nodeid]):
                self.session.store.unstage(path, key)

    def payload(self) -> handoff.Payload:
        return handoff.Payload(
            results=list(self.session.results),
            staged=self.session.store.staged,
            poisoned=self.faults.poisoned,
            collected=self.unused.collected if self.role is Role.WORKER else [],
            deselected=self.unused.deselected if self.role is Role.WORKER else 0,
            collect_errors=self.unused.collect_errors if self.role is Role.WORKER else 0,
            gpus=self.gpus.summary(self.session.results),
            notes=[*self.gpus.notes, *self.notes],
            cost=self.costs.clock.run_cost(),
        )

    # --- the end of the session ---------------------------------------------------------------------

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.session.close_history()
        if not self.role.writes:
            self._hand_over()
            return
        settings = self.settings
        poison = self.faults.poisoned
        if poison is not None and settings.update:
            self.refused = poison.refusal()
        findings = self.findings = self.unused.find(self.session.store) if settings.timing else None
        self.pruned = settings.prune and self.refused is None and findings is not None and findings.prunable
        interrupted = session.exitstatus == pytest.ExitCode.INTERRUPTED
        if settings.update and self.refused is None and not interrupted:
            with self.session.clock.phase("recording_processes"):
                self.record_more_processes(lambda what: self._step(what, announce=True))
        if settings.update and self.refused is None:
            remove: dict[Path, set[str]] = {}
            if self.pruned and findings is not None:
                remove = {path: set(tests) for path, tests in findings.entries.items()}
            with self.session.clock.phase("baseline_writes"):
                updates = self.session.write_baselines(remove, interrupted=interrupted)
            if self.pruned:
                self._remove_stale_files()
            failed = self.unrecorded or any(update.error for update in updates)
            if failed and session.exitstatus == pytest.ExitCode.OK:
                # a baseline file could not be written, or a later recording process failed tests
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self._absorbed:
            order = {nodeid: index for index, nodeid in enumerate(dict.fromkeys(self.unused.collected))}
            self.session.results.sort(key=lambda result: order.get(result.nodeid, len(order)))
        if not self.reports.write_files() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def _step(self, what: str, announce: bool = False) -> AbstractContextManager[None]:
        """A step said on the terminal should it run long (at once with `announce`), and how long
        it took."""
        progress = self.session.progress
        return progress.step(what, announce=announce) if progress is not None else nullcontext()

    def _hand_over(self) -> None:
        data = self.payload().encode(self.settings.baseline_dir)
        output = os.environ.get(RECORD_OUTPUT) if self.role is Role.RECORDER else None
        if output:
            recording.hand_back(Path(output), data, self.outcomes.not_passed())
        elif self.child is not None:
            target = isolate.child_target()
            assert target is not None
            isolate.write_child_output(target[1], self.child.reports, data)
        else:
            self.config.workeroutput[handoff.PAYLOAD_KEY] = data  # type: ignore[attr-defined]

    def _remove_stale_files(self) -> None:
        assert self.findings is not None
        for path in self.findings.stale_files:
            try:
                path.unlink()
            except OSError as exc:
                self.notes.append(f"could not remove the unused baseline file {path}: {exc.strerror or exc}")

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.role.writes:
            return
        self.reports.write_terminal(terminalreporter, self.recording_lines)
        if self.findings is not None:
            lines = summary_lines(self.findings, prune=self.settings.prune, pruned=self.pruned)
            if lines:
                _section(terminalreporter, "kernelperf unused baselines", lines)
        gpu_lines = self.gpus.lines(self.session.results)
        if gpu_lines:
            _section(terminalreporter, "kernelperf GPUs", gpu_lines)
        trouble = [*self.gpus.notes, *self.notes]
        if self.refused:
            trouble.insert(0, f"baselines NOT updated: {self.refused}")
        if trouble:
            _section(terminalreporter, "kernelperf warnings", trouble)
        if self.settings.durations is not None:
            lines = self.costs.lines(self.settings.durations, self.processes)
            _section(terminalreporter, "kernelperf durations", lines)


def _section(terminalreporter: pytest.TerminalReporter, title: str, lines: list[str]) -> None:
    terminalreporter.section(title)
    for line in lines:
        terminalreporter.write_line(line)
