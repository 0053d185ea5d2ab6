"""Whether a baseline recorded in some processes is worth one more recording process.

With `--kernelperf-record-processes auto` every test timed on a GPU is recorded in two processes,
and a third records again only the tests whose two call for it. The verdict studies re-judged with
baselines cut to 1, 2 or 3 processes (docs/measurement.md): a second process removes the false
alarms; a third halves `undetermined` and adds power only at 1-10 us, where a kernel's level
moves between processes more than its rounds show. So a test gets another process where

* its processes disagree: their levels lie further apart than the judge expects of them, with the
  round noise it would use (the kernel's rounds shrunk toward the baseline set's prior) and the
  between-process prior it would shrink their spread toward (verdict/judge.round_test); or
* a judging run against the baseline as it stands would be `undetermined`: the smallest slowdown
  the judge could detect lies beyond the bar where `same` means nothing (its rounds spread wide).

A host clock's process term (CUDA events, the wall clock) spans far more than one more process
could narrow, so such a baseline never asks for one. Pure: no torch, no pytest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pytest_kernelperf.model.names import HOST_PATH_METHODS
from pytest_kernelperf.verdict import noise
from pytest_kernelperf.verdict.judge import Rounds, StoredMetric, round_test, undetermined_beyond
from pytest_kernelperf.verdict.prior import NoisePrior, level_variance

# Processes disagree when their levels' spread is more than this many SDs of what their rounds and
# the between-process prior allow: about 1 kernel in 20 that moves as its class's prior says, and
# most of those that move more (an NVRTC SAXPY held in L2, 1.5% apart beyond its rounds on an H200).
DISAGREE_SD = 2.0


@dataclass(frozen=True)
class Judgeable:
    """How the judge will see the baseline: the device it is judged on, its baseline set's prior,
    the level alpha / m of a judgement, the floor `threshold`, and a judging run's rounds as a share
    of a recording process's (`--kernelperf-rounds` against `--kernelperf-baseline-rounds`)."""

    device: str
    prior: NoisePrior
    level: float
    threshold: float
    judging_share: float


def another_process(record: StoredMetric, judged: Judgeable) -> str | None:
    """Why the baseline `record` (two or more recording processes) wants one more, said for the
    update summary ("processes 1.5% apart"), or None where it does not."""
    baseline = Rounds.of_stored(record)
    # This recording's processes: those of its occasion (--kernelperf-add-occasion keeps older ones).
    parts = (
        baseline.processes[-record.occasion_processes[-1] :]
        if record.occasion_processes
        else baseline.processes
    )
    if len(parts) < 2 or baseline.legacy or record.method in HOST_PATH_METHODS:
        return None
    # A stand-in for the next judging run: the last process's rounds, as many as a run plans.
    last = parts[-1]
    count = min(len(last), max(2, round(len(last) * judged.judging_share)))
    current = Rounds(record.method, last[:count], step_ms=record.resolution_ms)
    test = round_test(current, baseline, judged.device, judged.level, judged.prior)
    spread = level_variance(parts)
    assert spread is not None
    inverse = math.fsum(1 / len(p) for p in parts)
    between = judged.prior.for_process(judged.device, record.method, baseline.level_ms).sd ** 2
    expected = between + test.sd**2 * inverse / len(parts)
    if expected > 0 and spread[0] > DISAGREE_SD**2 * expected:
        return f"processes {_apart(parts):.1%} apart"
    if test.detectable > undetermined_beyond(judged.threshold):
        return f"a run would detect {test.detectable:.0%} at best: rounds spread {test.sd:.1%}"
    return None


def _apart(parts: list[tuple[float, ...]]) -> float:
    """How far apart the processes' levels (geometric means of their rounds) lie, relative."""
    levels = [noise.geometric_mean(part) for part in parts]
    return max(levels) / min(levels) - 1
