"""Node ids, baseline keys, kernel_bench names and the file names made from them (ids.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Project

from pytest_kernelperf.ids import MAX_FILE_PART, check_name, display_name, file_part, unique_file_part
from pytest_kernelperf.model.baseline import entry_test_id, split_nodeid
from pytest_kernelperf.profiling.capture import artifact_folder


@pytest.mark.parametrize(
    ("nodeid", "module", "test"),
    [
        ("a/test_x.py::TestK::test_y[1]", "a/test_x.py", "TestK::test_y[1]"),
        ("test_x.py::test_y[a::b]", "test_x.py", "test_y[a::b]"),
        ("test_x.py", "test_x.py", "test_x.py"),
    ],
)
def test_split_nodeid(nodeid: str, module: str, test: str) -> None:
    assert split_nodeid(nodeid) == (module, test)


def test_entry_test_id_appends_the_name() -> None:
    assert entry_test_id("m.py::test_a[1]", None) == "test_a[1]"
    assert entry_test_id("m.py::test_a[1]", "fast") == "test_a[1]::fast"


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("a\nb", "control characters"),
        ("tab\there", "control characters"),
        (3, "must be a string"),
    ],
)
def test_bad_names_are_rejected_naming_the_argument(name: object, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as info:
        check_name(name)
    assert "name=" in str(info.value)


def test_good_names_pass_unchanged() -> None:
    assert check_name("fast path/é") == "fast path/é"
    assert check_name(None) is None


def test_display_name_is_bounded() -> None:
    assert display_name("x" * 500) == "x" * 39 + "…"
    assert display_name("short") == "short"


@pytest.mark.parametrize(
    ("a", "b"),
    [(".", ".."), ("a/b", "a_b"), ("x" * 300, "x" * 299 + "y"), ("é", "ü")],
)
def test_distinct_names_get_distinct_bounded_folders(a: str, b: str) -> None:
    root = Path("/artefacts")
    first, second = artifact_folder(root, "t.py::test", a), artifact_folder(root, "t.py::test", b)
    assert first != second
    for folder in (first, second):
        assert folder.parent.parent == root and folder.name not in ("", ".", "..")
        assert len(folder.name.encode()) <= MAX_FILE_PART


def test_ordinary_names_stay_readable() -> None:
    assert unique_file_part("fast") == "fast"
    assert artifact_folder(Path("/r"), "t.py::test_y", None) == Path("/r/t.py_test_y/default")
    assert file_part("Test CPU") == "Test_CPU"


NAMED = """
import torch

def kernel(x):
    return x * 2
kernel.fake_ms = 1.0

def test_empty(kernel_bench):
    kernel_bench(kernel, torch.ones(4), name="")

def test_newline(kernel_bench):
    kernel_bench(kernel, torch.ones(4), name="two\\nlines")

def test_long(kernel_bench):
    kernel_bench(kernel, torch.ones(4), name="n" * 500)
"""


def test_odd_names_in_a_run(project: Project) -> None:
    project.module(NAMED)
    result = project.run("--kernelperf")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*kernel_bench in test_kernels.py::test_empty: name= must not be empty*",
            "*kernel_bench in test_kernels.py::test_newline: name= must not hold control characters*",
        ]
    )
    assert max(len(line) for line in result.stdout.lines) < 200
