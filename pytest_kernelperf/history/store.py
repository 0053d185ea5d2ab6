"""The history store: every run file ingested into one database, one row per measurement, and the
queries the history's commands, its change points, bisection and the judge ask of it.

A run is what `pytest --kernelperf --kernelperf-json=PATH` writes (docs/json-schema.md), checked by
the run file gateway (`results/runfile.py`, which upgrades older versions in one place); its rows
are made from the typed run by `rows.py`. Each result gives one measurement per metric
(`device_time`, `host_latency`) in a *series*: (repository, test, name, device, cache mode, metric).
The same run ingested twice into one repository is stored once: a run is known by the SHA-256 of its
repository and its canonical JSON.

The database is an SQLite file (the default) or a PostgreSQL server (`postgresql://...`), opened by
the seam `database.py`, which owns the transactions: several CI jobs may append at once, every write
is one transaction holding the history's write lock. Its schema is `schema.py`'s, checked and
upgraded when the store opens it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from pytest_kernelperf.results import runfile

from . import counters, schema
from .database import DamagedHistory, Database, HistoryError, open_database
from .points import (
    NO_ENV,
    Point,
    environments,
    float_list,
    is_number,
    json_value,
    kind,
    optional_count,
    optional_figure,
    optional_text,
    plain,
    stored_text,
    time_ms,
)
from .rows import (
    EXPORT_KEYS,
    EXPORTED_COLUMNS,
    JSON_COLUMNS,
    MEASUREMENT_COLUMNS,
    RUN_COLUMNS,
    SeriesKey,
    counters_of,
    dumps,
    rows_of,
    run_row,
)

T = TypeVar("T")


@dataclass(frozen=True)
class SentAlert:
    """A change point already alerted (the table `alerts`): its key, series and direction, and the
    first run after the change where its estimate last stood."""

    id: int
    key: str
    series_id: int
    slowdown: bool
    run_id: int


@dataclass(frozen=True)
class NewAlert:
    """A change point to remember as alerted: `payload` is the alert as sent (JSON text)."""

    key: str
    series_id: int
    slowdown: bool
    run_id: int
    sent: str
    payload: str


@dataclass(frozen=True)
class Ingest:
    run_id: int
    new: bool  # False: the same run was already stored
    measurements: int


def validate_run(run: Any, source: str) -> runfile.CheckedRun:
    """The run file gateway's one validation (results/runfile.py), with a HistoryError."""
    try:
        return runfile.check(run, source)
    except runfile.RunFileError as exc:
        raise HistoryError(str(exc)) from None


