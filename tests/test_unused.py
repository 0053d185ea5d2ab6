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
            f"{path}: 1 unused (tests not collected in this run):",
            "  test_sizes[3]",
            "These tests no longer exist; remove them with "
            "`pytest --kernelperf-update-baselines --kernelperf-prune`.",
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


def test_prune_removes_unused_entries_and_keeps_deselected_ones(project: Project) -> None:
    path = recorded(project)
    project.module(PARAMETRIZED.format(params="[1, 2]"))

    result = project.run("--kernelperf-update-baselines", "--kernelperf-prune", "-k", "test_other")

    result.assert_outcomes(passed=1, deselected=3)
    result.stdout.fnmatch_lines(
        [
            "*test_kernels.yaml: 0 added, 0 changed, 1 unchanged, 3 kept, 1 unused removed",
            f"{path}: 1 removed (tests not collected in this run):",
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
    assert all(p == folder or p.is_relative_to(folder) or "__pycache__" in p.parts for p in created)
    tests = {key.test for key in read(project.baseline_file)}
    assert "test_odd[é漢]" in tests and "test_odd[x::y]" in tests and "test_odd[a/b]::k/../x" in tests
    result = project.run("--kernelperf")
    result.assert_outcomes(passed=10)
    result.stdout.fnmatch_lines(["kernelperf: 10 same"])
    assert "kernelperf unused baselines" not in result.stdout.str()
