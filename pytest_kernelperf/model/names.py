"""The vocabularies shared by the layers: one spelling each, for options, files and readers alike."""

from __future__ import annotations

# The measured quantities of a call, as a baseline entry and a run file name them.
METRICS = ("device_time", "host_latency")

# hot: caches warm from the previous call; cold: the device's L2 flushed before each call.
CACHE_MODES = ("hot", "cold")

# The timers of this package, and what the timer option accepts (auto: device time from CUPTI on
# CUDA, wall clock on CPU).
METHODS = ("auto", "wall-clock", "cuda-event", "cuda-graph", "cupti")
# The timers whose names a stored measurement may carry (scripted: pytest_kernelperf.testing's
# ScriptedTimer). A timer plugin (the pytest_kernelperf_make_timer hook) names its own method, so
# other names of the same shape are accepted by the readers.
BUILTIN_METHODS = ("wall-clock", "cuda-event", "cuda-graph", "cupti", "scripted")
# The timers whose time includes the Python code of the call (cuda-graph replays kernels alone,
# cupti times kernels alone): the host's clocks. The one list: the noise priors give them their own
# values (verdict/noise.py), a busy host makes them unreliable (verdict/busy_host.py), and a
# counterpart's imports at its first call show in them (call/counterpart.py).
HOST_PATH_METHODS = ("wall-clock", "cuda-event")

# Where each round's memory lies: a fresh placement per round, or the process's as it is.
PLACEMENT_MODES = ("fresh", "process")

# The run JSON file (`--kernelperf-json`): its schema name and the version this package writes.
# Version 2 names each figure once: `level_ms` the level judged, `median_ms` only a sample median,
# `round_range_ms` the lowest and highest round; version 1 files are upgraded on reading
# (results/runfile.py).
RUN_SCHEMA = "pytest-kernelperf-run"
RUN_SCHEMA_VERSION = 2
