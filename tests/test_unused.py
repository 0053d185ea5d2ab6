"""Unused baseline entries: reported after a run, removed only with --kernelperf-prune on update."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Project

from pytest_kernelperf.baselines.unused import unused_tests
from pytest_kernelperf.baselines.yaml_io import read

# --- the rule ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stored", "collected", "unused"),
    [
        (["test_a", "test_b"], {"test_a"}, ["test_b"]),
        (["test_a::fast", "test_a::slow"], {"test_a"}, []),  # named calls of a collected test
        (["test_a[1]", "test_a[2]"], {"test_a[1]"}, ["test_a[2]"]),  # a parameter that went away
        (["TestK::test_a", "TestK::test_a::fast"], {"TestK::test_a"}, []),  # a class
        (["test_a[x::y]::fast", "test_a[x::z]"], {"test_a[x::y]"}, ["test_a[x::z]"]),  # '::' in an id
        (["test_ab::x"], {"test_a"}, ["test_ab::x"]),  # a prefix is not a test
        ([], {"test_a"}, []),
    ],
)
def test_an_entry_is_unused_when_its_test_id_was_not_collected(
    stored: list[str], collected: set[str], unused: list[str]
) -> None:
    assert unused_tests(stored, collected) == unused


# --- in a run ----------------------------------------------------------------------------------

PARAMETRIZED = """
import pytest
import torch

def kernel(x):
    return x * 2
kernel.fake_ms = 1.0

@pytest.mark.parametrize("n", {params})
def test_sizes(kernel_bench, n):
    kernel_bench(kernel, torch.ones(n))

def test_named(kernel_bench):
    kernel_bench(kernel, torch.ones(4), name="fast")

def test_other(kernel_bench):
    kernel_bench(kernel, torch.ones(4))
"""


def recorded(project: Project, params: str = "[1, 2, 3]") -> Path:
    project.module(PARAMETRIZED.format(params=params))
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=5)
    return project.baseline_file


def test_entries_of_a_removed_parameter_are_reported_not_removed(project: Project) -> None:
    path = recorded(project)
    before = path.read_bytes()
    project.module(PARAMETRIZED.format(params="[1, 2]"))

    result = project.run("--kernelperf")

    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "*= kernelperf unused baselines =*",
            f"{path}: 1 unused (tests that no longer exist):",
            "  test_sizes[3]",
            "These tests no longer exist; remove them with "
            "`pytest --kernelperf-update-baselines --kernelperf-prune` on an unfiltered run.",
        ]
    )
    assert path.read_bytes() == before


def test_deselected_tests_are_not_unused(project: Project) -> None:
    recorded(project)
    result = project.run("--kernelperf", "-k", "test_other")
    result.assert_outcomes(passed=1, deselected=4)
    assert "kernelperf unused baselines" not in result.stdout.str()


def test_a_module_narrowed_to_one_test_is_not_checked(project: Project) -> None:
    recorded(project)
    result = project.run("--kernelperf", "test_kernels.py::test_other")
    result.assert_outcomes(passed=1)
    assert "kernelperf unused baselines" not in result.stdout.str()


def test_plain_run_reports_nothing(project: Project) -> None:
    recorded(project)
    project.module(PARAMETRIZED.format(params="[1]"))
    result = project.run()
    assert "kernelperf unused baselines" not in result.stdout.str()


def test_prune_removes_unused_entries_on_an_unfiltered_run(project: Project) -> None:
    path = recorded(project)
    project.module(PARAMETRIZED.format(params="[1, 2]"))

    result = project.run("--kernelperf-update-baselines", "--kernelperf-prune")

    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "*test_kernels.yaml: 0 added, 0 changed, 4 unchanged, 0 kept, 1 unused removed",
            f"{path}: 1 removed (tests that no longer exist):",
            "  test_sizes[3]",
        ]
    )
    assert {key.test for key in read(path)} == {
        "test_sizes[1]",
        "test_sizes[2]",
        "test_named::fast",
        "test_other",
    }
    project.run("--kernelperf").assert_outcomes(passed=4)


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["-k", "test_other"], "-k test_other; 3 tests deselected"),
        (["-m", "not slow"], "-m 'not slow'"),
        (
            ["--deselect", "test_kernels.py::test_named"],
            "--deselect test_kernels.py::test_named; 1 tests deselected",
        ),
        (["test_kernels.py::test_other"], "test id argument test_kernels.py::test_other"),
    ],
)
def test_prune_never_deletes_on_a_filtered_run_and_says_why(
    project: Project, args: list[str], why: str
) -> None:
    path = recorded(project)
    project.module(PARAMETRIZED.format(params="[1, 2]"))
    before = path.read_bytes()

    result = project.run("--kernelperf-update-baselines", "--kernelperf-prune", *args)

    assert result.ret == pytest.ExitCode.OK
    nothing = "--kernelperf-prune: nothing pruned, since this run was narrowed by"
    result.stdout.fnmatch_lines([f"{nothing} {why}: a test that did not run*"])
    assert path.read_bytes() == before


LAST_FAILED = """
import os
import torch

