"""--kernelperf-record-processes: a baseline recorded in several processes, one after another.

A kernel's level moves from one process to the next; one recording process freezes one draw of
that move into the baseline that every later run is judged against. With more than one the main
process, after recording the tests itself, runs them again in fresh processes, one at a time
(processes timing on one GPU at once disturb each other). `N` records every test in N processes;
`auto` records the tests timed on a GPU in two, then a third only for those whose first two call
for it (verdict/more_processes.py), and says which and why in the update summary.

A later process records only the tests it is given (their node ids, in a file it reads), with the
autotuner choices of the first (it reads the first process's entries as its baselines, from a
temporary folder) pinned from their first call on, so that no autotuner benchmarks again. It
measures only what a further process adds to an entry, its rounds (baselines/processes.combine
keeps the first's inventory, profile, counters and peak memory), writes no baselines or reports,
and hands its entries back in a JSON file with the seconds of its phases; the main process adds
them to its own as further recording processes before writing the files. The terminal says which
process is running and how long each took. A test that a later process fails, skips or does not
record keeps its stored entry: the first's is not written, the update summary names the test and
ends with what that process said, and the run fails.
"""

from __future__ import annotations

import json
import os
import tempfile
import textwrap
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_kernelperf.baselines.store import BaselineStore
from pytest_kernelperf.baselines.yaml_io import dump
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey, entry_test_id, split_nodeid
from pytest_kernelperf.model.result import BenchResult
from pytest_kernelperf.plugins import isolate
from pytest_kernelperf.plugins.role import RECORD_NODEIDS, RECORD_OUTPUT
from pytest_kernelperf.settings import Settings
from pytest_kernelperf.verdict.judgement import noise_priors, suite_judgements
from pytest_kernelperf.verdict.more_processes import Judgeable, another_process

# Tests named in an update summary's line on a later process (chosen, or not recorded); the rest counted.
NAMED_TESTS = 8


