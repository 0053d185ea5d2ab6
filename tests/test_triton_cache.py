"""A timed run holds TRITON_CACHE_DIR at Triton's default, so that torch.compile cannot move the cache
of the Triton kernels compiled after it, and gives the variable back at the end."""

from __future__ import annotations

import os

import pytest
from conftest import Project

from pytest_kernelperf.plugins.triton_cache import CACHE_VARIABLE, TritonCacheHeld, triton_default_cache_dir

# Each test writes the folder its kernel_bench call saw, or that none was set.
SEES_CACHE = """
import os

import torch

def double(x):
    return x * 2

double.fake_ms = 1.0

def test_sees(kernel_bench):
    kernel_bench(double, torch.ones(8), reference=lambda x: x + x)
    with open("seen.txt", "w") as sink:
        sink.write(os.environ.get("TRITON_CACHE_DIR", "<unset>"))
"""


def test_held_at_the_triton_home_default_then_released() -> None:
    environ = {"TRITON_HOME": "/data/me"}
    held = TritonCacheHeld(environ)
    assert held.hold() == os.path.join("/data/me", ".triton", "cache")
    assert environ[CACHE_VARIABLE] == os.path.join("/data/me", ".triton", "cache")
    held.release()
    assert CACHE_VARIABLE not in environ


def test_a_folder_the_user_set_is_left_alone() -> None:
    environ = {CACHE_VARIABLE: "/scratch/triton"}
    held = TritonCacheHeld(environ)
    assert held.hold() is None
    held.release()
    assert environ == {CACHE_VARIABLE: "/scratch/triton"}


def test_a_value_changed_during_the_run_is_not_taken_back() -> None:
    environ: dict[str, str] = {}
    held = TritonCacheHeld(environ)
    held.hold()
    environ[CACHE_VARIABLE] = "/tmp/elsewhere"  # something in the run chose its own folder
    held.release()
    assert environ[CACHE_VARIABLE] == "/tmp/elsewhere"


def test_default_follows_the_home_folder_without_triton_home() -> None:
    assert triton_default_cache_dir({}) == os.path.join(os.path.expanduser("~/"), ".triton", "cache")


def test_a_timed_run_holds_the_folder_and_a_check_only_run_does_not(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CACHE_VARIABLE, raising=False)
    monkeypatch.setenv("TRITON_HOME", str(project.pytester.path))
    project.module(SEES_CACHE)
    project.run("--kernelperf").assert_outcomes(passed=1)
    seen = (project.pytester.path / "seen.txt").read_text()
    assert seen == os.path.join(str(project.pytester.path), ".triton", "cache")
    assert CACHE_VARIABLE not in os.environ  # given back when the run ended
    project.run().assert_outcomes(passed=1)
    assert (project.pytester.path / "seen.txt").read_text() == "<unset>"


def test_the_default_is_the_installed_tritons_own(monkeypatch: pytest.MonkeyPatch) -> None:
    knobs = pytest.importorskip("triton.knobs")
    monkeypatch.delenv(CACHE_VARIABLE, raising=False)
    assert triton_default_cache_dir(os.environ) == knobs.cache.dir
