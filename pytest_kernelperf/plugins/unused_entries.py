"""Unused baseline entries and files: those of tests that no longer exist.

A test exists when an unfiltered collection finds it. A run narrowed by -k, -m, --deselect, --lf,
--sw, --ignore, a `path::test` argument or a plugin that deselects still collects whole modules
(except --lf, which drops tests inside modules silently), so:

* entries of a module collected whole are judged against its collected test ids, on any run;
* a baseline file whose module no collected test belongs to is stale only when nothing narrowed
  the run, and only under the folders and files the run collected from;
* --kernelperf-prune removes entries and stale files only on a run that nothing narrowed, and says
  otherwise which filter hid what.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_kernelperf.baselines.store import BaselineStore
from pytest_kernelperf.baselines.unused import unused_tests
from pytest_kernelperf.baselines.yaml_io import BaselineError
from pytest_kernelperf.model.baseline import split_nodeid

PRUNE_HINT = "remove them with `pytest --kernelperf-update-baselines --kernelperf-prune` on an unfiltered run"

# pytest's own options that run fewer tests than the suite has: (option dest, as the user types it).
_FILTER_OPTIONS = (
    ("keyword", "-k"),
    ("markexpr", "-m"),
    ("deselect", "--deselect"),
    ("lf", "--lf"),
    ("stepwise", "--sw"),
    ("stepwise_skip", "--sw-skip"),
    ("ignore", "--ignore"),
    ("ignore_glob", "--ignore-glob"),
)
# --lf drops tests from a module while collecting it: no module is known whole.
_PARTIAL_COLLECTION = ("lf",)


@dataclass
class Findings:
    """What the end of the session found, and what pruning may remove."""

    entries: dict[Path, list[str]] = field(default_factory=dict)  # file -> unused test ids
    stale_files: list[Path] = field(default_factory=list)  # files of no collected module
    filters: list[str] = field(default_factory=list)  # why the run was narrowed
    not_checked: str | None = None

    @property
    def prunable(self) -> bool:
        return not self.filters and self.not_checked is None


class UnusedEntries:
    """Collects what the run saw (test ids, deselections, collection errors) and finds unused entries."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.collected: list[str] = []
        self.deselected = 0
        self.collect_errors = 0

    @pytest.hookimpl
    def pytest_itemcollected(self, item: pytest.Item) -> None:
        self.collected.append(item.nodeid)

    @pytest.hookimpl
    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected += len(items)

    @pytest.hookimpl
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_errors += 1

    def absorb(self, collected: list[str], deselected: int, collect_errors: int) -> None:
        """What an xdist worker collected (the controller collects nothing itself)."""
        self.collected.extend(collected)
        self.deselected = max(self.deselected, deselected)  # each worker collects the whole suite
        self.collect_errors = max(self.collect_errors, collect_errors)

    # --- how this run was narrowed ------------------------------------------------------------

    def filters(self) -> list[str]:
        found = []
        for dest, flag in _FILTER_OPTIONS:
            value = self.config.getoption(dest, None)
            if value:
                found.append(flag if value is True else f"{flag} {_shown(value)}")
        if self.deselected:
            found.append(f"{self.deselected} tests deselected")
        found.extend(f"test id argument {arg}" for arg in self._args() if "::" in arg)
        return found

    def _args(self) -> list[str]:
        return [str(arg) for arg in self.config.args]

    def _narrowed_modules(self) -> set[str]:
        """Modules a `path::test` argument narrowed (rootdir-relative)."""
        narrowed = set()
        for arg in self._args():
            if "::" in arg:
                narrowed.add(self._relative(arg.split("::")[0]) or "")
        return narrowed

    def _scope(self) -> list[str] | None:
        """Rootdir-relative folders and files the run collected from ("" for the rootdir itself);
        None where one lies outside the rootdir."""
        scope = []
        for arg in self._args():
            if "::" in arg:
                continue
            relative = self._relative(arg)
            if relative is None:
                return None
            scope.append(relative)
        return scope

    def _relative(self, arg: str) -> str | None:
        target = (self.config.invocation_params.dir / arg).resolve()
        root = Path(self.config.rootpath).resolve()
        if target != root and root not in target.parents:
            return None
        relative = Path(os.path.relpath(target, root)).as_posix()
        return "" if relative == "." else relative

    # --- the findings -------------------------------------------------------------------------

    def find(self, store: BaselineStore) -> Findings:
        findings = Findings(filters=self.filters())
        if self.config.getoption("pyargs", False):
            findings.not_checked = "--pyargs names packages, not the files baselines are named after"
        elif self.collect_errors:
            findings.not_checked = (
                f"{self.collect_errors} collection errors: tests of those files were not seen"
            )
        if findings.not_checked is not None:
            return findings
        collected: dict[str, set[str]] = {}
        for nodeid in self.collected:
            module, test = split_nodeid(nodeid)
            collected.setdefault(module, set()).add(test)
        partial = any(self.config.getoption(dest, None) for dest in _PARTIAL_COLLECTION)
        if not partial:
            narrowed = self._narrowed_modules()
            for module in sorted(set(collected) - narrowed):
                path = store.path_for(module)
                try:
                    entries = store.entries(path)
                except BaselineError:
                    continue  # its tests already failed with the error
                unused = unused_tests((key.test for key in entries), collected[module])
                if unused:
                    findings.entries[path] = unused
        scope = self._scope()
        if findings.filters or partial or scope is None:
            return findings
        produced = {store.path_for(module) for module in collected}
        for part in scope:
            folder = store.folder / part if part else store.folder
            candidates = [folder] if folder.is_file() else sorted(folder.rglob("*.yaml"))
            if part.endswith(".py"):
                candidates = [store.path_for(part)]
            findings.stale_files.extend(p for p in candidates if p.is_file() and p not in produced)
        return findings


def _shown(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return repr(value) if isinstance(value, str) and " " in value else str(value)


def summary_lines(findings: Findings, prune: bool, pruned: bool) -> list[str]:
    lines = []
    verb = "removed" if pruned else "unused"
    for path, tests in sorted(findings.entries.items()):
        lines.append(f"{path}: {len(tests)} {verb} (tests that no longer exist):")
        lines.extend(f"  {test}" for test in tests)
    for path in findings.stale_files:
        lines.append(f"{path}: {'removed' if pruned else 'unused'} (no collected test module has this file)")
    if (findings.entries or findings.stale_files) and not pruned:
        lines.append(f"These tests no longer exist; {PRUNE_HINT}.")
    if prune and not pruned:
        why = findings.not_checked or "this run was narrowed by " + "; ".join(findings.filters)
        lines.append(
            f"--kernelperf-prune: nothing pruned, since {why}: a test that did not run may still exist"
        )
    return lines
