"""Which process writes: only the main one (a plain run, the xdist controller, the parent of
isolated tests); xdist workers and isolated children hand their results over."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import SCRIPTED_CONFTEST, Project

import pytest_kernelperf

ROOT = Path(pytest_kernelperf.__file__).resolve().parent.parent

# Each process notes, once its session is over, whether the report files exist yet.
WATCHING_CONFTEST = (
    SCRIPTED_CONFTEST
    + """
import os

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    who = "child" if os.environ.get("KERNELPERF_ISOLATE_NODEID") else "parent"
    seen = [name for name in ("run.json", "summary.md") if os.path.exists(name)]
    with open("processes.log", "a") as log:
        log.write(f"{who} {','.join(seen) or '-'}\\n")
"""
)

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


@pytest.mark.slow  # starts child processes / xdist workers
def test_isolated_children_write_nothing_and_the_parent_writes_once(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.pytester.makeconftest(WATCHING_CONFTEST)
    project.module(TWO_TESTS)
    summary = project.pytester.path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))

    result = project.run(
        "--kernelperf-update-baselines",
        "--kernelperf-isolate",
        "--kernelperf-json=run.json",
        "--kernelperf-markdown=summary.md",
    )

    result.assert_outcomes(passed=2)
    log = (project.pytester.path / "processes.log").read_text().splitlines()
    assert log == ["child -", "child -", "parent run.json,summary.md"]
    assert summary.read_text().count("pytest-kernelperf") == 1
    data = json.loads((project.pytester.path / "run.json").read_text())
    assert sorted(r["nodeid"] for r in data["results"]) == [
        "test_kernels.py::test_one",
        "test_kernels.py::test_two",
    ]
    # Each test's place and outcome, from the reports the parent replays.
    assert data["tests"] == {
        "test_kernels.py::test_one": {
            "file": "test_kernels.py",
            "line": 7,
            "outcome": "passed",
            "message": "",
        },
        "test_kernels.py::test_two": {
            "file": "test_kernels.py",
            "line": 10,
            "outcome": "passed",
            "message": "",
        },
    }
    assert project.baseline_file.exists()
    assert result.stdout.str().count("= kernelperf =") == 1


ISOLATED_TESTS = """
import os
import torch

def kernel(x):
    return x * 2
kernel.fake_ms = 1.0

def test_one(kernel_bench):
    assert os.environ.get("KERNELPERF_ISOLATE_NODEID") == "test_kernels.py::test_one"
    kernel_bench(kernel, torch.ones(8))

def test_two(kernel_bench):
    assert os.environ.get("KERNELPERF_ISOLATE_NODEID") == "test_kernels.py::test_two"
    kernel_bench(kernel, torch.ones(8))
"""


@pytest.mark.slow  # starts child processes / xdist workers
def test_xdist_workers_isolate_their_tests_and_only_the_controller_writes(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.module(ISOLATED_TESTS)
    summary = project.pytester.path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))

    result = project.pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        "--kernelperf-update-baselines",
        "--kernelperf-isolate",
        "--kernelperf-json=run.json",
    )

    result.assert_outcomes(passed=2)
    assert summary.read_text().count("pytest-kernelperf") == 1
    # The controller has each test's place from the reports its workers send.
    tests = json.loads((project.pytester.path / "run.json").read_text())["tests"]
    assert {nodeid: (t["file"], t["line"], t["outcome"]) for nodeid, t in tests.items()} == {
        "test_kernels.py::test_one": ("test_kernels.py", 8, "passed"),
        "test_kernels.py::test_two": ("test_kernels.py", 12, "passed"),
    }
    from pytest_kernelperf.baselines.yaml_io import read

    assert {key.test for key in read(project.baseline_file)} == {"test_one", "test_two"}
