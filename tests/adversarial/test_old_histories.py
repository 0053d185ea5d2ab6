"""Histories written by older versions of the schema: every reading command reads them (upgraded in
memory), finds what was stored, and leaves the file byte for byte as it was."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest
from history.historykit import split_backend, write_old_history

from pytest_kernelperf import cli
from pytest_kernelperf.history import changepoints
from pytest_kernelperf.history import synthetic_runs as rf
from pytest_kernelperf.history.schema import SCHEMA_VERSION
from pytest_kernelperf.history.store import HistoryStore


def _runs() -> list[dict[str, object]]:
    return [
        rf.run([rf.result("t.py::test_add", 1.0)], created=f"2026-11-{i + 1:02d}T00:00:00Z") for i in range(6)
    ]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
@pytest.mark.parametrize("command", ["show", "detect", "export", "report"])
def test_reading_commands_read_an_older_history_and_leave_it_unchanged(
    tmp_path: Path, version: int, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changepoints, "detector_available", lambda: True)
    monkeypatch.setattr(changepoints, "split_merge_backend", split_backend)
    db = tmp_path / "old.sqlite"
    write_old_history(db, version, _runs())
    before = _digest(db)
    extra = {
        "show": ["--no-detect"],
        "detect": [],
        "export": ["--json", "-"],
        "report": ["--html", str(tmp_path / "page.html")],
    }[command]
    out = io.StringIO()
    code = cli.main(["history", "--db", str(db), command, *extra], out=out)
    assert code == 0, out.getvalue()
    if command == "export":
        assert out.getvalue().count('"t.py::test_add"') == 6  # every stored measurement
        # The level, stored as median_ms before version 8, under today's name.
        assert [m["level_ms"] for m in json.loads(out.getvalue())["measurements"]] == [1.0] * 6
    elif command == "show":
        assert "6 runs, 1 series" in out.getvalue()
    assert _digest(db) == before
    with HistoryStore(db, read_only=True) as store:  # still at its own version on disk
        assert store.run_count() == 6
        assert [p.level_ms for points in store.points().values() for p in points] == [1.0] * 6
    assert _digest(db) == before
