"""Where a history is not what it should be: a server URL given to a pytest run, a folder in place of
the file, a server error that contains a short password. A clear error that names the place, and
never the password."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest
from conftest import Project

from pytest_kernelperf import cli
from pytest_kernelperf.history import synthetic_runs as rf
from pytest_kernelperf.history.database import HistoryError, scrub
from pytest_kernelperf.history.store import HistoryStore
from pytest_kernelperf.settings import history_location

URL = "postgresql://kernelperf:Hunter2-secret@/kernelperf?host=/tmp/pg"


@pytest.mark.parametrize("given", ["cli", "ini"])
def test_a_server_url_as_the_run_history_is_a_usage_error_that_hides_it(project: Project, given: str) -> None:
    project.module()
    if given == "ini":
        project.pytester.makeini(f"[pytest]\nkernelperf_history = {URL}\n")
    args = ["--kernelperf"] + ([f"--kernelperf-history={URL}"] if given == "cli" else [])

    result = project.run(*args)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    assert "postgresql://***: a server URL where a file is expected" in output
    assert "history --db URL import RUN.json" in output
    assert "Hunter2-secret" not in output
    assert not any(project.pytester.path.rglob("*postgres*"))  # no file at a path made of the URL


# Values that are neither a file nor a server URL this package reads, and their masked forms.
NOT_LOCATIONS = [
    ("postgresql+psycopg://kp:Hunter2-secret@localhost/kp", "postgresql+psycopg://***"),
    ("mysql://kp:Hunter2-secret@db/kp", "mysql://***"),
    ("postgresql:kp:Hunter2-secret@db", "postgresql://***"),  # no //: no URL libpq reads
    ("host=db user=kp password=Hunter2-secret dbname=kp", "a connection string with password=***"),
]


@pytest.mark.parametrize(("value", "shown"), NOT_LOCATIONS[:2] + NOT_LOCATIONS[3:])
def test_another_url_as_the_run_history_is_a_usage_error_that_hides_it(
    project: Project, value: str, shown: str
) -> None:
    project.module()
    before = sorted(project.pytester.path.rglob("*"))
    result = project.run("--kernelperf", f"--kernelperf-history={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    assert f"{shown}: neither a history file nor a history server's URL (postgresql://USER@HOST/DB" in output
    assert "Hunter2-secret" not in output
    assert sorted(project.pytester.path.rglob("*")) == before  # no folder named after it


@pytest.mark.parametrize(("value", "shown"), NOT_LOCATIONS)
@pytest.mark.parametrize("given", ["--db", "env"])
def test_history_refuses_another_url_without_making_folders_of_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    value: str,
    shown: str,
    given: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.json").write_text(json.dumps(rf.run([rf.result("t.py::test_k", 1.0)])), encoding="utf-8")
    monkeypatch.setenv("KERNELPERF_HISTORY", value)
    args = ["history", *(["--db", value] if given == "--db" else []), "import", "--no-git", "run.json"]
    status: int | str | None
    try:
        status = cli.main(args, out=io.StringIO())
    except SystemExit as stop:  # argparse's usage error
        status = stop.code
    assert status == 2
    error = capsys.readouterr().err
    assert f"{shown}: neither a history file nor a history server's URL" in error
    assert "Hunter2-secret" not in error
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


@pytest.mark.parametrize(("value", "shown"), NOT_LOCATIONS)
def test_the_store_refuses_another_url_given_as_text_or_as_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, shown: str
) -> None:
    monkeypatch.chdir(tmp_path)
    for location in (value, Path(value)):
        with pytest.raises(HistoryError) as caught:
            HistoryStore(location)
        assert str(caught.value).startswith(f"{shown}: ") and "Hunter2-secret" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_a_postgresql_url_is_a_server_and_a_windows_drive_a_file() -> None:
    assert history_location(URL) == URL and history_location(f" {URL}") == URL
    assert history_location("POSTGRES://db/h") == "POSTGRES://db/h"
    assert history_location("C:/runs/h.sqlite") == Path("C:/runs/h.sqlite")
    assert history_location("runs/h.sqlite") == Path("runs/h.sqlite")


def test_a_folder_as_the_history_is_named_as_a_folder(
    project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "d.sqlite"
    folder.mkdir()
    for read_only in (False, True):
        with pytest.raises(HistoryError) as caught:
            HistoryStore(folder, read_only=read_only)
        assert str(caught.value) == f"{folder} is a folder, not a history database"
    status = cli.main(["history", "--db", str(folder), "show"], out=io.StringIO())
    assert status == 2 and capsys.readouterr().err == f"error: {folder} is a folder, not a history database\n"

    project.module()
    result = project.run("--kernelperf", f"--kernelperf-history={folder}")
    output = result.stdout.str()
    assert f"could not write the run history to {folder}: HistoryError: {folder} is a folder" in output
    assert "cannot open the history database: cannot open" not in output
    assert list(folder.iterdir()) == []


def test_a_file_sqlite_cannot_open_is_said_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> sqlite3.Connection:
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(sqlite3, "connect", refuse)
    with pytest.raises(HistoryError) as caught:
        HistoryStore(tmp_path / "h.sqlite")
    assert str(caught.value) == (
        f"{tmp_path / 'h.sqlite'}: cannot open the history database: unable to open database file"
    )


@pytest.mark.parametrize(
    ("url", "said", "expected"),
    [
        # A one-letter password is in every other word: only the URL's own is masked.
        (
            "postgresql://kernelperf:x@/kernelperf?host=/nonexistent",
            'connection to server on socket "/nonexistent/.s.PGSQL.5432" failed',
            'connection to server on socket "/nonexistent/.s.PGSQL.5432" failed',
        ),
        (
            "postgresql://kernelperf:5432@/kernelperf",
            'connection to server on socket "/tmp/.s.PGSQL.5432" failed: password for "kernelperf:5432@"',
            'connection to server on socket "/tmp/.s.PGSQL.5432" failed: password for "kernelperf:***@"',
        ),
        # libpq quotes a password it cannot decode whole.
        (
            "postgresql://kernelperf:a%zz@/kernelperf",
            'invalid percent-encoded token: "a%zz"',
            'invalid percent-encoded token: "***"',
        ),
        ("postgresql:///h?password=pw", "bad password=pw in the options", "bad password=*** in the options"),
        # A password long enough to be no other word is masked wherever it appears.
        (
            "postgresql://kernelperf:Hunter2-secret@/h",
            "authentication failed near Hunter2-secret.",
            "authentication failed near ***.",
        ),
    ],
)
def test_scrub_masks_the_password_and_nothing_else(url: str, said: str, expected: str) -> None:
    assert scrub(said, url) == expected


def test_scrub_masks_the_url_it_finds(tmp_path: Path) -> None:
    assert (
        scrub(f"cannot reach {URL} now", URL)
        == "cannot reach postgresql://kernelperf:***@/kernelperf?host=/tmp/pg now"
    )
