"""The history store: every run file ingested into one database, one row per measurement: an
SQLite file (the default), or a PostgreSQL server (`postgresql://...`, through `server.py`).

A run is what `pytest --kernelperf --kernelperf-json=PATH` writes (docs/json-schema.md), checked by
the run file gateway (`results/runfile.py`, which upgrades older versions in one place); this module
stores that JSON dict as written. Each result gives one measurement per metric (`device_time`,
`host_latency`) in a *series*: (repository, test, name, device, cache mode, metric).

Several CI jobs may append at once. An SQLite file is in WAL mode, every write is one
`BEGIN IMMEDIATE` transaction (the write lock is taken before anything is read), SQLite waits
`busy_timeout` for a lock held by another process, and a write that still finds the database locked
is retried with a growing pause. On a server, every write is one transaction that first takes the
history's advisory lock, the same rule. The same run ingested twice into one repository is stored
once: a run is known by the SHA-256 of its repository and its canonical JSON.

The schema is versioned (SQLite: `PRAGMA user_version`; a server: the table `kernelperf_schema`) and
upgraded by the steps of `MIGRATIONS`, in order, each in its own transaction; a database written by
a newer version is refused. A reader of an older SQLite file upgrades a copy in memory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import random
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from pytest_kernelperf.model.names import METRICS
from pytest_kernelperf.results import runfile
from pytest_kernelperf.settings import history_location

from . import counters
from .server import WRITE_LOCK, ServerConnection, masked, translate_schema

MAX_QUANTILES = 32
BUSY_TIMEOUT_MS = 30_000
WRITE_ATTEMPTS = 20

T = TypeVar("T")


class HistoryError(Exception):
    """A history database or run file that cannot be used; the message names the file."""


class DamagedHistory(HistoryError):
    """What a history database holds is not what this module writes (edited by hand, or written by
    something else): the message says where; the caller names the file."""


# --- schema --------------------------------------------------------------------------------------

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: runs, series and their measurements.
    (
        """CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            digest TEXT NOT NULL UNIQUE,
            created TEXT NOT NULL,
            ingested TEXT NOT NULL,
            commit_sha TEXT,
            branch TEXT,
            source TEXT,
            plugin_version TEXT,
            mode TEXT,
            environment TEXT NOT NULL,
            devices TEXT NOT NULL,
            peaks TEXT NOT NULL,
            settings TEXT NOT NULL
        )""",
        "CREATE INDEX runs_order ON runs (created, id)",
        "CREATE INDEX runs_commit ON runs (commit_sha)",
        """CREATE TABLE series (
            id INTEGER PRIMARY KEY,
            test TEXT NOT NULL,
            name TEXT NOT NULL,
            device TEXT NOT NULL,
            cache TEXT NOT NULL,
            metric TEXT NOT NULL,
            UNIQUE (test, name, device, cache, metric)
        )""",
        """CREATE TABLE measurements (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            series_id INTEGER NOT NULL REFERENCES series (id),
            verdict TEXT,
            method TEXT,
            median_ms REAL NOT NULL,
            value_ms REAL NOT NULL,
            ci_low_ms REAL,
            ci_high_ms REAL,
            n INTEGER,
            rounds_ms TEXT NOT NULL,
            quantiles_ms TEXT NOT NULL,
            kernels TEXT,
            autotune TEXT,
            reference_ratio REAL,
            reference_ms REAL,
            bytes INTEGER,
            gb_per_s REAL,
            peak_gb_per_s REAL,
            peak_fraction REAL,
            artifacts TEXT NOT NULL,
            PRIMARY KEY (series_id, run_id)
        ) WITHOUT ROWID""",
        "CREATE INDEX measurements_run ON measurements (run_id)",
    ),
    # 2: change points found per series, cached until the series gets a newer run.
    (
        """CREATE TABLE analyses (
            series_id INTEGER PRIMARY KEY REFERENCES series (id) ON DELETE CASCADE,
            last_run_id INTEGER NOT NULL,
            runs INTEGER NOT NULL,
            params TEXT NOT NULL,
            result TEXT NOT NULL
        )""",
    ),
    # 3: a measurement judged against another revision in its own process (--kernelperf-against):
    # that revision's commit and level, the pair kept together.
    (
        "ALTER TABLE measurements ADD COLUMN against_commit TEXT",
        "ALTER TABLE measurements ADD COLUMN against_ms REAL",
    ),
    # 4: the peak device memory of one call beyond its inputs (results[].memory.peak_bytes).
    ("ALTER TABLE measurements ADD COLUMN peak_memory_bytes INTEGER",),
    # 5: the repository (or project) of each run and series, so that one server serves many; the
    # runs and series of older versions belong to the unnamed repository "". SQLite cannot change a
    # table's UNIQUE constraint, so series is made anew with the same ids (foreign keys off meanwhile).
    (
        "ALTER TABLE runs ADD COLUMN repository TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX runs_repository ON runs (repository, created, id)",
        """CREATE TABLE series_v5 (
            id INTEGER PRIMARY KEY,
            repository TEXT NOT NULL DEFAULT '',
            test TEXT NOT NULL,
            name TEXT NOT NULL,
            device TEXT NOT NULL,
            cache TEXT NOT NULL,
            metric TEXT NOT NULL,
            UNIQUE (repository, test, name, device, cache, metric)
        )""",
        "INSERT INTO series_v5 (id, test, name, device, cache, metric) "
        "SELECT id, test, name, device, cache, metric FROM series",
        "DROP TABLE series",
        "ALTER TABLE series_v5 RENAME TO series",
    ),
    # 6: Nsight Compute counters per kernel of a measurement (history/counters.py).
    counters.MIGRATION,
)
SCHEMA_VERSION = len(MIGRATIONS)
# The same steps on a PostgreSQL server: each statement above through server.translate_schema, but
# where PostgreSQL does it in its own words (it can change a constraint in place).
SERVER_MIGRATIONS: dict[int, tuple[str, ...]] = {
    4: (
        "ALTER TABLE runs ADD COLUMN repository TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX runs_repository ON runs (repository, created, id)",
        "ALTER TABLE series ADD COLUMN repository TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE series DROP CONSTRAINT series_test_name_device_cache_metric_key",
        "ALTER TABLE series ADD CONSTRAINT series_repository_key "
        "UNIQUE (repository, test, name, device, cache, metric)",
    ),
}
# A server keeps the schema version in a table of its own (SQLite: PRAGMA user_version).
SERVER_VERSION_TABLE = "kernelperf_schema"


# --- records -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeriesKey:
    test: str  # pytest node id
    name: str  # the kernel_bench call's name= ("" when none)
    device: str
    cache: str
    metric: str  # "device_time" or "host_latency"

    def label(self) -> str:
        name = f"[{self.name}]" if self.name else ""
        return f"{self.test}{name} {self.device} {self.cache} {self.metric}"


@dataclass(slots=True)  # not frozen: a history holds many, and frozen ones are slower to make
class Point:
    """One run's measurement of a series, with what attribution needs from its run."""

    run_id: int
    created: str
    commit: str | None
    branch: str | None
    median_ms: float
    rounds_ms: tuple[float, ...] | str  # a JSON list: decoded by rounds()
    verdict: str | None = None
    kernels: tuple[Mapping[str, Any], ...] | str | None = None  # a JSON string: decoded by inventory()
    autotune: Mapping[str, Any] | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    reference_ratio: float | None = None
    peak_fraction: float | None = None
    artifacts: tuple[str, ...] = ()
    value_ms: float | None = None  # the mean of the rounds, when known
    peak_memory_bytes: int | None = None  # the call's peak device memory beyond its inputs

    def inventory(self) -> tuple[Mapping[str, Any], ...] | None:
        """The kernel inventory (name, launches, share, ms, code per kernel), None when not recorded."""
        if isinstance(self.kernels, str):
            kernels = _json(self.kernels, f"the measurement of run {self.run_id}", "kernels")
            if not isinstance(kernels, list):
                raise DamagedHistory(f"the measurement of run {self.run_id}: kernels is not a list")
            return tuple(kernels)
        return self.kernels

    def rounds(self) -> tuple[float, ...]:
        """The per-round location estimates, in ms (the median alone when the run gave none)."""
        if not isinstance(self.rounds_ms, str):
            return self.rounds_ms
        try:
            rounds = _float_list(self.rounds_ms)
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
        """The run's location: the mean of its rounds (the median when it has one round)."""
        if self.value_ms is not None:
            return self.value_ms
        rounds = self.rounds()
        return sum(rounds) / len(rounds) if rounds else self.median_ms


