"""The state of one pytest run: settings, baseline store, results and the update at the end."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, NoReturn

from pytest_kernelperf.baselines.store import BaselineStore, FileUpdate
from pytest_kernelperf.kernel_bench import Callbacks, KernelBench, no_guard
from pytest_kernelperf.measure.device import DeviceInfo
from pytest_kernelperf.measure.timing import Timer
from pytest_kernelperf.profiling.capture import CallProfile, ProfileRequest
from pytest_kernelperf.results.result import BenchResult
from pytest_kernelperf.settings import Settings


class KernelperfWarning(UserWarning):
    """Something about a measurement the user should know (a fallback, a slower launch path)."""


class KernelperfSession:
    def __init__(
        self,
        settings: Settings,
        *,
        make_timer: Callable[[Settings, DeviceInfo], Timer],
        device_info: Callable[[str], DeviceInfo],
        fail: Callable[[str], NoReturn],
        profile: Callable[[ProfileRequest], CallProfile] | None = None,
        guard: Callable[[str], Callable[[Callable[..., Any], str | None], AbstractContextManager[None]]]
        | None = None,
    ) -> None:
        self.settings = settings
        self.store = BaselineStore(settings.baseline_dir, replace_unreadable=settings.replace_unreadable)
        self.results: list[BenchResult] = []
        self.updates: list[FileUpdate] = []
        self._make_timer = make_timer
        self._device_info = device_info
        self._fail = fail
        self._profile = profile
        self._device_cache: dict[str, DeviceInfo] = {}
        self._guard = guard  # per test id: wraps each kernel_bench call (see faults.py)
        self._deferred: dict[str, list[str]] = {}  # per test id: failures reported at its end

    def bench(self, nodeid: str, marker_kwargs: dict[str, Any] | None, device: str) -> KernelBench:
        settings = self.settings
        if marker_kwargs:
            settings = settings.with_marker(marker_kwargs, where=f"@pytest.mark.kernelperf on {nodeid}")
        hooks = Callbacks(
            fail=self._fail,
            warn=_warn,
            record=self.results.append,
            make_timer=self._make_timer,
            device_info=self._cached_device_info,
            profile=self._profile,
            guard=self._guard(nodeid) if self._guard else lambda fn, name: no_guard(),
            deferred=self._deferred.setdefault(nodeid, []).append,
        )
        return KernelBench(nodeid=nodeid, settings=settings, store=self.store, hooks=hooks, device=device)

    def take_deferred(self, nodeid: str) -> list[str]:
        """The failures kernel_bench deferred to the end of this test (each measured row is shown
        before the test fails), forgotten once taken."""
        return self._deferred.pop(nodeid, [])

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
