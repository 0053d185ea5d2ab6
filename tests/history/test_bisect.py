"""`python -m pytest_kernelperf bisect GOOD BAD -- PYTEST_ARGS` on a generated repository with a planted
slowdown; and its judge."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest
from conftest import git_run, scripted_conftest

from pytest_kernelperf import cli
from pytest_kernelperf.history import synthetic_runs as rf
from pytest_kernelperf.history.bisect import (
    SKIP,
    explain,
    judge,
    judge_against,
    judge_arguments,
    judge_paired_run,
)
from pytest_kernelperf.model.result import BenchResult, Comparison, Found, RevisionCheck, Verdict
from pytest_kernelperf.results import runfile
from pytest_kernelperf.results.runfile import RunReport
from pytest_kernelperf.verdict.judgement import failures

CONFTEST = scripted_conftest(samples=10)


def typed(run: dict[str, object]) -> RunReport:
    """A run file's JSON as the gateway reads it."""
    return runfile.check(run).report


def report(*results: BenchResult) -> RunReport:
    return RunReport(plugin_version="", created="", mode="compare", results=results)


# The kernel's stated time and its generated code's hash come from files of the commit.
TEST_MODULE = """
from pathlib import Path

import torch

HERE = Path(__file__).parent

def kernel(x):
    return x * 2

kernel.fake_ms = float((HERE / "speed.txt").read_text())
kernel.fake_kernels = [("triton_poi_fused_mul_0", 1, kernel.fake_ms, (HERE / "code.txt").read_text().strip())]

def test_mul(kernel_bench):
    kernel_bench(kernel, torch.ones(8))
"""


def test_a_side_without_rounds_is_judged_on_its_level_against_the_threshold() -> None:
    def slower(good_ms: float | None, candidate_ms: float) -> bool:
        key = ("t.py::test_a", "", "gpu", "hot")

        def run(ms: float | None) -> RunReport:
            return report(BenchResult(key[0], None, "gpu", Verdict.SAME, level_ms=ms))

        judged = judge_against(run(good_ms), run(candidate_ms), 0.05)
        return key in judged and bool(failures(judged[key]))

    assert slower(1.0, 1.051)
    assert not slower(1.0, 1.049)
    assert not slower(1.0, 0.5)
    assert not slower(None, 2.0)


def test_judge_skips_a_commit_with_nothing_to_compare() -> None:
    good = typed(rf.run([rf.result("t.py::test_a", 1.0)]))
    assert judge(good, typed(rf.run([rf.result("t.py::test_b", 9.0)])), 0.05)[0] == SKIP
    status, lines = judge(good, typed(rf.run([rf.result("t.py::test_a", 1.2)])), 0.05)
    assert status == 1 and lines == ["slower t.py::test_a on NVIDIA H200 (hot): +20.0% against GOOD"]
    assert judge(good, typed(rf.run([rf.result("t.py::test_a", 1.01)])), 0.05)[0] == 0


def test_explain_attributes_the_slowdown() -> None:
    before = rf.run(
        [rf.result("t.py::test_a", 1.0, kernels=[("k0", "aaaa1111")], autotune={"k0": "BLOCK=64"})]
    )
    after = rf.run(
        [rf.result("t.py::test_a", 1.2, kernels=[("k0", "bbbb2222")], autotune={"k0": "BLOCK=64"})],
        device_env={**rf.DEVICE_ENV, "torch": "2.14.0"},
    )
    (line,) = explain(typed(before), typed(after), "1" * 40, "2" * 40, 0.05)
    assert line == (
        "t.py::test_a on NVIDIA H200 (hot): at 2222222: +20.0% against 1111111; "
        "generated code of k0 changed; "
        "autotune choice unchanged; environment changed: torch 2.13.0 -> 2.14.0"
    )


_git = git_run


