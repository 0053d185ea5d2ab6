"""--kernelperf-record-processes N: a baseline recorded in N processes, one after another.

A kernel's level moves from one process to the next; one recording process freezes one draw of
that move into the baseline that every later run is judged against. With N > 1 the main process,
after recording the tests itself, runs them again in N - 1 fresh processes, one at a time (processes
timing on one GPU at once disturb each other). Each later process records the same tests with the
autotuner choices of the first (it reads the first process's entries as its baselines, from a
temporary folder), writes no baselines or reports (only its own artefacts), and hands its entries
back in a JSON file; the main process adds them to its own as further recording processes
(baselines/processes.py) before writing the files. The terminal says which process is running and
how long each took, since a recording of N processes takes about N times as long.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from pytest_kernelperf.baselines.yaml_io import dump
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey, split_nodeid
from pytest_kernelperf.plugins import isolate
from pytest_kernelperf.plugins.role import RECORD_NODEIDS, RECORD_OUTPUT


def write_first_process(
    staged: Mapping[Path, Mapping[EntryKey, BaselineEntry]], baseline_dir: Path, folder: Path
) -> None:
    """The first process's entries as baseline files under `folder`, where later processes read the
    autotuner choices to pin."""
    for path, entries in staged.items():
        target = folder / path.relative_to(baseline_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(dump(entries), encoding="utf-8")


def run_process(
    config: pytest.Config,
    nodeids: Collection[str],
    pins: Path,
    say: Callable[[str], AbstractContextManager[None]],
    number: int,
    total: int,
) -> tuple[Any | None, str]:
    """Record `nodeids` again in a fresh process; (its payload or None, the end of its output)."""
    with tempfile.TemporaryDirectory(prefix="kernelperf-record-") as scratch:
        listed = Path(scratch) / "nodeids.txt"
        listed.write_text("\n".join(nodeids), encoding="utf-8")
        output = Path(scratch) / "payload.json"
        modules = sorted({split_nodeid(nodeid)[0] for nodeid in nodeids})
        command = isolate.command(config, Path(modules[0]), [f"--kernelperf-baseline-dir={pins}"])
        command[4:4] = modules[1:]  # after the first module: the rest of the files to collect
        env = isolate.child_environment() | {RECORD_OUTPUT: str(output), RECORD_NODEIDS: str(listed)}
        with say(f"recording process {number} of {total} ({len(nodeids)} tests)"):
            done = isolate.run_child(command, config.rootpath, env)
        tail = "\n".join(done.stdout.splitlines()[-20:])
        try:
            return json.loads(output.read_text(encoding="utf-8")), tail
        except (OSError, ValueError):
            return None, tail


def recorded_tests() -> set[str] | None:
    """In a later recording process: the node ids to record again (None in any other process)."""
    listed = os.environ.get(RECORD_NODEIDS)
    if not listed:
        return None
    return set(Path(listed).read_text(encoding="utf-8").splitlines())


class RecordingProcess:
    """In a later recording process: run only the tests the first process recorded."""

    def __init__(self, nodeids: set[str]) -> None:
        self.nodeids = nodeids

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        others = [item for item in items if item.nodeid not in self.nodeids]
        if others:
            config.hook.pytest_deselected(items=others)
        items[:] = [item for item in items if item.nodeid in self.nodeids]
