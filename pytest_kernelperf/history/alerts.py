"""Regression alerts from the history (`history alert`): each change point sent once, to the sinks
given (JSON lines, an Atom feed, a chat's webhook), and remembered in the history's `alerts` table.

**Which change point is which.** As runs arrive after a change, its estimate moves: the segment
means (and so the change in %), the p-value, a step that becomes a drift, and its position by a run
or two (so its commit range). What stays is the series, the direction and, within a run or two, the
position. A change point found now is the one already alerted when that alert has the same series,
branch (`--branch`, '' for all runs) and direction, and the run where its estimate last stood lies
within `SAME_CHANGE_RUNS` runs of it in the series (the rule `history detect --since` uses); the
alert then follows the estimate to its new position, sending nothing. Its key, made when it is
first sent, never changes: a hash of the repository, branch, series, direction and the digest of
the first run after the change (a run's digest names it in any history, file or server). The Atom
entry's id is made from that key.

**Once, and only when delivered.** Reading what was sent, choosing the new alerts, delivering them
and remembering them is one transaction under the history's write lock (database.py): a second
`history alert` at the same time waits, then finds them sent. Every sink must take them: when one
fails (a webhook that times out, refuses or answers 500), the transaction is rolled back, nothing
is remembered and the next run sends them again, to every sink (a JSON line written before the
failure may then be written twice; the webhook is tried first, as the likeliest to fail).
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, TextIO

from pytest_kernelperf import __version__
from pytest_kernelperf.atomic import write_atomic
from pytest_kernelperf.formatting import escape_controls, utc_stamp

from . import webhook as hook
from .changepoints import SAME_CHANGE_RUNS, ChangePoint, SeriesReport, change_line, series_label
from .database import HistoryError
from .points import Point, json_value
from .store import HistoryStore, NewAlert, SentAlert

DEFAULT_FEED_ENTRIES = 50
MAX_LISTED = 20  # change points listed in one chat message; the rest are counted
# The namespace of the alerts' and feeds' UUIDs (version 5, from their keys): made once, never changed.
NAMESPACE = uuid.UUID("5f0c7a52-0b8e-5d1e-9a57-6b7065726601")
ATOM = "http://www.w3.org/2005/Atom"


# What `send` does with the new alerts: send and remember them, only say them, only remember them.
Mode = Literal["send", "dry-run", "record-only"]


class AlertError(HistoryError):
    """A sink that did not take the alerts: nothing was remembered."""


@dataclass(frozen=True)
class Sinks:
    """Where the new alerts go: `jsonl` a file appended to (or "-": the output), `atom` a feed file
    rewritten with the newest `atom_entries` alerts, `webhook` a URL POSTed to; `link` the
    dashboard's address, for the feed and the message."""

    jsonl: Path | None = None
    atom: Path | None = None
    atom_entries: int = DEFAULT_FEED_ENTRIES
    webhook: str | None = None
    webhook_timeout: float = hook.TIMEOUT_S
    link: str | None = None

    def any(self) -> bool:
        return self.jsonl is not None or self.atom is not None or self.webhook is not None


@dataclass(frozen=True)
class Alert:
    """A change point to alert, with what is sent of it (`record`: the JSON line, the feed entry)."""

    report: SeriesReport
    change: ChangePoint
    key: str
    record: dict[str, Any]

    @property
    def slowdown(self) -> bool:
        return self.change.slowdown

    @property
    def line(self) -> str:
        return str(self.record["line"])


@dataclass
class Outcome:
    new: list[Alert]
    known: int  # change points found that were alerted before
    delivered: list[str] = field(default_factory=list)  # what each sink did, in words

    @property
    def new_slowdowns(self) -> int:
        return sum(a.slowdown for a in self.new)


def alert_key(repository: str, scope: str, report: SeriesReport, slowdown: bool, first_run: str) -> str:
    """The key of a change point alerted for the first time (`first_run`: the digest of the first
    run after it)."""
    words = [repository, scope, *report.key.values(), "slower" if slowdown else "faster", first_run]
    return hashlib.sha256(json.dumps(words).encode("utf-8")).hexdigest()[:32]


def entry_id(key: str) -> str:
    return f"urn:uuid:{uuid.uuid5(NAMESPACE, 'alert:' + key)}"


