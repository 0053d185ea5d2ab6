"""Launch grids: taken from the profiler's events or its exported trace, kept when one per kernel."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_kernelperf.profiling.capture import grids_from_trace
from pytest_kernelperf.profiling.inventory import DeviceEvent, summarize


def test_a_kernel_keeps_its_grid_only_when_every_launch_had_the_same() -> None:
    events = [
        DeviceEvent("gelu", 10.0, (65536, 1, 1)),
        DeviceEvent("gelu", 10.0, (65536, 1, 1)),
        DeviceEvent("reduce", 5.0, (8, 1, 1)),
        DeviceEvent("reduce", 5.0, (16, 1, 1)),
        DeviceEvent("Memcpy DtoD (Device -> Device)", 1.0),
    ]
    grids = {k.name: k.grid for k in summarize(events, calls=2)}
    assert grids == {"gelu": (65536, 1, 1), "reduce": None, "Memcpy DtoD (Device -> Device)": None}


def test_grids_from_a_chrome_trace(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    events = [
        {"name": "gelu", "ph": "X", "args": {"grid": [72089, 1, 1], "block": [128, 1, 1]}},
        {"name": "gelu", "ph": "X", "args": {"grid": [72089, 1, 1]}},
        {"name": "two", "ph": "X", "args": {"grid": [1, 1, 1]}},
        {"name": "two", "ph": "X", "args": {"grid": [2, 1, 1]}},
        {"name": "cpu op", "ph": "X", "args": {}},
    ]
    trace.write_text(json.dumps({"traceEvents": events}))
    assert grids_from_trace(trace) == {"gelu": (72089, 1, 1)}
    assert grids_from_trace(tmp_path / "missing.json") == {}
