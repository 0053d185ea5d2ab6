"""Profiles that explain a regression, end to end with scripted times and a fake profiler.

The fake profiler (pytest_kernelperf.testing.FakeProfiler) reports the kernels each function
declares in `fake_kernels`, here set through FAKE_KERNELS="name:launches:ms[:code];...".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import KERNEL_MODULE, SCRIPTED_CONFTEST, Project

FAKE_PROFILER = """
import os

from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.testing import FakeProfiler

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_profile_call(config, profile_request):
    with open(os.environ["PROFILE_LOG"], "a") as log:
        log.write(f"{profile_request.label} folder={profile_request.folder is not None}\\n")
    return FakeProfiler()(profile_request)

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_device_info(config, kind):
    environment = {"torch": os.environ.get("FAKE_TORCH", "2.11.0"), "driver": "580.65"}
    return DeviceInfo(kind="cpu", name="Fake GPU", environment=environment)
"""

MODULE = (
    KERNEL_MODULE
    + """
spec = os.environ.get("FAKE_KERNELS")
if spec:
    kernel.fake_kernels = [tuple(item.split(":")) for item in spec.split(";")]
"""
)

ONE = "triton_poi_fused_add_0:1:1.0:aaaaaaaaaaaa"
TWO = ONE + ";triton_poi_fused_mul_1:1:0.21:bbbbbbbbbbbb"


class Profiled:
    def __init__(self, project: Project, tmp_path: Path) -> None:
        self.project = project
        self.log = tmp_path / "profile_calls.log"
        project.pytester.makeconftest(SCRIPTED_CONFTEST + FAKE_PROFILER)
        project.module(MODULE)
        project.monkeypatch.setenv("PROFILE_LOG", str(self.log))

    def run(
        self, *args: str, kernels: str | None, ms: float = 1.0, torch: str = "2.11.0"
    ) -> pytest.RunResult:
        if kernels is None:
            self.project.monkeypatch.delenv("FAKE_KERNELS", raising=False)
        else:
            self.project.monkeypatch.setenv("FAKE_KERNELS", kernels)
        self.project.monkeypatch.setenv("FAKE_TORCH", torch)
        self.log.write_text("")
        return self.project.run(*args, ms=ms)

    @property
    def profile_calls(self) -> list[str]:
        return self.log.read_text().splitlines()

    @property
    def folder(self) -> Path:
        return self.project.pytester.path / ".kernelperf" / "test_kernels.py_test_kernel" / "default"


@pytest.fixture
def profiled(project: Project, tmp_path_factory: pytest.TempPathFactory) -> Profiled:
    return Profiled(project, tmp_path_factory.mktemp("log"))


def test_update_stores_the_inventory_without_writing_artefacts(profiled: Profiled) -> None:
    profiled.run("--kernelperf-update-baselines", kernels=TWO).assert_outcomes(passed=1)
    text = profiled.project.baseline_file.read_text()
    assert (
        "        kernels:\n"
        "        - {code: aaaaaaaaaaaa, launches: 1, ms: 1.0, name: triton_poi_fused_add_0, share: 0.826}\n"
        "        - {code: bbbbbbbbbbbb, launches: 1, ms: 0.21, name: triton_poi_fused_mul_1, share: 0.174}\n"
    ) in text
    assert profiled.profile_calls == ["test_kernels.py::test_kernel folder=False"]
    assert not profiled.folder.exists()


def test_no_inventory_means_no_kernels_key(profiled: Profiled) -> None:
    profiled.run("--kernelperf-update-baselines", kernels=None).assert_outcomes(passed=1)
    assert "kernels" not in profiled.project.baseline_file.read_text()


def test_passing_calls_are_not_profiled_by_default(profiled: Profiled) -> None:
    profiled.run("--kernelperf-update-baselines", kernels=ONE)
    result = profiled.run("--kernelperf", kernels=ONE)
    result.assert_outcomes(passed=1)
    assert profiled.profile_calls == []
    assert "kernelperf profiles" not in result.stdout.str()


def test_a_run_kept_in_the_history_records_every_inventory_without_artefacts(
    profiled: Profiled, tmp_path: Path
) -> None:
    from pytest_kernelperf.history.store import HistoryStore

    database = tmp_path / "history.sqlite"
    profiled.run("--kernelperf-update-baselines", kernels=ONE)
    profiled.run("--kernelperf", f"--kernelperf-history={database}", kernels=ONE).assert_outcomes(passed=1)
    assert profiled.profile_calls == ["test_kernels.py::test_kernel folder=False"]
    assert not profiled.folder.exists()
    with HistoryStore(database) as store:
        ((point,),) = store.points().values()
    assert [kernel["code"] for kernel in point.inventory() or ()] == ["aaaaaaaaaaaa"]


def test_regression_message_names_the_added_kernel_and_the_artefacts(profiled: Profiled) -> None:
    profiled.run("--kernelperf-update-baselines", kernels=ONE)
    result = profiled.run("--kernelperf", kernels=TWO, ms=1.3)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*performance regression in test_kernels.py::test_kernel on Fake GPU*",
            "*kernels against the baseline's:",
            "*now launches 2 kernels per call instead of 1 (+triton_poi_fused_mul_1: 210 us)",
            "*+ triton_poi_fused_mul_1: new, 1 launch, 210 us per call (17% of device time)",
            "*generated code unchanged since the baseline (triton_poi_fused_add_0)",
            "*environment: same as the baseline (torch 2.11.0, driver 580.65)",
            "*profile: .kernelperf/test_kernels.py_test_kernel/default (profile.txt, trace.json)",
            "*pytest --kernelperf-update-baselines*",
        ]
    )
    assert profiled.profile_calls == [
        "test_kernels.py::test_kernel folder=True"
    ]  # one re-run, after the verdict
    trace = json.loads((profiled.folder / "trace.json").read_text())
    assert [event["name"] for event in trace["traceEvents"]] == [
        "triton_poi_fused_add_0",
        "triton_poi_fused_mul_1",
    ]


def test_changed_code_is_reported(profiled: Profiled) -> None:
    profiled.run("--kernelperf-update-baselines", kernels=ONE)
    result = profiled.run("--kernelperf", kernels="triton_poi_fused_add_0:1:1.5:cccccccccccc", ms=1.5)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*kernels against the baseline's:",
            "** triton_poi_fused_add_0: 1 ms -> 1.5 ms per call (+50%), 100% of device time",
            "*generated code changed since the baseline: "
            "triton_poi_fused_add_0 (aaaaaaaaaaaa -> cccccccccccc)",
        ]
    )


def test_environment_difference_is_named(profiled: Profiled) -> None:
    profiled.run("--kernelperf-update-baselines", kernels=ONE)
    result = profiled.run("--kernelperf", kernels=ONE, ms=2.0, torch="2.12.0")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the same 1 kernel launch as the baseline; their time per call 1 ms -> 1 ms (+0 ms) against "
            "1 ms -> 2 ms (+1 ms, +100.0%) for the call: the kernels' time did not grow, so the slowdown is "
            "outside the kernels*",
            "*environment differs from the baseline's: torch 2.11.0 -> 2.12.0",
        ]
    )


def test_baseline_without_inventory_shows_the_kernels_now(profiled: Profiled) -> None:
    profiled.run("--kernelperf-update-baselines", kernels=None)
    result = profiled.run("--kernelperf", kernels=TWO, ms=2.0)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*kernels now: triton_poi_fused_add_0 (1x, 1 ms), triton_poi_fused_mul_1 (1x, 210 us) "
            "(the baseline has no kernel inventory: record one with --kernelperf-update-baselines)"
        ]
    )


def test_profile_flag_profiles_passing_calls_and_lists_the_artefacts(profiled: Profiled) -> None:
    profiled.run("--kernelperf-update-baselines", kernels=ONE)
    result = profiled.run("--kernelperf", "--kernelperf-profile", kernels=ONE)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*kernelperf profiles*",
            "test_kernels.py::test_kernel: "
            ".kernelperf/test_kernels.py_test_kernel/default (profile.txt, trace.json)",
        ]
    )
    assert (profiled.folder / "profile.txt").read_text().splitlines()[1].endswith("triton_poi_fused_add_0")


def test_a_failing_profiler_leaves_the_verdict_and_says_why(profiled: Profiled) -> None:
    profiled.run("--kernelperf-update-baselines", kernels=ONE)
    profiled.project.pytester.makeconftest(
        SCRIPTED_CONFTEST
        + FAKE_PROFILER
        + """