def _commit(repo: Path, message: str, **files: str) -> str:
    for name, text in files.items():
        (repo / name).write_text(text, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD").strip()


def _new_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty repository on branch main; the runs it times write no step summary."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return repo


@pytest.mark.slow
def test_bisect_finds_the_planted_slowdown_and_its_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _new_repo(tmp_path, monkeypatch)
    good = _commit(
        repo,
        "kernel and its test",
        **{
            "conftest.py": CONFTEST,
            "test_k.py": textwrap.dedent(TEST_MODULE),
            "speed.txt": "1.0",
            "code.txt": "aaaa1111",
        },
    )
    planted = _commit(repo, "unroll the loop", **{"speed.txt": "1.2", "code.txt": "bbbb2222"})
    bad = _commit(repo, "docs", **{"README": "a kernel, unrolled\n"})

    out = io.StringIO()
    status = cli.main(
        [
            "bisect",
            good,
            bad,
            "--repo",
            str(repo),
            "--",
            "test_k.py",
            "--kernelperf-profile",
            "-p",
            "no:hypothesispytest",
        ],
        out=out,
    )
    text = out.getvalue()
    assert status == 0, text
    assert f"first bad commit: {planted} unroll the loop" in text
    assert f"test_k.py::test_mul on {_cpu_name(text)} (hot): at {planted[:7]}: +20.0% against" in text
    assert (
        "generated code of triton_poi_fused_mul_0 changed; no autotuner choices recorded; "
        "environment unchanged" in text
    )
    assert _git(repo, "worktree", "list").count("\n") == 1  # the temporary worktrees are gone
    assert _git(repo, "status", "--porcelain") == ""


def _cpu_name(text: str) -> str:
    line = next(x for x in text.splitlines() if "test_k.py::test_mul on " in x and ": at " in x)
    return line.split(" on ", 1)[1].split(" (hot)")[0]


def test_judge_paired_run_takes_the_runs_own_paired_verdicts() -> None:
    def result(verdict: str, ratio: float | None, found: str = "found") -> BenchResult:
        return BenchResult(
            f"t.py::test_{verdict}",
            None,
            "gpu",
            Verdict(verdict),
            level_ms=1.0,
            comparison=Comparison(Verdict(verdict), ratio, reason="" if ratio else "GOOD has no t.py"),
            against=RevisionCheck("GOOD", "0" * 40, Found(found)),
        )

    slower = judge_paired_run(report(result("same", 1.001), result("slower", 1.02)))
    assert slower == (
        1,
        [
            "ok     t.py::test_same on gpu (hot): +0.1% against GOOD, paired in one process",
            "slower t.py::test_slower on gpu (hot): +2.0% against GOOD, paired in one process",
        ],
    )
    assert judge_paired_run(report(result("same", 0.999)))[0] == 0
    status, lines = judge_paired_run(report(result("new", None, "absent")))
    assert status == SKIP and lines == [
        "new    t.py::test_new on gpu (hot): GOOD has no t.py",
        "no result judged against GOOD",
    ]


@pytest.mark.slow
def test_a_paired_bisect_finds_a_small_slowdown_timing_each_commit_beside_good(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _new_repo(tmp_path, monkeypatch)
    files = {"conftest.py": CONFTEST, "test_k.py": textwrap.dedent(TEST_MODULE), "code.txt": "aaaa1111"}
    good = _commit(repo, "kernel and its test", **files, **{"speed.txt": "1.0"})
    _commit(repo, "docs", **{"README": "a kernel\n"})
    planted = _commit(repo, "a 3% slower kernel", **{"speed.txt": "1.03"})
    bad = _commit(repo, "more docs", **{"README": "a kernel, slower\n"})

    out = io.StringIO()
    args = [
        "bisect",
        good,
        bad,
        "--repo",
        str(repo),
        "--paired",
        "--",
        "test_k.py",
        "-p",
        "no:hypothesispytest",
    ]
    status = cli.main(args, out=out)
    text = out.getvalue()
    assert status == 0, text
    assert "timing GOOD" not in text  # GOOD is timed beside each commit instead
    assert f"first bad commit: {planted} a 3% slower kernel" in text
    assert "+3.0% against GOOD, paired in one process" in text
    assert _git(repo, "worktree", "list").count("\n") == 1
    assert _git(repo, "status", "--porcelain") == ""


def test_the_judge_at_each_commit_reads_the_threshold_as_pytest_does() -> None:
    read = judge_arguments(["--good", "g.json", "--runs", "runs", "--threshold", "5%"])
    assert read.threshold == pytest.approx(0.05)
    with pytest.raises(SystemExit):
        judge_arguments(["--good", "g.json", "--runs", "runs", "--threshold", "-5%"])
