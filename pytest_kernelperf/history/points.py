"""A history's points as the store reads them back, and the checks that what the database holds is
what `HistoryStore.ingest` writes: a value that is not is a DamagedHistory, saying where."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_kernelperf.results import runfile

from .database import DamagedHistory


@dataclass(slots=True)  # not frozen: a history holds many, and frozen ones are slower to make
class Point:
    """One run's measurement of a series, with what attribution needs from its run."""

    run_id: int
    created: str
    commit: str | None
    branch: str | None
    level_ms: float  # the level its verdict judged
    rounds_ms: tuple[float, ...] | str  # a JSON list: decoded by rounds()
    verdict: str | None = None
    kernels: tuple[Mapping[str, Any], ...] | str | None = None  # a JSON string: decoded by inventory()
    autotune: Mapping[str, Any] | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    reference_ratio: float | None = None
    peak_fraction: float | None = None
    artifacts: tuple[str, ...] = ()
    value_ms: float | None = None  # the value stored with the measurement
    peak_memory_bytes: int | None = None  # the call's peak device memory beyond its inputs

    def inventory(self) -> tuple[Mapping[str, Any], ...] | None:
        """The kernel inventory (name, launches, share, ms, code per kernel), None when not recorded."""
        if isinstance(self.kernels, str):
            kernels = json_value(self.kernels, f"the measurement of run {self.run_id}", "kernels")
            if not isinstance(kernels, list):
                raise DamagedHistory(f"the measurement of run {self.run_id}: kernels is not a list")
            return tuple(kernels)
        return self.kernels

    def rounds(self) -> tuple[float, ...]:
        """The per-round location estimates, in ms (the level alone when the run gave none)."""
        if not isinstance(self.rounds_ms, str):
            return self.rounds_ms
        try:
            rounds = float_list(self.rounds_ms)
        except ValueError:
            rounds = ()
        if not rounds or not all(_MIN_MS <= r <= _MAX_MS for r in rounds):
            raise DamagedHistory(
                f"the measurement of run {self.run_id}: rounds_ms {self.rounds_ms[:40]!r} is not a list "
                "of times"
            )
        return rounds

    @property
    def value(self) -> float:
        """The run's one value in its series: the value stored with it (the level a verdict judged;
        in rows stored before the level was, the mean of the rounds); for a point made of rounds
        alone, their mean."""
        if self.value_ms is not None:
            return self.value_ms
        rounds = self.rounds()
        return sum(rounds) / len(rounds) if rounds else self.level_ms


NO_ENV: dict[str, str] = {}
_MIN_MS, _MAX_MS = runfile.MIN_MS, runfile.MAX_MS


def kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def json_value(text: Any, at: str, field: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        raise DamagedHistory(f"{at}: {field} is not JSON ({str(text)[:40]!r})") from None


def plain(row: Mapping[str, Any], at: str) -> None:
    """A row as `ingest` writes it holds text, whole numbers, finite numbers and nulls only."""
    for name, value in row.items():
        if not (value is None or isinstance(value, (str, int)) or is_number(value)):
            raise DamagedHistory(f"{at}: {name} is {value!r}, not what import writes")


def stored_text(value: Any, at: str, field: str) -> str:
    if not isinstance(value, str):
        raise DamagedHistory(f"{at}: {field} is {kind(value)}, not text")
    return value


def optional_text(value: Any, at: str, field: str) -> str | None:
    return None if value is None else stored_text(value, at, field)


def time_ms(value: Any, at: str, field: str) -> float:
    """A stored time: what `ingest` stores passed the run file gateway's bounds."""
    if not is_number(value) or not _MIN_MS <= value <= _MAX_MS:
        raise DamagedHistory(f"{at}: {field} is {value!r}, not a time in ms")
    return float(value)


def optional_figure(value: Any, at: str, field: str) -> float | None:
    if value is not None and not is_number(value):
        raise DamagedHistory(f"{at}: {field} is {value!r}, not a finite number")
    return None if value is None else float(value)


def optional_count(value: Any, at: str, field: str) -> int | None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise DamagedHistory(f"{at}: {field} is {value!r}, not a count of bytes")
    return value


def environments(text: Any, at: str) -> dict[str, dict[str, str]]:
    devices = json_value(text, at, "devices")
    if not isinstance(devices, dict) or not all(
        isinstance(env, dict) and all(isinstance(v, str) for v in env.values()) for env in devices.values()
    ):
        raise DamagedHistory(f"{at}: devices is not an object of environments")
    return devices


def float_list(text: str) -> tuple[float, ...]:
    """A JSON list of numbers as `rows.dumps` writes it, read faster than json.loads."""
    inner = text[1:-1]
    return tuple(map(float, inner.split(","))) if inner else ()
