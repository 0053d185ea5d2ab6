"""The result of one `kernel_bench` call: what reports render and what baselines are made of."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_kernelperf.baselines.schema import BaselineEntry
from pytest_kernelperf.ids import entry_test_id, split_nodeid
from pytest_kernelperf.profiling.compile_context import CompileContext
from pytest_kernelperf.results.cost import CallCost
from pytest_kernelperf.verdict.judge import Comparison, Throttling, Verdict
from pytest_kernelperf.verdict.memory import MemoryCheck
from pytest_kernelperf.verdict.ratio import RatioCheck


@dataclass(frozen=True)
class BenchResult:
    """One timed (or only checked) call. Times are per call, in milliseconds.

    `median_ms`, `samples_ms`, `baseline_ms` and `verdict` are about device time; `median_ms` and
    `baseline_ms` are the figures judged (the geometric mean of the per-round midmeans, or a schema-1
    baseline's median), `ci_ms` the range of this run's round locations; the `host_*`
    fields about host latency per call (launch path included), measured separately on CUDA so that a
    slower launch path is seen apart from a slower kernel.
    """

    nodeid: str
    name: str | None
    device: str  # the baseline key: GPU model or CPU model
    verdict: Verdict
    cache: str = "hot"
    method: str | None = None
    median_ms: float | None = None
    samples_ms: tuple[float, ...] = ()
    ci_ms: tuple[float, float] | None = None
    baseline_ms: float | None = None
    comparison: Comparison | None = None
    host_method: str | None = None
    host_median_ms: float | None = None
    host_baseline_ms: float | None = None
    host_comparison: Comparison | None = None
    baseline_file: str | None = None
    notes: tuple[str, ...] = ()
    bytes: int | None = None
    flops: int | None = None
    artifacts: tuple[str, ...] = ()
    wall_s: float = 0.0
    device_index: int | None = None  # the CUDA device (index in this process) that measured it
    # Reports: bytes counted from the tensors (no bytes= given), the ratio to a reference timed in
    # the same run (max_ratio=), the baseline's interval, and the baseline entry this measurement
    # makes (exactly what an update writes, so a saved run can record baselines later).
    bytes_inferred: bool = False
    ratio: RatioCheck | None = None
    baseline_ci_ms: tuple[float, float] | None = None
    entry: BaselineEntry | None = None
    # Rounds: per-round locations of device time, the timer's step, throttled rounds seen (and
    # re-measured where the budget allowed), and the throttling in the rounds kept.
    rounds_ms: tuple[float, ...] = ()
    resolution_ms: float | None = None
    throttled_rounds: int = 0
    throttling: Throttling | None = None
    placements: int = 0  # rounds measured each at its own memory placement (0: the process's)
    # Peak device memory of one call beyond its inputs, judged against the baseline's (None: not
    # measured, e.g. on a CPU), and the seconds of the call's phases (None: from an older run file).
    memory: MemoryCheck | None = None
    cost: CallCost | None = None

    @property
    def label(self) -> str:
        return self.nodeid if self.name is None else f"{self.nodeid} [{self.name}]"

    @property
    def module(self) -> str:
        """The test module's path: its baseline file is named after it."""
        return split_nodeid(self.nodeid)[0]

    @property
    def test_id(self) -> str:
        """The baseline entry's test id: the node id without the module, then `::name`."""
        return entry_test_id(self.nodeid, self.name)

    @property
    def compile_context(self) -> CompileContext | None:
        """How torch.compile compiled the measured call (None: no compiled code, or not timed);
        carried by `entry`, like the autotuner choices and inputs."""
        return self.entry.compile_context if self.entry is not None else None

    @property
    def peak_memory_bytes(self) -> int | None:
        return self.memory.peak_bytes if self.memory is not None else None

    @property
    def change_pct(self) -> float | None:
        return None if self.comparison is None else self.comparison.change_pct

    @property
    def host_change_pct(self) -> float | None:
        return None if self.host_comparison is None else self.host_comparison.change_pct

    @property
    def throughput(self) -> tuple[float | None, float | None]:
        """(GB/s, TFLOP/s) from the declared bytes and flops, where given."""
        if not self.median_ms:
            return None, None
        seconds = self.median_ms / 1e3
        gbps = self.bytes / seconds / 1e9 if self.bytes else None
        tflops = self.flops / seconds / 1e12 if self.flops else None
        return gbps, tflops