# --- git -----------------------------------------------------------------------------------------


def rev_parse(cwd: Path | str, *args: str) -> str | None:
    """`git rev-parse ARGS` in `cwd`, or None when git is missing, fails or says nothing."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None


def git_info(rootdir: Path | str) -> tuple[str, str | None] | None:
    """(commit, branch) of the checkout at `rootdir`, or None outside git; branch None when detached."""
    commit = rev_parse(rootdir, "HEAD")
    if commit is None:
        return None
    branch = rev_parse(rootdir, "--abbrev-ref", "HEAD")
    return commit, None if branch in (None, "HEAD") else branch


# --- reading a run dict --------------------------------------------------------------------------


def canonical_digest(run: Mapping[str, Any], repository: str = "") -> str:
    """A run's unique key: the SHA-256 of its canonical JSON, and of its repository when it has one
    (the same run file imported into two repositories is two runs; into one, one run)."""
    text = json.dumps(run, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    if repository:
        text = f"repository {json.dumps(repository)}\n{text}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _numbers(value: Any) -> list[float]:
    if not isinstance(value, list):
        return []
    out = [_number(v) for v in value]
    return [v for v in out if v is not None]


def quantiles(samples: Sequence[float], count: int = MAX_QUANTILES) -> list[float]:
    """Up to `count` evenly spaced quantiles (minimum to maximum) of the samples."""
    ordered = sorted(samples)
    if len(ordered) <= count:
        return ordered
    last = len(ordered) - 1
    out = []
    for i in range(count):
        pos = i * last / (count - 1)
        lo = int(pos)
        hi = min(lo + 1, last)
        out.append(ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo))
    return out


def validate_run(run: Any, source: str) -> None:
    """The run file gateway's one validation (results/runfile.py), with a HistoryError."""
    try:
        runfile.check(run, source)
    except runfile.RunFileError as exc:
        raise HistoryError(str(exc)) from None


