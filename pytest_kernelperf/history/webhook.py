"""A JSON POST to a chat service's incoming webhook (`history alert --webhook URL`), on the standard
library's urllib.

A webhook's URL is its secret: Slack's `https://hooks.slack.com/services/T…/B…/<token>`, Discord's
`…/api/webhooks/<id>/<token>`, Mattermost's `…/hooks/<key>`. Nothing this module says shows more of
it than its scheme, host and port (`https://hooks.slack.com/***`): not its path, query or user part,
in our messages or in the receiver's answers quoted in them.

One POST, `TIMEOUT_S` to answer, all of it (however slowly its bytes come). A 2xx is delivered. A
429 (rate limited) is waited out once when its Retry-After asks for at most `MAX_RETRY_AFTER_S` (1 s
when it says nothing), then reported; a redirect is not followed (the secret would go where it
points, and urllib would turn the POST into a GET); a timeout, a refused connection or any other
answer is a WebhookError saying which.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from datetime import timezone
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from pytest_kernelperf import __version__
from pytest_kernelperf.formatting import escape_controls

TIMEOUT_S = 10.0
MAX_RETRY_AFTER_S = 30.0
NO_RETRY_AFTER_S = 1.0  # a 429 that says nothing of when to try again
MAX_ANSWER_BYTES = 64 << 10
ANSWER_SHOWN = 200  # characters of a refusal's body quoted in the message
# A part of the URL this long (a path segment, a query value) is masked wherever a message shows it.
SECRET_LENGTH = 6
# What a webhook URL never holds: whitespace and control characters (urllib refuses them).
_NOT_IN_URL = re.compile(r"[\x00-\x20\x7f-\x9f\u2028\u2029]")


class WebhookError(Exception):
    """A POST that was not delivered, said without the URL's secret."""


def checked_url(text: str) -> str:
    """A webhook URL as given: http(s) with a host; ValueError saying what is wrong, never the URL."""
    text = text.strip()
    if not text:
        raise ValueError("an empty webhook URL (is the secret that holds it set for this job?)")
    try:
        parts = urlsplit(text)
        host = parts.hostname
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        raise ValueError(f"{masked(text)}: not a URL") from None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise ValueError(f"{masked(text)}: a webhook URL is http:// or https:// with a host")
    if _NOT_IN_URL.search(text):
        # urllib refuses these only when it sends, quoting the path in its error: a secret pasted
        # wrapped, a line break or a space inside it, would show there as a Python literal.
        raise ValueError(f"{masked(text)}: a webhook URL holds no spaces, line breaks or control characters")
    if "@" in parts.netloc:
        raise ValueError(
            f"{masked(text)}: a user part (user:password@) in a webhook URL is not sent by urllib: "
            "give the URL the service shows, its secret in the path or query"
        )
    if not (parts.path + parts.query + parts.fragment).isascii():
        raise ValueError(f"{masked(text)}: a webhook URL's path and query are ASCII (percent-encode others)")
    return text