@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_profile_call(config, profile_request):
    raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED")
"""
    )
    result = profiled.run("--kernelperf", kernels=ONE, ms=2.0)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*performance regression*",
            "*kernels: the baseline lists 1, none profiled now "
            "(profiling failed: RuntimeError: CUPTI_ERROR_NOT_INITIALIZED)",
        ]
    )


# --- the real torch.profiler, on CPU ----------------------------------------------------------


def test_cpu_profile_writes_table_trace_and_stacks(project: Project) -> None:
    project.module()
    result = project.run("--kernelperf", "--kernelperf-profile", "--kernelperf-profile-stack")
    result.assert_outcomes(passed=1)
    folder = project.pytester.path / ".kernelperf" / "test_kernels.py_test_kernel" / "default"
    assert sorted(p.name for p in folder.iterdir()) == ["profile.txt", "stacks.txt", "trace.json"]
    assert "aten::mul" in (folder / "profile.txt").read_text()
    trace = json.loads((folder / "trace.json").read_text())
    assert any(event.get("name") == "aten::mul" for event in trace["traceEvents"])
    assert "test_kernels.py" in (folder / "stacks.txt").read_text()  # the call's own frame
    result.stdout.fnmatch_lines(["*test_kernel: .kernelperf/*/default (profile.txt, trace.json, stacks.txt)"])


def test_cpu_update_records_no_inventory_and_runs_no_profiler(project: Project) -> None:
    project.module()
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    assert "kernels" not in project.baseline_file.read_text()
    # No profile written: at most the peak bandwidth the reports measured (roofline.py), beside the
    # folder's own .gitignore.
    assert sorted(p.name for p in (project.pytester.path / ".kernelperf").glob("*")) in (
        [".gitignore"],
        [".gitignore", "peak_bandwidth.json"],
    )