def _measurements(run: Mapping[str, Any]) -> Iterator[tuple[SeriesKey, dict[str, Any]]]:
    """Each (series, measurement row) of a run dict; results without a timed median are skipped."""
    peaks = run.get("peaks") if isinstance(run.get("peaks"), dict) else {}
    assert isinstance(peaks, dict)
    for result in run["results"]:
        if not isinstance(result, dict) or not isinstance(result.get("nodeid"), str):
            continue
        entry = result.get("baseline_entry") if isinstance(result.get("baseline_entry"), dict) else {}
        assert isinstance(entry, dict)
        kernels = entry.get("kernels") if isinstance(entry.get("kernels"), list) else None
        autotune = result.get("autotune", entry.get("autotune"))
        reference = result.get("reference") if isinstance(result.get("reference"), dict) else {}
        against = result.get("against") if isinstance(result.get("against"), dict) else {}
        memory = result.get("memory") if isinstance(result.get("memory"), dict) else {}
        assert isinstance(against, dict) and isinstance(memory, dict)
        throughput = result.get("throughput") if isinstance(result.get("throughput"), dict) else {}
        assert isinstance(reference, dict) and isinstance(throughput, dict)
        device = str(result.get("device") or "")
        for metric in METRICS:
            data = result.get(metric)
            if not isinstance(data, dict):
                continue
            median = _number(data.get("level_ms", data.get("median_ms")))
            if median is None:
                continue
            samples = _numbers(data.get("samples_ms"))
            recorded = entry.get(metric) if isinstance(entry.get(metric), dict) else {}
            assert isinstance(recorded, dict)
            quants = _numbers(recorded.get("quantiles_ms")) or quantiles(samples)
            # A run file keeps host latency's rounds only in the entry it would record.
            rounds = _numbers(data.get("rounds_ms")) or _numbers(recorded.get("rounds_ms")) or [median]
            ci = _numbers(data.get("round_range_ms", data.get("ci_ms")))
            row: dict[str, Any] = {
                "verdict": result.get("verdict") if isinstance(result.get("verdict"), str) else None,
                "method": data.get("method") if isinstance(data.get("method"), str) else None,
                "median_ms": median,
                "value_ms": sum(rounds) / len(rounds),
                "ci_low_ms": ci[0] if len(ci) == 2 else None,
                "ci_high_ms": ci[1] if len(ci) == 2 else None,
                "n": len(samples) or (int(recorded["n"]) if isinstance(recorded.get("n"), int) else None),
                "rounds_ms": _dumps(rounds),
                "quantiles_ms": _dumps(quants),
                "kernels": None,
                "autotune": None,
                "reference_ratio": None,
                "reference_ms": None,
                "against_commit": None,
                "against_ms": None,
                "peak_memory_bytes": None,
                "bytes": None,
                "gb_per_s": None,
                "peak_gb_per_s": None,
                "peak_fraction": None,
                "artifacts": _dumps([a for a in result.get("artifacts") or [] if isinstance(a, str)]),
            }
            if metric == "device_time":
                row["kernels"] = None if kernels is None else _dumps(kernels)
                row["autotune"] = None if autotune is None else _dumps(autotune)
                row["reference_ratio"] = _number(reference.get("ratio"))
                row["reference_ms"] = _number(reference.get("level_ms", reference.get("median_ms")))
                peak = memory.get("peak_bytes")
                if isinstance(peak, int) and not isinstance(peak, bool) and peak >= 0:
                    row["peak_memory_bytes"] = peak
                if isinstance(against.get("commit"), str):
                    row["against_commit"] = against["commit"]
                    row["against_ms"] = _number(against.get("level_ms", against.get("median_ms")))
                nbytes = throughput.get("bytes")
                if isinstance(nbytes, int) and not isinstance(nbytes, bool) and nbytes > 0 and median > 0:
                    row["bytes"] = nbytes
                    row["gb_per_s"] = nbytes / (median * 1e-3) / 1e9  # finite: times are at least MIN_MS
                    peak = peaks.get(device)
                    peak_gbps = _number(peak.get("gb_per_s")) if isinstance(peak, dict) else None
                    peak_gbps = peak_gbps or _number(throughput.get("peak_gb_per_s"))
                    # A run file leaves the fraction null for a call whose bytes fit in cache.
                    resident = "peak_fraction" in throughput and throughput["peak_fraction"] is None
                    if peak_gbps:
                        row["peak_gb_per_s"] = peak_gbps
                        row["peak_fraction"] = None if resident else row["gb_per_s"] / peak_gbps
            name = result.get("name")
            key = SeriesKey(
                result["nodeid"],
                name if isinstance(name, str) else "",
                device,
                str(result.get("cache") or ""),
                metric,
            )
            yield key, row