def masked(url: str) -> str:
    """`scheme://host[:port]/***`: the URL without its user part, path, query and fragment."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return url.split(":", 1)[0][:10] + "://***"
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    return f"{parts.scheme}://{host}{port}/***"


def _secrets(url: str) -> list[str]:
    """The parts of `url` that a message must not show, longest first: each also as a Python
    literal writes it (an error quoting it with repr) and percent-decoded (a receiver quoting it)."""
    try:
        parts = urlsplit(url)
        found = [url, parts.path, parts.query, parts.netloc.rpartition("@")[0]]
        found += [segment for segment in parts.path.split("/") if len(segment) >= SECRET_LENGTH]
        found += [value for _, value in parse_qsl(parts.query) if len(value) >= SECRET_LENGTH]
        found += [parts.password or ""]
    except ValueError:
        found = [url]
    shown = {form for s in found for form in (s, repr(s)[1:-1], ascii(s)[1:-1], unquote(s))}
    return sorted({s for s in shown if s and s != "/"}, key=len, reverse=True)


def scrub(text: str, url: str) -> str:
    """`text` (ours, or the receiver's) with the URL shown masked and its secret parts as ***."""
    text = text.replace(url, masked(url))
    for secret in _secrets(url):
        text = text.replace(secret, "***")
    return escape_controls(text)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx comes back as an HTTPError: refused below


def post(
    url: str,
    payload: Mapping[str, Any],
    *,
    timeout: float = TIMEOUT_S,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """POST `payload` as JSON to `url`; its 2xx status, or WebhookError (see the module's docstring)."""
    body = json.dumps(payload).encode("utf-8")
    where = masked(url)
    for attempt in (1, 2):
        status, headers, answer = _send_within(url, body, timeout)
        if 200 <= status < 300:
            return status
        said = scrub(answer.decode("utf-8", "replace").strip()[:ANSWER_SHOWN], url)
        said = f": {said}" if said else ""
        if status == 429:
            wait = retry_after(headers.get("retry-after"))
            if attempt == 1 and wait <= MAX_RETRY_AFTER_S:
                sleep(wait)
                continue
            again = f" after waiting {wait:g} s" if attempt == 2 else f"; it asks to wait {wait:g} s"
            raise WebhookError(f"{where}: rate limited (429){again}{said}")
        if 300 <= status < 400:
            raise WebhookError(
                f"{where}: answered {status}, a redirect, not followed (the URL is a secret, and a "
                "redirected POST would not be sent again as one): give the webhook's final URL"
            )
        raise WebhookError(f"{where}: answered {status}{said}")
    raise AssertionError("unreachable")


def _send_within(url: str, body: bytes, timeout: float) -> tuple[int, dict[str, str], bytes]:
    """`_send`, its whole exchange within `timeout`: the socket's timeout bounds each read only, and
    a receiver that answers a byte at a time would hold the history's write lock for as long as it
    likes. A POST given up on goes on in its thread until its socket times out; the process does
    not wait for it."""
    done: list[tuple[int, dict[str, str], bytes] | BaseException] = []

    def attempt() -> None:
        try:
            done.append(_send(url, body, timeout))
        except BaseException as exc:  # raised again below, in the caller's thread
            done.append(exc)

    worker = threading.Thread(target=attempt, name="kernelperf-webhook", daemon=True)
    worker.start()
    worker.join(timeout)
    if not done:
        raise WebhookError(f"{masked(url)}: no answer within {timeout:g} s")
    outcome = done[0]
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def _send(url: str, body: bytes, timeout: float) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json; charset=utf-8",
            "User-Agent": f"pytest-kernelperf/{__version__}",
        },
    )
    opener = urllib.request.build_opener(_NoRedirects)
    where = masked(url)
    try:
        with opener.open(request, timeout=timeout) as answer:
            # A 2xx says it was delivered: its body is not waited for (nothing reads it).
            return answer.status, _lower(answer.headers), b""
    except urllib.error.HTTPError as refused:
        with refused:
            return refused.code, _lower(refused.headers), _read(refused)
    except TimeoutError:
        raise WebhookError(f"{where}: no answer within {timeout:g} s") from None
    except http.client.HTTPException as broken:
        said = scrub(f"{type(broken).__name__}: {broken}".strip(), url)
        raise WebhookError(f"{where}: a broken answer: {said}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            raise WebhookError(f"{where}: no answer within {timeout:g} s") from None
        if isinstance(reason, ConnectionRefusedError):
            reason = "connection refused"
        raise WebhookError(f"{where}: cannot reach it: {scrub(str(reason), url)}") from None


def _read(refused: urllib.error.HTTPError) -> bytes:
    try:
        return refused.read(MAX_ANSWER_BYTES)
    except (OSError, http.client.HTTPException):
        return b""


def _lower(headers: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in (headers.items() if headers is not None else ())}


def retry_after(value: str | None, now: Callable[[], float] = time.time) -> float:
    """Seconds a Retry-After header asks to wait: a number of seconds, or an HTTP date."""
    if value is None or not value.strip():
        return NO_RETRY_AFTER_S
    text = value.strip()
    if re.fullmatch(r"[0-9]+(\.[0-9]+)?", text):
        return float(text)
    try:
        moment = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return NO_RETRY_AFTER_S
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return max(0.0, moment.timestamp() - now())
