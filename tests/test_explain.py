"""The lines a regression message adds: inventory diff, code, environment, artefacts, notes."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kernelperf.formatting import artifact_line
from pytest_kernelperf.model.baseline import BaselineEntry, MetricRecord
from pytest_kernelperf.model.call import KernelRecord
from pytest_kernelperf.profiling.capture import CallProfile
from pytest_kernelperf.profiling.explain import regression_details

ENV = {"torch": "2.11.0", "cuda": "13.0"}


def baseline(kernels: tuple[KernelRecord, ...] | None) -> BaselineEntry:
    metric = MetricRecord("cupti", 0.5, (0.49, 0.51), 10, (0.5,))
    return BaselineEntry(
        device_time=metric, recorded="2026-11-30T12:00:00Z", environment=ENV, kernels=kernels
    )


def test_artifact_line_names_the_folder_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / ".kernelperf" / "t" / "default"
    files = [
        folder / "profile.txt",
        folder / "trace.json",
        folder / "code" / "k.ptx",
        folder / "code" / "k.sass",
    ]
    assert artifact_line([str(p) for p in files]) == ".kernelperf/t/default (profile.txt, trace.json, code/)"
    assert artifact_line([]) is None
    assert artifact_line(["/elsewhere/x/profile.txt"]) == "/elsewhere/x (profile.txt)"


def test_double_precision_kernel_message() -> None:
    name = "gelu_kernel(float const*, float*, long)"
    before = (KernelRecord(name, 1, 1.0, 0.0331, code="aaaaaaaaaaaa"),)
    after = (KernelRecord(name, 1, 1.0, 0.0952, code="bbbbbbbbbbbb"),)
    lines = regression_details(baseline(before), ENV, CallProfile(kernels=after))
    assert lines == [
        "kernels against the baseline's:",
        f"  * {name}: 33.1 us -> 95.2 us per call (+188%), 100% of device time",
        f"generated code changed since the baseline: {name} (aaaaaaaaaaaa -> bbbbbbbbbbbb)",
        "environment: same as the baseline (torch 2.11.0, cuda 13.0)",
    ]


def test_cpu_regression_says_only_the_environment_and_the_profile() -> None:
    profiled = CallProfile(
        kernels=None, artifacts=(), notes=("no kernel inventory on CPU (device kernels only)",)
    )
    lines = regression_details(baseline(None), dict(ENV, torch="2.12.0"), profiled)
    assert lines == [
        "environment differs from the baseline's: torch 2.11.0 -> 2.12.0",
        "note: no kernel inventory on CPU (device kernels only)",
    ]


def test_not_profiled_at_all() -> None:
    lines = regression_details(baseline((KernelRecord("k", 1, 1.0, 0.5),)), ENV, None)
    assert lines[0] == "kernels: the baseline lists 1, none profiled now (not profiled)"
