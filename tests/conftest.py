"""Shared helpers: a pytester project whose kernels state their own time (ScriptedTimer)."""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

# Imported once here: hypothesis's pytest plugin imports hypothesis at the end of every run, and
# pytester drops it again after each in-process run (a second or more per run, assertion rewriting
# included), unless it was imported before the run.
import hypothesis  # noqa: F401
import pytest

# Imported here, before any in-process pytester run: pytester restores sys.modules after each run,
# and a second import of torch's or numpy's C extensions in one process fails or crashes.
import scipy.stats  # noqa: F401
import torch
from torch.profiler import ProfilerActivity, profile

from pytest_kernelperf.measure import roofline
from pytest_kernelperf.measure.device import cpu_model

# The profiler's first use imports about 900 modules (dynamo, inductor); one of them registers a
# TORCH_LIBRARY, which fails when pytester drops it after a run and a later run imports it again.
with profile(activities=[ProfilerActivity.CPU]):
    torch.zeros(1)

SCRIPTED_CONFTEST = """
import pytest
from pytest_kernelperf.testing import ScriptedTimer

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_make_timer(config, settings, device):
    return ScriptedTimer()
"""


def scripted_conftest(**timer_arguments: object) -> str:
    """A conftest whose kernels state their time (ScriptedTimer with these arguments) and launches
    (FakeProfiler)."""
    arguments = ", ".join(f"{name}={value!r}" for name, value in timer_arguments.items())
    return f"""
import pytest
from pytest_kernelperf.testing import FakeProfiler, ScriptedTimer

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_make_timer(config, settings, device):
    return ScriptedTimer({arguments})

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_profile_call(config, profile_request):
    return FakeProfiler()(profile_request)
"""


# A kernel whose time (FAKE_MS) and answer (FAKE_SCALE) the test sets through the environment.
KERNEL_MODULE = """
import os

import torch

def kernel(x):
    return x * 2 * float(os.environ.get("FAKE_SCALE", "1"))

kernel.fake_ms = float(os.environ.get("FAKE_MS", "1.0"))

def reference(x):
    return x + x

def test_kernel(kernel_bench):
    kernel_bench(kernel, torch.linspace(-3, 3, 64), reference=reference)
"""


class Project:
    """A throwaway pytest project using kernel_bench with scripted times."""

    def __init__(self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pytester = pytester
        self.monkeypatch = monkeypatch
        # A project's runs must not append to the step summary of a CI job running these tests.
        monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
        pytester.makeconftest(SCRIPTED_CONFTEST)

    def module(self, source: str = KERNEL_MODULE, name: str = "test_kernels") -> Path:
        return self.pytester.makepyfile(**{name: textwrap.dedent(source)})

    def run(self, *args: str, ms: float = 1.0, scale: float = 1.0) -> pytest.RunResult:
        self.monkeypatch.setenv("FAKE_MS", str(ms))
        self.monkeypatch.setenv("FAKE_SCALE", str(scale))
        return self.pytester.runpytest("-p", "no:cacheprovider", *args)

    @property
    def baseline_file(self) -> Path:
        return self.pytester.path / "baselines" / "test_kernels.yaml"


# A timed run ends by measuring the device's copy bandwidth (its "% peak"): on the CPU, best of 10
# copies of 256 MiB, seconds on a loaded two-core machine, in every pytester run that times
# something. Tests need a peak, not a good one.
SMALL_PEAK_COPY_BYTES = 1 << 20


@pytest.fixture(autouse=True)
def _small_peak_copies(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process pytester runs measure the CPU's peak with 1 MiB copies (the same code path)."""
    if "pytester" in request.fixturenames:
        monkeypatch.setattr(roofline, "_CPU_COPY_BYTES", SMALL_PEAK_COPY_BYTES)


def seed_peak_cache(folder: Path, device: str | None = None, gb_per_s: float = 10.0) -> Path:
    """A peak cache in `folder`/.kernelperf for `device` (this CPU by default), for pytester runs in a
    subprocess (xdist, isolation), which `_small_peak_copies` does not reach: they read the peak
    instead of measuring it."""
    name = device or cpu_model()
    path = folder / ".kernelperf" / roofline.CACHE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"device": name, "gb_per_s": gb_per_s, "bytes": 1, "method": "seeded by tests", "measured": ""}
    path.write_text(json.dumps({"schema_version": roofline.CACHE_VERSION, "devices": {name: entry}}))
    return path


# For pytester.runpytest_subprocess: plugins of the outer environment that such a run does not
# need: hypothesis's plugin imports hypothesis at the end of every run (seconds in a fresh process).
SUBPROCESS_ARGS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")

# Optional extras: a test that needs one is marked `extras` (CI installs them and runs these with the
# slow tier) and skips, saying which extra, where it is not installed.
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
Test = TypeVar("Test", bound=Callable[..., object])


def requires_matplotlib(test: Test) -> Test:
    skip = pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="needs matplotlib: pip install -e '.[plot]'")
    marked: Test = pytest.mark.extras(skip(test))
    return marked


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Project:
    return Project(pytester, monkeypatch)


@pytest.fixture(autouse=True)
def _no_progress_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step of a pytester run that happens to take 5 s on a busy machine must not add a progress
    line to its output: tests of progress lines set their own threshold."""
    monkeypatch.setenv("KERNELPERF_PROGRESS_AFTER", "3600")


@pytest.fixture(autouse=True)
def _no_outer_xdist_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under `pytest -n`, this process is an xdist worker; in-process pytester runs must not
    inherit that identity (the plugin pins GPUs and routes results by it)."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _no_outer_ci_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest prints whole failure messages in the short summary when CI or BUILD_NUMBER is set,
    so a pytester run's output would differ between a CI job and a laptop."""
    for name in ("CI", "BUILD_NUMBER"):
        monkeypatch.delenv(name, raising=False)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow: takes more than about 5 s (torch.compile on CPU); -m 'not slow' skips"
    )


def git_run(repo: Path, *args: str) -> str:
    """git's output for `args` in `repo`, as a fixed author (the tests build their own repositories)."""
    who = {"NAME": "t", "EMAIL": "t@example.com"}
    env = {
        **os.environ,
        **{f"GIT_{role}_{key}": value for role in ("AUTHOR", "COMMITTER") for key, value in who.items()},
    }
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env
    ).stdout


def fresh_interpreter(code: str) -> list[str]:
    """The words `code` prints in a fresh Python (a module state no earlier test has touched, such as
    which of torch's modules are imported); a failure shows the child's stderr."""
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert found.returncode == 0, found.stderr
    return found.stdout.split()


def recorded_runs() -> Iterator[tuple[str, bytes]]:
    """(name, JSON text) of every run file in the GPU studies' archives (docs/results/)."""
    results = Path(__file__).resolve().parents[1] / "docs" / "results"
    archives = [*glob.glob(str(results / "*.tar.xz")), *glob.glob(str(results / "*.tgz"))]
    for archive in sorted(archives):
        with tarfile.open(archive) as tar:
            for member in sorted(tar.getmembers(), key=lambda m: m.name):
                handle = tar.extractfile(member) if member.name.endswith(".json") else None
                text = handle.read() if handle is not None else b""
                if b'"pytest-kernelperf-run"' in text[:1000]:
                    yield f"{Path(archive).name}:{member.name}", text
