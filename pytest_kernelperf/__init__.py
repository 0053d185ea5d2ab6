"""pytest-kernelperf: GPU kernel performance regression testing for pytest."""

from __future__ import annotations

from pytest_kernelperf.model.result import BenchResult, Verdict

__all__ = ["BenchResult", "Verdict"]
__version__ = "0.1.0"
