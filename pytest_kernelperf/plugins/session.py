"""The state of one pytest run: settings, baseline store, results and the update at the end."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from pytest_kernelperf.baselines.store import BaselineStore, FileUpdate
from pytest_kernelperf.call import replay as ncu_replay
from pytest_kernelperf.call.context import CallRun, Devices, Host, RunJudgement
from pytest_kernelperf.call.counterpart import RevisionLookup
from pytest_kernelperf.call.replay import Replay
from pytest_kernelperf.kernel_bench import KernelBench
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey, split_nodeid
from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.model.result import BenchResult
from pytest_kernelperf.plugins.progress import Progress
from pytest_kernelperf.results.cost import RunClock
from pytest_kernelperf.settings import Settings
from pytest_kernelperf.verdict.judgement import PastRuns, against_judgements, noise_priors, suite_judgements
from pytest_kernelperf.verdict.prior import NoisePrior

if TYPE_CHECKING:
    from pytest_kernelperf.history.store import HistoryStore
    from pytest_kernelperf.plugins.against import AgainstRevision


class KernelperfWarning(UserWarning):
    """Something about a measurement the user should know (a fallback, a slower launch path)."""


class KernelperfSession:
    def __init__(
        self,
        settings: Settings,
        *,
        devices: Devices,
        fail: Callable[[str], NoReturn],
        guard: Callable[[str], Callable[[Callable[..., Any], str | None], AbstractContextManager[None]]]
        | None = None,
        later_recording: bool = False,
        progress: Progress | None = None,
        against: AgainstRevision | None = None,
    ) -> None:
        """`devices`: the device factories each test's kernel_bench gets; `guard`: per test id, what
        wraps each of its kernel_bench calls (see faults.py)."""
        self.settings = settings
        self.store = BaselineStore(settings.baseline_dir, replace_unreadable=settings.replace_unreadable)
        self.results: list[BenchResult] = []
        self.updates: list[FileUpdate] = []
        self._devices = replace(devices, device_info=self._cached_device_info)
        self._device_info = devices.device_info
        self._fail = fail
        self._device_cache: dict[str, DeviceInfo] = {}
        self._guard = guard  # per test id: wraps each kernel_bench call (see faults.py)
        self._deferred: dict[str, list[str]] = {}  # per test id: failures reported at its end
        self.kernel_tests: list[str] = []  # the kernel_bench tests collected, before any deselection
        self._baseline_sets: dict[str, tuple[NoisePrior, int]] = {}
        self.later_recording = later_recording  # a later recording process pins to the first's choices
        self.progress = progress  # long steps said on the terminal (the main process only)
        if progress is not None:
            progress.timed_run = settings.timing
        self.against = against  # --kernelperf-against: the revision's code
        self.clock = RunClock()  # where the run's time goes (results/cost.py), from the process's start

    def bench(self, nodeid: str, marker_kwargs: dict[str, Any] | None, device: str) -> KernelBench | Replay:
        settings = self.settings
        if marker_kwargs:
            settings = settings.with_marker(marker_kwargs, where=f"@pytest.mark.kernelperf on {nodeid}")
        replayed = ncu_replay.target()  # a child that replays one call under Nsight Compute
        if replayed is not None:
            modes = {"compile_context": settings.compile_context, "autotune": settings.autotune}
            return Replay(replayed, nodeid=nodeid, device=device, **modes)
        host = Host(
            fail=self._fail,
            warn=_warn,
            record=self.results.append,
            deferred=self._deferred.setdefault(nodeid, []).append,
            progress=self.progress.step if self.progress is not None else (lambda what: nullcontext()),
        )
        judgement = RunJudgement(
            noise_prior=lambda device: self.baseline_set(device)[0],
            planned_judgements=lambda device: self.baseline_set(device)[1],
            past_rounds=self.past_rounds,
            past_verdicts=self.past_verdicts,
        )
        devices = self._devices
        if self._guard is not None:
            devices = replace(devices, guard=self._guard(nodeid))
        test = CallRun(
            nodeid, None, settings, host, devices, judgement, self.store, later_recording=self.later_recording
        )
        against = None
        if self.against is not None:
            against = RevisionLookup(self.against.revision, self.against.find)
        return KernelBench(test, device=device, against=against)

    def take_deferred(self, nodeid: str) -> list[str]:
        """The failures kernel_bench deferred to the end of this test (each measured row is shown
        before the test fails), forgotten once taken."""
        return self._deferred.pop(nodeid, [])

    def past_rounds(self, key: PastRuns) -> list[tuple[float, ...]] | None:
        """The rounds of the past runs `key` selects (verdict/judgement.py says which) in the run
        history (`--kernelperf-history`), oldest first; None without a history, or one that cannot
        be read."""
        history = self._history
        if history is None:
            return None
        from pytest_kernelperf.history.database import HistoryError
        from pytest_kernelperf.history.rows import SeriesKey

        series = SeriesKey(key.nodeid, key.name or "", key.device, key.cache, "device_time")
        try:
            return history.recent_rounds(
                series, method=key.method, verdict=str(key.verdict), since=key.since, limit=key.limit
            )
        except HistoryError:
            return None

    def past_verdicts(self, key: PastRuns, limit: int) -> list[str] | None:
        """The verdicts of the newest `limit` past runs of `key`'s series in the run history, newest
        first; None without a history, or one that cannot be read."""
        history = self._history
        if history is None:
            return None
        from pytest_kernelperf.history.database import HistoryError
        from pytest_kernelperf.history.rows import SeriesKey

        try:
            return history.recent_verdicts(
                SeriesKey(key.nodeid, key.name or "", key.device, key.cache, "device_time"), limit
            )
        except HistoryError:
            return None

    @functools.cached_property
    def _history(self) -> HistoryStore | None:
        """The run history, opened once for reading on the first judgement; None without one. A
        history that cannot be read leaves the judge at its built-in between-process noise; writing
        this run to it at the end reports the problem."""
        path = self.settings.history
        if path is None or not path.is_file():
            return None
        from pytest_kernelperf.history.database import HistoryError
        from pytest_kernelperf.history.store import HistoryStore  # only with a history

        try:
            return HistoryStore(path, read_only=True)
        except HistoryError:
            return None

    def close_history(self) -> None:
        """Close the history opened for reading (before this run is written to it)."""
        history = self.__dict__.pop("_history", None)
        if history is not None:
            history.close()

    def baseline_set(self, device: str) -> tuple[NoisePrior, int]:
        """For one device: the round noise pooled from the suite's baseline entries on it, and how
        many judgements the run's level alpha / m is shared among (at least 1). Both come from the
        whole baseline set, not from the tests this run selected, so that a test judged alone gets
        the verdict it would get in the full run. Read once per device, on the first judgement."""
        if device not in self._baseline_sets:
            suite = self.store.suite()
            entries = [(key, entry) for _, key, entry in suite if key.device == device]
            prior = noise_priors((device, entry) for _, entry in entries).get(device, NoisePrior())
            m = suite_judgements((key for key, _ in entries), device)
            if self.against is not None:
                m = max(m, self._paired_judgements(suite))
            self._baseline_sets[device] = (prior, m)
        return self._baseline_sets[device]

    def _paired_judgements(self, suite: Sequence[tuple[Path, EntryKey, BaselineEntry]]) -> int:
        """m in the paired mode, where every kernel_bench test is judged, with or without a
        baseline: those collected (before -k, -m or --lf deselect), each once or once per stored
        named call, and the suite's stored tests that were not collected (a node id's run)."""
        collected = {
            (str(self.store.path_for(module)), test) for module, test in map(split_nodeid, self.kernel_tests)
        }
        stored = [(str(path), key) for path, key, _ in suite]
        return against_judgements(stored, collected)

    def _cached_device_info(self, kind: str) -> DeviceInfo:
        if kind not in self._device_cache:
            self._device_cache[kind] = self._device_info(kind)
        return self._device_cache[kind]

    @property
    def devices(self) -> list[DeviceInfo]:
        """The devices this run timed on (for reports: their environment and peak bandwidth)."""
        return list(self._device_cache.values())

    def write_baselines(
        self, remove: Mapping[Path, Collection[str]], *, interrupted: bool
    ) -> list[FileUpdate]:
        """Write the staged entries, and drop the `remove` test ids' entries (pruning); after an
        interrupt (Ctrl-C) nothing is written unless the user asked for it."""
        self.updates = self.store.commit(
            interrupted=interrupted, write_interrupted=self.settings.write_interrupted, remove=remove
        )
        return self.updates


def _warn(message: str) -> None:
    warnings.warn(KernelperfWarning(message), stacklevel=3)
