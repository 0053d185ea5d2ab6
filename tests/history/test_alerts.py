"""`history alert`: each change point sent once (JSON lines, an Atom feed, a chat's webhook) and
remembered in the history; not again as runs arrive and its estimate moves; a sink that fails
leaves the alerts to the next run; the webhook's secret never shown."""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_kernelperf import cli
from pytest_kernelperf.history import changepoints
from pytest_kernelperf.history import synthetic_runs as rf
from pytest_kernelperf.history.alerts import atom_feed
from pytest_kernelperf.history.changepoints import Params, RawChange
from pytest_kernelperf.history.store import HistoryStore, SentAlert
from pytest_kernelperf.history.webhook import masked, retry_after, scrub

from .historykit import Receiver, commit_of, fill, refused_url

pytestmark = pytest.mark.usefixtures("stand_in_detector")

A = "{http://www.w3.org/2005/Atom}"
STEP = [1.0] * 6 + [1.2] * 4  # a 20% slowdown at run 6, seen once 4 runs follow it


def alert(db: Path, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    status = cli.main(["history", "--db", str(db), "alert", *args], out=out)
    return status, out.getvalue()


def jsonl(db: Path, *args: str) -> tuple[int, list[dict[str, object]]]:
    """`alert --jsonl -`: the exit status and the alerts sent."""
    status, text = alert(db, "--jsonl", "-", *args)
    return status, [json.loads(line) for line in text.splitlines()]


def runs(
    db: Path, levels: Sequence[float], first: int = 0, nodeid: str = "tests/test_gelu.py::test_gelu"
) -> None:
    with HistoryStore(db) as store:
        fill(store, levels, first=first, nodeid=nodeid)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "h.sqlite"


def test_a_slowdown_is_alerted_once_with_what_a_reader_needs(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs(db, STEP)
    status, sent = jsonl(db)
    assert status == 1 and len(sent) == 1
    (item,) = sent
    assert item["series"] == {
        "test": "tests/test_gelu.py::test_gelu",
        "name": "gelu",
        "device": "NVIDIA H200",
        "cache": "hot",
        "metric": "device_time",
    }
    assert item["test"] == "tests/test_gelu.py::test_gelu" and item["device"] == "NVIDIA H200"
    assert item["direction"] == "slower" and item["kind"] == "step" and item["change_pct"] == 20.0
    assert item["previous_commit"] == commit_of(5) and item["commit"] == commit_of(6)
    assert item["commit_range"] == f"{commit_of(5)[:7]}..{commit_of(6)[:7]}"
    assert item["previous_run"] == {"id": 6, "commit": commit_of(5), "created": rf.created(5)}
    assert item["first_run"] == {"id": 7, "commit": commit_of(6), "created": rf.created(6)}
    assert item["last_run"] == {"id": 10, "commit": commit_of(9), "created": rf.created(9)}
    assert str(item["text"]).startswith("at c0ffee0: +20.0% (>99.9% confidence); generated code unchanged")
    assert str(item["line"]).startswith("SLOWER  tests/test_gelu.py::test_gelu [gelu] on NVIDIA H200: ")
    # With the JSON lines on the output, the words go to stderr.
    assert "1 new change point (1 slowdown) sent; 0 alerted before" in capsys.readouterr().err
    assert jsonl(db) == (0, [])  # the next run: nothing new
    assert "0 new change points (0 slowdowns) sent; 1 alerted before" in capsys.readouterr().err


def test_runs_after_a_change_alert_nothing_and_a_second_change_alerts_only_itself(db: Path) -> None:
    runs(db, [1.0] * 6 + [1.2] * 4)
    first = jsonl(db)[1]
    runs(db, [1.2] * 8, first=10)  # more runs at the new level: the same change point
    assert jsonl(db) == (0, [])
    runs(db, [1.5] * 4, first=18)  # 12 runs after the first: a change of its own
    status, second = jsonl(db)
    assert status == 1 and len(second) == 1
    assert second[0]["commit"] == commit_of(18) and second[0]["change_pct"] == pytest.approx(25.0)
    assert second[0]["key"] != first[0]["key"]
    assert jsonl(db) == (0, [])


def test_a_new_speed_up_is_alerted_but_passes(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs(db, [1.0] * 6 + [1.2] * 6)
    assert jsonl(db, "--slowdowns-only")[0] == 1
    runs(db, [0.9] * 4, first=12)
    assert jsonl(db, "--slowdowns-only") == (0, [])  # a speed-up, not alerted with --slowdowns-only
    status, sent = jsonl(db)
    assert status == 0 and [item["direction"] for item in sent] == ["faster"]


def _scripted(positions: dict[int, int]) -> changepoints.Backend:
    """A detector that finds one change point at positions[number of runs]: its estimate moving."""

    def detect(values: Sequence[float], params: Params) -> list[RawChange]:
        at = positions.get(len(values))
        return [] if at is None else [RawChange(at, 1e-6)]

    return detect


def test_a_change_whose_estimate_moves_as_runs_arrive_is_not_alerted_again(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The estimate moves by up to two runs at a time, four runs in all from where it was first
    # sent; the alert follows it, and keeps where it stood when a run blurs it away.
    moves = {10: 6, 11: 7, 12: 8, 13: 9, 14: 10, 15: 8}
    monkeypatch.setattr(changepoints, "split_merge_backend", _scripted(moves))
    levels = [1.0] * 6 + [1.1, 1.15, 1.2, 1.2] + [1.2] * 6
    runs(db, levels[:10])
    status, sent = jsonl(db)
    assert status == 1 and sent[0]["first_run"] == {"id": 7, "commit": commit_of(6), "created": rf.created(6)}
    for n in range(11, 17):
        runs(db, levels[n - 1 : n], first=n - 1)
        assert jsonl(db) == (0, []), f"alerted again after run {n}"
    with HistoryStore(db, read_only=True) as store:
        ((first, now),) = store.db.execute("SELECT first_run_id, run_id FROM alerts").fetchall()
    assert (first, now) == (7, 9)  # sent at run 7 (index 6), followed to index 8 where it stands
    # A change point of the same series and direction far from it is another change.
    monkeypatch.setattr(changepoints, "split_merge_backend", _scripted({17: 12}))
    runs(db, [1.2], first=16)
    status, sent = jsonl(db)
    assert status == 1 and sent[0]["first_run"]["id"] == 13  # type: ignore[index]


def test_the_atom_feed_keeps_the_newest_entries_with_stable_ids(db: Path, tmp_path: Path) -> None:
    feed = tmp_path / "site" / "feed.xml"
    nodeid = "tests/test_k.py::test_mul[<a&b>]"  # markup in a test id
    runs(db, [1.0] * 6 + [1.2] * 12, nodeid=nodeid)
    status, text = alert(db, "--atom", str(feed), "--link", "https://example.org/perf/")
    assert status == 1 and "the Atom feed" in text and "(1 entry)" in text
    root = ET.parse(feed).getroot()
    assert root.tag == f"{A}feed"
    for required in ("id", "title", "updated", "author"):
        assert root.find(f"{A}{required}") is not None
    (entry,) = root.findall(f"{A}entry")
    first_id = entry.findtext(f"{A}id")
    assert first_id is not None and first_id.startswith("urn:uuid:")
    assert str(entry.findtext(f"{A}title")).startswith(
        "slower +20.0%: tests/test_k.py::test_mul[<a&b>] [gelu]"
    )
    assert entry.find(f"{A}link").attrib["href"] == "https://example.org/perf/"  # type: ignore[union-attr]
    assert entry.find(f"{A}category").attrib["term"] == "slower"  # type: ignore[union-attr]
    feed_id = root.findtext(f"{A}id")

    again = feed.read_bytes()
    assert alert(db, "--atom", str(feed), "--link", "https://example.org/perf/")[0] == 0
    assert feed.read_bytes() == again  # nothing new: the same feed, rewritten in place

    runs(db, [1.5] * 4, first=18, nodeid=nodeid)
    assert alert(db, "--atom", str(feed), "--link", "https://example.org/perf/")[0] == 1
    root = ET.parse(feed).getroot()
    ids = [e.findtext(f"{A}id") for e in root.findall(f"{A}entry")]
    assert len(ids) == 2 and ids[1] == first_id and root.findtext(f"{A}id") == feed_id  # newest first
    assert root.findtext(f"{A}updated") == root.find(f"{A}entry").findtext(f"{A}updated")  # type: ignore[union-attr]

    assert alert(db, "--atom", str(feed), "--atom-entries", "1")[0] == 0
    (newest,) = ET.parse(feed).getroot().findall(f"{A}entry")
    assert newest.findtext(f"{A}id") == ids[0]


def test_the_feed_of_nothing_is_a_valid_feed() -> None:
    root = ET.fromstring(
        atom_feed([], repository="acme", scope="main", link=None, now="2026-12-05T00:00:00Z")
    )
    assert root.findtext(f"{A}title") == "kernelperf alerts: acme (main)"
    assert root.findtext(f"{A}updated") == "2026-12-05T00:00:00Z" and root.findall(f"{A}entry") == []


def test_text_that_xml_cannot_hold_is_escaped_in_the_feed() -> None:
    entry = {
        "id": "urn:uuid:0",
        "title": "t\x07<&>\ufffe",
        "sent": "2026-12-05T00:00:00Z",
        "line": "a\x1b[2J",
    }
    root = ET.fromstring(atom_feed([entry], repository="r&<", scope="", link=None, now=""))
    assert root.findtext(f"{A}title") == "kernelperf alerts: r&<"
    (item,) = root.findall(f"{A}entry")
    assert item.findtext(f"{A}title") == "t\\x07<&>\\ufffe" and item.findtext(f"{A}summary") == "a\\x1b[2J"


def test_jsonl_to_a_file_appends_each_new_alert(db: Path, tmp_path: Path) -> None:
    log = tmp_path / "alerts.jsonl"
    runs(db, [1.0] * 6 + [1.2] * 12)
    assert alert(db, "--jsonl", str(log))[0] == 1
    runs(db, [1.5] * 4, first=18)
    status, text = alert(db, "--jsonl", str(log))
    assert status == 1 and f"{log}: 1 JSON line appended" in text
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [line["commit"] for line in lines] == [commit_of(6), commit_of(18)]


def test_the_webhook_gets_the_text_and_the_alerts(db: Path, receiver: Receiver) -> None:
    runs(db, STEP, nodeid="tests/test_k.py::test_mul[<!channel>]")
    status, text = alert(db, "--webhook", receiver.url(), "--link", "https://example.org/perf/")
    assert status == 1
    (posted,) = receiver.requests
    assert posted["path"] == f"/services/T0001/B0002/{Receiver.SECRET}"
    assert posted["headers"]["Content-Type"] == "application/json; charset=utf-8"
    payload = posted["json"]
    lines = payload["text"].splitlines()
    assert lines[0] == "kernelperf: 1 new change point in the history, 1 slowdown"
    # The line `history detect` prints, in Slack's escapes: no channel notified by a test id.
    assert lines[1].startswith("SLOWER  tests/test_k.py::test_mul[&lt;!channel&gt;] [gelu] on NVIDIA H200")
    assert "(&gt;99.9% confidence)" in lines[1] and lines[-1] == "dashboard: https://example.org/perf/"
    (sent,) = payload["kernelperf"]["alerts"]
    assert sent["direction"] == "slower" and sent["test"] == "tests/test_k.py::test_mul[<!channel>]"
    assert f"the webhook http://127.0.0.1:{receiver.server.server_address[1]}/*** (it answered 200)" in text
    assert Receiver.SECRET not in text and "T0001" not in text
    assert alert(db, "--webhook", receiver.url())[0] == 0
    assert len(receiver.requests) == 1  # nothing new: nothing posted


@pytest.mark.parametrize(
    "answer",
    [
        (500, b"internal error"),
        (404, f"no_service for /services/T0001/B0002/{Receiver.SECRET}".encode()),
        (302, b""),
    ],
    ids=["500", "404 quoting the URL", "redirect"],
)
def test_a_refused_post_leaves_the_alerts_unsent_for_the_next_run(
    db: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str], answer: tuple[int, bytes]
) -> None:
    runs(db, STEP)
    log = db.parent / "alerts.jsonl"
    code, body = answer
    headers = {"Location": "http://127.0.0.1:1/elsewhere"} if code == 302 else {}
    receiver.answers.append((code, headers, body))
    status, text = alert(db, "--webhook", receiver.url(), "--jsonl", str(log))
    err = capsys.readouterr().err
    assert status == 2 and text == ""
    assert f"http://127.0.0.1:{receiver.server.server_address[1]}/***: answered {code}" in err
    assert "; 1 new alert left unsent: the next `history alert` sends them again" in err
    assert Receiver.SECRET not in err and not log.exists()  # the webhook is tried first
    if code == 302:
        assert "not followed" in err and len(receiver.requests) == 1
    status, text = alert(db, "--webhook", receiver.url(), "--jsonl", str(log))
    assert status == 1 and len(receiver.requests) == 2 and len(log.read_text().splitlines()) == 1
    assert alert(db, "--webhook", receiver.url())[0] == 0 and len(receiver.requests) == 2


def test_a_refused_connection_is_an_error_and_the_alert_is_sent_later(
    db: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    runs(db, STEP)
    nowhere = refused_url()
    assert alert(db, "--webhook", nowhere)[0] == 2
    err = capsys.readouterr().err
    assert f"{masked(nowhere)}: cannot reach it: connection refused" in err and Receiver.SECRET not in err
    assert alert(db, "--webhook", receiver.url())[0] == 1 and len(receiver.requests) == 1


def test_a_webhook_that_does_not_answer_in_time_is_an_error(
    db: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    runs(db, STEP)
    receiver.delay = 1.0
    assert alert(db, "--webhook", receiver.url(), "--webhook-timeout", "0.2")[0] == 2
    assert "/***: no answer within 0.2 s" in capsys.readouterr().err
    receiver.delay = 0.0
    assert alert(db, "--webhook", receiver.url())[0] == 1


def test_a_webhook_that_answers_a_byte_at_a_time_is_given_up_on_in_time(
    db: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """The timeout bounds the whole answer, not each read: the history's write lock is held
    meanwhile."""
    runs(db, STEP)
    receiver.trickle = 0.05  # each byte well within the timeout, the 40 of them far beyond
    receiver.answers.append((503, {}, b"o" * 40))
    start = time.monotonic()
    assert alert(db, "--webhook", receiver.url(), "--webhook-timeout", "0.3")[0] == 2
    assert time.monotonic() - start < 1.5
    assert "/***: no answer within 0.3 s; 1 new alert left unsent" in capsys.readouterr().err
    # A 2xx is delivered, whatever its body does after it: not posted again by the next run.
    receiver.answers.append((200, {}, b"o" * 40))
    assert alert(db, "--webhook", receiver.url(), "--webhook-timeout", "0.3")[0] == 1
    assert alert(db, "--webhook", receiver.url())[0] == 0 and len(receiver.requests) == 2


def test_a_rate_limit_is_waited_out_once_or_reported(
    db: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    runs(db, STEP)
    receiver.answers += [(429, {"Retry-After": "3600"}, b"rate_limited")]
    assert alert(db, "--webhook", receiver.url())[0] == 2  # an hour: not waited for
    assert "rate limited (429); it asks to wait 3600 s: rate_limited" in capsys.readouterr().err
    receiver.answers += [(429, {"Retry-After": "0"}, b""), (200, {}, b"ok")]
    assert alert(db, "--webhook", receiver.url())[0] == 1 and len(receiver.requests) == 3
    runs(db, [1.2] * 8 + [1.5] * 4, first=10)  # a second change
    receiver.answers += [(429, {"Retry-After": "0"}, b""), (429, {"Retry-After": "0"}, b"")]
    assert alert(db, "--webhook", receiver.url())[0] == 2  # waited once, then reported
    assert "rate limited (429) after waiting 0 s" in capsys.readouterr().err
    assert alert(db, "--webhook", receiver.url())[0] == 1 and len(receiver.requests) == 6


def test_retry_after_reads_seconds_and_dates() -> None:
    assert retry_after("7") == 7.0 and retry_after(None) == 1.0 and retry_after("soon") == 1.0
    assert retry_after("Thu, 01 Jan 1970 00:01:40 GMT", now=lambda: 40.0) == 60.0


def test_the_webhook_url_is_never_shown(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    url = "https://user:pw@hooks.example.com:8443/services/T1/B2/XyZ-secret-789?token=abcdef123"
    assert masked(url) == "https://hooks.example.com:8443/***"
    said = scrub(f"POST {url} failed; path /services/T1/B2/XyZ-secret-789; token abcdef123", url)
    assert "XyZ-secret-789" not in said and "abcdef123" not in said and "pw" not in said
    runs(db, STEP)
    with pytest.raises(SystemExit) as usage:
        alert(db, "--webhook", "ftp://hooks.example.com/XyZ-secret-789")
    err = capsys.readouterr().err
    assert usage.value.code == 2 and "XyZ-secret-789" not in err and "http:// or https://" in err
    with pytest.raises(SystemExit):
        alert(db, "--webhook", "")  # a secret not set in this job
    assert "an empty webhook URL (is the secret that holds it set for this job?)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/services/T1/B2/XyZ-sec\nret-789",  # a secret pasted wrapped
        "https://hooks.example.com/services/T1/B2/XyZ-sec\tret-789",
        "https://hooks.example.com/services/T1/B2/XyZ-sec ret-789",
        "https://user:XyZ-secret-789@hooks.example.com/services/T1",  # urllib never sends it
        "https://hooks.example.com/services/T1/B2/XyZ-secrét-789",
    ],
)
def test_a_webhook_url_urllib_would_refuse_is_refused_before_anything_quotes_it(
    capsys: pytest.CaptureFixture[str], db: Path, url: str
) -> None:
    runs(db, STEP)
    with pytest.raises(SystemExit) as usage:
        alert(db, "--webhook", url)
    err = capsys.readouterr().err
    assert usage.value.code == 2 and "https://hooks.example.com/***: a " in err
    assert "XyZ" not in err and "ret-789" not in err


def test_a_secret_quoted_as_a_literal_or_percent_decoded_is_masked() -> None:
    url = "https://hooks.example.com/services/T1/B2/XyZ%2Dsec%5Cret-789"
    for quoted in (repr(url), "/services/T1/B2/XyZ-sec\\ret-789", ascii("XyZ%2Dsec%5Cret-789")):
        assert "ret-789" not in scrub(f"the answer: {quoted}", url)


def test_alert_needs_a_sink_and_dry_run_changes_nothing(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs(db, STEP)
    assert alert(db)[0] == 2 and "say where to send the alerts" in capsys.readouterr().err
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    status, text = alert(db, "--dry-run")
    assert status == 1 and "1 new change point (1 slowdown) would be sent" in text
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
    assert alert(db, "--record-only", "--jsonl", "-")[0] == 2
    assert "--record-only sends nothing" in capsys.readouterr().err
    status, text = alert(db, "--record-only")
    assert status == 0 and "recorded, not sent" in text
    assert jsonl(db) == (0, [])  # the old change is known: alerts start from here


def test_a_feed_that_cannot_be_written_leaves_the_alerts_unsent(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs(db, STEP)
    (tmp_path / "feed.xml").mkdir()
    assert alert(db, "--atom", str(tmp_path / "feed.xml"))[0] == 2
    assert "feed.xml: cannot write" in capsys.readouterr().err
    assert jsonl(db)[0] == 1


def test_a_file_that_is_not_a_feed_is_not_replaced_and_nothing_is_sent(
    db: Path,
    tmp_path: Path,
    receiver: Receiver,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    runs(db, STEP)
    readme = tmp_path / "README.md"
    readme.write_text("# the project\n")
    assert alert(db, "--webhook", receiver.url(), "--atom", str(readme))[0] == 2
    assert "README.md: not an Atom feed, so not replaced" in capsys.readouterr().err
    assert readme.read_text() == "# the project\n" and receiver.requests == []  # not posted twice
    history = db.read_bytes()
    assert alert(db, "--atom", str(db))[0] == 2  # the history itself, given for --db
    assert "not an Atom feed" in capsys.readouterr().err and db.read_bytes() == history
    assert alert(db, "--jsonl", str(db))[0] == 2  # JSON lines are never appended to the history
    assert (
        "not a JSON Lines file, so not appended to" in capsys.readouterr().err and db.read_bytes() == history
    )
    folder = tmp_path / "alerts.jsonl"
    folder.mkdir()
    assert alert(db, "--webhook", receiver.url(), "--jsonl", str(folder))[0] == 2
    assert "alerts.jsonl: cannot write: a folder" in capsys.readouterr().err and receiver.requests == []
    with pytest.raises(SystemExit):
        alert(db, "--atom", "-")  # not the output, as for --jsonl: a file named "-" would be written
    assert "the Atom feed is a file" in capsys.readouterr().err and not Path("-").exists()
    feed = tmp_path / "feed.xml"
    feed.touch()  # an empty file (made by the job beforehand) is taken, and so is a feed
    assert alert(db, "--atom", str(feed))[0] == 1
    assert alert(db, "--atom", str(feed), "--webhook", receiver.url())[0] == 0


def test_a_line_break_in_a_stored_test_id_makes_no_line_of_its_own(db: Path, receiver: Receiver) -> None:
    """`import` refuses control characters; a history written otherwise (a shared server, a hand
    edit) may still hold one: the alert's line stays one line in the chat and the terminal."""
    runs(db, STEP)
    with sqlite3.connect(db) as edit:
        edit.execute("UPDATE series SET test = test || char(10) || 'SLOWER  forged <!channel>'")
    edit.close()
    status, said = alert(db, "--webhook", receiver.url())
    text = receiver.requests[0]["json"]["text"]
    assert status == 1 and "test_gelu\\nSLOWER  forged &lt;!channel&gt; [gelu]" in text
    for lines in (text.splitlines(), said.splitlines()):
        assert not any(line.startswith("SLOWER  forged") for line in lines)


def test_alerts_are_kept_per_branch(db: Path) -> None:
    with HistoryStore(db) as store:
        for i, level in enumerate(STEP):
            run = rf.run([rf.result("t.py::test_a", level, rounds=[level] * 3)], created=rf.created(i))
            store.append_run(run, commit=commit_of(i), branch="main")
    status, sent = jsonl(db, "--branch", "main")
    assert status == 1 and sent[0]["branch"] == "main"
    assert jsonl(db, "--branch", "main") == (0, [])
    assert jsonl(db)[0] == 1  # all runs: a stream of its own


def test_two_alert_runs_at_once_send_each_alert_once(
    db: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs(db, STEP)
    read = HistoryStore.sent_alerts

    def slow_read(store: HistoryStore, scope: str) -> list[SentAlert]:
        found = read(store, scope)
        time.sleep(0.3)  # time for the other run to read too, were the read not under the lock
        return found

    monkeypatch.setattr(HistoryStore, "sent_alerts", slow_read)
    results: list[int] = []

    def one() -> None:
        results.append(alert(db, "--webhook", receiver.url())[0])

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == [0, 1] and len(receiver.requests) == 1
