"""The history's database seam: the one module that opens a database, speaks its dialect and owns
its transactions. Nothing else in the package imports a database driver.

Two backends: an SQLite file (the default) and a PostgreSQL server (`postgresql://...`, through
psycopg 3: the `history-server` extra). The modules above write SQLite's SQL as this package uses it
(`?` placeholders, `INSERT OR IGNORE`, SQLite's column types); a `Database` gives them

- `execute` and `executemany`, in the backend's words;
- `write(action, what)`: one transaction that first takes the history's write lock (SQLite's
  `BEGIN IMMEDIATE`, waiting `busy_timeout` for another process and retried with a growing pause
  while the file stays locked; on a server the advisory lock `WRITE_LOCK`), rolled back on any error;
- the schema's version (SQLite: `PRAGMA user_version`; a server: the table `kernelperf_schema`) and
  `upgrade`, one step of the migrations (history/schema.py) in the backend's words;
- every error as a HistoryError: opening says what is wrong in words, naming the file (or the URL,
  its password masked); a read that finds the file damaged is a DamagedHistory.

Adding a backend is a subclass of `Database` here and a branch in `open_database`.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import sqlite3
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn, Protocol, TypeVar
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from pytest_kernelperf.settings import history_location

BUSY_TIMEOUT_MS = 30_000
WRITE_ATTEMPTS = 20
# Every writer to a server holds this transaction-scoped advisory lock (as SQLite's BEGIN IMMEDIATE
# holds the file's write lock): writes to one server database are serial, none lost or stored twice.
WRITE_LOCK = 0x6B706572  # "kper"
CONNECT_TIMEOUT_S = 10
SERVER_INSTALL_HINT = (
    "a history on a PostgreSQL server needs psycopg 3: pip install 'psycopg[binary]>=3.1' "
    "(or the plugin's `history-server` extra)"
)

T = TypeVar("T")


class HistoryError(Exception):
    """A history database or run file that cannot be used; the message names the file."""


class DamagedHistory(HistoryError):
    """What a history database holds is not what this package writes (edited by hand, or written by
    something else): the message says where; the caller names the file."""


class Cursor(Protocol):
    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Database:
    """An open history database (see the module's docstring). `where` names it in messages, `kind`
    says what it is, `no_history` what a reader is told of one without a history yet."""

    where: str
    path: Path = Path(".")  # the file; a server has none
    kind = "a database"
    no_history = "no history here yet"

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        raise NotImplementedError

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        raise NotImplementedError

    def write(self, action: Callable[[Database], T], what: str) -> T:
        """`action` in one transaction holding the write lock; HistoryError naming `what`."""
        raise NotImplementedError

    def _transaction(self, action: Callable[[Database], T]) -> T:
        self._begin()
        try:
            out = action(self)
        except BaseException:
            with contextlib.suppress(Exception):  # a lost connection has nothing to roll back
                self.execute("ROLLBACK")
            raise
        self.execute("COMMIT")
        return out

    def _begin(self) -> None:
        raise NotImplementedError

    @property
    def version(self) -> int:
        """The schema version of the history stored here (0: none yet)."""
        raise NotImplementedError

    def upgrade(self, current: int, statements: Sequence[str]) -> None:
        """Schema version `current` to `current + 1` by `statements` (SQLite's words), in the caller's
        transaction."""
        raise NotImplementedError

    def migrating(self) -> contextlib.AbstractContextManager[None]:
        """Around the steps of an upgrade: what the backend needs before and after them."""
        return contextlib.nullcontext()

    def foreign_tables(self, own: Collection[str]) -> list[str]:
        """The tables here that would stand in a history's way (`own`: the history's table names)."""
        raise NotImplementedError

    def ready_to_write(self) -> None:
        """Made ready for writers, once before the schema is upgraded."""

    def read_a_copy(self) -> bool:
        """Go on reading an upgradable copy of the history (in memory) instead of the database itself;
        False where the backend cannot."""
        return False

    def close(self) -> None:
        raise NotImplementedError


def open_database(
    location: Path | str, *, read_only: bool, create: bool, prepare: Callable[[Database], None]
) -> Database:
    """The database at `location` (a file path, or a `postgresql://` URL), with `prepare` (the
    schema's checks and upgrade) run on it before it is handed out."""
    try:  # a URL that went through Path (its // folded) is no server's, nor a file
        server = history_location(location, server=isinstance(location, str))
    except ValueError as exc:
        raise HistoryError(str(exc)) from None
    if isinstance(server, str):
        db = ServerDatabase(server, read_only=read_only)
        try:
            prepare(db)
        except BaseException:
            db.close()
            raise
        return db
    return _open_file(Path(location), read_only=read_only, create=create, prepare=prepare)


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


# --- SQLite ---------------------------------------------------------------------------------------

_SQLITE_ERRORS = (sqlite3.DatabaseError, UnicodeDecodeError)  # damaged pages, tables or text


class SqliteDatabase(Database):
    """An SQLite file: WAL mode for writers, `mode=ro` (or `immutable=1`) for readers. While it is
    being opened, and inside `write`, sqlite3's own errors pass through to the code that names
    them; after, a read that fails is a DamagedHistory (or a HistoryError for a lock held too long)."""

    kind = "an SQLite database"
    no_history = "an empty database, not a history yet"

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self.conn = connection
        self.path = path
        self.where = str(path)
        self.opening = True
        self.scratch = False  # a copy in memory, upgraded there: read, never checked or kept

    def failed(self, exc: BaseException) -> NoReturn:
        """sqlite3's error `exc` passed on as it is while opening or writing, else in our words: a
        lock held too long, or a damaged file."""
        if self.opening:
            raise exc
        text = str(exc).lower()
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
            raise HistoryError(f"{self.where}: {exc}") from None
        raise DamagedHistory(str(exc)) from None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        try:
            return _Rows(self, self.conn.execute(sql, params))
        except _SQLITE_ERRORS as exc:
            self.failed(exc)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        try:
            self.conn.executemany(sql, rows)
        except _SQLITE_ERRORS as exc:
            self.failed(exc)

    def write(self, action: Callable[[Database], T], what: str) -> T:
        opening, self.opening = self.opening, True
        try:
            return _retry(lambda: self._transaction(action), f"{self.where}: {what}")
        except _SQLITE_ERRORS as exc:
            self.opening = opening
            self.failed(exc)
        finally:
            self.opening = opening

    def _begin(self) -> None:
        self.execute("BEGIN IMMEDIATE")

    @property
    def version(self) -> int:
        return int(self.execute("PRAGMA user_version").fetchone()[0])

    def upgrade(self, current: int, statements: Sequence[str]) -> None:
        for statement in statements:
            self.execute(statement)
        self.execute(f"PRAGMA user_version = {current + 1}")
        if not self.scratch and self.execute("PRAGMA foreign_key_check").fetchone():
            raise HistoryError(f"{self.where}: upgrading the schema would break its references")

    @contextlib.contextmanager
    def migrating(self) -> Iterator[None]:
        # A step may make a table anew: foreign keys are checked at the end of each step instead
        # (the pragma is a no-op inside a transaction).
        self.execute("PRAGMA foreign_keys = OFF")
        try:
            yield
        finally:
            self.execute("PRAGMA foreign_keys = ON")

    def foreign_tables(self, own: Collection[str]) -> list[str]:
        return [str(row[0]) for row in self.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]

    def ready_to_write(self) -> None:
        mode = _retry(lambda: self.execute("PRAGMA journal_mode = WAL").fetchone(), self.where)
        if mode is None or str(mode[0]).lower() != "wal":
            raise HistoryError(f"{self.where}: cannot switch the database to WAL mode (got {mode})")
        self.execute("PRAGMA synchronous = NORMAL")

    def read_a_copy(self) -> bool:
        memory = sqlite3.connect(":memory:", isolation_level=None)
        self.conn.backup(memory)
        self.conn.close()
        self.conn, self.scratch = memory, True
        return True

    def close(self) -> None:
        self.conn.close()


class _Rows:
    """An sqlite3 cursor whose reads fail as its database says (a damaged page is found as it is
    read, not when the query starts)."""

    __slots__ = ("cursor", "db")

    def __init__(self, db: SqliteDatabase, cursor: sqlite3.Cursor) -> None:
        self.db, self.cursor = db, cursor

    def fetchone(self) -> Any:
        try:
            return self.cursor.fetchone()
        except _SQLITE_ERRORS as exc:
            self.db.failed(exc)

    def fetchall(self) -> list[Any]:
        try:
            return self.cursor.fetchall()
        except _SQLITE_ERRORS as exc:
            self.db.failed(exc)

    def __iter__(self) -> Iterator[Any]:
        try:
            yield from self.cursor
        except _SQLITE_ERRORS as exc:
            self.db.failed(exc)


def _writable(path: Path) -> bool:
    """Whether this process may write `path` (False on a read-only file system, also for root)."""
    return os.access(path, os.W_OK)


def _why(path: Path, exc: BaseException) -> str:
    """What is wrong, in words: SQLite says "unable to open database file" for a missing folder and
    for a file it may not write alike."""
    text = str(exc)
    folder = path.parent
    if not folder.is_dir():
        return f"its folder {folder} does not exist"
    if not _writable(folder) or (path.exists() and not _writable(path)):
        return (
            f"cannot be written: the file or its folder is read-only ({text}); reading commands "
            "(history show, detect, export, report) can still read it"
        )
    if "unable to open" in text.lower():
        return f"cannot open the history database: {text}"
    return f"not a history database ({text})"


def _open_file(path: Path, *, read_only: bool, create: bool, prepare: Callable[[Database], None]) -> Database:
    if path.is_dir():  # SQLite would say "unable to open" or "disk I/O error"
        raise HistoryError(f"{path} is a folder, not a history database")
    if (read_only or not create) and not path.exists():
        raise HistoryError(f"{path}: no such history database")
    if (read_only or not create) and path.is_file() and path.stat().st_size == 0:
        # A reader must not turn an empty file into a database.
        raise HistoryError(f"{path}: an empty file, not a history database yet")
    if read_only:
        db = SqliteDatabase(_connect_read_only(path), path)
    else:
        db = SqliteDatabase(_connect(path, create=create), path)
    try:
        if not read_only:
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA foreign_keys = ON")
        prepare(db)
    except _SQLITE_ERRORS as exc:
        db.close()
        # A writer is told why it cannot write there; a reader, that this is no history.
        writer = not read_only and isinstance(exc, sqlite3.DatabaseError)
        raise HistoryError(
            f"{path}: {_why(path, exc) if writer else f'not a history database ({exc})'}"
        ) from None
    except BaseException:
        db.close()
        raise
    db.opening = False
    return db


def _connect(path: Path, *, create: bool) -> sqlite3.Connection:
    if create and not path.parent.is_dir():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HistoryError(
                f"{path}: cannot make its folder {path.parent}: {exc.strerror or exc}"
            ) from None
    try:
        return sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    except sqlite3.Error as exc:
        raise HistoryError(f"{path}: {_why(path, exc)}") from None


def _connect_read_only(path: Path) -> sqlite3.Connection:
    uri = path.resolve().as_uri()
    problem: Exception | None = None
    # mode=ro reads a WAL database while others write it, but needs its -shm file (made when the
    # folder is writable); immutable=1 reads a file that nothing can change.
    for query in ("?mode=ro", "?mode=ro&immutable=1"):
        db: sqlite3.Connection | None = None
        try:
            db = sqlite3.connect(uri + query, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA user_version").fetchone()
            db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return db
        except _SQLITE_ERRORS as exc:
            if db is not None:
                db.close()
            problem = exc
            if "unable to open" not in str(exc).lower():
                break
    text = str(problem)
    if "unable to open" in text.lower():
        raise HistoryError(f"{path}: cannot open the history database for reading: {text}")
    raise HistoryError(f"{path}: not a history database ({text})")


# --- a PostgreSQL server --------------------------------------------------------------------------


def masked(url: str) -> str:
    """The URL with its password (in the user part or a `password=` parameter) shown as ***."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if parts.password is not None:
            user, _, host = netloc.rpartition("@")
            netloc = f"{user.split(':', 1)[0]}:***@{host}"
        query = _PASSWORD_PARAMETER.sub(r"\1***", parts.query)
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:  # a URL that cannot be parsed: show only its scheme
        return url.split(":", 1)[0] + "://***"


_PASSWORD_PARAMETER = re.compile(r"((?:^|&)password=)[^&]*", re.IGNORECASE)


def _passwords(url: str) -> list[str]:
    try:
        parts = urlsplit(url)
        found = [parts.password] if parts.password else []
        found += [v for k, v in parse_qsl(parts.query) if k.lower() == "password" and v]
    except ValueError:
        return []
    return found


# A password this long is no other word of a message: it is masked wherever it appears. A shorter
# one only where a message quotes it as the URL gave it (user:PASSWORD@, password=PASSWORD, or whole
# in quotes, as libpq quotes a part it cannot decode): masked inside other words, it would garble
# them and show the reader where it is ("/none***istent").
UNAMBIGUOUS_PASSWORD = 8


def scrub(text: str, url: str) -> str:
    """`text` with the URL's password(s) and the URL itself replaced by their masked forms."""
    text = text.replace(url, masked(url))
    for secret in _passwords(url):
        if len(secret) >= UNAMBIGUOUS_PASSWORD:
            text = text.replace(secret, "***")
            continue
        quoted = re.escape(secret)
        text = re.sub(
            rf"(?<=:){quoted}(?=@)|(?<=(?i:password)=){quoted}(?=[\s&\"']|$)|(?<=[\"']){quoted}(?=[\"'])",
            "***",
            text,
        )
    return text


def _translate(sql: str) -> str:
    """SQLite's SQL as this package writes it, in PostgreSQL's words."""
    if sql.startswith("INSERT OR IGNORE INTO"):
        sql = "INSERT INTO" + sql[len("INSERT OR IGNORE INTO") :] + " ON CONFLICT DO NOTHING"
    return sql.replace("?", "%s")


def translate_schema(statement: str) -> str:
    """A migration statement written for SQLite, for PostgreSQL: identity keys, 8-byte integers and
    floats (SQLite's INTEGER and REAL are both 8 bytes), no WITHOUT ROWID."""
    statement = statement.replace(
        "INTEGER PRIMARY KEY", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
    )
    statement = re.sub(r"\bINTEGER\b", "BIGINT", statement)
    statement = re.sub(r"\bREAL\b", "DOUBLE PRECISION", statement)
    return statement.replace(") WITHOUT ROWID", ")")


# A server keeps the schema version in a table of its own (SQLite: PRAGMA user_version).
SERVER_VERSION_TABLE = "kernelperf_schema"
# Migration steps a server takes in its own words (index: the version it upgrades from): SQLite
# makes the series table anew to change its UNIQUE constraint; PostgreSQL changes it in place.
SERVER_STEPS: dict[int, tuple[str, ...]] = {
    4: (
        "ALTER TABLE runs ADD COLUMN repository TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX runs_repository ON runs (repository, created, id)",
        "ALTER TABLE series ADD COLUMN repository TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE series DROP CONSTRAINT series_test_name_device_cache_metric_key",
        "ALTER TABLE series ADD CONSTRAINT series_repository_key "
        "UNIQUE (repository, test, name, device, cache, metric)",
    ),
}


class ServerDatabase(Database):
    """A psycopg connection (autocommit: this module says BEGIN and COMMIT itself); every psycopg
    error becomes a HistoryError naming the masked URL. Credentials come only from the URL or
    libpq's own variables (PGPASSWORD, ~/.pgpass...); no message shows a password."""

    kind = "a database"
    no_history = "no history on this server yet (`history import` makes one)"

    def __init__(self, url: str, *, read_only: bool) -> None:
        self.url = url
        self.where = masked(url)
        try:
            import psycopg
        except ImportError:
            raise HistoryError(f"{self.where}: {SERVER_INSTALL_HINT}") from None
        self.psycopg = psycopg
        options: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in url:
            options["connect_timeout"] = CONNECT_TIMEOUT_S
        try:
            self.conn = psycopg.connect(url, **options)
        except psycopg.Error as exc:
            raise HistoryError(
                f"{self.where}: cannot connect to the history server: {self._words(exc)}"
            ) from None
        except ValueError as exc:  # psycopg's own check of the URL's options
            raise HistoryError(f"{self.where}: not a usable PostgreSQL URL: {self._words(exc)}") from None
        if read_only:
            self.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")

    def _words(self, exc: BaseException) -> str:
        first = str(exc).strip().splitlines()
        return scrub(first[0] if first else type(exc).__name__, self.url)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        try:
            cursor: Cursor = self.conn.execute(_translate(sql), tuple(params) or None)
        except self.psycopg.Error as exc:
            raise HistoryError(f"{self.where}: the history server said: {self._words(exc)}") from None
        return cursor

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = [tuple(r) for r in rows]
        if not rows:
            return
        try:
            with self.conn.cursor() as cursor:
                cursor.executemany(_translate(sql), rows)
        except self.psycopg.Error as exc:
            raise HistoryError(f"{self.where}: the history server said: {self._words(exc)}") from None

    def write(self, action: Callable[[Database], T], what: str) -> T:
        return self._transaction(action)  # the advisory lock waits: nothing to retry

    def _begin(self) -> None:
        self.execute("BEGIN")
        self.execute(f"SELECT pg_advisory_xact_lock({WRITE_LOCK})")

    @property
    def version(self) -> int:
        if not self.execute("SELECT to_regclass(?) IS NOT NULL", (SERVER_VERSION_TABLE,)).fetchone()[0]:
            return 0
        row = self.execute(f"SELECT MAX(version) FROM {SERVER_VERSION_TABLE}").fetchone()
        return int(row[0] or 0)

    def upgrade(self, current: int, statements: Sequence[str]) -> None:
        for statement in SERVER_STEPS.get(current) or tuple(map(translate_schema, statements)):
            self.execute(statement)
        self.execute(f"DELETE FROM {SERVER_VERSION_TABLE}")
        self.execute(f"INSERT INTO {SERVER_VERSION_TABLE} (version) VALUES (?)", (current + 1,))

    @contextlib.contextmanager
    def migrating(self) -> Iterator[None]:
        self.write(
            lambda db: db.execute(f"CREATE TABLE IF NOT EXISTS {SERVER_VERSION_TABLE} (version INTEGER)"),
            "making the schema version table",
        )
        yield

    def foreign_tables(self, own: Collection[str]) -> list[str]:
        # A server database may hold other things; only tables of the history's names conflict.
        names = sorted(own)
        query = (
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
            f"AND table_name IN ({', '.join('?' * len(names))})"
        )
        return [str(row[0]) for row in self.execute(query, names)]

    def close(self) -> None:
        self.conn.close()
