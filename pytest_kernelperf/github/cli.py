"""`python -m pytest_kernelperf github ...`: a run's feedback on its pull request.

    github comment --run RUN.json     the pull request's one comment, created or updated in place
    github check --run RUN.json       a check run with an annotation on each failing test's line

Both read the pull request from GitHub Actions' environment (GITHUB_REPOSITORY, GITHUB_EVENT_PATH)
and the token from GITHUB_TOKEN (never printed); --print shows what would be posted, and posts nothing.
Exit status: 0 when posted, or skipped for a reason that is not the run's (a fork's read-only token:
the line says so); 2 when it could not post (no run file, no token, refused, rate-limited), the
reason on stderr. The gate's verdict is never this command's: it is the pytest run's exit status.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

from pytest_kernelperf.results import pull_request as feedback
from pytest_kernelperf.results import runfile

from . import context, publish
from .client import Client, GitHubError


def add_subparser(subparsers: Any) -> argparse.ArgumentParser:
    github: argparse.ArgumentParser = subparsers.add_parser(
        "github",
        help="a run's feedback on its pull request: one comment, a check run with annotations",
        description="Post a run file's verdicts to the pull request it ran for, through GitHub's REST "
        "API (GITHUB_API_URL, default https://api.github.com) with the token in GITHUB_TOKEN.",
    )
    github.set_defaults(run_command=run)
    commands = github.add_subparsers(dest="github_command", required=True, metavar="SUBCOMMAND")
    comment = commands.add_parser("comment", help="create or update the pull request's one comment")
    check = commands.add_parser("check", help="a check run with an annotation on each failing test")
    for sub in (comment, check):
        sub.add_argument("--run", type=Path, required=True, metavar="RUN.json", help="the run file")
        sub.add_argument("--repository", metavar="OWNER/NAME", help="default: $GITHUB_REPOSITORY")
        sub.add_argument("--print", action="store_true", help="print what would be posted; post nothing")
    comment.add_argument("--pr", type=int, metavar="N", help="the pull request (default: the event's)")
    comment.add_argument("--artifact-url", metavar="URL", help="the run's uploaded artefact, linked")
    check.add_argument(
        "--sha", help="the commit to check (default: the pull request's head, else $GITHUB_SHA)"
    )
    check.add_argument(
        "--status",
        type=int,
        metavar="N",
        help="the gate's exit status, for the check's conclusion (default: failed tests in the run file)",
    )
    check.add_argument(
        "--workspace",
        type=Path,
        help="the repository's root, for the annotations' paths (default: $GITHUB_WORKSPACE, else .)",
    )
    return github


def run(args: argparse.Namespace, out: TextIO) -> int:
    try:
        loaded = runfile.load(args.run)
    except runfile.RunFileError as exc:
        print(f"error: no feedback posted: {exc}", file=sys.stderr)
        return 2
    try:
        if args.github_command == "comment":
            return _comment(args, loaded, out)
        return _check(args, loaded, out)
    except publish.Skipped as skipped:
        print(f"kernelperf: {args.github_command} skipped: {skipped}", file=out)
        return 0
    except (GitHubError, context.ContextError) as exc:
        print(f"error: no {args.github_command} posted: {exc}", file=sys.stderr)
        return 2


def _comment(args: argparse.Namespace, loaded: runfile.RunReport, out: TextIO) -> int:
    body = feedback.comment(loaded, run_url=context.run_url(os.environ), artifact_url=args.artifact_url)
    if args.print:
        print(body, file=out)
        return 0
    pr = context.pull_request(os.environ, repository=args.repository, number=args.pr)
    posted = publish.post_comment(Client.from_environment(), pr, body)
    print(f"kernelperf: {posted.what} the comment on {pr.repository}#{pr.number}: {posted.url}", file=out)
    return 0


def _check(args: argparse.Namespace, loaded: runfile.RunReport, out: TextIO) -> int:
    workspace = args.workspace or Path(os.environ.get("GITHUB_WORKSPACE") or ".")
    found = [_in_repository(a, loaded.rootdir, workspace) for a in feedback.failure_annotations(loaded)]
    failed = any(t.outcome in ("failed", "error") for t in loaded.tests.values())
    passed = args.status == 0 if args.status is not None else not failed
    if args.print:
        publish.workflow_commands(found, lambda line: print(line, file=out))
        return 0
    pr = context.pull_request(os.environ, repository=args.repository, sha=args.sha)
    if pr.head_sha is None:
        raise GitHubError("no commit to check: pass --sha or run in GitHub Actions (GITHUB_SHA)")
    payloads = publish.check_payloads(
        loaded, found, sha=pr.head_sha, passed=passed, details_url=context.run_url(os.environ)
    )
    try:
        posted = publish.post_check(Client.from_environment(), pr, payloads)
    except publish.Skipped:
        print(f"kernelperf: annotations in the job's log instead: {len(found)} failing tests", file=out)
        publish.workflow_commands(found, lambda line: print(line, file=out))
        raise
    print(f"kernelperf: {posted.what} the check run with {len(found)} annotations: {posted.url}", file=out)
    return 0


def _in_repository(annotation: feedback.Annotation, rootdir: str, workspace: Path) -> feedback.Annotation:
    """The annotation's path from the repository's root, as GitHub wants it (the run file's paths
    are from pytest's rootdir, which may be a folder of the repository)."""
    if not rootdir:
        return annotation
    where = Path(rootdir, annotation.path).resolve()
    try:
        relative = where.relative_to(workspace.resolve())
    except ValueError:
        return annotation
    return feedback.Annotation(
        str(PurePosixPath(*relative.parts)), annotation.line, annotation.title, annotation.message
    )
