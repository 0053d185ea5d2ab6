"""`bisect` on repositories that do not cooperate: commits that cannot be tested next to the slowdown,
other worktrees whose folders are away, Ctrl-C, a GOOD that gives no result, GOOD == BAD. The answer
never says "no slowdown" after judging a commit slower, the user's other worktrees keep their
registration, and a log named in a message exists."""

from __future__ import annotations

import io
import re
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import git_run

from pytest_kernelperf import cli
from pytest_kernelperf.history import bisect as bisect_mod
from pytest_kernelperf.history import synthetic_runs as rf
from pytest_kernelperf.results import runfile

CONFTEST = """
import pytest
from pytest_kernelperf.testing import ScriptedTimer

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_make_timer(config, settings, device):
    return ScriptedTimer()
"""

# The kernel's stated time comes from ms.txt of each commit.
TEST_MODULE = """
import pathlib

import torch

MS = float((pathlib.Path(__file__).parent / "ms.txt").read_text())

def kernel(x):
    return x * 2

kernel.fake_ms = MS

def test_b(kernel_bench):
    kernel_bench(kernel, torch.ones(16), reference=lambda x: x + x)
"""
BROKEN = TEST_MODULE.replace("(kernel_bench):\n", "(kernel_bench):\n    raise RuntimeError\n")


def git(repo: Path, *args: str) -> str:
    return git_run(repo, *args).strip()


def commit(repo: Path, message: str, **files: str) -> str:
    for name, text in files.items():
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    scratch = tmp_path / "tmp"  # bisect's work folders (kept after an error) go here, not to /tmp
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    return root


def three_commits(repo: Path) -> list[str]:
    files = {"conftest.py": CONFTEST, "test_b.py": textwrap.dedent(TEST_MODULE), "ms.txt": "1.0"}
    first = commit(repo, "kernel", **files)
    return [first, commit(repo, "notes", NOTES="a"), commit(repo, "more", NOTES="b")]


