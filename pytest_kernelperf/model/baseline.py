"""Baseline entries, the stored measurements runs are judged against, and the keys they are stored under.

baselines/schema.py validates an entry as plain data and writes it back; baselines/store.py keeps
them in their files. The key of a measurement (module, test id, `::name`) is spelled here, for
in-run updates, run-JSON updates and unused-entry checks alike: they must agree to the character.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pytest_kernelperf.model.call import CompileContext, KernelRecord, TensorInput
from pytest_kernelperf.model.counters import KernelCounters

T = TypeVar("T")


def split_by_counts(items: Sequence[T], counts: Sequence[int]) -> list[Sequence[T]]:
    """`items` cut into consecutive runs of `counts` items (the rounds of each recording process,
    the processes of each occasion); all of them as one run where `counts` is empty."""
    if not counts:
        return [items]
    out: list[Sequence[T]] = []
    start = 0
    for count in counts:
        out.append(items[start : start + count])
        start += count
    return out


def _geometric_mean(values: tuple[float, ...]) -> float:
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


# How many recording processes and occasions an entry holds, each bound decided here alone:
# settings.py refuses a --kernelperf-record-processes above the first before anything is recorded,
# an added occasion beyond the second is refused (baselines/occasions.py), and the schema holds an
# entry's process_rounds to their product. Far past what narrows a verdict: the occasion term is
# tau^2 (1 + 1/K), 6% above its floor at K = 16.
MAX_RECORDING_PROCESSES = 16  # processes of one recording (one occasion)
MAX_OCCASIONS = 16
MAX_PROCESSES = MAX_OCCASIONS * MAX_RECORDING_PROCESSES


@dataclass(frozen=True)
class MetricRecord:
    method: str
    median_ms: float
    ci_ms: tuple[float, float]
    n: int
    quantiles_ms: tuple[float, ...]
    rounds_ms: tuple[float, ...] = ()  # per-round locations (midmeans); empty in schema-1 entries
    resolution_ms: float | None = None  # the timer's step as seen in the samples
    # How many of the rounds each recording process measured, in order; empty: one process.
    process_rounds: tuple[int, ...] = ()
    # How many of the processes each recording occasion ran, in order; empty: one occasion.
    occasion_processes: tuple[int, ...] = ()

    @property
    def level_ms(self) -> float:
        """The figure a verdict judges: the mean over recording processes of each one's geometric
        mean of rounds (the median before rounds)."""
        if not self.rounds_ms:
            return self.median_ms
        parts = split_by_counts(self.rounds_ms, self.process_rounds)
        logs = [math.log(_geometric_mean(tuple(part))) for part in parts]
        return math.exp(math.fsum(logs) / len(logs))

    @property
    def round_range_ms(self) -> tuple[float, float]:
        """The spread of the rounds (a schema-1 entry: its median's interval)."""
        return (min(self.rounds_ms), max(self.rounds_ms)) if self.rounds_ms else self.ci_ms


# Keys of a measurement's environment that describe its clock: the SM clock (the median NVML read
# after its rounds; the mean over processes in a multi-process entry) and the throttle reasons its
# rounds ran under ("no" where none).
CLOCK_KEY = "sm_clock_mhz"
THROTTLED_KEY = "throttled"


def clock_of(environment: dict[str, str]) -> int | None:
    """The SM clock an environment recorded, None where absent or not a positive whole number."""
    value = environment.get(CLOCK_KEY, "")
    return int(value) if value.isascii() and value.isdecimal() and int(value) > 0 else None


def throttle_reasons_of(environment: dict[str, str]) -> tuple[str, ...] | None:
    """The throttle reasons an environment recorded (empty: none), None where not recorded."""
    reasons = environment.get(THROTTLED_KEY)
    if reasons is None:
        return None
    return tuple(r for r in (part.strip() for part in reasons.split(",")) if r and r != "no")


@dataclass(frozen=True)
class BaselineEntry:
    device_time: MetricRecord
    recorded: str
    environment: dict[str, str] = field(default_factory=dict)
    host_latency: MetricRecord | None = None
    kernels: tuple[KernelRecord, ...] | None = None  # None: no inventory recorded (CPU, or older file)
    # Optional, None where not recorded: how torch.compile compiled the call, the config each Triton
    # autotuner chose (kernel name -> config), and the call's tensor arguments.
    compile_context: CompileContext | None = None
    autotune: dict[str, str] | None = None
    inputs: tuple[TensorInput, ...] | None = None
    # Peak device memory of one call beyond its inputs, in bytes; None where not measured (a CPU, or
    # an entry recorded before memory was measured).
    peak_memory_bytes: int | None = None
    # Nsight Compute's counters per kernel (--kernelperf-ncu); None where not read.
    counters: tuple[KernelCounters, ...] | None = None


@dataclass(frozen=True)
class EntryKey:
    test: str  # entry_test_id: the test id within its module, then `::name` for a named call
    device: str
    cache: str


def split_nodeid(nodeid: str) -> tuple[str, str]:
    """(module path, test id within the module): `a/test_x.py::TestK::test_y[1]` ->
    (`a/test_x.py`, `TestK::test_y[1]`). A node id without `::` is its own test id."""
    module, _, test = nodeid.partition("::")
    return module, test or module


def entry_test_id(nodeid: str, name: str | None) -> str:
    """The test id a baseline entry is stored under: the test id, then `::name` for a named call."""
    test = split_nodeid(nodeid)[1]
    return test if name is None else f"{test}::{name}"
