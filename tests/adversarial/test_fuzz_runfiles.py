"""Fuzzing every reader of run files and history databases: a real run file (tests/adversarial/data/
run.json, written by a ScriptedTimer run) and a real history, mutated field by field and byte by byte.
Every command exits 0, 1 or 2 as documented, never with an exception (a traceback), and never
changes the file it reads. 300 examples each by default (about 30 s); FUZZ_EXAMPLES=N for more."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from history.historykit import split_backend
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_kernelperf import cli
from pytest_kernelperf.history import changepoints
from pytest_kernelperf.history import synthetic_runs as rf
from pytest_kernelperf.history.store import HistoryStore

pytestmark = pytest.mark.slow  # a few hundred examples, about half a minute

REAL_RUN = Path(__file__).parent / "data" / "run.json"
REAL_TEXT = REAL_RUN.read_text(encoding="utf-8")
REAL = json.loads(REAL_TEXT)
FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "300")),
    deadline=None,
    database=None,  # nothing left in the checkout
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def paths(value: Any, at: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every place in a JSON document, parents before children."""
    yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*at, index))


PLACES = [p for p in paths(REAL) if p]

HOSTILE_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1.0,
    0.5,
    1e-300,
    1.7e308,
    2**64,
    -(2**63),
    "",
    "x",
    "\x1b[31mred\x1b[0m",
    "=HYPERLINK(1)",
    "line\nbreak",
    "\ud800",
    "slower",
    "NVIDIA H200",
    [],
    [1.0, 2.0],
    [0.0],
    [None],
    {},
    {"a": 1},
    [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
]

# Text that JSON allows and Python's parser takes, put in place of a value.
RAW_TOKENS = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "-1e400",
    "1" * 5000,
    "[" * 3000 + "]" * 3000,
    '"\\ud800"',
]


def place(data: Any, at: tuple[str | int, ...]) -> tuple[Any, Any]:
    for key in at[:-1]:
        data = data[key]
    return data, at[-1]


