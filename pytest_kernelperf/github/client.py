"""The one way this package talks to GitHub: a small REST client on the standard library's urllib.

Its token comes from the environment (GITHUB_TOKEN, what a workflow passes) and never appears in
anything it says: every error goes through `mask`. The API's base is GITHUB_API_URL (GitHub
Enterprise sets it), https://api.github.com by default. Only the calls the pull-request feedback
needs: a pull request's comments (every page), a comment created or updated, a check run created
or given more annotations.

Redirects are followed only for a read, and only within the API's scheme, host and port: urllib
would send the token's Authorization header to wherever a 302 or 307 points, `http://` included.
A write (POST, PATCH) that is redirected is not sent again: the message names where it was sent.

A rate limit (403 or 429 with `x-ratelimit-remaining: 0` or a `retry-after`) is waited out a few
times within a bound, then reported as such; a server error (502, 503, 504) is retried the same
way. Any other refusal is a `Refused` with GitHub's own message.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_kernelperf import __version__
from pytest_kernelperf.formatting import escape_controls

DEFAULT_API = "https://api.github.com"
TOKEN_VARIABLE = "GITHUB_TOKEN"
API_VARIABLE = "GITHUB_API_URL"
ATTEMPTS = 3  # tries of one call, the first included
MAX_WAIT_S = 60.0  # the longest a rate limit or server error is waited out, per wait
SERVER_ERRORS = (502, 503, 504)
SERVER_ERROR_WAIT_S = 2.0
SECONDARY_WAIT_S = 60.0
MAX_PAGES = 100  # 100 comments a page: 10,000 comments on one pull request is enough to search
MAX_BODY_BYTES = 16 << 20
TIMEOUT_S = 30.0


class GitHubError(Exception):
    """A call that did not succeed, said without the token."""


class NotFollowed(GitHubError):
    """A redirect the token does not follow: to another origin, or of a write."""


class RateLimited(GitHubError):
    pass


class Refused(GitHubError):
    """GitHub answered no: not allowed (403), not found or not visible to the token (404), invalid (422)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Response:
    status: int
    headers: Mapping[str, str]  # names in lower case
    data: Any


Sleep = Callable[[float], None]


class Client:
    def __init__(
        self,
        token: str,
        api_url: str = DEFAULT_API,
        *,
        sleep: Sleep = time.sleep,
        now: Callable[[], float] = time.time,
        max_wait_s: float = MAX_WAIT_S,
    ) -> None:
        _check_token(token)
        self._token = token
        self.api_url = api_url.rstrip("/")
        self._masked = _token_forms(token)
        self._opener = urllib.request.build_opener(_SameOriginRedirects(self.api_url, self.mask))
        self._sleep = sleep
        self._now = now
        self.max_wait_s = max_wait_s

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ, **options: Any) -> Client:
        token = environ.get(TOKEN_VARIABLE, "").strip()
        if not token:
            raise GitHubError(
                f"{TOKEN_VARIABLE} is not set: give the step the workflow's token "
                f"(env: {TOKEN_VARIABLE}: ${{{{ github.token }}}})"
            )
        return cls(token, environ.get(API_VARIABLE, "").strip() or DEFAULT_API, **options)

    def mask(self, text: str) -> str:
        """`text` without the token, as given or as any escape, quote or case of it would show it."""
        return self._masked.sub("***", text) if self._token else text

    # -- the calls ------------------------------------------------------------------------------

    def issue_comments(self, repository: str, number: int) -> Iterator[dict[str, Any]]:
        """Every comment of an issue or pull request, oldest first, page by page."""
        for page in self._pages(f"/repos/{repository}/issues/{number}/comments?per_page=100"):
            if not isinstance(page, list):
                raise GitHubError(f"the comments of {repository}#{number}: expected a list from GitHub")
            yield from (c for c in page if isinstance(c, dict))

    def create_comment(self, repository: str, number: int, body: str) -> dict[str, Any]:
        return self._object("POST", f"/repos/{repository}/issues/{number}/comments", {"body": body})

    def update_comment(self, repository: str, comment_id: int, body: str) -> dict[str, Any]:
        return self._object("PATCH", f"/repos/{repository}/issues/comments/{comment_id}", {"body": body})

    def create_check_run(self, repository: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        return self._object("POST", f"/repos/{repository}/check-runs", payload)

    def update_check_run(self, repository: str, check_id: int, payload: Mapping[str, Any]) -> dict[str, Any]:
        return self._object("PATCH", f"/repos/{repository}/check-runs/{check_id}", payload)

    # -- the transport --------------------------------------------------------------------------

    def _object(self, method: str, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        data = self.request(method, path, body).data
        if not isinstance(data, dict):
            raise GitHubError(f"{method} {path}: expected an object from GitHub")
        return data

    def _pages(self, path: str) -> Iterator[Any]:
        url = path
        for _ in range(MAX_PAGES):
            response = self.request("GET", url)
            yield response.data
            following = _next_link(response.headers.get("link", ""))
            if following is None:
                return
            if not following.startswith(self.api_url + "/"):
                # The token goes only to the API it was given for.
                raise GitHubError(f"GitHub's next page is outside {self.api_url}: {self.mask(following)}")
            url = following
        raise GitHubError(f"{path}: more than {MAX_PAGES} pages")

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Response:
        """One call (`path` below the API, or a whole URL of it), rate limits and server errors
        retried within ATTEMPTS and max_wait_s; GitHubError otherwise."""
        url = path if path.startswith(("http://", "https://")) else self.api_url + path
        where = f"{method} {urllib.parse.urlsplit(url).path}"
        for attempt in range(1, ATTEMPTS + 1):
            response = self._send(method, url, body, where)
            if response.status < 400:
                return response
            wait = self._wait(response)
            last = attempt == ATTEMPTS
            if wait is None or last or wait > self.max_wait_s:
                raise self._error(where, response, wait, attempt)
            self._sleep(wait)
        raise AssertionError("unreachable")

    def _send(self, method: str, url: str, body: Mapping[str, Any] | None, where: str) -> Response:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method, headers=self._headers(data))
        try:
            with self._opener.open(request, timeout=TIMEOUT_S) as answer:
                return Response(answer.status, _lower(answer.headers), _json(_read(answer)))
        except urllib.error.HTTPError as refused:
            with refused:
                return Response(refused.code, _lower(refused.headers), _json(refused.read(MAX_BODY_BYTES)))
        except http.client.HTTPException as broken:  # a malformed status line, a body cut short
            said = escape_controls(f"{type(broken).__name__}: {broken}".strip())
            raise GitHubError(self.mask(f"{where}: a broken answer from {self.api_url}: {said}")) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise GitHubError(self.mask(f"{where}: cannot reach {self.api_url}: {reason}")) from None

    def _headers(self, data: bytes | None) -> dict[str, str]:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"pytest-kernelperf/{__version__}",
            "Authorization": f"Bearer {self._token}",
        }
        if data is not None:
            headers["Content-Type"] = "application/json"
        return headers

    def _wait(self, response: Response) -> float | None:
        """Seconds to wait before trying again, or None when trying again cannot help."""
        headers = response.headers
        if response.status in SERVER_ERRORS:
            return SERVER_ERROR_WAIT_S
        if response.status not in (403, 429):
            return None
        retry_after = _number(headers.get("retry-after"))
        if retry_after is not None:
            return max(retry_after, 0.0)
        if headers.get("x-ratelimit-remaining") == "0":
            reset = _number(headers.get("x-ratelimit-reset"))
            return max((reset or 0.0) - self._now(), 0.0) + 1.0
        said = response.data.get("message") if isinstance(response.data, dict) else None
        if response.status == 429 or "rate limit" in str(said or "").lower():
            return SECONDARY_WAIT_S  # a secondary limit without its time: GitHub asks for a minute
        return None

    def _error(self, where: str, response: Response, wait: float | None, attempts: int) -> GitHubError:
        said = response.data.get("message") if isinstance(response.data, dict) else None
        text = f"{where}: {response.status}" + (f" {said}" if said else "")
        if response.status in SERVER_ERRORS:
            return GitHubError(self.mask(f"{text} (GitHub failed {attempts} times)"))
        if wait is not None:
            when = (
                f"it lifts in {wait:.0f} s, beyond the {self.max_wait_s:.0f} s this waits"
                if wait > self.max_wait_s
                else f"still limited after {attempts} tries"
            )
            return RateLimited(self.mask(f"GitHub's rate limit: {text}; {when}"))
        return Refused(self.mask(text), response.status)


