"""torch.profiler capture of one call, after timing and never during it.

Writes, per test and name, the `key_averages()` table sorted by device time (what the lecture
prints) and a Chrome trace that opens in Perfetto or chrome://tracing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")


def artifact_folder(root: Path, nodeid: str, name: str | None) -> Path:
    """`<root>/<sanitized test id>/<name>`: one folder per kernel_bench call, always inside root."""
    test = _UNSAFE.sub("_", nodeid).strip("._") or "test"
    return root / test[:150] / (_UNSAFE.sub("_", name).strip("._") if name else "default")


def capture(call: Callable[[], object], folder: Path, *, cuda: bool, calls: int = 3) -> list[Path]:
    """Profile `calls` calls; return the files written (table, trace)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    sync()
    with profile(activities=activities, record_shapes=True) as prof:
        for _ in range(calls):
            call()
        sync()
    folder.mkdir(parents=True, exist_ok=True)
    table = folder / "profile.txt"
    sort_by = "cuda_time_total" if cuda else "cpu_time_total"
    table.write_text(
        prof.key_averages().table(sort_by=sort_by, max_name_column_width=80, row_limit=20) + "\n",
        encoding="utf-8",
    )
    trace = folder / "trace.json"
    prof.export_chrome_trace(str(trace))
    return [table, trace]
