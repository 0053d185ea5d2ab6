"""A run's feedback on its pull request: the one comment, found again by its marker and updated in
place on every push, and a check run with an annotation on each failing test.

A fork's pull request runs its workflow with a token that may only read: GitHub refuses to
comment or to make a check run (403). That is no error of the run's: the comment is skipped with a
line saying why, and the annotations go to the job's log as workflow commands instead (GitHub
shows those on the diff too). Posting never decides the gate: that is the pytest run's exit status.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_kernelperf.results import pull_request as feedback
from pytest_kernelperf.results import render, runfile

from .client import Client, GitHubError, Refused
from .context import PullRequest

CHECK_NAME = "pytest-kernelperf"
MAX_ANNOTATIONS = 50  # per request, GitHub's limit; the rest follow in updates of the check run
FORK_SKIP = (
    "a fork's pull request: the workflow's token may only read, so GitHub refused ({why}); "
    "the gate's verdict is the job's exit status"
)


class Skipped(Exception):
    """Nothing posted, for a reason that is not the run's fault (a fork's read-only token)."""


@dataclass(frozen=True)
class Posted:
    what: str  # "created" or "updated"
    url: str


def _is_ours(comment: dict[str, Any]) -> bool:
    body = comment.get("body")
    return isinstance(body, str) and body.startswith(feedback.MARKER) and isinstance(comment.get("id"), int)


def _refusal(pr: PullRequest, refused: Refused, permission: str) -> Exception:
    if pr.from_fork and refused.status in (403, 404):
        return Skipped(FORK_SKIP.format(why=refused))
    if refused.status in (403, 404):
        return GitHubError(f"{refused}: the workflow needs `permissions: {permission}: write`")
    return refused


def post_comment(client: Client, pr: PullRequest, body: str) -> Posted:
    """The pull request's comment with `body`: the earlier one updated (a bot's first, as the
    workflow's token writes as github-actions[bot]), else a new one."""
    if pr.number is None:
        raise Skipped("this run is not about a pull request (no number in the event, no --pr)")
    try:
        ours = [c for c in client.issue_comments(pr.repository, pr.number) if _is_ours(c)]
        ours.sort(key=lambda c: _get_type(c) != "Bot")  # stable: the oldest bot's first
        for earlier in ours:
            try:
                answer = client.update_comment(pr.repository, earlier["id"], body)
                return Posted("updated", str(answer.get("html_url", "")))
            except Refused as refused:  # someone else's comment with the marker: not ours to edit
                if refused.status not in (403, 404):
                    raise
        answer = client.create_comment(pr.repository, pr.number, body)
        return Posted("created", str(answer.get("html_url", "")))
    except Refused as refused:
        raise _refusal(pr, refused, "pull-requests") from None


def _get_type(comment: dict[str, Any]) -> str:
    user = comment.get("user")
    return str(user.get("type", "")) if isinstance(user, dict) else ""


def check_payloads(
    run: runfile.RunReport,
    found: Sequence[feedback.Annotation],
    *,
    sha: str,
    passed: bool,
    details_url: str | None,
) -> list[dict[str, Any]]:
    """The check run to create, then its updates: MAX_ANNOTATIONS annotations each."""
    summary = feedback.comment(run, run_url=details_url)
    output = {"title": render.totals(run.results), "summary": summary}
    batches = [list(found[i : i + MAX_ANNOTATIONS]) for i in range(0, len(found), MAX_ANNOTATIONS)] or [[]]
    payloads: list[dict[str, Any]] = []
    for batch in batches:
        entries = [
            {
                "path": a.path,
                "start_line": a.line,
                "end_line": a.line,
                "annotation_level": "failure",
                "title": a.title[:255],
                "message": a.message[:65_000],
            }
            for a in batch
        ]
        payloads.append({"output": {**output, "annotations": entries}})
    first = payloads[0]
    first.update(
        name=CHECK_NAME, head_sha=sha, status="completed", conclusion="success" if passed else "failure"
    )
    if details_url:
        first["details_url"] = details_url
    return payloads


def post_check(client: Client, pr: PullRequest, payloads: Sequence[dict[str, Any]]) -> Posted:
    try:
        check = client.create_check_run(pr.repository, payloads[0])
        check_id = check.get("id")
        for more in payloads[1:]:
            if not isinstance(check_id, int):
                raise GitHubError("GitHub's check run came back without an id")
            client.update_check_run(pr.repository, check_id, more)
        return Posted("created", str(check.get("html_url", "")))
    except Refused as refused:
        raise _refusal(pr, refused, "checks") from None


def workflow_commands(found: Sequence[feedback.Annotation], write: Callable[[str], None]) -> None:
    """The annotations as workflow commands in the job's log (`::error file=...,line=...::`)."""
    for a in found:
        write(
            f"::error file={_property(a.path)},line={a.line},title={_property(a.title)}::{_data(a.message)}"
        )


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")
