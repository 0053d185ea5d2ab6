"""The artefacts' folder (`.kernelperf/`: profiles, traces, the peak cache) is made with a
`.gitignore` of `*` in it, as pytest makes `.pytest_cache/`: a repository that runs the plugin
never sees it as untracked."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from conftest import KERNEL_MODULE, Project, git_run, scripted_conftest

from pytest_kernelperf import cli
from pytest_kernelperf.atomic import IGNORE_EVERYTHING
from pytest_kernelperf.history import synthetic_runs as rf


def test_a_timed_run_makes_the_folder_ignored_by_git(project: Project) -> None:
    root = project.pytester.path
    project.pytester.makeconftest(scripted_conftest())  # its profiler writes a table and a trace
    project.module(KERNEL_MODULE)
    git_run(root, "init", "-q")
    project.run("--kernelperf", "--kernelperf-profile").assert_outcomes(passed=1)
    assert (root / ".kernelperf" / ".gitignore").read_text() == IGNORE_EVERYTHING
    assert any((root / ".kernelperf").rglob("profile.txt"))  # it holds artefacts...
    untracked = git_run(root, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert not [line for line in untracked if ".kernelperf" in line]  # ...that git does not see


def test_a_folder_that_exists_is_left_as_it_is(project: Project) -> None:
    root = project.pytester.path
    (root / "artefacts").mkdir()
    project.module(KERNEL_MODULE)
    project.run("--kernelperf", "--kernelperf-artifacts=artefacts").assert_outcomes(passed=1)
    assert not (root / "artefacts" / ".gitignore").exists()


@pytest.mark.parametrize("args", [(), ("--kernelperf-json=run.json",)])
def test_a_run_that_only_checks_makes_no_folder(project: Project, args: tuple[str, ...]) -> None:
    project.module(KERNEL_MODULE)
    project.run(*args).assert_outcomes(passed=1)
    assert not (project.pytester.path / ".kernelperf").exists()


def test_history_import_with_the_default_database_makes_the_folder_ignored_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run.json"
    run.write_text(json.dumps(rf.run([rf.result("tests/test_k.py::test_mul", 1.0)])), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KERNELPERF_HISTORY", raising=False)
    assert cli.main(["history", "import", "--no-git", str(run)], out=io.StringIO()) == 0
    assert (tmp_path / ".kernelperf" / "history.sqlite").is_file()
    assert (tmp_path / ".kernelperf" / ".gitignore").read_text() == IGNORE_EVERYTHING