def kernel(x):
    return x * 2
kernel.fake_ms = 1.0

def test_one(kernel_bench):
    kernel_bench(kernel, torch.ones(4))
    assert not os.environ.get("FAIL_ONE")

def test_two(kernel_bench):
    kernel_bench(kernel, torch.ones(4))
"""


def test_last_failed_does_not_make_live_tests_unused(project: Project) -> None:
    project.module(LAST_FAILED)
    project.monkeypatch.setenv("FAKE_MS", "1.0")
    project.monkeypatch.setenv("FAKE_SCALE", "1.0")
    run = project.pytester.runpytest  # with the cache provider: --lf needs it
    run("--kernelperf-update-baselines").assert_outcomes(passed=2)
    project.monkeypatch.setenv("FAIL_ONE", "1")
    run().assert_outcomes(passed=1, failed=1)

    compared = run("--lf", "--kernelperf")
    compared.assert_outcomes(failed=1)
    assert "no longer exist" not in compared.stdout.str()

    pruned = run("--lf", "--kernelperf-update-baselines", "--kernelperf-prune")
    pruned.stdout.fnmatch_lines(["--kernelperf-prune: nothing pruned, since this run was narrowed by --lf*"])
    assert {key.test for key in read(project.baseline_file)} == {"test_one", "test_two"}


def test_a_baseline_file_of_a_deleted_module_is_reported_and_pruned_on_an_unfiltered_run(
    project: Project,
) -> None:
    recorded(project)
    old = project.module(PARAMETRIZED.format(params="[1]"), name="test_old")
    project.run("--kernelperf-update-baselines", "test_old.py").assert_outcomes(passed=3)
    stale = project.pytester.path / "baselines" / "test_old.yaml"
    assert stale.exists()
    old.unlink()

    reported = project.run("--kernelperf")
    reported.stdout.fnmatch_lines([f"{stale}: unused (no collected test module has this file)"])

    narrowed = project.run("--kernelperf-update-baselines", "--kernelperf-prune", "-k", "test_other")
    assert "no collected test module" not in narrowed.stdout.str()
    assert stale.exists()
    by_path = project.run("--kernelperf-update-baselines", "--kernelperf-prune", "test_kernels.py")
    assert "no collected test module" not in by_path.stdout.str()
    assert stale.exists()

    pruned = project.run("--kernelperf-update-baselines", "--kernelperf-prune")
    pruned.stdout.fnmatch_lines([f"{stale}: removed (no collected test module has this file)"])
    assert not stale.exists() and project.baseline_file.exists()


def test_prune_without_update_is_a_usage_error(project: Project) -> None:
    recorded(project)
    result = project.run("--kernelperf", "--kernelperf-prune")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kernelperf-prune removes unused baseline entries during an update*"])


# --- odd test ids ------------------------------------------------------------------------------

ODD_IDS = """
import pytest
import torch

def kernel(x):
    return x * 2
kernel.fake_ms = 1.0

IDS = ["a/b", "../../../escape", "/abs", "c:d", "x::y", "*", "é漢", "..", "with space", "-"]

@pytest.mark.parametrize("n", range(len(IDS)), ids=IDS)
def test_odd(kernel_bench, n):
    kernel_bench(kernel, torch.ones(4), name="k/../x" if n == 0 else None)
"""


def test_odd_test_ids_stay_inside_the_baseline_folder_and_round_trip(project: Project) -> None:
    # Let pytest keep non-ASCII ids as they are (it escapes them by default).
    project.pytester.makeini(
        "[pytest]\ndisable_test_id_escaping_and_forfeit_all_rights_to_community_support = true\n"
    )
    project.module(ODD_IDS)
    before = set(project.pytester.path.rglob("*"))

    project.run("--kernelperf-update-baselines").assert_outcomes(passed=10)

    artefacts = project.pytester.path / ".kernelperf"  # the roofline's peak-bandwidth cache
    created = {p for p in set(project.pytester.path.rglob("*")) - before if not p.is_relative_to(artefacts)}
    folder = project.pytester.path / "baselines"
    assert {p for p in created if p.is_file() and "__pycache__" not in p.parts} == {project.baseline_file}
    stray = [p for p in created if not (p == folder or p.is_relative_to(folder) or "__pycache__" in p.parts)]
    assert not stray, stray
    tests = {key.test for key in read(project.baseline_file)}
    assert "test_odd[é漢]" in tests and "test_odd[x::y]" in tests and "test_odd[a/b]::k/../x" in tests
    result = project.run("--kernelperf")
    result.assert_outcomes(passed=10)
    result.stdout.fnmatch_lines(["kernelperf: 10 same"])
    assert "kernelperf unused baselines" not in result.stdout.str()
