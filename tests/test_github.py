"""`python -m pytest_kernelperf github comment|check` against a local server that answers as
GitHub's REST API does (tests/github_api.py): one comment per pull request, created then updated;
pages followed; rate limits waited out within a bound; permission refusals and a fork's read-only
token said in one line; the token never printed."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from github_api import BOT, REFUSED, TOKEN, FakeGitHub, Limit, serve
from prkit import gate_run

from pytest_kernelperf import cli
from pytest_kernelperf.github import client as client_module
from pytest_kernelperf.github.client import Client, RateLimited, Refused
from pytest_kernelperf.results import pull_request, runfile

REPO = "acme/kernels"
HEAD = "c0ffee" + "0" * 34


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    with serve(monkeypatch) as api:
        yield api


@pytest.fixture
def actions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """GitHub Actions' variables for a pull request (#7, from the repository itself) and its workspace."""
    event = tmp_path / "event.json"
    write_event(event, fork=False)
    for name, value in {
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "42",
        "GITHUB_SHA": "f" * 40,  # the merge commit: the check goes on the head instead
        "GITHUB_WORKSPACE": str(tmp_path / "repo"),
    }.items():
        monkeypatch.setenv(name, value)
    return tmp_path


def write_event(path: Path, *, fork: bool) -> None:
    head_repo = {"full_name": "someone/kernels" if fork else REPO, "fork": fork}
    pr = {"number": 7, "head": {"sha": HEAD, "repo": head_repo}, "base": {"repo": {"full_name": REPO}}}
    path.write_text(json.dumps({"action": "synchronize", "pull_request": pr}))


def saved(folder: Path, **kwargs: object) -> Path:
    path = folder / "run.json"
    runfile.write(path, gate_run(rootdir=folder / "repo", **kwargs))  # type: ignore[arg-type]
    return path


def kernelperf(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(args), out=out), out.getvalue()


def bodies(api: FakeGitHub) -> list[str]:
    return [c["body"] for c in api.comments.get((REPO, 7), [])]