def load_run_file(path: Path) -> runfile.CheckedRun:
    """A run file read through the run file gateway (`ingest` takes it without checking it again);
    HistoryError naming the file and the field when it cannot be used."""
    try:
        return runfile.read(path)
    except runfile.RunFileError as exc:
        raise HistoryError(str(exc)) from None


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
        self.db: Database = open_database(
            location,
            read_only=read_only,
            create=create,
            prepare=functools.partial(schema.opened, read_only=read_only),
        )
        self.where = self.db.where
        self.path = self.db.path

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    @property
    def schema_version(self) -> int:
        return self.db.version

    def _write(self, action: Callable[[Database], T], what: str) -> T:
        if self.read_only:
            raise HistoryError(f"{self.where}: {what}: the history was opened for reading only")
        return self.db.write(action, what)

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
        """Store a run: a CheckedRun that the gateway made, or its parsed JSON, checked here."""
        where = source or "<run>"
        checked = run if isinstance(run, runfile.CheckedRun) else validate_run(run, where)
        ingested = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            record = run_row(
                checked,
                repository=self.repository,
                commit=commit,
                branch=branch,
                source=source,
                ingested=ingested,
            )
        except (TypeError, ValueError) as exc:
            raise HistoryError(f"{where}: cannot be stored: {exc}") from None
        rows = list(rows_of(checked.report))
        found_counters = list(counters_of(checked.report))

        def action(db: Database) -> Ingest:
            known = db.execute("SELECT id FROM runs WHERE digest = ?", (record.digest,)).fetchone()
            if known is not None:
                return Ingest(int(known[0]), False, 0)
            cursor = db.execute(
                f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}) VALUES ({', '.join('?' * len(RUN_COLUMNS))}) "
                "RETURNING id",
                record.values(),
            )
            run_id = int(cursor.fetchall()[0][0])  # read to the end: the statement is done
            keys = sorted({key for key, _ in rows}, key=SeriesKey.values)
            db.executemany(
                "INSERT OR IGNORE INTO series (repository, test, name, device, cache, metric) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(self.repository, *k.values()) for k in keys],
            )
            ids = self._series_ids(db, keys)
            counters.insert(db, run_id, ids, found_counters)
            seen: set[int] = set()
            values = []
            for key, row in rows:
                series_id = ids[key]
                if series_id in seen:  # the same test, name, device and cache twice in one run: first kept
                    continue
                seen.add(series_id)
                values.append((run_id, series_id, *row.values()))
            db.executemany(
                f"INSERT INTO measurements (run_id, series_id, {', '.join(MEASUREMENT_COLUMNS)}) "
                f"VALUES ({', '.join('?' * (len(MEASUREMENT_COLUMNS) + 2))})",
                values,
            )
            return Ingest(run_id, True, len(values))

        return self._write(action, f"storing {where}")

    def _series_ids(self, db: Database, keys: Sequence[SeriesKey]) -> dict[SeriesKey, int]:
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
        row = self.db.execute("SELECT COUNT(*) FROM runs WHERE repository = ?", (self.repository,)).fetchone()
        return int(row[0])

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
            plain(run, f"run {run['id']}")
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
            (self.repository, *key.values(), method, verdict, since, limit),
        ).fetchall()
        return [float_list(text) for (text,) in reversed(rows)]

    def recent_verdicts(self, key: SeriesKey, limit: int) -> list[str]:
        """The verdicts of the newest `limit` measurements of a series against its baselines (not
        against another revision), newest first."""
        rows = self.db.execute(
            "SELECT m.verdict FROM measurements m JOIN runs r ON r.id = m.run_id "
            "JOIN series s ON s.id = m.series_id "
            "WHERE s.repository = ? AND s.test = ? AND s.name = ? AND s.device = ? AND s.cache = ? "
            "AND s.metric = ? AND m.against_commit IS NULL "
            "ORDER BY r.created DESC, r.id DESC LIMIT ?",
            (self.repository, *key.values(), limit),
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
                stored_text(created, where, "created"),
                optional_text(commit, where, "commit_sha"),
                optional_text(branch, where, "branch"),
                environments(devices, where),
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
            "SELECT series_id, run_id, level_ms, value_ms, rounds_ms, verdict, kernels, autotune, "
            "reference_ratio, peak_fraction, artifacts, peak_memory_bytes "
            f"FROM measurements {where} ORDER BY series_id, run_id",
            args,
        )
        out: dict[int, list[Point]] = {}
        decoded: dict[str, Any] = {}  # kernels, autotune and artefacts repeat from run to run

        def decode(text: Any, at: str, field: str) -> Any:
            if not isinstance(text, str):
                raise DamagedHistory(f"{at}: {field} is {kind(text)}, not JSON text")
            value = decoded.get(text)
            if value is None:
                value = decoded[text] = json_value(text, at, field)
            return value

        for sid, rid, level, value, rounds, verdict, kernels, autotune, ratio, peak, arts, memory in rows:
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
                    level_ms=time_ms(level, at, "level_ms"),
                    rounds_ms=rounds,
                    value_ms=time_ms(value, at, "value_ms"),
                    verdict=optional_text(verdict, at, "verdict"),
                    kernels=kernels,
                    autotune=tuned,
                    environment=devices.get(str(devices_of[sid]), NO_ENV),
                    reference_ratio=optional_figure(ratio, at, "reference_ratio"),
                    peak_fraction=optional_figure(peak, at, "peak_fraction"),
                    artifacts=tuple(artifacts),
                    peak_memory_bytes=optional_count(memory, at, "peak_memory_bytes"),
                )
            )
        if not in_order:
            for points in out.values():
                points.sort(key=lambda p: rank[p.run_id])
        return out

    def measurements(self) -> Iterator[dict[str, Any]]:
        """Every measurement with its run and series, for export (keys: rows.EXPORT_KEYS and
        EXPORTED_COLUMNS); oldest run first."""
        cursor = self.db.execute(
            "SELECT r.id, r.created, r.commit_sha, r.branch, s.test, s.name, s.device, s.cache, s.metric, "
            f"{', '.join(f'm.{c}' for c in EXPORTED_COLUMNS)} FROM measurements m "
            "JOIN runs r ON r.id = m.run_id JOIN series s ON s.id = m.series_id WHERE s.repository = ? "
            "ORDER BY r.created, r.id, s.test, s.name, s.device, s.cache, s.metric",
            (self.repository,),
        )
        names = EXPORT_KEYS + EXPORTED_COLUMNS
        for row in cursor:
            item = dict(zip(names, row, strict=True))
            at = f"the measurement of run {item['run_id']}"
            plain(item, at)
            for key in JSON_COLUMNS:
                if item[key] is not None:
                    item[key] = json_value(item[key], at, key)
            yield item

    def peaks(self) -> dict[str, float]:
        """Device name -> its latest measured copy bandwidth in GB/s, across stored runs."""
        out: dict[str, float] = {}
        for rid, peaks in self.db.execute(
            "SELECT id, peaks FROM runs WHERE repository = ? ORDER BY created, id", (self.repository,)
        ):
            stored = json_value(peaks, f"run {rid}", "peaks")
            if not isinstance(stored, dict):
                raise DamagedHistory(f"run {rid}: peaks is not an object")
            for device, peak in stored.items():
                value = peak.get("gb_per_s") if isinstance(peak, dict) else None
                if is_number(value) and value:
                    out[device] = float(value)
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
            isinstance(c, list) and len(c) == 2 and all(is_number(v) for v in c) for c in found
        )
        return found if pairs else None

    def cache_analyses(self, items: Sequence[tuple[int, int, int, str, Any]]) -> None:
        """Store (series id, last run id, runs, params, result) rows; best effort under contention.
        Nothing is stored in a history opened for reading only."""
        if not items or self.read_only:
            return

        def action(db: Any) -> None:
            rows = [(s, last, n, params, dumps(result)) for s, last, n, params, result in items]
            db.executemany("DELETE FROM analyses WHERE series_id = ?", [(r[0],) for r in rows])
            db.executemany(
                "INSERT INTO analyses (series_id, last_run_id, runs, params, result) VALUES (?, ?, ?, ?, ?)",
                rows,
            )

        self._write(action, "caching change points")

    # alerts (history/alerts.py)

    def locked(self, action: Callable[[], T], what: str) -> T:
        """`action` in one transaction that holds the history's write lock (what it reads and
        writes through this store is one transaction: another writer waits for it)."""
        return self._write(lambda db: action(), what)

    def run_digests(self, run_ids: Collection[int]) -> dict[int, str]:
        """Run id -> the run's digest (the SHA-256 that identifies it in any history)."""
        wanted = set(run_ids)
        rows = self.db.execute("SELECT id, digest FROM runs WHERE repository = ?", (self.repository,))
        return {
            int(rid): stored_text(digest, f"run {rid}", "digest") for rid, digest in rows if rid in wanted
        }

    def sent_alerts(self, scope: str) -> list[SentAlert]:
        """The change points alerted on `scope` (a branch, '' for all runs) in this repository."""
        rows = self.db.execute(
            "SELECT a.id, a.alert_key, a.series_id, a.slowdown, a.run_id FROM alerts a "
            "JOIN series s ON s.id = a.series_id WHERE s.repository = ? AND a.scope = ? ORDER BY a.id",
            (self.repository, scope),
        ).fetchall()
        out = []
        for aid, key, sid, slowdown, rid in rows:
            if not (isinstance(key, str) and all(isinstance(v, int) for v in (aid, sid, slowdown, rid))):
                raise DamagedHistory(f"alert {aid}: its key, series, direction or run is not as written")
            out.append(SentAlert(int(aid), key, int(sid), bool(slowdown), int(rid)))
        return out

    def alert_log(self, scope: str) -> list[tuple[int, str, str]]:
        """(series id, sent, payload) of every alert sent on `scope` in this repository, newest first."""
        rows = self.db.execute(
            "SELECT a.series_id, a.sent, a.payload FROM alerts a JOIN series s ON s.id = a.series_id "
            "WHERE s.repository = ? AND a.scope = ? ORDER BY a.sent DESC, a.id DESC",
            (self.repository, scope),
        ).fetchall()
        return [
            (int(sid), stored_text(sent, "an alert", "sent"), stored_text(payload, "an alert", "payload"))
            for sid, sent, payload in rows
        ]

    def remember_alerts(self, scope: str, new: Sequence[NewAlert], moved: Sequence[tuple[int, int]]) -> None:
        """Store `new` alerts of `scope`, and where the estimates of alerted change points stand now
        (`moved`: alert id, first run after the change); inside `locked`, with the read before it."""
        self.db.executemany(
            "INSERT INTO alerts (alert_key, series_id, scope, slowdown, first_run_id, run_id, sent, payload) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (a.key, a.series_id, scope, int(a.slowdown), a.run_id, a.run_id, a.sent, a.payload)
                for a in new
            ],
        )
        self.db.executemany("UPDATE alerts SET run_id = ? WHERE id = ?", [(rid, aid) for aid, rid in moved])

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