def _device_environments(run: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """Device name -> the software around it: the run's environment, then the device's own."""
    common = run.get("environment") if isinstance(run.get("environment"), dict) else {}
    assert isinstance(common, dict)
    out: dict[str, dict[str, str]] = {}
    for device in run.get("devices") or []:
        if isinstance(device, dict) and isinstance(device.get("name"), str):
            env = {str(k): str(v) for k, v in common.items() if k != "xdist_worker"}
            own = device.get("environment")
            if isinstance(own, dict):
                env.update({str(k): str(v) for k, v in own.items()})
            out[device["name"]] = env
    return out


# --- the store -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ingest:
    run_id: int
    new: bool  # False: the same run was already stored
    measurements: int


def _retry(action: Callable[[], T], what: str, attempts: int = WRITE_ATTEMPTS) -> T:
    """Run `action`, retrying while SQLite says the database is locked or busy."""
    pause = 0.01
    for attempt in range(attempts):
        try:
            return action()
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or attempt == attempts - 1:
                raise HistoryError(f"{what}: {exc}") from None
            time.sleep(pause * (1 + random.random()))
            pause = min(pause * 2, 1.0)
    raise AssertionError("unreachable")


class HistoryStore:
    """A history database (created on first use). Use as a context manager, or call close().

    `location` is a file path (SQLite, the default) or a `postgresql://` URL (a PostgreSQL server,
    through psycopg 3). `repository` names the repository (or project) whose runs this store reads
    and writes: one server, or one file, holds many, each apart from the others ("" by default).

    With `read_only`, nothing in the history changes: an SQLite file is opened with `mode=ro` (or
    `immutable=1` where not even the WAL's shared-memory file can be made, as on a read-only file
    system), no switch to WAL, no cached change points written; a file of an older schema is copied
    into memory and upgraded there. A server session is made read-only; a server of an older schema
    is refused with the command that upgrades it."""

    def __init__(
        self,
        location: Path | str,
        *,
        create: bool = True,
        read_only: bool = False,
        repository: str = "",
    ) -> None:
        self.read_only = read_only
        self.repository = repository
        self.server: ServerConnection | None = None
        self.db: Any
        try:  # a URL that went through Path (its // folded) is no server's, nor a file
            server = history_location(location, server=isinstance(location, str))
        except ValueError as exc:
            raise HistoryError(str(exc)) from None
        if isinstance(server, str):
            self.path = Path(".")  # no file; messages name `where`
            self.where = masked(server)
            self._open_server(server)
            return
        self.path = Path(location)
        self.where = str(self.path)
        if self.path.is_dir():  # SQLite would say "unable to open" or "disk I/O error"
            raise HistoryError(f"{self.path} is a folder, not a history database")
        if (read_only or not create) and not self.path.exists():
            raise HistoryError(f"{self.path}: no such history database")
        if (read_only or not create) and self.path.is_file() and self.path.stat().st_size == 0:
            # A reader must not turn an empty file into a database.
            raise HistoryError(f"{self.path}: an empty file, not a history database yet")
        if read_only:
            self.db = self._open_read_only()
            return
        if create and not self.path.parent.is_dir():
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise HistoryError(
                    f"{self.path}: cannot make its folder {self.path.parent}: {exc.strerror or exc}"
                ) from None
        try:
            self.db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        except sqlite3.Error as exc:
            raise HistoryError(f"{self.path}: {self._why(exc)}") from None
        try:
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.db.execute("PRAGMA foreign_keys = ON")
            self._refuse_foreign_database()
            mode = _retry(lambda: self.db.execute("PRAGMA journal_mode = WAL").fetchone(), str(self.path))
            if mode is None or str(mode[0]).lower() != "wal":
                raise HistoryError(f"{self.path}: cannot switch the database to WAL mode (got {mode})")
            self.db.execute("PRAGMA synchronous = NORMAL")
            self._migrate()
        except UnicodeDecodeError as exc:  # text in the file that is not UTF-8
            self.db.close()
            raise HistoryError(f"{self.path}: not a history database ({exc})") from None
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise HistoryError(f"{self.path}: {self._why(exc)}") from None
        except HistoryError:
            self.db.close()
            raise

    def _open_server(self, url: str) -> None:
        self.server = self.db = ServerConnection(url, read_only=self.read_only, error=HistoryError)
        try:
            self._refuse_foreign_database()
            version = self.schema_version
            if version > SCHEMA_VERSION:
                raise HistoryError(self._newer(version))
            if self.read_only and version == 0:
                raise HistoryError(
                    f"{self.where}: no history on this server yet (`history import` makes one)"
                )
            if self.read_only and version < SCHEMA_VERSION:
                raise HistoryError(
                    f"{self.where}: the history is at schema version {version}, this pytest-kernelperf "
                    f"reads version {SCHEMA_VERSION}: upgrade it once with "
                    f"`python -m pytest_kernelperf history --db URL upgrade` (nothing stored is lost)"
                )
            if not self.read_only:
                self._migrate()
        except BaseException:
            self.server.close()
            raise

    def _newer(self, version: int) -> str:
        return (
            f"{self.where}: history schema version {version} was written by a newer "
            f"pytest-kernelperf (this one reads up to {SCHEMA_VERSION})"
        )

    def _why(self, exc: sqlite3.Error) -> str:
        """What is wrong, in words: SQLite says "unable to open database file" for a missing folder
        and for a file it may not write alike."""
        text = str(exc)
        folder = self.path.parent
        if not folder.is_dir():
            return f"its folder {folder} does not exist"
        if not _writable(folder) or (self.path.exists() and not _writable(self.path)):
            return (
                f"cannot be written: the file or its folder is read-only ({text}); reading commands "
                "(history show, detect, export, report) can still read it"
            )
        if "unable to open" in text.lower():
            return f"cannot open the history database: {text}"
        return f"not a history database ({text})"

    def _open_read_only(self) -> sqlite3.Connection:
        uri = self.path.resolve().as_uri()
        db: sqlite3.Connection | None = None
        problem: Exception | None = None
        # mode=ro reads a WAL database while others write it, but needs its -shm file (made when
        # the folder is writable); immutable=1 reads a file that nothing can change.
        for query in ("?mode=ro", "?mode=ro&immutable=1"):
            try:
                db = sqlite3.connect(
                    uri + query, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None
                )
                db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                version = int(db.execute("PRAGMA user_version").fetchone()[0])
                db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
                break
            except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
                if db is not None:
                    db.close()
                db, problem = None, exc
                if "unable to open" not in str(exc).lower():
                    break
        if db is None:
            assert problem is not None
            text = str(problem)
            if "unable to open" in text.lower():
                raise HistoryError(f"{self.path}: cannot open the history database for reading: {text}")
            raise HistoryError(f"{self.path}: not a history database ({text})")
        self.db = db
        try:
            self._refuse_foreign_database()
            if version > SCHEMA_VERSION:
                raise HistoryError(self._newer(version))
            if version == 0:
                raise HistoryError(f"{self.path}: an empty database, not a history yet")
            if version < SCHEMA_VERSION:
                # An older schema: read a copy in memory, upgraded there; the file stays as it is.
                memory = sqlite3.connect(":memory:", isolation_level=None)
                db.backup(memory)
                db.close()
                self.db = db = memory
                for step in range(version, SCHEMA_VERSION):
                    self._upgrade_step(db, step)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            db.close()
            raise HistoryError(f"{self.path}: not a history database ({exc})") from None
        except HistoryError:
            db.close()
            raise
        return db

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    # transactions

    def _write(self, action: Callable[[Any], T], what: str) -> T:
        if self.read_only:
            raise HistoryError(f"{self.where}: {what}: the history was opened for reading only")

        def attempt() -> T:
            if self.server is None:
                self.db.execute("BEGIN IMMEDIATE")
            else:
                self.db.execute("BEGIN")
                self.db.execute(f"SELECT pg_advisory_xact_lock({WRITE_LOCK})")
            try:
                out = action(self.db)
            except BaseException:
                with contextlib.suppress(Exception):  # a lost connection has nothing to roll back
                    self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
            return out

        return _retry(attempt, f"{self.where}: {what}")

    def _refuse_foreign_database(self) -> None:
        """A database with tables but no history schema belongs to something else: leave it as it
        is (no tables added, no switch to WAL)."""
        if self.schema_version:
            return
        if self.server is None:
            query = "SELECT name FROM sqlite_master WHERE type = 'table'"
        else:  # a server database may hold other things; only tables of our names conflict
            query = (
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                "AND table_name IN ('runs', 'series', 'measurements', 'analyses')"
            )
        tables = [row[0] for row in self.db.execute(query)]
        if tables:
            shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
            kind = "an SQLite database" if self.server is None else "a database"
            raise HistoryError(
                f"{self.where}: {kind} of something else (tables: {shown}), not a "
                "kernelperf history; give the history a database of its own"
            )

    @property
    def schema_version(self) -> int:
        if self.server is None:
            return int(self.db.execute("PRAGMA user_version").fetchone()[0])
        known = self.db.execute("SELECT to_regclass(?) IS NOT NULL", (SERVER_VERSION_TABLE,)).fetchone()[0]
        if not known:
            return 0
        row = self.db.execute(f"SELECT MAX(version) FROM {SERVER_VERSION_TABLE}").fetchone()
        return int(row[0] or 0)

    def _upgrade_step(self, db: Any, current: int) -> None:
        """Schema version `current` to `current + 1`, in the caller's transaction."""
        if self.server is None:
            for statement in MIGRATIONS[current]:
                db.execute(statement)
            db.execute(f"PRAGMA user_version = {current + 1}")
            return
        statements = SERVER_MIGRATIONS.get(current) or tuple(map(translate_schema, MIGRATIONS[current]))
        for statement in statements:
            db.execute(statement)
        db.execute(f"DELETE FROM {SERVER_VERSION_TABLE}")
        db.execute(f"INSERT INTO {SERVER_VERSION_TABLE} (version) VALUES (?)", (current + 1,))

    def _migrate(self) -> None:
        version = self.schema_version
        if version > SCHEMA_VERSION:
            raise HistoryError(self._newer(version))
        if version == SCHEMA_VERSION:
            return
        if self.server is None:
            # Version 5 makes a table anew: foreign keys are checked at the end of each step instead
            # (the pragma is a no-op inside a transaction).
            self.db.execute("PRAGMA foreign_keys = OFF")
        else:
            self._write(
                lambda db: db.execute(f"CREATE TABLE IF NOT EXISTS {SERVER_VERSION_TABLE} (version INTEGER)"),
                "making the schema version table",
            )
        try:
            while version < SCHEMA_VERSION:

                def step(db: Any) -> int:
                    current = self.schema_version
                    if current >= SCHEMA_VERSION:  # another process migrated meanwhile
                        return current
                    self._upgrade_step(db, current)
                    if self.server is None and db.execute("PRAGMA foreign_key_check").fetchone():
                        raise HistoryError(f"{self.where}: upgrading the schema would break its references")
                    return current + 1

                version = self._write(step, "upgrading the schema")
        finally:
            if self.server is None:
                self.db.execute("PRAGMA foreign_keys = ON")

    # ingest

    def append_run(
        self,
        run: Mapping[str, Any] | runfile.CheckedRun,
        *,
        commit: str | None = None,
        branch: str | None = None,
        source: str | None = None,
    ) -> int:
        """Store one run file's parsed JSON; return its run id (the existing one for a known run)."""
        return self.ingest(run, commit=commit, branch=branch, source=source).run_id

    def ingest(
        self,
        run: Mapping[str, Any] | runfile.CheckedRun,
        *,
        commit: str | None = None,
        branch: str | None = None,
        source: str | None = None,
    ) -> Ingest:
        """Store a run: its parsed JSON, checked here by the run file gateway, or a CheckedRun that
        the gateway made."""
        where = source or "<run>"
        if isinstance(run, runfile.CheckedRun):
            run = run.data
        else:
            validate_run(run, where)
        try:
            digest = canonical_digest(run, self.repository)
        except (TypeError, ValueError) as exc:
            raise HistoryError(f"{where}: cannot be stored: {exc}") from None
        rows = list(_measurements(run))
        found_counters = list(counters.rows(run))
        envs = _device_environments(run)
        created = run.get("created") if isinstance(run.get("created"), str) else None
        ingested = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        record = (
            digest,
            self.repository,
            created or ingested,
            ingested,
            commit,
            branch,
            source,
            str(run.get("plugin_version") or ""),
            str(run.get("mode") or ""),
            _dumps(run.get("environment") if isinstance(run.get("environment"), dict) else {}),
            _dumps(envs),
            _dumps(run.get("peaks") if isinstance(run.get("peaks"), dict) else {}),
            _dumps(run.get("settings") if isinstance(run.get("settings"), dict) else {}),
        )

        def action(db: Any) -> Ingest:
            known = db.execute("SELECT id FROM runs WHERE digest = ?", (digest,)).fetchone()
            if known is not None:
                return Ingest(int(known[0]), False, 0)
            cursor = db.execute(
                "INSERT INTO runs (digest, repository, created, ingested, commit_sha, branch, source, "
                "plugin_version, mode, environment, devices, peaks, settings) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                record,
            )
            run_id = int(cursor.fetchall()[0][0])  # read to the end: the statement is done
            keys = sorted(
                {key for key, _ in rows}, key=lambda k: (k.test, k.name, k.device, k.cache, k.metric)
            )
            db.executemany(
                "INSERT OR IGNORE INTO series (repository, test, name, device, cache, metric) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(self.repository, k.test, k.name, k.device, k.cache, k.metric) for k in keys],
            )
            ids = self._series_ids(db, keys)
            by_fields = {(k.test, k.name, k.device, k.cache, k.metric): i for k, i in ids.items()}
            counters.insert(db, run_id, by_fields, found_counters)
            seen: set[int] = set()
            values = []
            for key, row in rows:
                series_id = ids[key]
                if series_id in seen:  # the same test, name, device and cache twice in one run: first kept
                    continue
                seen.add(series_id)
                values.append((run_id, series_id, *(row[f] for f in _ROW_FIELDS)))
            db.executemany(
                f"INSERT INTO measurements (run_id, series_id, {', '.join(_ROW_FIELDS)}) "
                f"VALUES ({', '.join('?' * (len(_ROW_FIELDS) + 2))})",
                values,
            )
            return Ingest(run_id, True, len(values))

        return self._write(action, f"storing {where}")

    def _series_ids(self, db: Any, keys: Sequence[SeriesKey]) -> dict[SeriesKey, int]:
        wanted = set(keys)
        out: dict[SeriesKey, int] = {}
        for row in db.execute(
            "SELECT id, test, name, device, cache, metric FROM series WHERE repository = ?",
            (self.repository,),
        ):
            key = SeriesKey(*row[1:])
            if key in wanted:
                out[key] = int(row[0])
        return out

    # reading

    def run_count(self) -> int:
        return int(
            self.db.execute("SELECT COUNT(*) FROM runs WHERE repository = ?", (self.repository,)).fetchone()[
                0
            ]
        )

    def repositories(self) -> list[str]:
        """The repositories with runs in this history, in order of name."""
        rows = self.db.execute("SELECT DISTINCT repository FROM runs ORDER BY repository").fetchall()
        return [str(r[0]) for r in rows]

    def runs(self) -> list[dict[str, Any]]:
        """Every run, oldest first: id, created, commit, branch, source, measurements."""
        rows = self.db.execute(
            "SELECT r.id, r.created, r.commit_sha, r.branch, r.source, "
            "(SELECT COUNT(*) FROM measurements m WHERE m.run_id = r.id) FROM runs r "
            "WHERE r.repository = ? ORDER BY r.created, r.id",
            (self.repository,),
        ).fetchall()
        keys = ("id", "created", "commit", "branch", "source", "measurements")
        out = [dict(zip(keys, row, strict=True)) for row in rows]
        for run in out:
            _plain(run, f"run {run['id']}")
        return out

    def run_ids_at(self, commit: str) -> list[int]:
        """Run ids whose commit starts with `commit` (a full or abbreviated hash), in run order."""
        rows = self.db.execute(
            "SELECT id FROM runs WHERE repository = ? AND commit_sha LIKE ? ORDER BY created, id",
            (self.repository, commit.lower().replace("%", "").replace("_", "") + "%"),
        ).fetchall()
        return [int(r[0]) for r in rows]

    def series(self) -> dict[int, SeriesKey]:
        rows = self.db.execute(
            "SELECT id, test, name, device, cache, metric FROM series WHERE repository = ? "
            "ORDER BY test, name, device, cache, metric",
            (self.repository,),
        )
        out = {}
        for sid, *fields in rows:
            if not all(isinstance(f, str) for f in fields):
                raise DamagedHistory(f"series {sid}: its test, name, device, cache or metric is not text")
            out[int(sid)] = SeriesKey(*fields)
        return out

    def recent_rounds(
        self, key: SeriesKey, *, method: str, verdict: str, since: str, limit: int
    ) -> list[tuple[float, ...]]:
        """The rounds of the newest `limit` measurements of a series with this method and verdict,
        from runs made at or after `since` (an ISO UTC stamp), oldest first."""
        rows = self.db.execute(
            "SELECT m.rounds_ms FROM measurements m JOIN runs r ON r.id = m.run_id "
            "JOIN series s ON s.id = m.series_id "
            "WHERE s.repository = ? AND s.test = ? AND s.name = ? AND s.device = ? AND s.cache = ? "
            "AND s.metric = ? "
            # A verdict against another revision is no verdict against the baseline.
            "AND m.method = ? AND m.verdict = ? AND r.created >= ? AND m.against_commit IS NULL "
            "ORDER BY r.created DESC, r.id DESC LIMIT ?",
            (
                self.repository,
                key.test,
                key.name,
                key.device,
                key.cache,
                key.metric,
                method,
                verdict,
                since,
                limit,
            ),
        ).fetchall()
        return [_float_list(text) for (text,) in reversed(rows)]

    def recent_verdicts(self, key: SeriesKey, limit: int) -> list[str]:
        """The verdicts of the newest `limit` measurements of a series against its baselines (not
        against another revision), newest first."""
        rows = self.db.execute(
            "SELECT m.verdict FROM measurements m JOIN runs r ON r.id = m.run_id "
            "JOIN series s ON s.id = m.series_id "
            "WHERE s.repository = ? AND s.test = ? AND s.name = ? AND s.device = ? AND s.cache = ? "
            "AND s.metric = ? AND m.against_commit IS NULL "
            "ORDER BY r.created DESC, r.id DESC LIMIT ?",
            (self.repository, key.test, key.name, key.device, key.cache, key.metric, limit),
        ).fetchall()
        return [str(verdict) for (verdict,) in rows]

    def find_series(
        self, test: str, name: str | None = None, device: str | None = None, metric: str = "device_time"
    ) -> list[tuple[int, SeriesKey]]:
        return [
            (sid, key)
            for sid, key in self.series().items()
            if key.test == test
            and (name is None or key.name == name)
            and (device is None or key.device == device)
            and key.metric == metric
        ]

    def points(self, series_id: int | None = None) -> dict[int, list[Point]]:
        """Series id -> its points in run order (created time, then ingestion); all series by default.
        DamagedHistory when a row is not what `ingest` writes."""
        runs: dict[int, tuple[str, str | None, str | None, dict[str, dict[str, str]]]] = {}
        for rid, created, commit, branch, devices in self.db.execute(
            "SELECT id, created, commit_sha, branch, devices FROM runs WHERE repository = ?",
            (self.repository,),
        ):
            where = f"run {rid}"
            runs[int(rid)] = (
                _text(created, where, "created"),
                _optional_text(commit, where, "commit_sha"),
                _optional_text(branch, where, "branch"),
                _environments(devices, where),
            )
        # Run order is (created, id); read in primary-key order (series, run id) with no join or sort,
        # and sort a series only when run ids are not already in run order.
        ranked = sorted(runs, key=lambda r: (runs[r][0], r))
        rank = {rid: i for i, rid in enumerate(ranked)}
        in_order = ranked == sorted(runs)
        devices_of = {
            int(sid): device
            for sid, device in self.db.execute(
                "SELECT id, device FROM series WHERE repository = ?", (self.repository,)
            )
        }
        if series_id is None:
            where = "WHERE series_id IN (SELECT id FROM series WHERE repository = ?)"
            args: tuple[Any, ...] = (self.repository,)
        else:
            where, args = "WHERE series_id = ?", (series_id,)
        rows = self.db.execute(
            "SELECT series_id, run_id, median_ms, value_ms, rounds_ms, verdict, kernels, autotune, "
            "reference_ratio, peak_fraction, artifacts, peak_memory_bytes "
            f"FROM measurements {where} ORDER BY series_id, run_id",
            args,
        )
        out: dict[int, list[Point]] = {}
        decoded: dict[str, Any] = {}  # kernels, autotune and artefacts repeat from run to run

        def decode(text: Any, at: str, field: str) -> Any:
            if not isinstance(text, str):
                raise DamagedHistory(f"{at}: {field} is {_kind(text)}, not JSON text")
            value = decoded.get(text)
            if value is None:
                value = decoded[text] = _json(text, at, field)
            return value

        for sid, rid, median, value, rounds, verdict, kernels, autotune, ratio, peak, arts, memory in rows:
            at = f"the measurement of run {rid} in series {sid}"
            if rid not in runs or sid not in devices_of:
                raise DamagedHistory(f"{at}: its {'run' if rid not in runs else 'series'} is missing")
            created, commit, branch, devices = runs[rid]
            tuned = None if autotune is None else decode(autotune, at, "autotune")
            artifacts = decode(arts, at, "artifacts")
            if not (tuned is None or isinstance(tuned, dict)) or not (
                isinstance(artifacts, list) and all(isinstance(a, str) for a in artifacts)
            ):
                raise DamagedHistory(f"{at}: autotune or artifacts not as written")
            if not isinstance(rounds, str) or not (kernels is None or isinstance(kernels, str)):
                raise DamagedHistory(f"{at}: rounds_ms or kernels is not JSON text")
            out.setdefault(sid, []).append(
                Point(
                    run_id=rid,
                    created=created,
                    commit=commit,
                    branch=branch,
                    median_ms=_time(median, at, "median_ms"),
                    rounds_ms=rounds,
                    value_ms=_time(value, at, "value_ms"),
                    verdict=_optional_text(verdict, at, "verdict"),
                    kernels=kernels,
                    autotune=tuned,
                    environment=devices.get(str(devices_of[sid]), _NO_ENV),
                    reference_ratio=_optional_figure(ratio, at, "reference_ratio"),
                    peak_fraction=_optional_figure(peak, at, "peak_fraction"),
                    artifacts=tuple(artifacts),
                    peak_memory_bytes=_optional_count(memory, at, "peak_memory_bytes"),
                )
            )
        if not in_order:
            for points in out.values():
                points.sort(key=lambda p: rank[p.run_id])
        return out

    def measurements(self) -> Iterator[dict[str, Any]]:
        """Every measurement with its series and run, for export; oldest run first."""
        cursor = self.db.execute(
            "SELECT r.id, r.created, r.commit_sha, r.branch, s.test, s.name, s.device, s.cache, s.metric, "
            "m.verdict, m.method, m.median_ms, m.ci_low_ms, m.ci_high_ms, m.n, m.rounds_ms, m.quantiles_ms, "
            "m.kernels, m.autotune, m.reference_ratio, m.reference_ms, m.against_commit, m.against_ms, "
            "m.peak_memory_bytes, "
            "m.bytes, m.gb_per_s, m.peak_gb_per_s, "
            "m.peak_fraction, m.artifacts FROM measurements m JOIN runs r ON r.id = m.run_id "
            "JOIN series s ON s.id = m.series_id WHERE s.repository = ? "
            "ORDER BY r.created, r.id, s.test, s.name, s.device, s.cache, s.metric",
            (self.repository,),
        )
        names = [d[0] for d in cursor.description]
        names[0], names[2] = "run_id", "commit"
        for row in cursor:
            item = dict(zip(names, row, strict=True))
            _plain(item, f"the measurement of run {item['run_id']}")
            for key in ("rounds_ms", "quantiles_ms", "kernels", "autotune", "artifacts"):
                if item[key] is not None:
                    item[key] = _json(item[key], f"the measurement of run {item['run_id']}", key)
            yield item

    def peaks(self) -> dict[str, float]:
        """Device name -> its latest measured copy bandwidth in GB/s, across stored runs."""
        out: dict[str, float] = {}
        for rid, peaks in self.db.execute(
            "SELECT id, peaks FROM runs WHERE repository = ? ORDER BY created, id", (self.repository,)
        ):
            stored = _json(peaks, f"run {rid}", "peaks")
            if not isinstance(stored, dict):
                raise DamagedHistory(f"run {rid}: peaks is not an object")
            for device, peak in stored.items():
                value = _number(peak.get("gb_per_s")) if isinstance(peak, dict) else None
                if value:
                    out[device] = value
        return out

    # change point cache

    def cached_analysis(self, series_id: int, last_run_id: int, runs: int, params: str) -> Any | None:
        row = self.db.execute(
            "SELECT result FROM analyses WHERE series_id = ? AND last_run_id = ? AND runs = ? AND params = ?",
            (series_id, last_run_id, runs, params),
        ).fetchone()
        if row is None:
            return None
        try:
            found = json.loads(row[0])
        except (TypeError, ValueError):
            return None  # a damaged cache entry: detected again
        pairs = isinstance(found, list) and all(
            isinstance(c, list) and len(c) == 2 and all(_is_number(v) for v in c) for c in found
        )
        return found if pairs else None

    def cache_analyses(self, items: Sequence[tuple[int, int, int, str, Any]]) -> None:
        """Store (series id, last run id, runs, params, result) rows; best effort under contention.
        Nothing is stored in a history opened for reading only."""
        if not items or self.read_only:
            return

        def action(db: Any) -> None:
            rows = [(s, last, n, params, _dumps(result)) for s, last, n, params, result in items]
            db.executemany("DELETE FROM analyses WHERE series_id = ?", [(r[0],) for r in rows])
            db.executemany(
                "INSERT INTO analyses (series_id, last_run_id, runs, params, result) VALUES (?, ?, ?, ?, ?)",
                rows,
            )

        self._write(action, "caching change points")

    # maintenance

    def prune(self, keep: int) -> int:
        """Keep the repository's newest `keep` runs (by created time); return how many runs were
        removed. Other repositories' runs stay as they are."""
        if keep < 0:
            raise HistoryError("--keep must be zero or more")

        def action(db: Any) -> int:
            ordered = db.execute(
                "SELECT id FROM runs WHERE repository = ? ORDER BY created DESC, id DESC", (self.repository,)
            ).fetchall()
            doomed = [int(r[0]) for r in ordered[keep:]]
            mine = "SELECT id FROM series WHERE repository = ?"
            db.executemany("DELETE FROM measurements WHERE run_id = ?", [(r,) for r in doomed])
            db.executemany("DELETE FROM runs WHERE id = ?", [(r,) for r in doomed])
            db.execute(f"DELETE FROM analyses WHERE series_id IN ({mine})", (self.repository,))
            db.execute(
                "DELETE FROM series WHERE repository = ? AND id NOT IN "
                "(SELECT DISTINCT series_id FROM measurements)",
                (self.repository,),
            )
            return len(doomed)

        return self._write(action, "pruning")


_NO_ENV: dict[str, str] = {}


_MIN_MS, _MAX_MS = runfile.MIN_MS, runfile.MAX_MS


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _json(text: Any, at: str, field: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        raise DamagedHistory(f"{at}: {field} is not JSON ({str(text)[:40]!r})") from None


def _plain(row: Mapping[str, Any], at: str) -> None:
    """A row as `ingest` writes it holds text, whole numbers, finite numbers and nulls only."""
    for name, value in row.items():
        if not (value is None or isinstance(value, (str, int)) or _is_number(value)):
            raise DamagedHistory(f"{at}: {name} is {value!r}, not what import writes")


def _text(value: Any, at: str, field: str) -> str:
    if not isinstance(value, str):
        raise DamagedHistory(f"{at}: {field} is {_kind(value)}, not text")
    return value


def _optional_text(value: Any, at: str, field: str) -> str | None:
    return None if value is None else _text(value, at, field)


def _time(value: Any, at: str, field: str) -> float:
    """A stored time: what `ingest` stores passed the run file gateway's bounds."""
    if not _is_number(value) or not _MIN_MS <= value <= _MAX_MS:
        raise DamagedHistory(f"{at}: {field} is {value!r}, not a time in ms")
    return float(value)


def _optional_figure(value: Any, at: str, field: str) -> float | None:
    if value is not None and not _is_number(value):
        raise DamagedHistory(f"{at}: {field} is {value!r}, not a finite number")
    return None if value is None else float(value)


def _optional_count(value: Any, at: str, field: str) -> int | None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise DamagedHistory(f"{at}: {field} is {value!r}, not a count of bytes")
    return value


def _environments(text: Any, at: str) -> dict[str, dict[str, str]]:
    devices = _json(text, at, "devices")
    if not isinstance(devices, dict) or not all(
        isinstance(env, dict) and all(isinstance(v, str) for v in env.values()) for env in devices.values()
    ):
        raise DamagedHistory(f"{at}: devices is not an object of environments")
    return devices


def _writable(path: Path) -> bool:
    """Whether this process may write `path` (False on a read-only file system, also for root)."""
    return os.access(path, os.W_OK)


def _float_list(text: str) -> tuple[float, ...]:
    """A JSON list of numbers as this module writes it, read faster than json.loads."""
    inner = text[1:-1]
    return tuple(map(float, inner.split(","))) if inner else ()


_ROW_FIELDS = (
    "verdict",
    "method",
    "median_ms",
    "value_ms",
    "ci_low_ms",
    "ci_high_ms",
    "n",
    "rounds_ms",
    "quantiles_ms",
    "kernels",
    "autotune",
    "reference_ratio",
    "reference_ms",
    "against_commit",
    "against_ms",
    "peak_memory_bytes",
    "bytes",
    "gb_per_s",
    "peak_gb_per_s",
    "peak_fraction",
    "artifacts",
)


def load_run_file(path: Path) -> runfile.CheckedRun:
    """A run file read through the run file gateway (`ingest` takes it without checking it again);
    HistoryError naming the file and the field when it cannot be used."""
    try:
        return runfile.read(path)
    except runfile.RunFileError as exc:
        raise HistoryError(str(exc)) from None
