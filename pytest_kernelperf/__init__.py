"""pytest-kernelperf: GPU kernel performance regression testing for pytest."""

from __future__ import annotations

from .compare import Verdict
from .results import BenchResult

__all__ = ["BenchResult", "Verdict"]
__version__ = "0.1.0"
