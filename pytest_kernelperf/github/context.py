"""Which pull request and commit a workflow run is about, from what GitHub Actions sets: the
repository (GITHUB_REPOSITORY), the event's JSON (GITHUB_EVENT_PATH: the pull request's number,
head commit and whether it comes from a fork), and the run's page (GITHUB_SERVER_URL,
GITHUB_REPOSITORY, GITHUB_RUN_ID). The command line may name any of them instead."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
SHA = re.compile(r"^[0-9a-f]{40}$")


class ContextError(ValueError):
    pass


@dataclass(frozen=True)
class PullRequest:
    repository: str  # owner/name of the repository the pull request is to
    number: int | None  # None: the run is not about a pull request (a push)
    head_sha: str | None  # the pull request's head commit (GITHUB_SHA is the merge commit)
    from_fork: bool  # a fork's pull request: the workflow's token may only read


def _event(environ: Mapping[str, str]) -> dict[str, Any]:
    path = environ.get("GITHUB_EVENT_PATH", "").strip()
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ContextError(f"GITHUB_EVENT_PATH={path}: cannot read the event: {exc}") from None
    return data if isinstance(data, dict) else {}


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def pull_request(
    environ: Mapping[str, str],
    *,
    repository: str | None = None,
    number: int | None = None,
    sha: str | None = None,
) -> PullRequest:
    """The pull request of this run, the arguments given taking the place of what the environment says."""
    event = _event(environ)
    repository = repository or environ.get("GITHUB_REPOSITORY", "").strip()
    if not REPOSITORY.match(repository or ""):
        raise ContextError(
            f"the repository {repository!r} is not OWNER/NAME: pass --repository or run in GitHub "
            "Actions (GITHUB_REPOSITORY)"
        )
    found = _get(event, "pull_request", "number")
    if number is None and isinstance(found, int) and not isinstance(found, bool):
        number = found
    head = _get(event, "pull_request", "head", "repo", "full_name")
    base = _get(event, "pull_request", "base", "repo", "full_name")
    sha = sha or _get(event, "pull_request", "head", "sha") or environ.get("GITHUB_SHA", "").strip() or None
    if sha is not None and not SHA.match(str(sha)):
        raise ContextError(f"the commit {sha!r} is not a 40-digit SHA")
    from_fork = bool(_get(event, "pull_request", "head", "repo", "fork")) or (
        isinstance(head, str) and isinstance(base, str) and head != base
    )
    return PullRequest(repository, number, str(sha) if sha else None, from_fork)


def run_url(environ: Mapping[str, str]) -> str | None:
    """The workflow run's page, where its logs and artefacts are; None outside GitHub Actions."""
    server = environ.get("GITHUB_SERVER_URL", "").strip().rstrip("/")
    repository = environ.get("GITHUB_REPOSITORY", "").strip()
    run_id = environ.get("GITHUB_RUN_ID", "").strip()
    if not (server and REPOSITORY.match(repository) and run_id.isdigit()):
        return None
    return f"{server}/{repository}/actions/runs/{run_id}"
