"""Re-judging recorded rounds with the one judge: how often it raises false alarms, and what it catches.

The studies' support for the package's judge (studies/verdicts.py --every-baseline,
studies/verdict_simulation.py), which feed it measured data; tests/test_resample.py checks it on
made-up data. Outside the package (no run uses it), it imports only the package's verdict/ and
model/: no torch, no pytest.

* `every_baseline`: each measurement judged against every other process's unchanged measurement as
  its baseline (N processes give N*(N-1) pairs from the same data).
* `simulate`: per kernel, baseline and current measurements drawn from its pool of measured rounds
  (without replacement inside one draw), judged with the run's defaults; unchanged for false alarms,
  scaled by a slowdown for power.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from pytest_kernelperf.model.result import Verdict
from pytest_kernelperf.verdict.judge import Rounds, judge
from pytest_kernelperf.verdict.noise import midmean
from pytest_kernelperf.verdict.prior import NoisePrior

if TYPE_CHECKING:
    from typing import Unpack

DEVICE = "recorded"


@dataclass(frozen=True)
class Measurement:
    """One recorded measurement: its process, kernel (size), variant and round locations."""

    process: int
    kernel: str
    variant: str
    rounds_ms: tuple[float, ...]

    @classmethod
    def from_row(cls, row: Mapping[str, object]) -> Measurement:
        """From a row with rounds_ms, or with samples_ms only (older data: the samples as one round)."""
        rounds = row.get("rounds_ms")
        if not rounds:
            samples = row["samples_ms"]
            assert isinstance(samples, Sequence)
            rounds = [midmean([float(v) for v in samples])]
        assert isinstance(rounds, Sequence)
        return cls(int(str(row["process"])), str(row["size"]), str(row["variant"]), tuple(map(float, rounds)))


@dataclass(frozen=True)
class Tally:
    kernel: str
    variant: str
    pairs: int
    slower: dict[float, int]  # per threshold

    def rate(self, threshold: float) -> float:
        return self.slower[threshold] / self.pairs if self.pairs else 0.0


def every_baseline(
    measurements: Sequence[Measurement],
    thresholds: Sequence[float],
    *,
    unchanged: str = "A/A",
    alpha: float = 0.01,
    planned_judgements: int = 1,
    method: str = "cupti",
) -> list[Tally]:
    """Each (kernel, variant) measurement judged against every other process's `unchanged`
    measurement of that kernel; the noise prior pooled from all unchanged measurements."""
    by_key = {(m.process, m.kernel, m.variant): m for m in measurements}
    processes = sorted({m.process for m in measurements})
    kernels = list(dict.fromkeys(m.kernel for m in measurements))
    variants = list(dict.fromkeys(m.variant for m in measurements))
    prior = NoisePrior()
    for m in measurements:
        if m.variant == unchanged:
            prior.add(DEVICE, method, m.rounds_ms)
    out = []
    for kernel, variant in itertools.product(kernels, variants):
        slower = dict.fromkeys(thresholds, 0)
        pairs = 0
        for current, base in itertools.permutations(processes, 2):
            now, then = by_key.get((current, kernel, variant)), by_key.get((base, kernel, unchanged))
            if now is None or then is None:
                continue
            pairs += 1
            for threshold in thresholds:
                verdict = judge(
                    Rounds(method, now.rounds_ms),
                    Rounds(method, then.rounds_ms),
                    device=DEVICE,
                    threshold=threshold,
                    alpha=alpha,
                    planned_judgements=planned_judgements,
                    prior=prior,
                ).verdict
                slower[threshold] += verdict is Verdict.SLOWER
        if pairs:
            out.append(Tally(kernel, variant, pairs, slower))
    return out


@dataclass(frozen=True)
class Simulation:
    kernel: str
    slowdown: float
    trials: int
    slower: int

    @property
    def rate(self) -> float:
        return self.slower / self.trials


class _Design(TypedDict):
    trials: int
    rounds: int
    baseline_rounds: int
    threshold: float
    alpha: float
    suite_size: int


class SimulationOptions(_Design, total=False):
    """How simulate() draws and judges: trials, rounds of a measurement and of its baseline, the
    judgement's floor, alpha and suite size (always); the seed (0) and timing method ("cupti")."""

    seed: int
    method: str


def simulate(
    pools: Mapping[str, Sequence[float]], slowdowns: Sequence[float], **options: Unpack[SimulationOptions]
) -> list[Simulation]:
    """Per kernel and slowdown: how often a measurement of `rounds` rounds, scaled by 1 + slowdown,
    is judged slower than a baseline of `baseline_rounds` rounds, both drawn from the kernel's pool of
    measured rounds, at the level alpha / suite_size, with the prior pooled from every pool."""
    trials, rounds, baseline_rounds = options["trials"], options["rounds"], options["baseline_rounds"]
    threshold, alpha, suite_size = options["threshold"], options["alpha"], options["suite_size"]
    seed, method = options.get("seed", 0), options.get("method", "cupti")
    rng = random.Random(seed)
    need = rounds + baseline_rounds
    short = [kernel for kernel, pool in pools.items() if len(pool) < need]
    if short:
        raise ValueError(
            f"each kernel needs at least {need} measured rounds ({rounds} + {baseline_rounds}); "
            f"too few for: {', '.join(short)}"
        )
    prior = NoisePrior()
    for pool in pools.values():
        prior.add(DEVICE, method, pool)
    out = []
    for kernel, pool in pools.items():
        for slowdown in slowdowns:
            slower = 0
            for _ in range(trials):
                drawn = rng.sample(list(pool), need)
                base = Rounds(method, tuple(drawn[:baseline_rounds]))
                current = Rounds(method, tuple(v * (1 + slowdown) for v in drawn[baseline_rounds:]))
                verdict = judge(
                    current,
                    base,
                    device=DEVICE,
                    threshold=threshold,
                    alpha=alpha,
                    planned_judgements=suite_size,
                    prior=prior,
                ).verdict
                slower += verdict is Verdict.SLOWER
            out.append(Simulation(kernel, slowdown, trials, slower))
    return out
