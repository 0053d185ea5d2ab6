"""Roofline figures: bytes counted from tensors, GB/s and TFLOP/s, and the per-device peak cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import Project
from reportkit import DEVICE, setup, times

from pytest_kernelperf.measure import host_load, roofline
from pytest_kernelperf.model.device import DeviceInfo, Peak
from pytest_kernelperf.model.result import BenchResult, Verdict
from pytest_kernelperf.results.throughput import figures

CPU = DeviceInfo("cpu", "Some CPU")
GPU = DeviceInfo("cuda", "Some GPU", index=0)


def test_tensor_bytes_counts_inputs_and_outputs_once_each() -> None:
    x = torch.ones(1000)  # 4000 bytes
    y = torch.ones(10, dtype=torch.float16)  # 20 bytes
    assert roofline.tensor_bytes((x, y), {}, x * 2) == 8020
    assert roofline.tensor_bytes((x, x), {"scale": 2.0}, None) == 4000  # the same tensor is one read
    assert roofline.tensor_bytes(([x], {"y": y}), {}, (x + 1, [y + 1])) == 8040
    assert roofline.tensor_bytes((3, "a"), {}, 7.0) is None


def test_figures_from_bytes_flops_and_peak() -> None:
    result = BenchResult(
        "t.py::t",
        None,
        "Some GPU",
        Verdict.SAME,
        level_ms=0.5,
        bytes=2 << 30,
        flops=10**9,
        bytes_inferred=True,
    )
    fig = figures(result, Peak("Some GPU", 4000.0, 1, "m", "d"))
    assert fig.gb_per_s == pytest.approx(2 * 2**30 / 0.5e-3 / 1e9)
    assert fig.tflop_per_s == pytest.approx(2.0)
    assert fig.gb_per_s is not None and fig.peak_fraction == pytest.approx(fig.gb_per_s / 4000)
    assert fig.bytes_inferred
    assert figures(result, None).peak_fraction is None
    untimed = figures(BenchResult("t.py::t", None, "cpu", Verdict.CHECKED, bytes=8), None)
    assert untimed.gb_per_s is None


def fake_peak(device: DeviceInfo) -> Peak:
    return Peak(device.name, 123.0, 1 << 20, "fake copy", "2026-11-30T00:00:00Z")


def test_peaks_are_measured_once_per_device_and_cached(tmp_path: Path) -> None:
    measured: list[str] = []

    def measure(device: DeviceInfo) -> Peak:
        measured.append(device.name)
        return fake_peak(device)

    peaks, notes = roofline.session_peaks([CPU, GPU], tmp_path, measure=measure)
    assert measured == ["Some CPU", "Some GPU"] and not notes
    assert peaks["Some GPU"].gb_per_s == 123.0
    cache = json.loads((tmp_path / roofline.CACHE_FILE).read_text())
    assert set(cache["devices"]) == {"Some CPU", "Some GPU"}
    again, _ = roofline.session_peaks([CPU, GPU], tmp_path, measure=measure)
    assert again == peaks and measured == ["Some CPU", "Some GPU"]  # read, not measured again


def test_a_bad_cache_is_measured_again_and_a_failed_measurement_is_a_note(tmp_path: Path) -> None:
    (tmp_path / roofline.CACHE_FILE).write_text("{not json")
    peaks, notes = roofline.session_peaks([CPU], tmp_path, measure=fake_peak)
    assert peaks["Some CPU"].gb_per_s == 123.0
    assert "unreadable peak bandwidth cache" in notes[0] and "delete it to re-measure" in notes[0]

    def broken(device: DeviceInfo) -> Peak:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    peaks, notes = roofline.session_peaks([GPU], tmp_path, measure=broken)
    assert "Some GPU" not in peaks
    assert notes == [
        "could not measure the copy bandwidth of Some GPU: "
        "RuntimeError: CUDA error: an illegal memory access was encountered"
    ]
    peaks, notes = roofline.session_peaks([GPU], tmp_path, measure=broken, may_measure=False)
    assert peaks == {} and notes == []


def test_cpu_copy_bandwidth_is_measured_with_a_torch_copy() -> None:
    peak = roofline.measure_copy_bandwidth(DeviceInfo("cpu", "This CPU"))
    assert peak.device == "This CPU" and peak.gb_per_s > 0
    assert peak.bytes == 2 * (256 << 20)
    assert peak.method.startswith("host memory copy") and "read+write" in peak.method


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_copy_bandwidth_is_measured_device_to_device() -> None:
    from pytest_kernelperf.measure.device import fingerprint

    peak = roofline.measure_copy_bandwidth(fingerprint("cuda"))
    assert peak.method.startswith("device-to-device copy") and peak.gb_per_s > 100


def test_a_run_measures_the_peak_once_and_reuses_the_cache(project: Project) -> None:
    setup(project, peak=None)
    times(project)
    # A peak measured on a busy machine is not cached; this machine's load must not decide the test.
    project.monkeypatch.setattr(host_load, "load_per_core", lambda: 0.0)
    project.run().assert_outcomes(passed=5)
    cache = project.pytester.path / ".kernelperf" / roofline.CACHE_FILE
    assert not cache.exists(), "correctness-only runs measure nothing"
    result = project.run("--kernelperf")
    result.stdout.fnmatch_lines(
        [f"peak {DEVICE}: copy bandwidth * GB/s (host memory copy * read+write bytes)"]
    )
    first = json.loads(cache.read_text())["devices"][DEVICE]
    assert first["gb_per_s"] > 0
    project.run("--kernelperf")
    assert json.loads(cache.read_text())["devices"][DEVICE] == first
