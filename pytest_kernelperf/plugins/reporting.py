"""The reports of a run, as pytest hooks: `-v` words, JUnit properties, the end-of-run table, and the
JSON, markdown, plot and GitHub step summary files.

A plugin object registered by plugin.py's pytest_configure, so that the hooks of reporting stay out
of the core plugin module. Rendering itself is pure (render.py, runfile.py, plots.py); this module
only gathers what the run produced and writes it where it was asked to go.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_kernelperf import __version__
from pytest_kernelperf.formatting import utc_stamp
from pytest_kernelperf.measure import roofline
from pytest_kernelperf.model.device import DeviceInfo, Peak
from pytest_kernelperf.model.result import BenchResult, Verdict
from pytest_kernelperf.plugins.outcomes import Outcomes
from pytest_kernelperf.plugins.role import ROLE
from pytest_kernelperf.plugins.session import KernelperfSession
from pytest_kernelperf.results import render, runfile

STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
MARKUP: dict[str, dict[str, bool]] = {
    "bad": {"red": True, "bold": True},
    "good": {"green": True},
    "warn": {"yellow": True},
    "bold": {"bold": True},
    "dim": {},
    "": {},
}


class Reports:
    def __init__(self, config: pytest.Config, state: KernelperfSession, outcomes: Outcomes) -> None:
        self.config = config
        self.state = state
        self.outcomes = outcomes
        self.peaks: dict[str, Peak] = {}
        self.notes: list[str] = []  # problems the user should see in the summary
        self.written: list[tuple[str, Path]] = []  # (what, where) for the summary
        self.plots: list[Path] = []
        self._published = 0  # results already turned into user_properties
        settings = state.settings
        if settings.plot is not None:
            from pytest_kernelperf.results import plots  # matplotlib itself only when drawing

            if not plots.have_matplotlib():
                raise pytest.UsageError(
                    f"--kernelperf-plot={settings.plot} needs matplotlib; {plots.MISSING_HINT}"
                )

    # -- per test ----------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None]:
        # Properties go on the item before its report is made: the report copies them, JUnit XML
        # writes them per test case (the record_property mechanism), and the -v word reads them.
        results = self.state.results
        for result in results[self._published :]:
            if result.nodeid == item.nodeid:
                item.user_properties.extend(render.properties(result))
        self._published = len(results)
        return (yield)

    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config) -> Any:
        if report.when != "call" or hasattr(report, "wasxfail") or config.getoption("verbose") < 1:
            return None
        status = _status(report)
        if status is None:
            return None
        text, style = status
        if report.passed:
            return "passed", ".", (f"PASSED ({text})", {"green": True, "bold": style == "good"})
        if report.failed:
            return "failed", "F", (f"FAILED ({text})", {"red": True})
        return None

    # -- end of run --------------------------------------------------------------------------

    def write_files(self) -> bool:
        """Write the plots, markdown, step summary and JSON this run asked for, after the baselines
        (the JSON names the files written). Only the main process calls this. False when one of
        them could not be written."""
        if not self.config.stash[ROLE].writes:
            return True
        settings = self.state.settings
        results = list(self.state.results)
        clock = self.state.clock
        if settings.timing:
            with clock.phase("peak_bandwidth"):
                self._measure_peaks(results)
        with clock.phase("reports"):
            return self._write_reports(results)

    def _write_reports(self, results: list[BenchResult]) -> bool:
        settings = self.state.settings
        failed = False
        if settings.plot is not None:
            failed |= not self._write("plots", settings.plot, lambda: self._plot(settings.plot, results))
        if settings.markdown is not None:
            text = self.markdown(results)
            failed |= not self._write(
                "markdown", settings.markdown, lambda: _write_text(settings.markdown, text)
            )
        summary = os.environ.get(STEP_SUMMARY, "").strip()
        if summary and settings.timing and results:
            text = self.markdown(results)
            self._write("GitHub step summary", Path(summary), lambda: _append_text(Path(summary), text))
        if settings.json is not None and self._xdist_controller_without_results(results):
            self.notes.append(f"no results arrived from the xdist workers: {settings.json} not written")
        elif settings.json is not None:
            path = settings.json
            failed |= not self._write(
                "JSON", path, lambda: runfile.write(path, self.run_report(results, path))
            )
        if settings.history is not None and settings.timing and results:
            history = settings.history
            failed |= not self._write("run history", history, lambda: self._append_history(history, results))
        return not failed

    def _append_history(self, path: Path, results: list[BenchResult]) -> None:
        """One timed run into the history database, with the checkout's commit and branch; a result
        without a baseline gets its portable figures set beside other devices' from the history."""
        from pytest_kernelperf.history.git import git_info
        from pytest_kernelperf.history.portable import portable_note
        from pytest_kernelperf.history.store import HistoryStore

        run = runfile.run_to_dict(self.run_report(results, self.state.settings.json or path))
        commit, branch = git_info(self.config.rootpath) or (None, None)
        with HistoryStore(path) as store:
            store.append_run(run, commit=commit, branch=branch, source="this run")
            for result in results:
                if result.verdict is Verdict.NEW:
                    note = portable_note(store, result.nodeid, result.name or "", result.device, result.cache)
                    if note:
                        self.notes.append(f"{result.label} is new on {result.device}: {note}")

    def _xdist_controller_without_results(self, results: list[BenchResult]) -> bool:
        # Workers whose results never arrived (they crashed): an empty file would hide that.
        return not results and self.config.pluginmanager.has_plugin("dsession")

    def _measure_peaks(self, results: list[BenchResult]) -> None:
        wanted = {r.device for r in results if r.bytes and r.level_ms}
        devices = [d for d in self.state.devices if d.name in wanted]
        if not devices:
            return
        progress = self.state.progress

        def measure(device: DeviceInfo) -> Peak:
            if progress is None:
                return roofline.measure_copy_bandwidth(device)
            with progress.step(
                f"measuring the copy bandwidth of {device.name} (once per device, then cached)"
            ):
                return roofline.measure_copy_bandwidth(device)

        self.peaks, notes = roofline.session_peaks(
            devices, self.state.settings.artifacts, measure=measure, may_measure=True
        )
        self.notes.extend(notes)

    def _write(self, what: str, path: Path, action: Any) -> bool:
        try:
            action()
        except Exception as exc:  # a report that cannot be written must not hide the test results
            self.notes.append(f"could not write the {what} to {path}: {type(exc).__name__}: {exc}")
            return False
        self.written.append((what, path))
        return True

    def _plot(self, folder: Path, results: list[BenchResult]) -> None:
        from pytest_kernelperf.results import plots

        self.plots = plots.write_all(folder, results, self.peaks)

    def markdown(self, results: list[BenchResult]) -> str:
        return render.markdown(results, self.peaks, environment=runfile.devices_by_name(self.state.devices))

    def run_report(self, results: list[BenchResult], json_path: Path) -> runfile.RunReport:
        settings = self.state.settings
        mode = "update" if settings.update else "compare" if settings.timing else "check"
        return runfile.RunReport(
            plugin_version=__version__,
            created=utc_stamp(),
            mode=mode,
            settings={
                "threshold": settings.threshold,
                "alpha": settings.alpha,
                "host_threshold": settings.host_threshold,
                "memory_threshold": settings.memory_threshold,
                "timer": settings.timer,
                "cache": settings.cache,
                "strict": settings.strict,
                "allow_undetermined": settings.allow_undetermined,
                "min_samples": settings.min_samples,
                "min_time_s": settings.min_time,
                "max_time_s": settings.max_time,
                "rounds": settings.rounds,
                "baseline_rounds": settings.baseline_rounds,
                "max_rounds": settings.max_rounds,
                "pair_seconds": settings.pair_seconds,
                "warmup_s": settings.warmup,
                "baseline_dir": str(settings.baseline_dir),
            },
            environment={
                "python": platform.python_version(),
                "platform": platform.platform(),
                "pytest": pytest.__version__,
            },
            devices=tuple(self.state.devices),
            peaks=dict(self.peaks),
            results=tuple(results),
            artifacts={
                "folder": str(settings.artifacts),
                "json": str(json_path),
                "markdown": str(settings.markdown) if settings.markdown else None,
                "plots": [str(p) for p in self.plots],
                "peak_cache": str(settings.artifacts / roofline.CACHE_FILE) if self.peaks else None,
                "baselines_written": [str(u.path) for u in self.state.updates],
            },
            cost=self.state.clock.run_cost(),
            rootdir=str(self.config.rootpath),
            tests=self.outcomes.kept({r.nodeid for r in results}),
        )

    def write_terminal(
        self, terminalreporter: pytest.TerminalReporter, recording: Sequence[str] = ()
    ) -> None:
        """The terminal's kernelperf sections; `recording`: the update summary's lines on the
        recording processes (plugins/recording.py)."""
        if not self.config.stash[ROLE].writes:
            return
        lines = render.styled_lines(self.state.results, self.peaks)
        if lines:
            terminalreporter.section("kernelperf")
            for styled in lines:
                for text, style in styled:
                    terminalreporter.write(text, **MARKUP.get(style, {}))
                terminalreporter.line("")
            for peak in render.peak_lines(self.peaks):
                for piece in render.wrapped(f"peak {peak}"):
                    terminalreporter.line(piece)
        for what, path in self.written:
            terminalreporter.line(f"kernelperf: wrote the {what} to {path}")
        for note in self.notes:
            terminalreporter.line(f"kernelperf: {note}", yellow=True)
        artefacts = render.artifact_lines(self.state.results)
        if artefacts:
            terminalreporter.section("kernelperf profiles")
            for artefact in artefacts:
                terminalreporter.line(artefact)
        updates = [*render.update_lines(self.state.updates), *recording]
        if updates:
            terminalreporter.section("kernelperf baselines updated")
            for update in updates:
                terminalreporter.line(update)
            written = {update.path for update in self.state.updates if not update.error}
            staged = {path: e for path, e in self.state.store.staged.items() if path in written}
            for line in render.needs_occasions_lines(staged):
                terminalreporter.line(line, yellow=True)


def _status(test_report: pytest.TestReport) -> tuple[str, str] | None:
    return render.status_word((str(p[0]), p[1]) for p in test_report.user_properties)


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _append_text(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text + "\n")