def feed_id(repository: str, scope: str) -> str:
    return f"urn:uuid:{uuid.uuid5(NAMESPACE, json.dumps(['feed', repository, scope]))}"


def _run(point: Point) -> dict[str, Any]:
    return {"id": point.run_id, "commit": point.commit, "created": point.created}


def _record(
    report: SeriesReport, cp: ChangePoint, key: str, *, repository: str, scope: str, sent: str
) -> dict[str, Any]:
    by_id = {p.run_id: p for p in report.points}
    series = dict(zip(("test", "name", "device", "cache", "metric"), report.key.values(), strict=True))
    direction = "slower" if cp.slowdown else "faster"
    return {
        "key": key,
        "id": entry_id(key),
        "sent": sent,
        "repository": repository,
        "branch": scope or None,
        "series": series,
        "test": report.key.test,
        "name": report.key.name,
        "device": report.key.device,
        "direction": direction,
        "kind": cp.kind,
        "change_pct": round(cp.change_pct, 2),
        "before_ms": cp.before_ms,
        "after_ms": cp.after_ms,
        "confidence": round(cp.confidence, 6),
        "commit_range": cp.commit_range(),
        "previous_commit": cp.previous_commit,
        "commit": cp.commit,
        "previous_run": _run(by_id[cp.previous_run_id]),  # the last run before the change
        "first_run": _run(by_id[cp.run_id]),  # the first run after it
        "last_run": _run(report.latest),  # the newest run, whose arrival showed it
        "title": f"{direction} {cp.change_pct:+.1f}%: {series_label(report)} on {report.key.device}",
        "text": cp.describe(),
        "line": change_line(report, cp),
    }


def _known(
    report: SeriesReport, cp: ChangePoint, sent: Sequence[SentAlert], used: set[int]
) -> SentAlert | None:
    """The alert already sent for this change point, if any (see the module's docstring)."""
    positions = {p.run_id: i for i, p in enumerate(report.points)}
    for alert in sent:
        if alert.id in used or alert.series_id != report.series_id or alert.slowdown != cp.slowdown:
            continue
        at = positions.get(alert.run_id)
        if at is not None and abs(at - cp.index) <= SAME_CHANGE_RUNS:
            return alert
    return None


def select(
    reports: Sequence[SeriesReport],
    sent: Sequence[SentAlert],
    digests: dict[int, str],
    *,
    repository: str,
    scope: str,
    now: str,
    slowdowns_only: bool = False,
) -> tuple[list[Alert], int, list[tuple[int, int]]]:
    """(the new alerts, how many change points were alerted before, (alert id, run id) of those whose
    estimate moved)."""
    by_key = {alert.key: alert for alert in sent}
    used: set[int] = set()
    new: list[Alert] = []
    moved: list[tuple[int, int]] = []
    known = 0
    for report in reports:
        for cp in report.change_points:
            if slowdowns_only and not cp.slowdown:
                continue
            key = alert_key(repository, scope, report, cp.slowdown, digests[cp.run_id])
            before = _known(report, cp, sent, used) or by_key.get(key)
            if before is not None:
                known += 1
                used.add(before.id)
                if before.run_id != cp.run_id:
                    moved.append((before.id, cp.run_id))
                continue
            record = _record(report, cp, key, repository=repository, scope=scope, sent=now)
            new.append(Alert(report, cp, key, record))
    return new, known, moved


def send(
    store: HistoryStore,
    reports: Sequence[SeriesReport],
    sinks: Sinks,
    *,
    scope: str,
    out: TextIO,
    slowdowns_only: bool = False,
    mode: Mode = "send",
    now: datetime | None = None,
) -> Outcome:
    """The change points of `reports` not alerted yet, delivered to `sinks` and remembered, in one
    transaction under the write lock; in mode "dry-run", only chosen (nothing sent or remembered);
    in mode "record-only", remembered and not sent. AlertError when a sink fails: nothing is
    remembered."""
    stamp = utc_stamp(now)
    dry_run = mode == "dry-run"
    if mode == "send":
        check_files(sinks)
    digests = store.run_digests({cp.run_id for r in reports for cp in r.change_points})

    def choose() -> Outcome:
        new, known, moved = select(
            reports,
            store.sent_alerts(scope),
            digests,
            repository=store.repository,
            scope=scope,
            now=stamp,
            slowdowns_only=slowdowns_only,
        )
        outcome = Outcome(new, known)
        if dry_run:
            return outcome
        store.remember_alerts(
            scope,
            [
                NewAlert(a.key, a.report.series_id, a.slowdown, a.change.run_id, stamp, json.dumps(a.record))
                for a in new
            ],
            moved,
        )
        if mode == "send":
            _deliver(store, reports, sinks, outcome, scope=scope, out=out, now=stamp)
        return outcome

    if dry_run:
        return choose()
    return store.locked(choose, "remembering the alerts sent")


