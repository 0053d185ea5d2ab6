"""The artefacts' folder (`.kernelperf/`: profiles, traces, the peak cache) is made with a
`.gitignore` of `*` in it, as pytest makes `.pytest_cache/`: a repository that runs the plugin
never sees it as untracked."""

from __future__ import annotations

import pytest
from conftest import KERNEL_MODULE, Project, git_run, scripted_conftest

from pytest_kernelperf.atomic import IGNORE_EVERYTHING


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
