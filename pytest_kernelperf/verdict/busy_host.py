"""When the host makes a measurement meaningless: a busy host under a time the host measures, or
rounds spread so far apart that no level stands for them. One rule, for the judge's verdicts
(verdict/judge.py) and for what a baseline recording says (call/judged.py). Pure: no torch, no
pytest.

* The load (measure/host_load.py: the one-minute load average per core, read after the rounds).
  Beyond BUSY_LOAD_PER_CORE some task always waits for a core, and a time the host measures (any
  timer on a CPU, or a timer whose time includes the call's Python code on a GPU) includes that
  waiting. On a loaded 2-core CPU (load 1.8 per core) unchanged code read +540% to +1830% `slower`
  in 11 of 17 runs. A measurement's own threads count too, but at most one per core, so a figure
  beyond 1 means other work as well. Load only ever adds time, so only a `slower` is left
  unjudged: a loaded run that reads the same or faster hides no slowdown. A device time (CUPTI,
  CUDA graphs) is the GPU's, and CPU load does not make it meaningless; its rounds' spread still
  can.
* The spread: the slowest round over the fastest, in this run or in the baseline. Beyond
  ROUND_SPREAD_LIMIT the rounds measured the host, not the kernel, and any verdict on them is
  meaningless. The widest spread of a kernel's own rounds in docs/measurement.md is the atomics
  histogram's across memory placements, 0.48 to 0.90 ms (1.9x); the limit is twice that. The
  loaded CPU above recorded baselines whose rounds spread 12x (3.80 to 47.0 ms) and 27x.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_kernelperf.formatting import duration
from pytest_kernelperf.model.names import HOST_PATH_METHODS
from pytest_kernelperf.model.result import Verdict
from pytest_kernelperf.verdict.messages import UPDATE_HINT

BUSY_LOAD_PER_CORE = 1.0
ROUND_SPREAD_LIMIT = 4.0


def host_timed(method: str, device_kind: str) -> bool:
    """Whether the host measures the time: any timer on a CPU, or on a GPU a timer whose time
    includes the call's Python code (model/names.py HOST_PATH_METHODS)."""
    return device_kind != "cuda" or method in HOST_PATH_METHODS


def busy(load_per_core: float | None) -> bool:
    """Whether a host at this load average per core kept a host-measured time waiting for a core."""
    return load_per_core is not None and load_per_core > BUSY_LOAD_PER_CORE


def spread(rounds_ms: Sequence[float]) -> float:
    """The slowest round over the fastest (1 for fewer than two rounds)."""
    if len(rounds_ms) < 2 or min(rounds_ms) <= 0:
        return 1.0
    return max(rounds_ms) / min(rounds_ms)


def _spread_text(rounds_ms: Sequence[float]) -> str:
    return f"{spread(rounds_ms):.3g}x apart ({duration(min(rounds_ms))} to {duration(max(rounds_ms))})"


def _busy_text(load_per_core: float) -> str:
    return (
        f"the host was busy (load {load_per_core:.2g} per core, beyond {BUSY_LOAD_PER_CORE:g}): other "
        "work held the cores the time was measured on"
    )


def unfit_to_record(rounds_ms: Sequence[float], load_per_core: float | None) -> str | None:
    """Why a measurement is unfit to be a baseline (None: it is fit): a busy host under a time the
    host measured (`load_per_core`: None where unread, or where the time is the device's), or
    rounds spread beyond ROUND_SPREAD_LIMIT."""
    reasons = []
    if busy(load_per_core):
        assert load_per_core is not None
        reasons.append(_busy_text(load_per_core))
    if spread(rounds_ms) > ROUND_SPREAD_LIMIT:
        reasons.append(f"its rounds lie {_spread_text(rounds_ms)}, beyond {ROUND_SPREAD_LIMIT:g}x")
    return "; ".join(reasons) or None


def judged_on_host(
    verdict: Verdict,
    current_ms: Sequence[float],
    baseline_ms: Sequence[float],
    load_per_core: float | None,
    baseline_name: str = "baseline",
) -> tuple[Verdict, str]:
    """`verdict` made `unreliable`, with the reason, where the host makes it meaningless (see the
    module docstring): rounds of this run or of the baseline spread beyond ROUND_SPREAD_LIMIT make
    any judged verdict so; a busy host (`load_per_core` of a time the host measured) a `slower`."""
    if verdict in (Verdict.NEW, Verdict.INCOMPARABLE, Verdict.UNRELIABLE):
        return verdict, ""
    reasons = []
    if spread(baseline_ms) > ROUND_SPREAD_LIMIT:
        reasons.append(
            f"the {baseline_name}'s rounds lie {_spread_text(baseline_ms)}, beyond {ROUND_SPREAD_LIMIT:g}x: "
            f"recorded on a busy host, most likely; on a quiet one, {UPDATE_HINT}"
        )
    # Rounds far apart cannot hide a slowdown that every one of them shows: a `slower` whose fastest
    # round lies beyond the baseline's slowest stands (the load, where read, speaks for the host).
    everyone_slower = verdict is Verdict.SLOWER and bool(baseline_ms) and min(current_ms) > max(baseline_ms)
    if spread(current_ms) > ROUND_SPREAD_LIMIT and not everyone_slower:
        reasons.append(f"this run's rounds lie {_spread_text(current_ms)}, beyond {ROUND_SPREAD_LIMIT:g}x")
    if verdict is Verdict.SLOWER and busy(load_per_core):
        assert load_per_core is not None
        reasons.append(_busy_text(load_per_core) + "; run it on a quieter machine")
    if not reasons:
        return verdict, ""
    return Verdict.UNRELIABLE, "; ".join(reasons)
