"""Tests of the run history (pytest_kernelperf.history)."""
