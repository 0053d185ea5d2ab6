"""A local stand-in for GitHub's REST API, as far as the pull-request feedback uses it: a pull
request's comments (paginated with Link headers, as GitHub pages them), comments created and
updated, check runs created and updated. It answers on 127.0.0.1 from a thread, checks the bearer
token, and can be told to refuse writes (a fork's read-only token), to rate-limit the next calls,
or to echo the token in an error."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

TOKEN = "ghs_" + "t0ken" * 8
BOT = {"login": "github-actions[bot]", "type": "Bot"}
REFUSED = "Resource not accessible by integration"
COMMENTS = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<number>\d+)/comments$")
COMMENT = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/issues/comments/(?P<id>\d+)$")
CHECK_RUNS = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/check-runs$")
CHECK_RUN = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/check-runs/(?P<id>\d+)$")


@dataclass
class Limit:
    """The next `calls` requests are refused as rate-limited, the way GitHub says it."""

    calls: int
    status: int = 403
    retry_after: str | None = None  # a secondary limit's header; else x-ratelimit-reset
    reset_in_s: float = 0.0


@dataclass
class FakeGitHub:
    url: str = ""
    page_size: int = 30
    read_only: bool = False  # writes answer 403, as to a fork's pull-request token
    echo_token: bool = False  # an error that quotes the Authorization header back
    next_link: str | None = None  # a Link to hand out instead of the real next page
    limit: Limit | None = None
    comments: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    check_runs: list[dict[str, Any]] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path with query)
    _ids: Iterator[int] = field(default_factory=lambda: iter(range(1001, 10**6)))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def seed_comment(self, repo: str, number: int, body: str, user: dict[str, str] | None = None) -> int:
        number_id = next(self._ids)
        comment = {"id": number_id, "body": body, "user": user or {"login": "octo", "type": "User"}}
        self.comments.setdefault((repo, number), []).append(comment)
        return number_id

    # -- one request --------------------------------------------------------------------------

    def answer(
        self, method: str, target: str, headers: dict[str, str], body: Any
    ) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            self.requests.append((method, target))
            if headers.get("authorization") != f"Bearer {TOKEN}":
                return 401, {}, {"message": "Bad credentials"}
            if self.echo_token:
                return 422, {}, {"message": f"Validation failed for {headers.get('authorization')}"}
            if self.limit is not None and self.limit.calls > 0:
                return self._limited()
            path, query = urlsplit(target).path, parse_qs(urlsplit(target).query)
            if method != "GET" and self.read_only:
                return 403, {}, {"message": REFUSED, "documentation_url": "https://docs.github.com/rest"}
            return self._route(method, path, query, body)

    def _limited(self) -> tuple[int, dict[str, str], Any]:
        assert self.limit is not None
        self.limit.calls -= 1
        if self.limit.retry_after is not None:
            return (
                self.limit.status,
                {"retry-after": self.limit.retry_after},
                {"message": "You have exceeded a secondary rate limit."},
            )
        reset = str(int(time.time() + self.limit.reset_in_s))
        headers = {"x-ratelimit-remaining": "0", "x-ratelimit-limit": "5000", "x-ratelimit-reset": reset}
        return self.limit.status, headers, {"message": "API rate limit exceeded for installation."}

    def _route(
        self, method: str, path: str, query: dict[str, list[str]], body: Any
    ) -> tuple[int, dict[str, str], Any]:
        if (found := COMMENTS.match(path)) and method == "GET":
            return self._page(found["repo"], int(found["number"]), int(query.get("page", ["1"])[0]))
        if (found := COMMENTS.match(path)) and method == "POST":
            comment = {"id": next(self._ids), "body": body["body"], "user": BOT}
            comment["html_url"] = (
                f"https://github.test/{found['repo']}/pull/{found['number']}#issuecomment-{comment['id']}"
            )
            self.comments.setdefault((found["repo"], int(found["number"])), []).append(comment)
            return 201, {}, comment
        if (found := COMMENT.match(path)) and method == "PATCH":
            for comment in (c for cs in self.comments.values() for c in cs):
                if comment["id"] == int(found["id"]):
                    if comment["user"] != BOT:
                        return 403, {}, {"message": REFUSED}
                    comment["body"] = body["body"]
                    return 200, {}, {**comment, "html_url": f"https://github.test/c/{comment['id']}"}
            return 404, {}, {"message": "Not Found"}
        if CHECK_RUNS.match(path) and method == "POST":
            check = {"id": next(self._ids), **body, "html_url": "https://github.test/checks/1"}
            check["output"] = {**body["output"], "annotations": list(body["output"].get("annotations", []))}
            self.check_runs.append(check)
            return 201, {}, check
        if (found := CHECK_RUN.match(path)) and method == "PATCH":
            check = next(c for c in self.check_runs if c["id"] == int(found["id"]))
            check["output"]["annotations"].extend(body["output"].get("annotations", []))
            return 200, {}, check
        return 404, {}, {"message": "Not Found"}

    def _page(self, repo: str, number: int, page: int) -> tuple[int, dict[str, str], Any]:
        everything = self.comments.get((repo, number), [])
        start = (page - 1) * self.page_size
        headers = {}
        if start + self.page_size < len(everything):
            link = f"{self.url}/repos/{repo}/issues/{number}/comments?per_page=100&page={page + 1}"
            headers["link"] = f'<{self.next_link or link}>; rel="next", <{self.url}/last>; rel="last"'
        return 200, headers, everything[start : start + self.page_size]


def _handler(api: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, extra, data = api.answer(
                self.command, self.path, headers, json.loads(raw) if raw else None
            )
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PATCH = _serve

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

    return Handler


@contextmanager
def serve(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    """The fake API in a thread, with GitHub Actions' API and token variables pointing at it;
    stopped on leaving."""
    api = FakeGitHub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    server.timeout = 5
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    monkeypatch.setenv("GITHUB_API_URL", api.url)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
