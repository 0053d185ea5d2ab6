"""A bad baseline file in a real run: only the tests that need it fail, and it is never rewritten
unless the user asks for an update."""

from __future__ import annotations

from pathlib import Path

import pytest
from baseline_samples import H200, sample_entries
from conftest import Project

from pytest_kernelperf.baselines.yaml_io import dump, read
from pytest_kernelperf.model.baseline import EntryKey

TWO_TESTS = """
import torch

def kernel(x):
    return x * 2
kernel.fake_ms = 1.0

def test_one(kernel_bench):
    kernel_bench(kernel, torch.ones(8))

def test_two(kernel_bench):
    kernel_bench(kernel, torch.ones(8))
"""


def two_modules(project: Project) -> tuple[Path, Path]:
    project.module(TWO_TESTS, name="test_good")
    project.module(TWO_TESTS, name="test_bad")
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=4)
    folder = project.pytester.path / "baselines"
    return folder / "test_good.yaml", folder / "test_bad.yaml"


def break_with_duplicate_key(path: Path) -> int:
    """Add a second `test_one:` as a bad merge would; returns the line of the duplicate."""
    text = path.read_text()
    path.write_text(text.replace("entries:\n", "entries:\n  test_one: {}\n", 1))
    return 1 + path.read_text().splitlines().index("  test_one:")


def test_bad_file_fails_only_its_tests_and_is_left_alone(project: Project) -> None:
    good, bad = two_modules(project)
    line = break_with_duplicate_key(bad)
    before = {good: good.read_bytes(), bad: bad.read_bytes()}

    result = project.run("--kernelperf")

    result.assert_outcomes(passed=2, failed=2)
    message = (
        f"baseline file {bad}:{line}: not valid YAML: duplicate key 'test_one' (first on line 5; "
        f"a merge conflict resolved badly?); repair it (resolve the merge conflict, or restore it with "
        f"`git checkout -- {bad}`), or replace it on purpose, losing its entries, with "
        "`pytest --kernelperf-update-baselines --kernelperf-replace-unreadable`"
    )
    result.stdout.fnmatch_lines(["*_ test_one _*", message, "*_ test_two _*", message])
    assert "During handling" not in result.stdout.str()
    result.stdout.fnmatch_lines(["FAILED test_bad.py::test_one - *", "FAILED test_bad.py::test_two - *"])
    assert {path: path.read_bytes() for path in before} == before  # nothing rewritten


def test_plain_run_does_not_need_the_bad_file(project: Project) -> None:
    _, bad = two_modules(project)
    break_with_duplicate_key(bad)
    project.run().assert_outcomes(passed=4)  # without --kernelperf only correctness is checked


def test_update_leaves_the_bad_file_alone_and_fails_its_tests(project: Project) -> None:
    _, bad = two_modules(project)
    break_with_duplicate_key(bad)
    bad_before = bad.read_bytes()

    result = project.run("--kernelperf-update-baselines")

    result.assert_outcomes(passed=2, failed=2)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*_ test_one _*", "baseline file *duplicate key*; repair it *"])
    assert bad.read_bytes() == bad_before


def test_update_replaces_the_bad_file_when_asked_and_says_so(project: Project) -> None:
    good, bad = two_modules(project)
    break_with_duplicate_key(bad)
    good_before = good.read_bytes()

    result = project.run("--kernelperf-update-baselines", "--kernelperf-replace-unreadable")

    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*test_bad.yaml: 2 added, * (replaced an unreadable file: *duplicate key*"])
    assert good.read_bytes() == good_before
    project.run("--kernelperf").assert_outcomes(passed=4)


def test_truncated_file_is_an_error_not_missing_entries(project: Project) -> None:
    _, bad = two_modules(project)
    bad.write_text(bad.read_text().replace("end: true\n", ""))
    result = project.run("--kernelperf")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        ["*test_bad.yaml:*: missing its last line `end: true`: the file was cut short*"]
    )


def test_unwritable_baseline_folder_is_a_clear_error_not_a_traceback(project: Project) -> None:
    project.module(TWO_TESTS)
    (project.pytester.path / "blocker").write_text("a file, not a folder")

    result = project.run("--kernelperf-update-baselines", "--kernelperf-baseline-dir=blocker/sub")

    # Refused before any test is measured (a file appearing there during the run is reported as
    # "NOT written: ... a file stands where a folder should be", tests/test_baseline_writes.py).
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    blocker = project.pytester.path / "blocker"
    assert f"--kernelperf-baseline-dir: {blocker / 'sub'} lies under {blocker}, which is a file" in (
        result.stderr.str()
    )
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert "Traceback" not in result.stdout.str()


def with_gpu_entries_and_a_conflict_in_test_two(path: Path) -> bytes:
    """The CPU entries of an update, plus H200 entries a CPU machine cannot remeasure; then test_two
    wrapped in merge-conflict markers. Returns the broken file's bytes."""
    entries = read(path)
    h200 = next(entry for key, entry in sample_entries().items() if key.device == H200)
    for test in ("test_one", "test_two"):
        entries[EntryKey(test, H200, "hot")] = h200
    lines = dump(entries).splitlines(keepends=True)
    start = lines.index("  test_two:\n")
    lines[start:start] = ["<<<<<<< HEAD\n"]
    lines[-1:-1] = ["=======\n", ">>>>>>> other-branch\n"]
    path.write_text("".join(lines))
    return path.read_bytes()


def test_update_of_one_test_never_rewrites_a_file_in_conflict(project: Project) -> None:
    project.module(TWO_TESTS, name="test_k")
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=2)
    path = project.pytester.path / "baselines" / "test_k.yaml"
    broken = with_gpu_entries_and_a_conflict_in_test_two(path)

    result = project.run("--kernelperf-update-baselines", "-k", "test_one")

    assert path.read_bytes() == broken  # the H200 entries and test_two are all still there
    result.assert_outcomes(failed=1, deselected=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            f"*baseline file {path}:*: unresolved merge conflict markers; repair it (resolve the merge "
            f"conflict, or restore it with `git checkout -- {path}`)*"
        ]
    )
    # Resolving the conflict gives back every entry: nothing was lost.
    path.write_text(
        path.read_text().replace("<<<<<<< HEAD\n", "").replace("=======\n>>>>>>> other-branch\n", "")
    )
    assert {(k.test, k.device) for k in read(path) if k.device == H200} == {
        ("test_one", H200),
        ("test_two", H200),
    }


def test_replacing_a_file_in_conflict_on_purpose_is_loud(project: Project) -> None:
    project.module(TWO_TESTS, name="test_k")
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=2)
    path = project.pytester.path / "baselines" / "test_k.yaml"
    with_gpu_entries_and_a_conflict_in_test_two(path)

    result = project.run("--kernelperf-update-baselines", "--kernelperf-replace-unreadable", "-k", "test_one")

    result.assert_outcomes(passed=1, deselected=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*test_k.yaml: unresolved merge conflict markers; REPLACING this file: its entries are lost",
            "*test_k.yaml: 1 added, * (replaced an unreadable file: unresolved merge conflict markers)",
        ]
    )
    assert {k.test for k in read(path)} == {"test_one"}