def write_first_process(
    staged: Mapping[Path, Mapping[EntryKey, BaselineEntry]], baseline_dir: Path, folder: Path
) -> None:
    """The first process's entries as baseline files under `folder`, where later processes read the
    autotuner choices to pin."""
    for path, entries in staged.items():
        target = folder / path.relative_to(baseline_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(dump(entries), encoding="utf-8")


@dataclass(frozen=True)
class LaterRun:
    """What a later recording process left: its payload (None: it gave none), the tests that did
    not pass there with their outcomes, its exit code, the end of its output, and its wall time."""

    data: Any | None
    not_passed: dict[str, str]
    returncode: int
    tail: str
    wall_s: float


def hand_back(output: Path, data: Any, not_passed: Mapping[str, str]) -> None:
    """In a later recording process: its payload and the tests that did not pass, for the first."""
    output.write_text(json.dumps({"payload": data, "not_passed": dict(not_passed)}), encoding="utf-8")


def run_process(
    config: pytest.Config,
    nodeids: Collection[str],
    pins: Path,
    say: Callable[[str], AbstractContextManager[None]],
    what: str,
) -> LaterRun:
    """Record `nodeids` again in a fresh process (said on the terminal as `what`)."""
    with tempfile.TemporaryDirectory(prefix="kernelperf-record-") as scratch:
        listed = Path(scratch) / "nodeids.txt"
        listed.write_text("\n".join(nodeids), encoding="utf-8")
        output = Path(scratch) / "payload.json"
        modules = sorted({split_nodeid(nodeid)[0] for nodeid in nodeids})
        command = isolate.command(config, Path(modules[0]), [f"--kernelperf-baseline-dir={pins}"])
        command[4:4] = modules[1:]  # after the first module: the rest of the files to collect
        env = isolate.child_environment() | {RECORD_OUTPUT: str(output), RECORD_NODEIDS: str(listed)}
        began = time.perf_counter()
        with say(what):
            done = isolate.run_child(command, config.rootpath, env)
        wall_s = time.perf_counter() - began
        tail = "\n".join(done.stdout.splitlines()[-20:])
        try:
            handed = json.loads(output.read_text(encoding="utf-8"))
            data, not_passed = handed["payload"], dict(handed["not_passed"])
        except (OSError, ValueError, KeyError, TypeError):
            data, not_passed = None, {}
        return LaterRun(data, not_passed, done.returncode, tail, wall_s)


def staged_keys(
    results: Sequence[BenchResult], store: BaselineStore, nodeids: Collection[str]
) -> dict[str, set[tuple[Path, EntryKey]]]:
    """Per test of `nodeids`, the (file, key) of each entry its calls have staged now."""
    keys: dict[str, set[tuple[Path, EntryKey]]] = {nodeid: set() for nodeid in nodeids}
    for result in results:
        if result.nodeid in keys and result.entry is not None:
            path, key = _entry_key(result, store)
            if key in store.staged.get(path, {}):
                keys[result.nodeid].add((path, key))
    return keys


def _entry_key(result: BenchResult, store: BaselineStore) -> tuple[Path, EntryKey]:
    path = store.path_for(split_nodeid(result.nodeid)[0])
    return path, EntryKey(entry_test_id(result.nodeid, result.name), result.device, result.cache)


def shortfall(
    done: LaterRun,
    asked: Mapping[str, Collection[tuple[Path, EntryKey]]],
    given: Collection[tuple[Path, EntryKey]],
) -> dict[str, str]:
    """The tests a later process did not record as the first did (`asked`: each one's staged
    entries; `given`: the entries it handed back), each with why: its outcome there, or "not
    recorded". A process that failed otherwise (an exit code other than "no tests collected", which
    leaves every test unrecorded anyway) leaves none of its tests trusted."""
    short: dict[str, str] = {}
    for nodeid, keys in asked.items():
        outcome = done.not_passed.get(nodeid)
        if outcome is not None:
            short[nodeid] = outcome
        elif not set(keys) <= set(given):
            short[nodeid] = "not recorded"
    if not short and done.returncode not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        short = dict.fromkeys(asked, f"its process ended with exit code {done.returncode}")
    return short


def shortfall_line(number: int, short: Mapping[str, str], among: int, tail: str) -> str:
    """The update summary's line on the tests a later process did not record, and what it said:
    "2nd recording process did not record 1 of 3 tests, so their baselines are not written:
    t.py::test_x (failed); its output ended:" and the end of its output, indented."""
    said = textwrap.indent(tail, "    ") if tail.strip() else "    (nothing)"
    return (
        f"{_ordinal(number)} recording process did not record {len(short)} of {among} tests, so their "
        f"baselines are not written: {_named(short)}; its output ended:\n{said}"
    )


def recorded_tests() -> set[str] | None:
    """In a later recording process: the node ids to record again (None in any other process)."""
    listed = os.environ.get(RECORD_NODEIDS)
    if not listed:
        return None
    return set(Path(listed).read_text(encoding="utf-8").splitlines())


class RecordingProcess:
    """In a later recording process: run only the tests the first process named."""

    def __init__(self, nodeids: set[str]) -> None:
        self.nodeids = nodeids

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        others = [item for item in items if item.nodeid not in self.nodeids]
        if others:
            config.hook.pytest_deselected(items=others)
        items[:] = [item for item in items if item.nodeid in self.nodeids]


def processes_wanted(results: Sequence[BenchResult], settings: Settings) -> dict[str, int]:
    """Per recorded test (node id), the processes that record it whatever they show: the number
    given, or with auto two for a test timed on a GPU and one for the others."""
    wanted: dict[str, int] = {}
    for result in results:
        if result.entry is not None:
            count = settings.processes_to_record(on_gpu=result.device_index is not None)
            wanted[result.nodeid] = max(count, wanted.get(result.nodeid, 1))
    return wanted


def chosen_for_another(
    results: Sequence[BenchResult], store: BaselineStore, nodeids: Collection[str], settings: Settings
) -> dict[str, str]:
    """Of `nodeids`, the tests whose entries as staged now (every process so far) call for one more
    recording process, each with why (its first call that does), in the order recorded. Each entry
    is weighed as the judge will see it: with the prior of the staged entries on its device, the
    suite's entries on it as the m of alpha / m, and the call's threshold."""
    staged = store.staged
    by_device: dict[str, list[BaselineEntry]] = {}
    for entries in staged.values():
        for key, entry in entries.items():
            by_device.setdefault(key.device, []).append(entry)
    priors = noise_priors((device, entry) for device, found in by_device.items() for entry in found)
    # m as a judging run will count it: every entry of the suite on the device, stored or staged.
    suite = {(path, key) for path, key, _ in store.suite()}
    suite |= {(path, key) for path, entries in staged.items() for key in entries}
    counted = {device: suite_judgements((key for _, key in suite), device) for device in by_device}
    chosen: dict[str, str] = {}
    for result in results:
        if result.nodeid not in nodeids or result.nodeid in chosen or result.entry is None:
            continue
        path, key = _entry_key(result, store)
        pooled = staged.get(path, {}).get(key)
        if pooled is None or key.device not in priors:
            continue
        judged = Judgeable(
            device=key.device,
            prior=priors[key.device],
            level=settings.alpha / counted[key.device],
            threshold=_threshold(result, settings),
            judging_share=settings.rounds / settings.baseline_rounds,
        )
        why = another_process(pooled.device_time, judged)
        if why is not None:
            chosen[result.nodeid] = why
    return chosen


def _threshold(result: BenchResult, settings: Settings) -> float:
    """The threshold the call was judged with (its test's marker may set one), else the run's."""
    judged = result.comparison.threshold if result.comparison is not None else None
    return judged if judged is not None else settings.threshold


def choice_line(number: int, chosen: Mapping[str, str], among: int) -> str:
    """The update summary's line on which tests a further process records, and why:
    "3rd recording process for 2 of 18 tests: t.py::test_x (processes 1.5% apart), ..."."""
    head = f"{_ordinal(number)} recording process for {len(chosen)} of {among} tests"
    if not chosen:
        return f"{head}: their processes agree"
    return f"{head}: {_named(chosen)}"


def _named(why: Mapping[str, str]) -> str:
    """The first NAMED_TESTS tests, each with why, and how many more."""
    named = [f"{nodeid} ({reason})" for nodeid, reason in list(why.items())[:NAMED_TESTS]]
    more = len(why) - len(named)
    return ", ".join(named) + (f" and {more} more" if more else "")


def _ordinal(number: int) -> str:
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(number % 10 if number > 20 else number, "th")
    return f"{number}{suffix}"