def _check_token(token: str) -> None:
    """A token is printable ASCII without spaces; anything else would reach an error message
    (http.client quotes an invalid header value), so it is refused without being shown."""
    if not re.fullmatch(r"[!-~]*", token):
        raise GitHubError(
            f"{TOKEN_VARIABLE} holds a space, a line break or another character no token has "
            "(not shown): pass the token alone"
        )


def _token_forms(token: str) -> re.Pattern[str]:
    """The token as text may show it: itself, escaped as repr, bytes or JSON escape it, URL-quoted,
    in any case; the longest first."""
    forms = {
        token,
        repr(token)[1:-1],
        repr(token.encode())[2:-1],
        json.dumps(token)[1:-1],
        urllib.parse.quote(token, safe=""),
    }
    alternatives = sorted((f for f in forms if f), key=len, reverse=True)
    return re.compile("|".join(map(re.escape, alternatives)) or "(?!)", re.IGNORECASE)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or {"http": 80, "https": 443}.get(scheme)


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """urllib's redirects, with the Authorization header, only for a read within the API's origin."""

    def __init__(self, api_url: str, mask: Callable[[str], str]) -> None:
        self._origin = _origin(api_url)
        self._api_url = api_url
        self._mask = mask

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        method = req.get_method()
        where = f"{method} {urllib.parse.urlsplit(req.full_url).path}"
        if method != "GET":
            why = "a write is not sent again elsewhere: check GITHUB_API_URL"
        elif _origin(newurl) != self._origin:
            why = f"outside {self._api_url}, where the token does not go"
        else:
            return super().redirect_request(req, fp, code, msg, headers, newurl)
        fp.close()
        raise NotFollowed(self._mask(f"{where}: {code} redirect to {newurl} not followed: {why}"))


def _read(answer: http.client.HTTPResponse) -> bytes:
    """The body, up to MAX_BODY_BYTES; one shorter than its Content-Length is an IncompleteRead
    (urllib returns what came before the connection closed)."""
    raw = answer.read(MAX_BODY_BYTES)
    expected = _number(answer.headers.get("content-length"))
    if expected is not None and len(raw) < min(expected, MAX_BODY_BYTES):
        raise http.client.IncompleteRead(raw, int(expected) - len(raw))
    return raw


def _lower(headers: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in headers.items()} if headers is not None else {}


def _json(raw: bytes) -> Any:
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _next_link(header: str) -> str | None:
    """The `rel="next"` URL of a Link header (RFC 8288, as GitHub writes it), or None."""
    for part in header.split(","):
        url, _, params = part.partition(";")
        if 'rel="next"' in params.replace(" ", ""):
            return url.strip().strip("<>")
    return None
