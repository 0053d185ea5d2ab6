"""The composite action (action.yml) and the workflow docs/ci.md gives a team to copy: the workflow
calls the action with inputs it declares, with the permissions and the clone the gate needs; the
action's steps take every input through the environment; and the copied workflow, run as a runner
would run the action (tests/actionkit.py) on a repository whose pull request slows a kernel, posts
one comment and updates it on the next push, against a local GitHub API (tests/github_api.py), while
the job's status stays pytest's."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from actionkit import (
    ROOT,
    action,
    action_step,
    documented_workflow,
    environment_without_github,
    inputs_referenced,
    run_action,
)
from conftest import git_run, scripted_conftest, seed_peak_cache
from github_api import TOKEN, FakeGitHub, serve

from pytest_kernelperf.results import pull_request

REPO = "acme/kernels"


def test_the_documented_workflow_calls_the_action_with_inputs_it_declares() -> None:
    workflow = documented_workflow()
    declared = action()["inputs"]
    step = action_step(workflow)
    given = step.get("with", {})
    assert set(given) <= set(declared), f"inputs the action does not declare: {set(given) - set(declared)}"
    required = {name for name, field in declared.items() if field.get("required") and "default" not in field}
    assert required <= set(given)


def test_the_documented_workflow_gives_the_gate_what_it_needs() -> None:
    workflow = documented_workflow()
    # YAML 1.1 reads a bare `on` as true.
    events = next(value for key, value in workflow.items() if key in ("on", True))
    assert isinstance(events, dict) and "pull_request" in events
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write", "checks": "write"}
    (job,) = workflow["jobs"].values()
    assert "self-hosted" in job["runs-on"]
    checkout = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0  # the base branch must be in the clone


def test_every_input_is_declared_used_and_reaches_the_scripts_through_the_environment() -> None:
    spec = action()
    assert inputs_referenced() == set(spec["inputs"])
    for step in spec["runs"]["steps"]:
        # An input spliced into a script could run as shell (a branch named `$(...)`): env only.
        assert "${{" not in step.get("run", ""), f"{step['name']}: an expression inside its script"
        assert step.get("shell", "bash") == "bash"
    assert spec["runs"]["using"] == "composite"


def test_the_last_step_exits_with_the_gates_status() -> None:
    last = action()["runs"]["steps"][-1]
    assert last["env"] == {"STATUS": "${{ steps.gate.outputs.status }}"} and 'exit "$STATUS"' in last["run"]


OPS = """
def double(x):
    return x * 2

double.fake_ms = {ms}
"""

TESTS = """
import torch
from kern.ops import double


def test_double(kernel_bench):
    kernel_bench(double, torch.ones(8), reference=lambda x: x * 2)
"""


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    with serve(monkeypatch) as api:
        yield api


def _commit(repo: Path, ms: float, message: str) -> str:
    (repo / "kern" / "ops.py").write_text(OPS.format(ms=ms))
    git_run(repo, "add", "-A")
    git_run(repo, "commit", "-qm", message)
    return git_run(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose main has double at 0.02 ms (origin/main), and a branch checked out."""
    root = tmp_path / "kernels"
    (root / "kern").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "kern" / "__init__.py").write_text("")
    (root / "conftest.py").write_text(scripted_conftest(round_sd=0.003))
    (root / "tests" / "test_ops.py").write_text(textwrap.dedent(TESTS).lstrip())
    (root / ".gitignore").write_text("kernelperf-results/\n__pycache__/\n.output-*\n")
    seed_peak_cache(root)
    git_run(root, "init", "-q", "-b", "main")
    base = _commit(root, 0.02, "base")
    git_run(root, "update-ref", "refs/remotes/origin/main", base)  # what the checkout fetches
    git_run(root, "checkout", "-qb", "faster-gelu")
    return root


def _change(body: str) -> float:
    """The change in percent of test_double's row in the comment's regressions."""
    found = re.search(
        r"^\| `tests/test_ops.py::test_double` \| slower \| \*\*\+([0-9.]+)%\*\*", body, re.MULTILINE
    )
    assert found, body
    return float(found[1])


def _push(repo: Path, api: FakeGitHub, ms: float, message: str) -> tuple[int, str]:
    """One push to the pull request: a commit, then the copied workflow's action step."""
    head = _commit(repo, ms, message)
    event = repo.parent / "event.json"
    pr = {
        "number": 7,
        "head": {"sha": head, "repo": {"full_name": REPO}},
        "base": {"repo": {"full_name": REPO}},
    }
    event.write_text(json.dumps({"pull_request": pr}))
    environ = {
        **environment_without_github(),
        "PYTHONPATH": str(ROOT),
        "PYTEST_ADDOPTS": "-p no:cacheprovider -p no:hypothesispytest",
        "KERNELPERF_PROGRESS_AFTER": "3600",
        "GITHUB_API_URL": api.url,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "42",
        "GITHUB_SHA": head,
        "GITHUB_WORKSPACE": str(repo),
    }
    given = {
        **action_step(documented_workflow()).get("with", {}),
        "python": sys.executable,  # the runner's Python, with the plugin on PYTHONPATH
        "install": "false",
    }
    github = {"base_ref": "main", "token": TOKEN, "run_id": "42", "run_attempt": "1"}
    done = run_action(given, github=github, environ=environ, workspace=repo)
    return done.status, done.log


@pytest.mark.slow  # three pytest runs in subprocesses
def test_a_copied_workflow_posts_one_comment_and_updates_it_while_the_job_keeps_pytests_status(
    repo: Path, github: FakeGitHub
) -> None:
    status, log = _push(repo, github, 0.03, "slower")
    assert status == 1, log  # the gate failed: the job fails
    (comment,) = github.comments[(REPO, 7)]
    assert comment["body"].startswith(pull_request.MARKER) and "**1 regression**" in comment["body"]
    assert _change(comment["body"]) == pytest.approx(50, abs=2)
    (check,) = github.check_runs
    (note,) = check["output"]["annotations"]
    assert (note["path"], note["start_line"], check["conclusion"]) == ("tests/test_ops.py", 5, "failure")

    status, log = _push(repo, github, 0.04, "slower still")
    assert status == 1, log
    (comment,) = github.comments[(REPO, 7)]  # the same comment, edited
    assert _change(comment["body"]) == pytest.approx(100, abs=3)

    # Fixed, but GitHub refuses to post: the job is green, with a warning.
    github.read_only = True
    status, log = _push(repo, github, 0.02, "back to the base's speed")
    assert status == 0, log
    assert "::warning title=pytest-kernelperf::the pull request's comment was not posted" in log
    assert _change(github.comments[(REPO, 7)][0]["body"]) == pytest.approx(100, abs=3)  # left as it was
