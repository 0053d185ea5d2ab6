"""% of peak on a CPU machine: cache-resident calls are not compared with memory bandwidth, and a peak
measured on a busy machine is not kept for later runs."""

from __future__ import annotations

from pathlib import Path

from pytest_kernelperf.measure.roofline import read_cache, session_peaks
from pytest_kernelperf.model.device import DeviceInfo, Peak
from pytest_kernelperf.model.result import BenchResult, Verdict
from pytest_kernelperf.results.render import peak_lines
from pytest_kernelperf.results.throughput import figures

CPU = DeviceInfo(kind="cpu", name="Some CPU", index=None, environment={})


def _peak(load: float | None) -> Peak:
    when = "2026-12-01T00:00:00Z"
    return Peak("Some CPU", 10.0, 1 << 29, "copy", when, cache_bytes=32 << 20, load_per_core=load)


def _result(nbytes: int, cache: str = "hot") -> BenchResult:
    return BenchResult("t.py::t", None, "Some CPU", Verdict.SAME, cache=cache, level_ms=1.0, bytes=nbytes)


def test_a_call_whose_bytes_fit_in_the_cache_has_no_percent_of_peak() -> None:
    peak = _peak(0.1)
    small = figures(_result(8 << 20), peak)
    assert small.cache_resident and small.peak_fraction is None and small.gb_per_s is not None
    large = figures(_result(256 << 20), peak)
    assert not large.cache_resident and large.peak_fraction is not None
    cold = figures(_result(8 << 20, cache="cold"), peak)  # flushed before each call: from memory
    assert not cold.cache_resident and cold.peak_fraction is not None


def test_a_peak_measured_on_a_busy_machine_is_used_once_and_not_cached(tmp_path: Path) -> None:
    peaks, notes = session_peaks([CPU], tmp_path, measure=lambda device: _peak(3.0))
    assert peaks["Some CPU"].gb_per_s == 10.0
    assert any("measured while the machine was busy (load 3 per core)" in n for n in notes)
    assert read_cache(tmp_path / "peak_bandwidth.json") == {}
    assert "busy" in peak_lines(peaks)[0]
    peaks, notes = session_peaks([CPU], tmp_path, measure=lambda device: _peak(0.1))
    assert not notes and read_cache(tmp_path / "peak_bandwidth.json") == peaks