def check_files(sinks: Sinks) -> None:
    """Refuse, before anything is sent, the files the alerts could not go to: a folder, or a file
    that is not an Atom feed where the feed would replace it (a path given by mistake, such as
    `--atom README.md`, would be lost; an empty file is taken). A sink found to fail only after the
    webhook was posted would have the next run post the same alerts again."""
    for path in (sinks.jsonl, sinks.atom):
        if path is not None and str(path) != "-" and path.is_dir():
            raise AlertError(f"{path}: cannot write: a folder, not a file")
    jsonl = sinks.jsonl
    if jsonl is not None and str(jsonl) != "-" and jsonl.is_file() and jsonl.stat().st_size:
        with jsonl.open("rb") as lines:
            first = lines.read(1)
        if first != b"{":  # not JSON lines (the history itself, given by mistake): never appended to
            raise AlertError(
                f"{jsonl}: not a JSON Lines file, so not appended to: give --jsonl a file of its own"
            )
    if sinks.atom is None or not sinks.atom.is_file() or sinks.atom.stat().st_size == 0:
        return
    try:
        with sinks.atom.open("rb") as feed:
            root = next(ET.iterparse(feed, events=("start",)))[1].tag
    except (ET.ParseError, OSError, StopIteration):
        root = ""
    if root != f"{{{ATOM}}}feed":
        raise AlertError(
            f"{sinks.atom}: not an Atom feed, so not replaced: give --atom a file of its own, or remove it"
        )


def _deliver(
    store: HistoryStore,
    reports: Sequence[SeriesReport],
    sinks: Sinks,
    outcome: Outcome,
    *,
    scope: str,
    out: TextIO,
    now: str,
) -> None:
    new = outcome.new
    unsent = f"; {plural(len(new), 'new alert')} left unsent: the next `history alert` sends them again"
    if sinks.webhook is not None:
        where = hook.masked(sinks.webhook)
        if new:
            message = chat_message(new, repository=store.repository, scope=scope, link=sinks.link)
            try:
                status = hook.post(sinks.webhook, message, timeout=sinks.webhook_timeout)
            except hook.WebhookError as exc:
                raise AlertError(f"webhook {exc}{unsent}") from None
            outcome.delivered.append(f"the webhook {where} (it answered {status})")
        else:
            outcome.delivered.append(f"the webhook {where}: nothing new to post")
    if sinks.jsonl is not None:
        lines = "".join(json.dumps(a.record, sort_keys=True) + "\n" for a in new)
        if str(sinks.jsonl) == "-":
            out.write(lines)
            outcome.delivered.append(f"the output: {plural(len(new), 'JSON line')}")
        else:
            try:
                sinks.jsonl.parent.mkdir(parents=True, exist_ok=True)
                with sinks.jsonl.open("a", encoding="utf-8") as log:
                    log.write(lines)
            except OSError as exc:
                raise AlertError(f"{sinks.jsonl}: cannot write: {exc.strerror or exc}{unsent}") from None
            outcome.delivered.append(f"{sinks.jsonl}: {plural(len(new), 'JSON line')} appended")
    if sinks.atom is not None:
        selected = {r.series_id for r in reports}
        entries = [
            entry
            for sid, _, payload in store.alert_log(scope)
            if sid in selected and isinstance(entry := json_value(payload, "an alert", "payload"), dict)
        ][: sinks.atom_entries]
        text = atom_feed(entries, repository=store.repository, scope=scope, link=sinks.link, now=now)
        try:
            write_atomic(sinks.atom, text)
        except OSError as exc:
            raise AlertError(f"{sinks.atom}: cannot write: {exc.strerror or exc}{unsent}") from None
        outcome.delivered.append(f"the Atom feed {sinks.atom} ({plural(len(entries), 'entry')})")


