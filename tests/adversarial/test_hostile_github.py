"""The pull-request feedback against a hostile or broken API and hostile run files: a redirect
that would carry the token elsewhere, a token that would print itself in an error, an answer cut
short or malformed; test ids and failure text that would break the comment's tables or notify
people; so many regressions that GitHub would refuse the comment."""

from __future__ import annotations

import io
import re
import socket
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from github_api import TOKEN
from prkit import gate_run

from pytest_kernelperf import cli
from pytest_kernelperf.github import client as client_module
from pytest_kernelperf.github import publish
from pytest_kernelperf.github.client import Client, NotFollowed
from pytest_kernelperf.model.baseline import BaselineEntry, MetricRecord
from pytest_kernelperf.model.counters import KernelCounters
from pytest_kernelperf.results import pull_request, render, runfile

REPO = "acme/kernels"
GITHUB_LIMIT = 65_536  # what GitHub accepts in a comment's body or a check run's summary
UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")

# -- servers ------------------------------------------------------------------------------------


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[BaseHTTPRequestHandler], None]], str]]:
    """Start a server on 127.0.0.1 whose every request `answer` handles; its base URL."""
    servers: list[ThreadingHTTPServer] = []

    def start(answer: Callable[[BaseHTTPRequestHandler], None]) -> str:
        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                answer(self)

            do_GET = do_POST = do_PATCH = _any

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _reply(handler: BaseHTTPRequestHandler, status: int, body: bytes, **headers: str) -> None:
    handler.send_response(status)
    for name, value in {"Content-Length": str(len(body)), **headers}.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


@contextmanager
def _raw(data: bytes) -> Iterator[str]:
    """A server that answers every connection with `data` as it is, then closes it."""
    listener = socket.create_server(("127.0.0.1", 0))

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(data)

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()


# -- the token goes only to the API --------------------------------------------------------------


def test_a_redirect_to_another_host_is_not_followed_with_the_token(
    serve: Callable[[Callable[[BaseHTTPRequestHandler], None]], str],
) -> None:
    seen: list[str | None] = []

    def elsewhere(handler: BaseHTTPRequestHandler) -> None:
        seen.append(handler.headers.get("Authorization"))
        _reply(handler, 200, b"[]")

    thief = serve(elsewhere)
    api = serve(lambda h: _reply(h, 302, b"", Location=f"{thief}/steal"))
    with pytest.raises(NotFollowed, match=rf"GET /repos/{REPO}/issues/7/comments: 302 redirect to "):
        list(Client(TOKEN, api).issue_comments(REPO, 7))
    assert seen == []  # not even without the token: the answer would be another host's


def test_a_redirect_within_the_api_is_followed(
    serve: Callable[[Callable[[BaseHTTPRequestHandler], None]], str],
) -> None:
    seen: list[str | None] = []

    def moved(handler: BaseHTTPRequestHandler) -> None:
        if handler.path.startswith("/repos/old/"):
            _reply(handler, 301, b"", Location=handler.path.replace("/repos/old/", "/repos/acme/"))
            return
        seen.append(handler.headers.get("Authorization"))
        _reply(handler, 200, b'[{"id": 1, "body": "hi"}]')

    api = serve(moved)  # a renamed repository: GitHub answers 301 to its new name
    assert [c["body"] for c in Client(TOKEN, api).issue_comments("old/kernels", 7)] == ["hi"]
    assert seen == [f"Bearer {TOKEN}"]


def test_a_redirected_write_says_it_was_not_sent_again(
    serve: Callable[[Callable[[BaseHTTPRequestHandler], None]], str],
) -> None:
    api = serve(lambda h: _reply(h, 307, b"", Location=f"{h.path}/again"))
    with pytest.raises(
        NotFollowed, match=r"POST .*: 307 redirect to .* not followed: a write is not sent again"
    ):
        Client(TOKEN, api).create_comment(REPO, 7, "hello")


@pytest.mark.parametrize(
    "target",
    ["http://api.github.com/x", "https://api.github.com:8443/x", "https://api.github.com.evil.example/x"],
)
def test_another_scheme_port_or_host_is_another_origin(target: str) -> None:
    handler = client_module._SameOriginRedirects("https://api.github.com", lambda text: text)
    request = urllib.request.Request("https://api.github.com/repos/acme/kernels/issues/7/comments")
    with pytest.raises(NotFollowed, match=r"outside https://api\.github\.com"):
        handler.redirect_request(request, io.BytesIO(), 302, "Found", {}, target)


# -- the token is never shown ------------------------------------------------------------------


