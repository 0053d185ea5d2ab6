"""--kernelperf-ncu, the parent's side: the child command that replays one call under Nsight Compute.

The child is the command an isolated test's child runs (isolate.py: `python -m pytest <module>`
with this run's options, the test alone, a role that writes nothing of the user's), with the call
named in KERNELPERF_NCU_CALL (call/replay.py), started by ncu (profiling/ncu.py). A
problem that holds for the whole run (ncu absent, counters not permitted) is said once, and no
later call tries again.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_kernelperf.call.replay import CALL_VARIABLE, Target
from pytest_kernelperf.model.baseline import split_nodeid
from pytest_kernelperf.plugins import isolate
from pytest_kernelperf.profiling import ncu


class NcuCollector:
    """The run's one ncu collector (the `ncu` callback of every KernelBench)."""

    def __init__(self, config: pytest.Config, warn: Callable[[str], None]) -> None:
        self.config = config
        self.warn = warn
        self.unavailable: str | None = None  # why no call of this run can be read, once said

    def __call__(self, request: ncu.CounterRequest) -> ncu.CounterReading:
        if self.unavailable is not None:
            return ncu.CounterReading()  # said once already
        executable = ncu.find_ncu()
        if executable is None:
            return self._lasting(
                ncu.CounterReading(notes=(f"Nsight Compute counters not read: {ncu.ABSENT}",))
            )
        module = Path(self.config.rootpath) / split_nodeid(request.nodeid)[0]
        with tempfile.TemporaryDirectory(prefix="kernelperf-ncu-") as folder:
            env = isolate.environment(request.nodeid, Path(folder) / "result.json")
            autotune = dict(request.autotune) if request.autotune else None
            env[CALL_VARIABLE] = Target(request.name, autotune).encode()
            child = isolate.command(self.config, module)
            reading = ncu.collect(executable, child, env, Path(self.config.invocation_params.dir), request)
        return self._lasting(reading) if reading.lasting else reading

    def _lasting(self, reading: ncu.CounterReading) -> ncu.CounterReading:
        self.unavailable = "; ".join(reading.notes)
        self.warn(f"{self.unavailable} (said once; no call of this run is read)")
        return reading
