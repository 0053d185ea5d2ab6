"""Helpers of the history tests: a stand-in change point detector for machines without Apache Otava
(the `history` extra), stores filled with made-up runs, and a chat's webhook on 127.0.0.1."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from pytest_kernelperf.history import synthetic_runs as runfiles
from pytest_kernelperf.history.changepoints import Params, RawChange
from pytest_kernelperf.history.schema import MIGRATIONS
from pytest_kernelperf.history.store import HistoryStore

# A PostgreSQL server for the tests of both backends (`.ci/postgres.sh start DIR` prints its URL);
# without it their server variants skip.
SERVER_URL = os.environ.get("KERNELPERF_TEST_POSTGRES_URL")
NO_SERVER = "no PostgreSQL server: set KERNELPERF_TEST_POSTGRES_URL (.ci/postgres.sh starts one)"
needs_server = pytest.mark.skipif(not SERVER_URL, reason=NO_SERVER)


def with_database(url: str, name: str) -> str:
    """The server URL `url` naming the database `name`."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def split_backend(values: Sequence[float], params: Params) -> list[RawChange]:
    """Binary segmentation on means: a split is kept when the two sides differ by more than 2%.
    Deterministic and crude: it stands in for Otava in tests of everything around detection."""
    found: list[int] = []

    def segment(lo: int, hi: int) -> None:
        best, best_gap = None, 0.0
        for i in range(lo + 3, hi - 2):
            left, right = values[lo:i], values[i:hi]
            gap = abs(sum(right) / len(right) / (sum(left) / len(left)) - 1)
            if gap > best_gap:
                best, best_gap = i, gap
        if best is not None and best_gap > 0.02:
            found.append(best)
            segment(lo, best)
            segment(best, hi)

    segment(0, len(values))
    return [RawChange(i, 1e-4) for i in sorted(found)]


def commit_of(i: int) -> str:
    return f"{0xC0FFEE00 + i:08x}" + "0" * 32


def in_schema_1(run: Mapping[str, Any]) -> dict[str, Any]:
    """A synthetic run (written in the current run-file schema) as schema 1 wrote it: the level
    judged and the lowest and highest round under their old names (results/runfile.py's upgrade,
    backwards), without the derived sample median that schema 2 added beside them."""
    old = {**run, "schema_version": 1}
    old["results"] = [{**result} for result in run["results"]]
    for result in old["results"]:
        for part, names in SCHEMA_1_NAMES.items():
            found = result.get(part)
            if isinstance(found, dict):
                kept = {k: v for k, v in found.items() if not (part == "device_time" and k == "median_ms")}
                result[part] = {names.get(k, k): v for k, v in kept.items()}
    return old


# What schema 1 called each figure that run-file schema 2 renamed, object by object of a result.
SCHEMA_1_NAMES = {
    "device_time": {"level_ms": "median_ms", "round_range_ms": "ci_ms"},
    "host_latency": {"level_ms": "median_ms"},
    "baseline": {"level_ms": "median_ms", "round_range_ms": "ci_ms", "host_level_ms": "host_median_ms"},
    "reference": {"level_ms": "median_ms", "round_range_ms": "ci_ms"},
    "against": {"level_ms": "median_ms"},
}


def fill(
    store: HistoryStore,
    levels: Sequence[float],
    *,
    nodeid: str = "tests/test_gelu.py::test_gelu",
    name: str | None = "gelu",
    code_from: int | None = None,
    first: int = 0,
    schema_1: bool = False,
) -> None:
    """One run per level (a run's three rounds spread by 0.1%); the generated code changes at run
    `code_from`. With `schema_1`, each run file as run-file schema 1 wrote it."""
    for i, level in enumerate(levels):
        code = "aaaa1111" if code_from is None or i < code_from else "bbbb2222"
        rounds = [level * f for f in (0.999, 1.0, 1.001)]
        result = runfiles.result(
            nodeid, level, name=name, rounds=rounds, kernels=[("triton_poi_fused_gelu_0", code)]
        )
        run = runfiles.run([result], created=runfiles.created(first + i))
        store.append_run(in_schema_1(run) if schema_1 else run, commit=commit_of(first + i))


# Columns a later schema version renamed: the old name -> today's (version 8: the level judged).
RENAMED_SINCE = {"median_ms": "level_ms"}


def write_old_history(path: Path, version: int, runs: Sequence[Mapping[str, Any]]) -> None:
    """A history file at schema `version` holding `runs`, as that version wrote it: the runs are
    stored at the latest schema in a scratch file, then copied, column by column, into the tables
    that the first `version` migrations make."""
    scratch = path.with_name(path.name + ".latest")
    with HistoryStore(scratch) as latest:
        for run in runs:
            latest.append_run(run)
    db = sqlite3.connect(path, isolation_level=None)
    for migration in MIGRATIONS[:version]:
        for statement in migration:
            db.execute(statement)
    db.execute(f"PRAGMA user_version = {version}")
    db.execute("ATTACH DATABASE ? AS latest", (str(scratch),))
    for table in ("runs", "series", "measurements", "analyses"):
        columns = [str(row[1]) for row in db.execute(f"PRAGMA main.table_info({table})")]
        if columns:
            names, today = ", ".join(columns), ", ".join(RENAMED_SINCE.get(c, c) for c in columns)
            db.execute(f"INSERT INTO main.{table} ({names}) SELECT {today} FROM latest.{table}")
    db.execute("DETACH DATABASE latest")
    db.close()
    scratch.unlink()


class Receiver:
    """A chat service's incoming webhook on 127.0.0.1 (http.server in a thread): it records each
    POST (path, headers, JSON body) and answers with `answers` in turn, then 200 "ok"; `delay`
    seconds before each answer, `trickle` seconds between the bytes of its body."""

    SECRET = "s3cretT0ken-4f9a2b7c"

    def __init__(self) -> None:
        import http.server
        import threading

        self.requests: list[dict[str, Any]] = []
        self.answers: list[tuple[int, dict[str, str], bytes]] = []
        self.delay = 0.0
        self.trickle = 0.0  # seconds between the bytes of an answer's body: one at a time
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "json": json.loads(body)}
                )
                time.sleep(receiver.delay)
                status, headers, answer = receiver.answers.pop(0) if receiver.answers else (200, {}, b"ok")
                try:
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    if not receiver.trickle:
                        self.wfile.write(answer)
                    for byte in answer if receiver.trickle else b"":
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(receiver.trickle)
                except OSError:  # the client gave up waiting
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def url(self, path: str = f"/services/T0001/B0002/{SECRET}") -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def refused_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (a port just given back)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/services/T0001/B0002/{Receiver.SECRET}"


def with_host_rounds(result: dict[str, Any]) -> dict[str, Any]:
    """`result` with host-latency rounds in its baseline entry, as a run records them."""
    result["baseline_entry"]["host_latency"] = {
        "method": "cuda-event",
        "median_ms": 0.08,
        "ci_ms": [0.079, 0.081],
        "n": 3,
        "quantiles_ms": [0.079, 0.08, 0.081],
        "rounds_ms": [0.079, 0.08, 0.081],
    }
    return result