# --- the chat message ----------------------------------------------------------------------------


def _slack(text: str) -> str:
    """Text as Slack's `text` takes it: &, < and > escaped (else `<!channel>` in a test id would
    notify a channel, and `<url|...>` make a link)."""
    return (
        escape_controls(text, keep_line_breaks=True)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
    )


def plural(n: int, word: str) -> str:
    """ "1 entry", "2 entries", "0 slowdowns"."""
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word[:-1]}ies" if word.endswith("y") else f"{n} {word}s"


def headline(alerts: Sequence[Alert], *, repository: str, scope: str) -> str:
    where = f"repository {repository}" if repository else "the history"
    on = f", branch {scope}" if scope else ""
    slow = sum(a.slowdown for a in alerts)
    return f"kernelperf: {plural(len(alerts), 'new change point')} in {where}{on}, {plural(slow, 'slowdown')}"


def chat_message(
    alerts: Sequence[Alert], *, repository: str, scope: str, link: str | None = None
) -> dict[str, Any]:
    """A Slack-compatible incoming webhook's payload: `text` (a headline and the line of each
    change point, as `history detect` prints it), and `kernelperf`, the alerts as JSON lines give
    them, for a receiver of its own."""
    lines = [headline(alerts, repository=repository, scope=scope)]
    lines += [a.line for a in alerts[:MAX_LISTED]]
    if len(alerts) > MAX_LISTED:
        lines.append(f"... and {len(alerts) - MAX_LISTED} more")
    if link:
        lines.append(f"dashboard: {link}")
    return {
        "text": _slack("\n".join(lines)),
        "kernelperf": {
            "repository": repository,
            "branch": scope or None,
            "alerts": [a.record for a in alerts],
        },
    }


# --- the Atom feed (RFC 4287) --------------------------------------------------------------------

_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")


def _xml(text: Any) -> str:
    """Text that XML 1.0 can hold: control characters (but the line break) shown as escapes."""
    shown = escape_controls(str(text), keep_line_breaks=True)
    return _NOT_XML.sub(lambda m: ascii(m.group())[1:-1], shown)


def _child(parent: ET.Element, tag: str, text: Any = None, **attributes: str) -> ET.Element:
    element = ET.SubElement(parent, tag, {k: _xml(v) for k, v in attributes.items()})
    if text is not None:
        element.text = _xml(text)
    return element


def _details(entry: dict[str, Any]) -> str:
    first = entry.get("first_run") or {}
    last = entry.get("last_run") or {}
    return "\n".join(
        [
            str(entry.get("line", "")),
            f"commits {entry.get('commit_range')}; first run after the change {first.get('created')}, "
            f"newest run {last.get('created')}",
        ]
    )


def atom_feed(
    entries: Sequence[dict[str, Any]], *, repository: str, scope: str, link: str | None, now: str
) -> str:
    """The feed of `entries` (alert records, newest first): its id made from the repository and
    branch, each entry's from its alert's key, so that a reader shows each alert once."""
    feed = ET.Element("feed", {"xmlns": ATOM})
    title = "kernelperf alerts" + (f": {repository}" if repository else "") + (f" ({scope})" if scope else "")
    _child(feed, "id", feed_id(repository, scope))
    _child(feed, "title", title)
    _child(feed, "updated", entries[0].get("sent", now) if entries else now)
    author = _child(feed, "author")
    _child(author, "name", "pytest-kernelperf")
    _child(feed, "generator", "pytest-kernelperf", version=__version__)
    if link:
        _child(feed, "link", rel="alternate", href=link)
    for entry in entries:
        item = _child(feed, "entry")
        _child(item, "id", entry.get("id"))
        _child(item, "title", entry.get("title"))
        _child(item, "updated", entry.get("sent"))
        _child(item, "published", entry.get("sent"))
        _child(item, "category", term=str(entry.get("direction")))
        _child(item, "summary", entry.get("line"), type="text")
        _child(item, "content", _details(entry), type="text")
        if link:
            _child(item, "link", rel="alternate", href=link)
    ET.indent(feed)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(feed, encoding="unicode") + "\n"