def test_the_comment_is_created_once_then_updated_in_place(
    github: FakeGitHub, actions: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = kernelperf("github", "comment", "--run", str(saved(actions)))
    assert status == 0, capsys.readouterr().err
    assert f"kernelperf: created the comment on {REPO}#7: https://github.test/" in out
    assert bodies(github) == [pull_request.comment(gate_run(actions / "repo"), run_url=run_page())]

    # The next push: slower still; the same comment now says so.
    status, out = kernelperf("github", "comment", "--run", str(saved(actions, slower=1.5)))
    assert status == 0 and "kernelperf: updated the comment" in out
    assert len(bodies(github)) == 1 and "**+50.0%**" in bodies(github)[0]
    assert [m for m, _ in github.requests] == ["GET", "POST", "GET", "PATCH"]


def run_page() -> str:
    return f"https://github.com/{REPO}/actions/runs/42"


def test_every_page_of_comments_is_searched(github: FakeGitHub, actions: Path) -> None:
    github.page_size = 2
    for i in range(5):
        github.seed_comment(REPO, 7, f"review {i}")
    ours = github.seed_comment(REPO, 7, pull_request.MARKER + "\nold", user=BOT)
    assert kernelperf("github", "comment", "--run", str(saved(actions)))[0] == 0
    pages = [path for method, path in github.requests if method == "GET"]
    assert [p.rsplit("page=", 1)[-1] for p in pages] == ["100", "2", "3"]  # per_page=100, then pages 2, 3
    assert [c["id"] for c in github.comments[(REPO, 7)] if c["body"].startswith(pull_request.MARKER)] == [
        ours
    ]
    assert "old" not in bodies(github)[-1]


def test_someone_elses_comment_with_the_marker_is_left_alone(github: FakeGitHub, actions: Path) -> None:
    theirs = github.seed_comment(REPO, 7, pull_request.MARKER + "\nnot the bot's")
    assert kernelperf("github", "comment", "--run", str(saved(actions)))[0] == 0
    comments = github.comments[(REPO, 7)]
    assert comments[0]["id"] == theirs and comments[0]["body"].endswith("not the bot's")
    assert len(comments) == 2 and comments[1]["user"] == BOT


def test_a_next_page_on_another_host_is_not_followed(github: FakeGitHub, actions: Path) -> None:
    github.page_size = 1
    github.seed_comment(REPO, 7, "one")
    github.seed_comment(REPO, 7, "two")
    github.next_link = "https://elsewhere.example/steal?page=2"
    client = Client(TOKEN, github.url)
    with pytest.raises(client_module.GitHubError, match="next page is outside"):
        list(client.issue_comments(REPO, 7))
    assert len(github.requests) == 1


def test_a_rate_limit_is_waited_out_then_the_call_goes_through(github: FakeGitHub, actions: Path) -> None:
    github.limit = Limit(calls=2, reset_in_s=0)
    waits: list[float] = []
    client = Client(TOKEN, github.url, sleep=waits.append)
    assert list(client.issue_comments(REPO, 7)) == []
    assert len(waits) == 2 and all(0 < w <= 2 for w in waits)


def test_a_secondary_limit_waits_as_long_as_retry_after_says(github: FakeGitHub) -> None:
    github.limit = Limit(calls=1, status=429, retry_after="7")
    waits: list[float] = []
    Client(TOKEN, github.url, sleep=waits.append).create_comment(REPO, 7, "hello")
    assert waits == [7.0]


def test_a_rate_limit_that_lasts_is_said_in_one_line(
    github: FakeGitHub, actions: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    github.limit = Limit(calls=10, retry_after="0")
    status, _ = kernelperf("github", "comment", "--run", str(saved(actions)))
    err = capsys.readouterr().err
    assert status == 2
    assert err.strip() == (
        "error: no comment posted: GitHub's rate limit: GET "
        f"/repos/{REPO}/issues/7/comments: 403 You have exceeded a secondary rate limit.; "
        "still limited after 3 tries"
    )
    assert len(github.requests) == client_module.ATTEMPTS


def test_a_rate_limit_beyond_the_bound_is_not_waited_for(github: FakeGitHub) -> None:
    github.limit = Limit(calls=1, reset_in_s=3600)
    waits: list[float] = []
    with pytest.raises(RateLimited, match=r"lifts in \d+ s, beyond the 60 s this waits"):
        Client(TOKEN, github.url, sleep=waits.append).create_comment(REPO, 7, "x")
    assert waits == []


def test_a_refusal_names_the_permission_the_workflow_needs(
    github: FakeGitHub, actions: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    github.read_only = True
    assert kernelperf("github", "comment", "--run", str(saved(actions)))[0] == 2
    err = capsys.readouterr().err
    assert f"403 {REFUSED}: the workflow needs `permissions: pull-requests: write`" in err
    assert kernelperf("github", "check", "--run", str(saved(actions)))[0] == 2
    assert "`permissions: checks: write`" in capsys.readouterr().err


def test_a_forks_pull_request_skips_the_comment_in_one_line(
    github: FakeGitHub, actions: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_event(actions / "event.json", fork=True)
    github.read_only = True  # what GitHub gives a fork's pull_request workflow
    status, out = kernelperf("github", "comment", "--run", str(saved(actions)))
    assert status == 0 and capsys.readouterr().err == ""
    assert out.startswith(
        "kernelperf: comment skipped: a fork's pull request: the workflow's token may only read"
    )
    assert "the gate's verdict is the job's exit status" in out and bodies(github) == []


def test_a_forks_check_goes_to_the_log_as_workflow_commands(github: FakeGitHub, actions: Path) -> None:
    write_event(actions / "event.json", fork=True)
    github.read_only = True
    status, out = kernelperf("github", "check", "--run", str(saved(actions)))
    assert status == 0 and github.check_runs == []
    commands = [line for line in out.splitlines() if line.startswith("::error ")]
    assert len(commands) == 3
    assert commands[0].startswith("::error file=tests/test_gelu.py,line=31,title=tests/test_gelu.py%3A%3A")
    assert "check skipped" in out


def test_the_check_run_annotates_each_failing_test_on_the_head_commit(
    github: FakeGitHub, actions: Path
) -> None:
    status, out = kernelperf("github", "check", "--run", str(saved(actions)), "--status", "1")
    assert status == 0 and "created the check run with 3 annotations" in out
    (check,) = github.check_runs
    assert check["head_sha"] == HEAD and check["conclusion"] == "failure" and check["status"] == "completed"
    assert check["details_url"] == run_page() and check["name"] == "pytest-kernelperf"
    assert check["output"]["title"] == "1 same, 1 slower, 1 mismatch"
    where = sorted(
        (a["path"], a["start_line"], a["title"].split(":")[-1].strip())
        for a in check["output"]["annotations"]
    )
    assert where == [
        ("tests/test_gelu.py", 31, "mismatch"),
        ("tests/test_gelu.py", 31, "slower +20.2%"),
        ("tests/test_softmax.py", 12, "failed"),
    ]


def test_paths_are_made_relative_to_the_repository_when_pytest_ran_in_a_folder_of_it(
    github: FakeGitHub, actions: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = actions / "run.json"
    runfile.write(path, gate_run(rootdir=actions / "repo" / "kernels"))
    assert kernelperf("github", "check", "--run", str(path))[0] == 0
    paths = {a["path"] for a in github.check_runs[0]["output"]["annotations"]}
    assert paths == {"kernels/tests/test_gelu.py", "kernels/tests/test_softmax.py"}


def test_more_than_fifty_annotations_go_in_batches(github: FakeGitHub, actions: Path) -> None:
    run = gate_run(rootdir=actions / "repo")
    failing = {
        f"tests/test_many.py::test_{i}": runfile.ReportedTest("tests/test_many.py", i + 1, "failed", "x")
        for i in range(120)
    }
    path = actions / "run.json"
    runfile.write(path, runfile.RunReport(**{**run.__dict__, "tests": failing}))
    assert kernelperf("github", "check", "--run", str(path))[0] == 0
    assert [m for m, _ in github.requests] == ["POST", "PATCH", "PATCH"]
    assert sorted(a["start_line"] for a in github.check_runs[0]["output"]["annotations"]) == list(
        range(1, 121)
    )


def test_the_conclusion_follows_the_gates_status(github: FakeGitHub, actions: Path) -> None:
    assert kernelperf("github", "check", "--run", str(saved(actions)), "--status", "0")[0] == 0
    assert github.check_runs[0]["conclusion"] == "success"


def test_the_token_is_never_printed(
    github: FakeGitHub, actions: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    github.echo_token = True
    assert kernelperf("github", "comment", "--run", str(saved(actions)))[0] == 2
    err = capsys.readouterr().err
    assert TOKEN not in err and "Validation failed for Bearer ***" in err


def test_without_a_token_it_says_how_to_pass_one(
    actions: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    assert kernelperf("github", "comment", "--run", str(saved(actions)))[0] == 2
    assert "GITHUB_TOKEN is not set: give the step the workflow's token" in capsys.readouterr().err


def test_a_missing_run_file_posts_nothing(
    github: FakeGitHub, actions: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert kernelperf("github", "comment", "--run", str(actions / "none.json"))[0] == 2
    assert "none.json: no such file" in capsys.readouterr().err and github.requests == []


def test_print_shows_the_comment_and_posts_nothing(github: FakeGitHub, actions: Path) -> None:
    status, out = kernelperf("github", "comment", "--run", str(saved(actions)), "--print")
    assert status == 0 and out.startswith(pull_request.MARKER) and github.requests == []


def test_a_server_that_keeps_failing_is_retried_a_bounded_number_of_times() -> None:
    responses = iter([client_module.Response(503, {}, None)] * 5)
    client = Client(TOKEN, "http://127.0.0.1:9", sleep=lambda s: None)
    client._send = lambda *a: next(responses)  # type: ignore[method-assign]
    with pytest.raises(client_module.GitHubError, match="503 \\(GitHub failed 3 times\\)"):
        client.create_comment(REPO, 7, "x")


def test_an_unreachable_api_is_said_with_its_address() -> None:
    client = Client(TOKEN, "http://127.0.0.1:9")  # nothing listens on the discard port
    with pytest.raises(
        client_module.GitHubError, match=r"POST /repos/acme/kernels/issues/7/comments: cannot reach"
    ):
        client.create_comment(REPO, 7, "x")


def test_a_refusal_keeps_its_status() -> None:
    refused = Refused("no", 404)
    assert refused.status == 404 and str(refused) == "no"


def test_pages_stop_at_the_last_one_and_a_bound(github: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> None:
    github.page_size = 1
    for i in range(3):
        github.seed_comment(REPO, 7, f"c{i}")
    monkeypatch.setattr(client_module, "MAX_PAGES", 3)
    assert [c["body"] for c in Client(TOKEN, github.url).issue_comments(REPO, 7)] == ["c0", "c1", "c2"]
    github.seed_comment(REPO, 7, "c3")
    with pytest.raises(client_module.GitHubError, match="more than 3 pages"):
        list(Client(TOKEN, github.url).issue_comments(REPO, 7))
