"""Hardware counters of one call's kernels, read by Nsight Compute (`--kernelperf-ncu`).

One fixed set of counters per kernel, each under a short key that baselines, the run JSON and the
history store, with the unit in its name, how it reads in a message, and the band within which a
change is noise. profiling/ncu.py maps Nsight Compute's metric names onto these keys; this module
only names them, so that baselines/schema.py can validate a stored entry without knowing ncu.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["bytes", "ns", "pct", "count", "ratio", "stall"]


@dataclass(frozen=True)
class Counter:
    """One counter: its stored key, its words in a message, and how a change is told from noise."""

    key: str
    label: str
    kind: Kind
    # A change is reported when it exceeds both: `relative` of the larger value, and `absolute`
    # (in the counter's unit; percentage points for a pct).
    relative: float
    absolute: float


# Warp-stall reasons (Nsight Compute's WarpStateStats: warps stalled per issue-active cycle).
STALL_REASONS = (
    "long_scoreboard",  # waiting on L1TEX: global, local, texture memory
    "short_scoreboard",  # waiting on MIO: shared memory, special math
    "wait",  # a fixed-latency dependency
    "barrier",  # __syncthreads / tl.debug_barrier
    "membar",  # a memory barrier
    "lg_throttle",  # the local/global memory queue full
    "mio_throttle",  # the MIO queue full (shared memory, special math)
    "math_pipe_throttle",  # a math pipe busy
    "not_selected",  # eligible, another warp issued
    "no_instruction",  # instruction cache miss, branch target
    "branch_resolving",  # waiting for a branch target
)
STALL_PREFIX = "stall_"

COUNTERS: tuple[Counter, ...] = (
    Counter("duration_ns", "duration", "ns", 0.10, 1000.0),
    Counter("dram_read_bytes", "DRAM read", "bytes", 0.05, 65536.0),
    Counter("dram_write_bytes", "DRAM write", "bytes", 0.05, 65536.0),
    Counter("l2_hit_pct", "L2 hit rate", "pct", 0.0, 5.0),
    Counter("occupancy_pct", "occupancy", "pct", 0.0, 5.0),
    Counter("registers", "registers", "count", 0.0, 0.5),
    Counter("shared_bytes", "shared memory per block", "bytes", 0.0, 0.5),
    Counter("sm_throughput_pct", "SM throughput", "pct", 0.0, 5.0),
    Counter("memory_throughput_pct", "memory throughput", "pct", 0.0, 5.0),
    Counter("sectors_per_request", "sectors per global load", "ratio", 0.10, 0.5),
    *(Counter(STALL_PREFIX + reason, f"{reason} stall", "stall", 0.25, 0.5) for reason in STALL_REASONS),
)
BY_KEY = {counter.key: counter for counter in COUNTERS}
# Every counter is 0 or more, a percentage at most this: what an entry may hold (baselines/schema.py),
# and what a reading is brought within (profiling/ncu_csv.py).
MAX_PCT = 100.0
# Counters that add up over the launches of one kernel; the others are averaged over them.
ADDITIVE = ("duration_ns", "dram_read_bytes", "dram_write_bytes")


@dataclass(frozen=True)
class KernelCounters:
    """The counters of one kernel in the call: summed over its launches where they add up (time,
    bytes), their mean otherwise. A counter Nsight Compute could not read is absent."""

    name: str
    launches: int
    values: dict[str, float] = field(default_factory=dict)

    def get(self, key: str) -> float | None:
        return self.values.get(key)

    def stalls(self) -> list[tuple[str, float]]:
        """The stall reasons, most stalled first."""
        found = [
            (k.removeprefix(STALL_PREFIX), v) for k, v in self.values.items() if k.startswith(STALL_PREFIX)
        ]
        return sorted(found, key=lambda item: (-item[1], item[0]))