def bisect(repo: Path, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    status = cli.main(["bisect", *args[:2], "--repo", str(repo), "--", *args[2:]], out=out)
    return status, out.getvalue()


# -- 3: other worktrees keep their registration; only bisect's own are removed -------------------


def away_worktree(repo: Path, base: str) -> tuple[Path, Path]:
    """A worktree of the user's with a staged file, its folder moved away (an unmounted disk)."""
    tree = repo.parent / "wt3"
    git(repo, "worktree", "add", "-q", "-b", "topic", str(tree), base)
    (tree / "staged.txt").write_text("x", encoding="utf-8")
    git(tree, "add", "staged.txt")
    away = repo.parent / "wt3.away"
    tree.rename(away)
    return tree, away


def assert_only_the_users_worktrees(repo: Path, tree: Path, away: Path) -> None:
    assert (repo / ".git" / "worktrees" / "wt3").is_dir()  # the registration of the absent worktree
    away.rename(tree)
    assert git(tree, "status", "--porcelain") == "A  staged.txt"
    listed = git(repo, "worktree", "list", "--porcelain")
    assert "kernelperf-bisect-" not in listed
    assert [line for line in listed.splitlines() if line.startswith("worktree ")] == [
        f"worktree {repo}",
        f"worktree {tree}",
    ]


def test_an_error_leaves_the_users_absent_worktree_registered(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    good, _, bad = three_commits(repo)
    tree, away = away_worktree(repo, good)
    monkeypatch.setattr(bisect_mod, "run_pytest", lambda *a: None)  # GOOD gives no result

    status, _ = bisect(repo, good, bad, "test_b.py")

    assert status == 2 and "GOOD" in capsys.readouterr().err
    assert_only_the_users_worktrees(repo, tree, away)


def test_ctrl_c_during_git_bisect_run_removes_only_bisects_worktrees(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    good, _, bad = three_commits(repo)
    tree, away = away_worktree(repo, good)
    good_run = runfile.check(rf.run([rf.result("test_b.py::test_b", 1.0)])).report
    monkeypatch.setattr(bisect_mod, "run_pytest", lambda *a: good_run)

    def interrupted(tree: Path, command: Any, out: Any) -> str:  # Ctrl-C during `git bisect run`
        raise KeyboardInterrupt

    monkeypatch.setattr(bisect_mod, "_bisect_run", interrupted)

    try:
        status, _ = bisect(repo, good, bad, "test_b.py")
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C left bisect as a traceback")

    assert status == 130
    assert "interrupted: the temporary worktrees were removed" in capsys.readouterr().err
    assert_only_the_users_worktrees(repo, tree, away)
    assert git(repo, "for-each-ref", "refs/bisect/") == ""


# -- 16: a log named in a message exists ----------------------------------------------------------


def test_the_log_named_when_good_gives_no_result_is_kept(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    good, _, bad = three_commits(repo)

    def no_result(worktree: Path, args: Any, json_path: Path, log: Path) -> None:
        log.write_text("ERROR: file or directory not found: test_nothing.py\n", encoding="utf-8")

    monkeypatch.setattr(bisect_mod, "run_pytest", no_result)

    status, text = bisect(repo, good, bad, "test_nothing.py")

    assert status == 2
    named = re.search(r"gave no timed result: see (\S+)", capsys.readouterr().err)
    assert named is not None
    assert "test_nothing.py" in Path(named.group(1)).read_text(encoding="utf-8")
    assert f"kept the run files and pytest log in {Path(named.group(1)).parent}" in text
    assert "kernelperf-bisect-" not in git(repo, "worktree", "list")


# -- minor: the revisions are checked before anything is timed ------------------------------------


@pytest.mark.parametrize(
    ("good", "bad", "message"),
    [
        ("HEAD", "HEAD", "are the same commit"),
        ("main", "HEAD", "are the same commit"),
        ("HEAD~2", "HEAD~2", "are the same commit"),
        ("no-such-ref", "HEAD", "GOOD 'no-such-ref' is not a commit of"),
        ("HEAD~2", "HEAD:ms.txt", "BAD 'HEAD:ms.txt' is not a commit of"),
        ("HEAD", "HEAD~2", "is not an ancestor of BAD HEAD~2"),
    ],
)
def test_revisions_are_checked_before_anything_is_timed(
    repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    good: str,
    bad: str,
    message: str,
) -> None:
    three_commits(repo)

    def timed(*args: Any) -> None:
        raise AssertionError("timed before the revisions were checked")

    monkeypatch.setattr(bisect_mod, "run_pytest", timed)

    status, text = bisect(repo, good, bad, "test_b.py")

    assert status == 2 and text == ""
    assert message in capsys.readouterr().err
    assert git(repo, "worktree", "list").count("\n") == 0


# -- 2: commits git could not test next to the slowdown ------------------------------------------


def slowdown_next_to_a_broken_commit(repo: Path) -> list[str]:
    """c0 good (1.0 ms), c1 its test broken (skipped), c2 +30%, c3 a notes edit."""
    files = {"conftest.py": CONFTEST, "test_b.py": textwrap.dedent(TEST_MODULE), "ms.txt": "1.0"}
    return [
        commit(repo, "kernel", **files),
        commit(repo, "break the test", **{"test_b.py": textwrap.dedent(BROKEN)}),
        commit(repo, "slower kernel", **{"test_b.py": textwrap.dedent(TEST_MODULE), "ms.txt": "1.3"}),
        commit(repo, "notes", NOTES="a"),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("bad_index", [3, 2], ids=["bad-after-the-slowdown", "bad-is-the-slowdown"])
def test_a_slowdown_next_to_skipped_commits_lists_the_candidates(repo: Path, bad_index: int) -> None:
    commits = slowdown_next_to_a_broken_commit(repo)
    broken, slower = commits[1], commits[2]

    status, text = bisect(repo, commits[0], commits[bad_index], "test_b.py")

    assert status == bisect_mod.EXIT_NOT_NARROWED == 3, text
    assert "no slowdown" not in text
    assert "slowdown found, not narrowed to one commit" in text
    listed = text.split("not narrowed to one commit", 1)[1]
    assert f"  {broken[:10]} skipped: break the test\n    no result in common with GOOD's run\n" in listed
    judged = rf"  {slower[:10]} bad: slower kernel\n    slower test_b.py::test_b on .*: \+30\.0% against GOOD"
    assert re.search(judged, listed)
    assert listed.count(" skipped: ") + listed.count(" bad: ") == 2  # the candidates, and only they
    kept = re.search(r"kept the run files and pytest log in (\S+)", text)
    assert kept is not None and (Path(kept.group(1)) / "pytest.log").is_file()
    assert git(repo, "worktree", "list").count("\n") == 0
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.slow
def test_a_first_bad_commit_at_bad_is_timed_at_bad(repo: Path) -> None:
    """git marks BAD bad on the user's word: when it is the first bad commit, BAD itself is timed,
    not the last commit git checked out."""
    good, _, _ = three_commits(repo)
    bad = commit(repo, "slower kernel", **{"ms.txt": "1.3"})

    status, text = bisect(repo, good, bad, "test_b.py")

    assert status == 0, text
    assert f"first bad commit: {bad} slower kernel" in text
    assert "+30.0% against" in text
