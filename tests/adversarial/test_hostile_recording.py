"""Hostile later recording processes: a test that fails or skips only there must not leave a
baseline recorded in fewer processes than asked, nor a green run."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import Project, seed_peak_cache
from test_more_processes import FAKE_GPU

from pytest_kernelperf.baselines.yaml_io import read
from pytest_kernelperf.model.baseline import EntryKey
from pytest_kernelperf.plugins import recording

# test_raises's kernel raises, and test_skips skips, only in a later recording process.
LATER_ONLY_TROUBLE = """
import os

import pytest
import torch

LATER = bool(os.environ.get("KERNELPERF_RECORD_OUTPUT"))

def kernel(x):
    if LATER:
        raise RuntimeError("kernel launch failed in this process")
    return x * 2

kernel.fake_ms = 0.004

def steady(x):
    return x * 2

steady.fake_ms = 0.004

def test_raises(kernel_bench):
    kernel_bench(kernel, torch.ones(8))

def test_skips(kernel_bench):
    if LATER:
        pytest.skip("no second device here")
    kernel_bench(steady, torch.ones(8))

def test_fine(kernel_bench):
    kernel_bench(steady, torch.ones(4))
"""


@pytest.mark.slow
def test_a_later_process_that_fails_or_skips_a_test_fails_the_update_and_keeps_its_stored_entry(
    project: Project,
) -> None:
    project.pytester.makeconftest(FAKE_GPU)
    project.pytester.makepyfile(test_kernels=textwrap.dedent(LATER_ONLY_TROUBLE))
    seed_peak_cache(project.pytester.path, "Fake H200")
    project.run("--kernelperf-update-baselines", "--kernelperf-record-processes=1").assert_outcomes(passed=3)
    stored = read(project.baseline_file)
    result = project.run("--kernelperf-update-baselines", "--kernelperf-record-processes=2")
    result.assert_outcomes(passed=3)  # each test passed where it ran first ...
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # ... but the update is not green
    out = result.stdout.str()
    assert (
        "2nd recording process did not record 2 of 3 tests, so their baselines are not written: "
        "test_kernels.py::test_raises (failed), test_kernels.py::test_skips (skipped); its output ended:"
    ) in out
    assert "kernel launch failed in this process" in out  # what the process said
    entries = {key.test: entry for key, entry in read(project.baseline_file).items()}
    assert entries["test_fine"].device_time.process_rounds == (8, 8)
    before = {key.test: entry for key, entry in stored.items()}
    assert entries["test_raises"] == before["test_raises"]  # the stored entries stay as they were
    assert entries["test_skips"] == before["test_skips"]


ASKED = {
    "t.py::test_a": {(Path("baselines/t.yaml"), EntryKey("test_a::one", "H200", "hot"))},
    "t.py::test_b": {
        (Path("baselines/t.yaml"), EntryKey("test_b::one", "H200", "hot")),
        (Path("baselines/t.yaml"), EntryKey("test_b::two", "H200", "hot")),
    },
}


def later(returncode: int = 0, **not_passed: str) -> recording.LaterRun:
    return recording.LaterRun(
        {}, {f"t.py::{name}": why for name, why in not_passed.items()}, returncode, "", 1.0
    )


def test_a_test_that_records_fewer_calls_there_or_does_not_pass_there_is_short() -> None:
    every = set().union(*ASKED.values())
    assert recording.shortfall(later(), ASKED, every) == {}
    # test_b's second call handed back nothing: its entry would pool fewer processes than test_b's first.
    one_of_b = every - {(Path("baselines/t.yaml"), EntryKey("test_b::two", "H200", "hot"))}
    assert recording.shortfall(later(1), ASKED, one_of_b) == {"t.py::test_b": "not recorded"}
    # A teardown error after every call was recorded still leaves the test untrusted.
    assert recording.shortfall(later(1, test_a="error"), ASKED, every) == {"t.py::test_a": "error"}


def test_a_process_that_fails_without_naming_a_test_leaves_none_of_its_tests_trusted() -> None:
    every = set().union(*ASKED.values())
    short = recording.shortfall(later(pytest.ExitCode.INTERNAL_ERROR), ASKED, every)
    assert short == dict.fromkeys(ASKED, "its process ended with exit code 3")
    # "No tests collected" is no failure of its own: the tests it did not collect are not recorded.
    assert recording.shortfall(later(pytest.ExitCode.NO_TESTS_COLLECTED), ASKED, set()) == dict.fromkeys(
        ASKED, "not recorded"
    )


def test_the_summary_line_ends_with_what_the_process_said() -> None:
    line = recording.shortfall_line(2, {"t.py::test_a": "failed"}, 3, "E   RuntimeError: boom\n1 failed")
    assert line == (
        "2nd recording process did not record 1 of 3 tests, so their baselines are not written: "
        "t.py::test_a (failed); its output ended:\n    E   RuntimeError: boom\n    1 failed"
    )
