"""Run-file dicts as `pytest --kernelperf-json` writes them (docs/json-schema.md), made up: for the
history tests, the synthetic studies and the dashboard demo."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from pytest_kernelperf.model.names import RUN_SCHEMA, RUN_SCHEMA_VERSION

if TYPE_CHECKING:
    from typing import Unpack

H200 = "NVIDIA H200"
DEVICE_ENV = {"torch": "2.13.0", "triton": "3.6.0", "cuda": "12.8", "driver": "570.86", "capability": "9.0"}


class ResultShape(TypedDict, total=False):
    """What result() makes besides its test and level, each left out where not given: the call's
    name, the device (an H200) and cache ("hot"), its rounds, kernels, autotune choices, bytes,
    ratio to a reference, host latency, artefacts, samples (20) and peak device memory."""

    name: str | None
    device: str
    cache: str
    rounds: Sequence[float] | None
    kernels: Sequence[tuple[str, str | None]] | None
    autotune: dict[str, str] | None
    nbytes: int | None
    reference_ratio: float | None
    host_ms: float | None
    artifacts: Sequence[str]
    samples: int
    peak_memory_bytes: int | None


def result(nodeid: str, level_ms: float, **shape: Unpack[ResultShape]) -> dict[str, Any]:
    """One timed result of `nodeid` at the level `level_ms` (its entry's samples' median the same),
    shaped as `shape` says."""
    name, device, cache = shape.get("name"), shape.get("device", H200), shape.get("cache", "hot")
    rounds, kernels, autotune = shape.get("rounds"), shape.get("kernels"), shape.get("autotune")
    nbytes, reference_ratio, host_ms = shape.get("nbytes"), shape.get("reference_ratio"), shape.get("host_ms")
    artifacts, samples = shape.get("artifacts", ()), shape.get("samples", 20)
    peak_memory_bytes = shape.get("peak_memory_bytes")
    rng = random.Random(f"{nodeid}:{level_ms}")
    samples_ms = [level_ms * (1 + rng.gauss(0, 0.002)) for _ in range(samples)]
    device_time: dict[str, Any] = {
        "method": "cupti",
        "level_ms": level_ms,
        "round_range_ms": [level_ms * 0.999, level_ms * 1.001],
        "n": samples,
        "samples_ms": samples_ms,
    }
    if rounds is not None:
        device_time["rounds_ms"] = list(rounds)
    out: dict[str, Any] = {
        "nodeid": nodeid,
        "name": name,
        "module": nodeid.split("::", maxsplit=1)[0],
        "test_id": nodeid.split("::", 1)[-1] + (f"::{name}" if name else ""),
        "device": device,
        "cache": cache,
        "verdict": "same",
        "device_time": device_time,
        "host_latency": None if host_ms is None else {"method": "cuda-event", "level_ms": host_ms},
        "baseline": None,
        "comparison": None,
        "host_comparison": None,
        "reference": None
        if reference_ratio is None
        else {
            "method": "cupti",
            "level_ms": level_ms / reference_ratio,
            "round_range_ms": [level_ms / reference_ratio * 0.999, level_ms / reference_ratio * 1.001],
            "samples_ms": [level_ms / reference_ratio],
            "ratio": reference_ratio,
            "max_ratio": 2.0,
            "p_value": None,
            "alpha": 0.01,
            "exceeded": False,
            "reason": "within max_ratio",
        },
        "throughput": {"bytes": nbytes, "bytes_inferred": False, "flops": None},
        "baseline_entry": {
            "recorded": "2026-12-01T00:00:00Z",
            "environment": {"torch": "2.13.0"},
            "device_time": {
                "method": "cupti",
                "median_ms": level_ms,
                "ci_ms": [level_ms * 0.999, level_ms * 1.001],
                "n": samples,
                "quantiles_ms": _quantiles([*samples_ms, level_ms]),
            },
            "host_latency": None,
            "kernels": None
            if kernels is None
            else [
                {"name": k, "launches": 1, "share": 1.0, "ms": level_ms, "code": code, "grid": None}
                for k, code in kernels
            ],
            "autotune": None if autotune is None else dict(autotune),
        },
        "notes": [],
        "artifacts": list(artifacts),
        "wall_s": 0.1,
    }
    if peak_memory_bytes is not None:
        out["memory"] = {
            "peak_bytes": peak_memory_bytes,
            "baseline_bytes": None,
            "threshold": 0.1,
            "exceeded": False,
            "allocations": [],
        }
    return out


def _quantiles(values: Sequence[float]) -> list[float]:
    """Every fourth value in order, and the largest: a stored entry's quantiles hold its median."""
    ordered = sorted(values)
    return ordered[::4] + ([ordered[-1]] if (len(ordered) - 1) % 4 else [])


def run(
    results: Sequence[dict[str, Any]],
    *,
    created: str = "2026-12-01T00:00:00Z",
    device_env: dict[str, str] | None = None,
    peaks: dict[str, float] | None = None,
    devices: Sequence[str] = (H200,),
) -> dict[str, Any]:
    return {
        "schema": RUN_SCHEMA,
        "schema_version": RUN_SCHEMA_VERSION,
        "plugin_version": "0.1.0",
        "created": created,
        "mode": "compare",
        "settings": {"threshold": 0.05, "alpha": 0.01, "cache": "hot"},
        "environment": {"python": "3.11.2", "platform": "Linux", "pytest": "8.4.0"},
        "devices": [
            {"kind": "cuda", "name": d, "index": 0, "environment": dict(device_env or DEVICE_ENV)}
            for d in devices
        ],
        "peaks": {
            d: {"device": d, "gb_per_s": gbps, "bytes": 1 << 30, "method": "copy", "measured": created}
            for d, gbps in (peaks or {}).items()
        },
        "totals": {"same": len(results)},
        "results": list(results),
        "artifacts": {"folder": ".kernelperf", "json": "run.json"},
    }


def created(i: int) -> str:
    """An increasing UTC time for the i-th run of a history."""
    return f"2026-11-{1 + i // 1440:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00Z"
