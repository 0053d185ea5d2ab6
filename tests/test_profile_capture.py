"""Pieces of the built-in profiler that need no GPU: device events, code lookup routing, folders."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from torch.autograd import DeviceType  # type: ignore[attr-defined]

from pytest_kernelperf.model.call import KernelRecord
from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.profiling import capture, codegen
from pytest_kernelperf.profiling.inventory import DeviceEvent


@dataclass
class _Range:
    us: float

    def elapsed_us(self) -> float:
        return self.us


@dataclass
class _Event:
    name: str
    device_type: Any
    time_range: _Range
    is_user_annotation: bool = False


class _Prof:
    def events(self) -> list[_Event]:
        return [
            _Event("aten::mul", DeviceType.CPU, _Range(50.0)),
            _Event("## Call CompiledFxGraph f3x ##", DeviceType.CUDA, _Range(40.0), is_user_annotation=True),
            _Event("triton_poi_fused_mul_0", DeviceType.CUDA, _Range(30.0)),
            _Event("Memset (Device)", DeviceType.CUDA, _Range(1.0)),
        ]


def test_device_events_are_kernels_memcpys_and_memsets_only() -> None:
    assert capture.device_events(_Prof()) == [
        DeviceEvent("triton_poi_fused_mul_0", 30.0),
        DeviceEvent("Memset (Device)", 1.0),
    ]


def test_generated_code_asks_triton_and_the_binaries_for_the_right_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: dict[str, Any] = {}

    def triton_code(names: list[str], launched: dict[str, set[int]], sass: bool) -> codegen.CodeReport:
        asked["triton"], asked["sass"] = names, sass
        found = {"my_kernel": codegen.GeneratedCode("my_kernel", "aaaaaaaaaaaa", "triton")}
        return codegen.CodeReport(found, ("triton note",))

    def extension_code(names: list[str], arch: str | None, deadline: float | None) -> codegen.CodeReport:
        asked["extension"], asked["arch"], asked["deadline"] = names, arch, deadline
        return codegen.CodeReport(notes=("extension note",))

    monkeypatch.setattr(codegen, "triton_code", triton_code)
    monkeypatch.setattr(codegen, "extension_code", extension_code)
    kernels = tuple(
        KernelRecord(name, 1, 0.25, 0.1)
        for name in (
            "Memcpy DtoD (Device -> Device)",
            "gelu_kernel(float const*, float*, long)",
            "my_kernel",
            "triton_red_fused_sum_0",
        )
    )
    device = DeviceInfo("cuda", "NVIDIA H200", 0, {"capability": "9.0"})
    report = capture.generated_code(kernels, {"my_kernel": {7}}, device, sass=False, deadline=12.5)
    assert asked == {
        "triton": [
            "my_kernel",
            "triton_red_fused_sum_0",
        ],  # launched through Triton, or named like inductor's
        "extension": ["gelu_kernel(float const*, float*, long)", "triton_red_fused_sum_0"],
        "arch": "sm_90",
        "sass": False,  # an inventory without files: no cuobjdump for Triton's SASS
        "deadline": 12.5,  # the extensions' disassembly ends with the profile's budget
    }
    assert set(report.codes) == {"my_kernel"} and report.notes == ("triton note", "extension note")


def test_artifact_folder_is_inside_the_root_and_safe() -> None:
    root = Path("/tmp/artefacts")
    folder = capture.artifact_folder(root, "../tests/test_x.py::test_y[a/b]", "fast path")
    assert folder.parent.name.startswith("tests_test_x.py_test_y_a_b-") and folder.name.startswith(
        "fast_path-"
    )
    assert folder.parent.parent == root
    assert capture.artifact_folder(root, "t.py::test", None).name == "default"


def test_cpu_inventory_only_request_runs_no_profiler() -> None:
    calls: list[int] = []
    request = capture.ProfileRequest(
        call=lambda: calls.append(1), device=DeviceInfo("cpu", "CPU"), folder=None
    )
    assert capture.capture(request) == capture.CallProfile()
    assert calls == []


def test_earlier_profile_files_are_removed_and_others_kept(tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    for name in ("profile.txt", "trace.json", "notes.md", "code/old_kernel.ptx", "code/readme.txt"):
        (tmp_path / name).write_text("x")
    request = capture.ProfileRequest(call=lambda: None, device=DeviceInfo("cpu", "CPU"), folder=tmp_path)
    result = capture.capture(request)
    assert sorted(p.name for p in result.artifacts) == ["profile.txt", "trace.json"]
    assert (tmp_path / "notes.md").exists() and (tmp_path / "code" / "readme.txt").exists()
    assert not (tmp_path / "code" / "old_kernel.ptx").exists()
    assert result.kernels is None and result.notes == (capture.CPU_NO_INVENTORY,)
