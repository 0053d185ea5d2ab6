"""The history's schema: one list of migrations, in SQLite's words (the database seam, database.py,
says each in its backend's), and what opening a history checks and upgrades.

A database without a history's schema that holds tables of its own belongs to something else: it is
left as it is. One written by a newer version is refused. A writer upgrades an older schema step by
step, each step in its own transaction; a reader of an older SQLite file upgrades a copy in memory,
and a reader of an older server is told the command that upgrades it.
"""

from __future__ import annotations

from .database import Database, HistoryError

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
    (
        """CREATE TABLE kernel_counters (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            series_id INTEGER NOT NULL REFERENCES series (id) ON DELETE CASCADE,
            kernel TEXT NOT NULL,
            launches INTEGER NOT NULL,
            counters TEXT NOT NULL,
            PRIMARY KEY (series_id, run_id, kernel)
        ) WITHOUT ROWID""",
    ),
    # 7: the change points alerted (`history alert`, history/alerts.py), each once: its key (made
    # when it was first sent, never changed), its series, the branch it was found on ('' for all
    # runs), its direction, the first run after it when sent and where its estimate stands now
    # (followed as runs arrive), when it was sent and what was sent (the feed's entries).
    (
        """CREATE TABLE alerts (
            id INTEGER PRIMARY KEY,
            alert_key TEXT NOT NULL UNIQUE,
            series_id INTEGER NOT NULL REFERENCES series (id) ON DELETE CASCADE,
            scope TEXT NOT NULL,
            slowdown INTEGER NOT NULL,
            first_run_id INTEGER NOT NULL,
            run_id INTEGER NOT NULL,
            sent TEXT NOT NULL,
            payload TEXT NOT NULL
        )""",
        "CREATE INDEX alerts_series ON alerts (series_id, scope)",
        "CREATE INDEX alerts_sent ON alerts (sent, id)",
    ),
    # 8: a measurement's level, the figure its verdict judged, named as the run file (schema 2) and
    # the baseline file (schema 3) name it; `median_ms` is only ever a median of samples.
    ("ALTER TABLE measurements RENAME COLUMN median_ms TO level_ms",),
)
SCHEMA_VERSION = len(MIGRATIONS)
# The tables a database of something else must not hold for a history to be made there.
TABLES = ("runs", "series", "measurements", "analyses", "alerts")


def newer(where: str, version: int) -> str:
    return (
        f"{where}: history schema version {version} was written by a newer "
        f"pytest-kernelperf (this one reads up to {SCHEMA_VERSION})"
    )


def opened(db: Database, *, read_only: bool) -> None:
    """A database just opened, made a history at this version's schema: refused when it belongs to
    something else or to a newer version; upgraded (a writer), or read from an upgraded copy (a
    reader of an older SQLite file)."""
    version = db.version
    if version == 0:
        tables = db.foreign_tables(TABLES)
        if tables:
            shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
            raise HistoryError(
                f"{db.where}: {db.kind} of something else (tables: {shown}), not a "
                "kernelperf history; give the history a database of its own"
            )
    if version > SCHEMA_VERSION:
        raise HistoryError(newer(db.where, version))
    if not read_only:
        db.ready_to_write()
        migrate(db)
    elif version == 0:
        raise HistoryError(f"{db.where}: {db.no_history}")
    elif version < SCHEMA_VERSION:
        if not db.read_a_copy():
            raise HistoryError(
                f"{db.where}: the history is at schema version {version}, this pytest-kernelperf "
                f"reads version {SCHEMA_VERSION}: upgrade it once with "
                f"`python -m pytest_kernelperf history --db URL upgrade` (nothing stored is lost)"
            )
        migrate(db)


def migrate(db: Database) -> None:
    """Every step from the database's schema version to this one, each in its own transaction (a
    writer that finds another one has upgraded meanwhile stops)."""
    version = db.version
    if version > SCHEMA_VERSION:
        raise HistoryError(newer(db.where, version))
    if version == SCHEMA_VERSION:
        return

    def step(db: Database) -> int:
        current = db.version
        if current >= SCHEMA_VERSION:  # another process upgraded meanwhile
            return current
        db.upgrade(current, MIGRATIONS[current])
        return current + 1

    with db.migrating():
        while version < SCHEMA_VERSION:
            version = db.write(step, "upgrading the schema")