@st.composite
def mutated_run(draw: st.DrawFn) -> bytes:
    """The real run file with 1 to 3 edits: a value replaced, a key removed, a list item doubled,
    a raw JSON token put in, or bytes damaged."""
    data = copy.deepcopy(REAL)
    raw: list[tuple[str, str]] = []
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.sampled_from(PLACES))
        try:
            parent, key = place(data, at)
            parent[key]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed it
        kind = draw(st.sampled_from(["value", "value", "delete", "double", "raw"]))
        if kind == "value":
            parent[key] = copy.deepcopy(draw(st.sampled_from(HOSTILE_VALUES)))
        elif kind == "delete":
            del parent[key]
        elif kind == "double" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        elif kind == "raw":
            marker = f"@@raw{len(raw)}@@"
            parent[key] = marker
            raw.append((json.dumps(marker), draw(st.sampled_from(RAW_TOKENS))))
    text = json.dumps(data, indent=1)
    for marker, token in raw:
        text = text.replace(marker, token)
    blob = bytearray(text.encode("utf-8", "surrogatepass"))
    for _ in range(draw(st.integers(0, 2))):
        offset = draw(st.integers(0, len(blob) - 1))
        blob[offset] = draw(st.sampled_from(b' \n"{}[],:0-.eE\x00\x1b\xff'))
    if draw(st.booleans()) and draw(st.booleans()):
        blob = blob[: draw(st.integers(0, len(blob)))]  # truncated
    return bytes(blob)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def kernelperf(*args: str) -> tuple[int, str]:
    """The CLI in this process: its status and what it printed to stderr; any exception fails."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = cli.main(list(args), out=io.StringIO())
    return status, err.getvalue()


def check(status: int, err: str, allowed: tuple[int, ...]) -> None:
    assert status in allowed, (status, err)
    assert "Traceback" not in err, err
    if status == 2:
        assert err.startswith("error: "), err


@contextlib.contextmanager
def stand_in_detector() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(changepoints, "detector_available", lambda: True)
        patch.setattr(changepoints, "split_merge_backend", split_backend)
        yield


@FUZZ
@given(mutated_run())
def test_a_mutated_run_file_gets_a_documented_status_from_every_command(blob: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder, stand_in_detector():
        tmp = Path(folder)
        path = tmp / "run.json"
        path.write_bytes(blob)
        before = digest(path)
        db = tmp / "h.sqlite"
        runs = [
            (("compare", str(REAL_RUN), str(path)), (0, 1, 2)),
            (("compare", str(path), str(REAL_RUN)), (0, 1, 2)),
            (("merge", str(path), "-o", str(tmp / "merged.json")), (0, 2)),
            (("report", str(path), "--markdown", str(tmp / "md.md")), (0, 2)),
            (("update-baselines", str(path), "--baseline-dir", str(tmp / "baselines")), (0, 2)),
            (("history", "--db", str(db), "import", "--no-git", str(path)), (0, 2)),
        ]
        statuses = []
        for args, allowed in runs:
            status, err = kernelperf(*args)
            check(status, err, allowed)
            statuses.append(status)
        # One validation: the file is usable by all readers or by none. Merge may also refuse a
        # valid file (a test twice in it), update-baselines one with nothing to record.
        merge, report, update, history_import = statuses[2:]
        assert report == history_import, statuses
        assert report == 0 or statuses[0] == statuses[1] == merge == update == 2, statuses
        if db.exists():
            for args in (
                ("show",),
                ("detect",),
                ("export", "--csv", "-"),
                ("report", "--html", str(tmp / "h.html")),
            ):
                check(*kernelperf("history", "--db", str(db), *args), (0, 1, 2))
        assert digest(path) == before
        assert digest(REAL_RUN) == hashlib.sha256(REAL_TEXT.encode()).hexdigest()


# --- history databases ---------------------------------------------------------------------------


def _template() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="kernelperf-fuzz-"))
    db = folder / "h.sqlite"
    with HistoryStore(db) as store:
        for i in range(8):
            level = 1.0 if i < 4 else 1.2
            results = [
                rf.result(
                    f"tests/test_k.py::test_{j}",
                    level,
                    name="n" if j else None,
                    rounds=[level * 0.999, level, level * 1.001],
                    kernels=[("k0", "aaaa1111" if i < 4 else "bbbb2222")],
                    nbytes=1 << 20,
                    host_ms=level * 2 if j else None,
                )
                for j in range(2)
            ]
            store.append_run(
                rf.run(results, created=rf.created(i), peaks={rf.H200: 4000.0}),
                commit=f"{i:040x}",
                branch="main",
            )
        store.append_run(REAL)
    with stand_in_detector():
        assert kernelperf("history", "--db", str(db), "detect")[0] == 1  # caches change points
    return db


TEMPLATE = _template()
TABLES = {
    table: [row[1] for row in sqlite3.connect(TEMPLATE).execute(f"PRAGMA table_info({table})")]
    for table in ("runs", "series", "measurements", "analyses")
}
SQL_VALUES: list[Any] = [
    None,
    0,
    -1,
    1.5,
    1e308 * 10,
    -1e308 * 10,
    "",
    "x",
    "[",
    "{}",
    "[1,",
    "[]",
    '{"a": [1]}',
    "\x1b[31m",
    "=1+1",
    b"\x00\xff",
    2**62,
]


Edit = tuple[str, Any, Any]  # ("sql", statement, arguments) or ("bytes", offset, data)


@st.composite
def mutated_history(draw: st.DrawFn) -> list[Edit]:
    edits: list[Edit] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["update", "update", "update", "delete", "drop", "version", "bytes"]))
        table = draw(st.sampled_from(sorted(TABLES)))
        if kind == "update":
            column = draw(st.sampled_from(TABLES[table]))
            value = draw(st.sampled_from(SQL_VALUES))
            every = draw(st.booleans())
            where = "" if every else " WHERE rowid IN (SELECT rowid FROM {t} LIMIT 1)"
            if table == "measurements":  # WITHOUT ROWID
                where = "" if every else " WHERE run_id = (SELECT MIN(run_id) FROM measurements)"
            edits.append(
                ("sql", f"UPDATE OR IGNORE {table} SET {column} = ?" + where.format(t=table), (value,))
            )
        elif kind == "delete":
            keep = "rowid" if table != "measurements" else "run_id"
            edits.append(("sql", f"DELETE FROM {table} WHERE {keep} % 2 = 0", ()))
        elif kind == "drop":
            edits.append(("sql", f"DROP TABLE {table}", ()))
        elif kind == "version":
            edits.append(("sql", f"PRAGMA user_version = {draw(st.sampled_from([0, 1, 3, 99, -1]))}", ()))
        else:
            size = TEMPLATE.stat().st_size
            edits.append(("bytes", draw(st.integers(0, size - 1)), draw(st.binary(min_size=1, max_size=16))))
    return edits


def damage(db: Path, edits: list[Edit]) -> None:
    for kind, first, second in edits:
        if kind == "bytes":
            blob = bytearray(db.read_bytes())
            blob[first : first + len(second)] = second
            db.write_bytes(bytes(blob))
            continue
        statement, args = first, second
        try:
            with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as connection:
                connection.execute("PRAGMA foreign_keys = OFF")
                connection.execute(statement, args)
        except (sqlite3.Error, UnicodeDecodeError):
            pass  # the damage done so far stays


@FUZZ
@given(mutated_history(), st.sampled_from(["show", "detect", "export-csv", "export-json", "report"]))
def test_a_damaged_history_gets_a_documented_status_and_is_left_as_it_is(
    edits: list[Edit], command: str
) -> None:
    with tempfile.TemporaryDirectory() as folder, stand_in_detector():
        db = Path(folder) / "h.sqlite"
        shutil.copyfile(TEMPLATE, db)
        damage(db, edits)
        before = digest(db)
        args = {
            "show": ["show"],
            "detect": ["detect"],
            "export-csv": ["export", "--csv", "-"],
            "export-json": ["export", "--json", "-"],
            "report": ["report", "--html", str(Path(folder) / "h.html")],
        }[command]
        for more in ([], ["--branch", "main"], ["--test", "test_1", "--metric", "all"]):
            if command.startswith("export") and more:
                continue
            check(*kernelperf("history", "--db", str(db), *args, *more), (0, 1, 2))
        assert digest(db) == before
        # A writer meets the same damage with a message too.
        check(*kernelperf("history", "--db", str(db), "import", "--no-git", str(REAL_RUN)), (0, 2))
