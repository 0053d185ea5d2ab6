"""What an xdist worker or an isolated child hands to the main process, and how it is read back.

The payload is plain JSON: the results and staged baseline entries (results/transport.py), the
collected test ids (for unused entries), whether the CUDA context was poisoned, GPU use, notes and
the seconds of the process's run phases (a later recording process's, for --kernelperf-durations).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_kernelperf.measure import gpu
from pytest_kernelperf.measure.faults import Poison
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey
from pytest_kernelperf.model.result import BenchResult
from pytest_kernelperf.results import transport
from pytest_kernelperf.results.cost import RunCost

PAYLOAD_KEY = "kernelperf"  # in xdist's workeroutput
PAYLOAD_FORMAT = 1


@dataclass(frozen=True)
class Payload:
    results: list[BenchResult]
    staged: dict[Path, dict[EntryKey, BaselineEntry]]
    poisoned: Poison | None
    collected: list[str]
    deselected: int
    collect_errors: int
    gpus: list[dict[str, Any]]
    notes: list[str]
    cost: RunCost | None = None

    def encode(self, baseline_dir: Path) -> dict[str, Any]:
        return {
            "format": PAYLOAD_FORMAT,
            "worker": gpu.worker_id(),
            "pid": os.getpid(),
            "results": transport.results_to_data(self.results),
            "staged": transport.staged_to_data(self.staged, baseline_dir),
            "collected": self.collected,
            "deselected": self.deselected,
            "collect_errors": self.collect_errors,
            "poisoned": transport.encode(self.poisoned) if self.poisoned is not None else None,
            "gpus": self.gpus,
            "notes": self.notes,
            "cost": transport.encode(self.cost) if self.cost is not None else None,
        }


class PayloadError(ValueError):
    """A payload this version cannot read."""


def decode(data: Any, baseline_dir: Path) -> Payload:
    if not isinstance(data, dict) or data.get("format") != PAYLOAD_FORMAT:
        raise PayloadError("kernelperf data of another plugin version")
    try:
        return Payload(
            results=transport.results_from_data(data.get("results", [])),
            staged=transport.staged_from_data(data.get("staged", []), baseline_dir),
            poisoned=transport.decode(Poison, data["poisoned"]) if data.get("poisoned") else None,
            collected=[str(nodeid) for nodeid in data.get("collected", [])],
            deselected=int(data.get("deselected", 0)),
            collect_errors=int(data.get("collect_errors", 0)),
            gpus=list(data.get("gpus", [])),
            notes=[str(note) for note in data.get("notes", [])],
            cost=transport.decode(RunCost, data["cost"]) if data.get("cost") else None,
        )
    except (transport.TransportError, KeyError, TypeError, ValueError) as exc:
        raise PayloadError(f"unreadable kernelperf data ({exc})") from None
