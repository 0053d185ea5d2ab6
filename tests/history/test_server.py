"""The history on both backends: an SQLite file and a PostgreSQL server (the URL in
$KERNELPERF_TEST_POSTGRES_URL; `.ci/postgres.sh` starts one; without it the server variants skip).
Every command, repositories kept apart, many writers at once, and a server that cannot be used."""

from __future__ import annotations

import io
import json
import multiprocessing
import threading
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from pytest_kernelperf import cli
from pytest_kernelperf.history import changepoints
from pytest_kernelperf.history import synthetic_runs as rf
from pytest_kernelperf.history.database import HistoryError, masked
from pytest_kernelperf.history.schema import SCHEMA_VERSION
from pytest_kernelperf.history.store import HistoryStore

from .historykit import Receiver, commit_of, needs_server, split_backend


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=needs_server)])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "history.sqlite")
    return str(request.getfixturevalue("server_url"))


def history(db: str, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    status = cli.main(["history", "--db", db, *args], out=out)
    return status, out.getvalue()


def write_run(folder: Path, i: int, level: float, nodeid: str = "tests/test_k.py::test_mul") -> Path:
    result = rf.result(nodeid, level, rounds=[level * 0.999, level, level * 1.001])
    path = folder / f"run{i:02d}-{nodeid.rsplit(':', 1)[-1]}.json"
    path.write_text(json.dumps(rf.run([result], created=rf.created(i))), encoding="utf-8")
    return path


def test_every_command_works_and_keeps_repositories_apart(
    location: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(changepoints, "detector_available", lambda: True)
    monkeypatch.setattr(changepoints, "split_merge_backend", split_backend)
    levels = [1.0] * 6 + [1.2] * 6
    for i, level in enumerate(levels):
        path = write_run(tmp_path, i, level)
        args = ["--repository", "acme/kernels", "import", "--commit", commit_of(i), str(path)]
        assert history(location, *args)[0] == 0
    other = write_run(tmp_path, 0, 5.0, nodeid="tests/test_other.py::test_add")
    assert history(location, "--repository", "acme/other", "import", "--no-git", str(other))[0] == 0
    # The same file again into the same repository: stored once; into another: a run of its own.
    again = history(location, "--repository", "acme/kernels", "import", str(tmp_path / "run00-test_mul.json"))
    assert again[0] == 0 and "already stored" in again[1]
    assert (
        history(location, "--repository", "acme/other", "import", str(tmp_path / "run00-test_mul.json"))[0]
        == 0
    )

    status, text = history(location, "--repository", "acme/kernels", "show")
    assert status == 0 and "12 runs, 1 series" in text and "test_other" not in text
    status, text = history(location, "--repository", "acme/other", "show", "--no-detect")
    assert status == 0 and "2 runs, 2 series" in text
    status, text = history(location, "--repository", "acme/kernels", "detect", "--since", commit_of(3))
    assert status == 1 and "SLOWER" in text and "+20.0%" in text
    status, text = history(location, "--repository", "acme/kernels", "export", "--json", "-")
    exported = json.loads(text)
    assert status == 0 and len(exported["runs"]) == 12 and len(exported["measurements"]) == 12
    assert {m["test"] for m in exported["measurements"]} == {"tests/test_k.py::test_mul"}
    page = tmp_path / "dash.html"
    assert history(location, "--repository", "acme/kernels", "report", "--html", str(page))[0] == 0
    assert "test_mul" in page.read_text(encoding="utf-8")
    status, text = history(location, "--repository", "acme/kernels", "prune", "--keep", "4")
    assert status == 0 and "removed 8 runs" in text and "4 kept" in text
    with HistoryStore(location, read_only=True, repository="acme/other") as other_repo:
        assert other_repo.run_count() == 2  # pruning one repository leaves the other alone
        assert other_repo.repositories() == ["acme/kernels", "acme/other"]
    assert history(location, "--repository", "acme/none", "show")[0] == 2
    assert "no runs of repository 'acme/none'; this history holds 'acme/kernels', 'acme/other'" in (
        capsys.readouterr().err
    )
    assert history(location, "upgrade")[1].endswith(f"history schema version {SCHEMA_VERSION}\n")
    assert "***" not in capsys.readouterr().err


def _writer(location: str, worker: int, runs: int) -> None:
    with HistoryStore(location, repository="acme/kernels") as store:
        for i in range(runs):
            result = rf.result(f"t.py::test_{i % 3}", 1.0 + worker + i / 100)
            run = rf.run([result, rf.result("t.py::test_shared", 2.0)], created=rf.created(worker * 100 + i))
            store.append_run(run, commit=f"{worker:02d}{i:038d}")
            if i % 10 == 0:  # a CI job that retries its import: the same run again, stored once
                assert not store.ingest(run).new


@pytest.mark.slow
def test_eight_writers_at_once_lose_nothing_and_duplicate_nothing(location: str) -> None:
    with HistoryStore(location):
        pass  # the schema made once, as the first `history import` of a fleet does
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(location, w, 50)) for w in range(8)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(300)
    assert [p.exitcode for p in workers] == [0] * 8
    with HistoryStore(location, read_only=True, repository="acme/kernels") as store:
        assert store.run_count() == 400  # 0 lost of 400
        assert sum(run["measurements"] for run in store.runs()) == 800
        assert sorted(k.test for k in store.series().values()) == [
            "t.py::test_0",
            "t.py::test_1",
            "t.py::test_2",
            "t.py::test_shared",
        ]
        assert len(store.points()[next(iter(store.find_series("t.py::test_shared")))[0]]) == 400


@needs_server
def test_an_unreachable_server_is_named_with_its_password_masked(tmp_path: Path) -> None:
    url = f"postgresql://alice:s3cret-pw@/nowhere?host={tmp_path}&connect_timeout=2"
    status_err = io.StringIO()
    with pytest.raises(HistoryError) as caught:
        HistoryStore(url)
    text = str(caught.value)
    assert "cannot connect to the history server" in text and "s3cret-pw" not in text
    assert text.startswith(masked(url)) and "alice:***@" in text
    run = write_run(tmp_path, 0, 1.0)
    out = io.StringIO()
    assert cli.main(["history", "--db", url, "import", "--no-git", str(run)], out=out) == 2
    assert run.exists() and status_err.getvalue() == ""  # the run file stays, to import again


def test_masked_hides_every_form_of_password() -> None:
    assert masked("postgresql://bob:pw@db:5432/h") == "postgresql://bob:***@db:5432/h"
    assert "pw" not in masked("postgresql://db/h?user=bob&password=pw")
    assert masked("postgresql://db/h") == "postgresql://db/h"


@needs_server
def test_a_damaged_server_history_is_an_error_naming_it_and_loses_nothing(
    server_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    with HistoryStore(server_url, repository="r") as store:
        store.append_run(rf.run([rf.result("t.py::test_a", 1.0)]))
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute("ALTER TABLE measurements RENAME COLUMN rounds_ms TO rounds")
    status, _ = history(server_url, "--repository", "r", "export", "--json", "-")
    err = capsys.readouterr().err
    assert status == 2 and "the history server said" in err and "rounds_ms" in err
    assert masked(server_url) in err and str(urlsplit(server_url).password) not in err
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute("ALTER TABLE measurements RENAME COLUMN rounds TO rounds_ms")
    with HistoryStore(server_url, read_only=True, repository="r") as store:
        assert store.run_count() == 1


@needs_server
def test_a_server_history_of_an_older_schema_names_the_upgrade_command(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    with HistoryStore(server_url) as store:
        store.append_run(rf.run([rf.result("t.py::test_a", 1.0)]))
    with psycopg.connect(server_url, autocommit=True) as admin:  # as version 4 left it
        admin.execute("UPDATE kernelperf_schema SET version = 4")
        admin.execute("DROP TABLE alerts")
        admin.execute("ALTER TABLE measurements RENAME COLUMN level_ms TO median_ms")
        admin.execute("DROP TABLE kernel_counters")
        admin.execute("ALTER TABLE series DROP CONSTRAINT series_repository_key")
        admin.execute("ALTER TABLE series DROP COLUMN repository")
        admin.execute(
            "ALTER TABLE series ADD CONSTRAINT series_test_name_device_cache_metric_key "
            "UNIQUE (test, name, device, cache, metric)"
        )
        admin.execute("DROP INDEX runs_repository")
        admin.execute("ALTER TABLE runs DROP COLUMN repository")
    status, _ = history(server_url, "show", "--no-detect")
    assert status == 2 and "history --db URL upgrade" in capsys.readouterr().err
    assert history(server_url, "upgrade")[0] == 0
    status, text = history(server_url, "show", "--no-detect")
    assert status == 0 and "1 runs, 1 series" in text
    with HistoryStore(server_url, read_only=True) as store:
        assert [p.level_ms for points in store.points().values() for p in points] == [1.0]


def test_a_server_url_given_as_a_file_path_is_refused_without_showing_it(tmp_path: Path) -> None:
    with pytest.raises(
        HistoryError, match=r"^postgresql://\*\*\*: a server URL where a file is expected"
    ) as caught:
        HistoryStore(Path("postgresql://bob:pw-secret@db/h"))
    assert "pw-secret" not in str(caught.value) and not Path("postgresql:").exists()


def test_alerts_round_trip_once_each_on_both_backends(
    location: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    monkeypatch.setattr(changepoints, "detector_available", lambda: True)
    monkeypatch.setattr(changepoints, "split_merge_backend", split_backend)

    def store(levels: list[float], first: int) -> None:
        for i, level in enumerate(levels, start=first):
            path = write_run(tmp_path, i, level)
            assert (
                history(location, "--repository", "acme", "import", "--commit", commit_of(i), str(path))[0]
                == 0
            )

    feed = tmp_path / "feed.xml"
    sinks = ("--webhook", receiver.url(), "--atom", str(feed), "--jsonl", str(tmp_path / "a.jsonl"))
    store([1.0] * 6 + [1.2] * 4, 0)
    status, text = history(location, "--repository", "acme", "alert", *sinks)
    assert status == 1 and "1 new change point (1 slowdown) sent" in text and Receiver.SECRET not in text
    assert len(receiver.requests) == 1 and "+20.0%" in receiver.requests[0]["json"]["text"]
    assert history(location, "--repository", "acme", "alert", *sinks)[0] == 0  # nothing new
    store([1.2] * 8 + [1.5] * 4, 10)  # the first change's estimate moves little; a second change
    receiver.answers.append((500, {}, b"down"))
    assert history(location, "--repository", "acme", "alert", *sinks)[0] == 2  # left for the next run
    status, text = history(location, "--repository", "acme", "alert", *sinks)
    assert status == 1 and "1 new change point (1 slowdown) sent; 1 alerted before" in text
    assert len(receiver.requests) == 3 and "+25.0%" in receiver.requests[2]["json"]["text"]
    lines = (tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["commit"] for line in lines] == [commit_of(6), commit_of(18)]
    entries = ET.parse(feed).getroot().findall("{http://www.w3.org/2005/Atom}entry")
    assert [e.findtext("{http://www.w3.org/2005/Atom}id") for e in entries] == [
        json.loads(line)["id"] for line in reversed(lines)
    ]
    # Two runs at once: one sends, the other waits for the write lock and finds it sent.
    store([1.5] * 8 + [1.8] * 4, 22)
    results: list[int] = []
    threads = [
        threading.Thread(
            target=lambda: results.append(history(location, "--repository", "acme", "alert", *sinks)[0])
        )
        for _ in range(2)
    ]
    receiver.delay = 0.3
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == [0, 1] and len(receiver.requests) == 4