@pytest.mark.parametrize(
    "token", ["ghs_abc\r\nX-Injected: 1", "ghs_abc def", "ghs_abc\x1b[2J", "ghs_ab\u00e9"]
)
def test_a_token_with_whitespace_or_control_characters_is_refused_unshown(
    token: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.json"
    runfile.write(path, gate_run())
    monkeypatch.setenv("GITHUB_TOKEN", token)
    monkeypatch.setenv("GITHUB_API_URL", "http://127.0.0.1:9")  # never reached
    monkeypatch.setenv("GITHUB_REPOSITORY", REPO)
    status = cli.main(["github", "comment", "--run", str(path), "--pr", "7"], out=io.StringIO())
    err = capsys.readouterr().err
    assert status == 2 and "GITHUB_TOKEN holds a space, a line break or another character" in err
    assert "ghs_ab" not in err and "Bearer" not in err


def test_every_escaped_form_of_the_token_is_masked() -> None:
    token = 'ghs_a\\b"c/d+e'
    client = Client(token)
    for shown in (token, repr(token), repr(token.encode()), f'"{token}"'.encode().decode(), token.upper()):
        assert "ghs_a" not in client.mask(f"Invalid header value {shown}").lower()
    assert "ghs_a" not in client.mask(f"?t={urllib.parse.quote(token, safe='')}")


# -- a broken answer is a line, not a traceback --------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (b"HTTP/1.1 2OO OK\r\n\r\n", "BadStatusLine"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n[{",
            "IncompleteRead(2 bytes read, 998 more expected)",
        ),
    ],
)
def test_a_malformed_or_truncated_answer_is_said_in_one_line(
    answer: bytes,
    said: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "run.json"
    runfile.write(path, gate_run())
    with _raw(answer) as url:
        monkeypatch.setenv("GITHUB_API_URL", url)
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        monkeypatch.setenv("GITHUB_REPOSITORY", REPO)
        status = cli.main(["github", "comment", "--run", str(path), "--pr", "7"], out=io.StringIO())
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith(f"error: no comment posted: GET /repos/{REPO}/issues/7/comments: a broken answer")
    assert said in err and "Traceback" not in err and len(err.splitlines()) == 1


# -- the comment's text --------------------------------------------------------------------------


def _table_rows(text: str) -> Iterator[tuple[int, str]]:
    """(cells in its header, row) for every row of every table in `text`."""
    header = 0
    for line, following in zip(text.splitlines(), [*text.splitlines()[1:], ""], strict=True):
        if line.startswith("|") and following.startswith("|-"):
            header = len(UNESCAPED_PIPE.findall(line))
        elif line.startswith("|") and not line.startswith("|-"):
            yield header, line
        elif not line.startswith("|"):
            header = 0


def test_a_pipe_in_a_test_id_or_kernel_name_stays_in_its_cell() -> None:
    run = gate_run()
    record = MetricRecord("cupti", 1.0, (0.99, 1.01), 10, (0.98, 1.0, 1.02), (1.0, 1.0), 0.001)
    entry = BaselineEntry(
        record, "2026-12-01T00:00:00Z", counters=(KernelCounters("k|v", 1, {"registers": 64.0}),)
    )
    results = tuple(replace(r, nodeid=r.nodeid.replace("[", "[a|b-"), entry=entry) for r in run.results)
    text = pull_request.comment(replace(run, results=results))
    rows = list(_table_rows(text))
    assert any("`tests/test_gelu.py::test_gelu[a\\|b-compiled]`" in row for _, row in rows)
    assert any("`k\\|v`" in row for _, row in rows)  # the counters' table, in the folded summary
    assert rows and all(len(UNESCAPED_PIPE.findall(row)) == cells for cells, row in rows)
    assert render.counter_markdown(results) and all(
        len(UNESCAPED_PIPE.findall(row)) == cells
        for cells, row in _table_rows("\n".join(render.counter_markdown(results)))
    )


def test_mentions_and_issue_references_in_failure_text_notify_nobody() -> None:
    run = gate_run()
    slower = run.results[1]
    assert slower.against is not None
    pinged = replace(slower, against=replace(slower.against, where="kernels @octocat wrote, see #12"))
    tests = {
        **run.tests,
        "tests/test_x.py::test_x": runfile.ReportedTest("t.py", 1, "failed", "@acme/gpu-team: #99"),
    }
    text = pull_request.comment(replace(run, results=(run.results[0], pinged, run.results[2]), tests=tests))
    assert not re.search(r"@[A-Za-z0-9]|#[0-9]", text)
    assert "@\u200boctocat wrote, see #\u200b12" in text and "@\u200bacme/gpu-team: #\u200b99" in text


def _many(count: int) -> runfile.RunReport:
    run = gate_run()
    slow = run.results[1]
    long_note = "x" * 5000
    results = tuple(
        replace(slow, nodeid=f"tests/test_gelu.py::test_gelu[size{i}]", notes=(long_note,), against=None)
        for i in range(count)
    )
    failing = {
        f"tests/test_other.py::test_{i}": runfile.ReportedTest(
            "tests/test_other.py", i + 1, "failed", long_note
        )
        for i in range(count)
    }
    return replace(run, results=(*run.results, *results), tests={**run.tests, **failing})


def test_six_hundred_regressions_fit_in_the_comment_and_the_check_summary() -> None:
    run = _many(600)
    text = pull_request.comment(run, run_url="https://github.com/acme/kernels/actions/runs/42")
    assert len(text) <= GITHUB_LIMIT and text.startswith(pull_request.MARKER)
    assert "**601 regressions**" in text
    shown = sum(1 for line in text.splitlines() if line.startswith("| `tests/test_gelu.py::"))
    assert 0 < shown <= pull_request.MAX_LISTED
    assert f"*…and {601 - shown} more: see the whole run in its artefacts (run.json).*" in text
    others = sum(1 for line in text.splitlines() if line.startswith("- `tests/"))
    assert others > 0 and f"*…and {602 - others} more: see" in text  # the mismatch and softmax first
    assert "[the workflow run](https://github.com/acme/kernels/actions/runs/42)" in text
    (check,) = publish.check_payloads(run, [], sha="0" * 40, passed=False, details_url=None)
    assert len(check["output"]["summary"]) <= GITHUB_LIMIT


def test_a_few_regressions_are_all_listed_without_a_count() -> None:
    text = pull_request.comment(_many(3))
    assert "more: see the whole run" not in text
    assert sum(1 for line in text.splitlines() if line.startswith("| `tests/test_gelu.py::")) == 4
