"""The one judge: is this measurement slower, faster or the same as its baseline?

Used by kernel_bench, by saved-run compare (`python -m pytest_kernelperf compare`) and by the
studies that re-judge recorded data. Pure logic: no torch, no pytest.

The model. A measurement is R rounds (each its own warm-up, sampling window and memory placement)
and each round gives one location (the midmean of its samples). On a GPU the level a round lands on
is re-drawn every round, and a process's level moves again beyond its rounds; a baseline may come
from several recording processes. The judge compares the mean log level of this run with the mean
over the baseline's processes:

* difference d = mean(log current rounds) - mean over processes of mean(log baseline rounds);
  ratio = exp(d);
* round noise s^2: the kernel's rounds pooled within processes, shrunk toward a prior fitted to the
  baseline set (verdict/prior.py); between-process noise sp^2: the spread of the baseline's
  processes and of the kernel's past runs, shrunk toward its own fitted prior, never below the
  quantisation of the timer's step; a baseline from another GPU adds that card's part;
* Student t with Satterthwaite's degrees of freedom, one-sided, at the per-judgement level alpha / m,
  m being the number of judgements the run plans (Bonferroni: alpha is the suite's false-alarm rate);
* "slower" needs that evidence AND the ratio beyond the practical floor `threshold`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, TypedDict

from pytest_kernelperf.formatting import duration, percent
from pytest_kernelperf.model.result import POWER, Comparison, Throttling, Verdict
from pytest_kernelperf.verdict import busy_host, noise, occasions
from pytest_kernelperf.verdict import prior as prior_mod
from pytest_kernelperf.verdict.messages import UPDATE_HINT

if TYPE_CHECKING:
    from typing import Unpack

MODEL = "t test on log round locations"
# A throttled measurement may still be judged when throttling cannot explain the change: a clock
# drop of x% slows a kernel by at most about x/(1-x), never by 2x.
THROTTLE_LIMIT_RATIO = 2.0
THROTTLE_MARGIN = 3.0  # "a wide margin": the change must exceed 3x what the clock drop explains
# A kernel at the power cap in its baseline and in this run: how far its level follows the SM clock
# as NVML reads it after the rounds (d log time / d log clock, negated). Two cuBLAS GEMMs (bf16, fp8)
# at the cap on four H200s (2026-12-03), processes up to 22% off their baseline's clock: 0.24 fitted
# on the 15 unchanged judgements (0.21-0.43 with one card left out), 0.16 on all 43 with the slowed
# ones (their planted factor taken as exact); docs/measurement.md. Far below 1: the read is a noisy
# stand-in for the clock during the rounds, so time x clock (cycles) would over-correct; at 0 an fp8
# GEMM whose process ran 22% below its baseline's clock read +5.7% `slower` unchanged.
POWER_CAP_CLOCK_ELASTICITY = 0.2
# What the fit supports is less than its points span: the elasticity rests on one fp8 GEMM's four
# clock-moved points on two cards (a bootstrap over cards puts it at 0.21-1.07), so a ratio beyond
# 1.15 is taken at 1.15 and no clock read excuses more than 0.2 x log(1.15), about 2.8%.
POWER_CAP_CLOCK_RANGE = 1.15
# The adjustment's own uncertainty, added to the variance of an adjusted test: the elasticity's (SE
# 0.22, from that bootstrap's interval) times the log of the clocks' ratio, and the scatter the
# unchanged GEMMs kept once adjusted (SD 1.1% at clocks up to the bound apart: one NVML read after the
# rounds stands in for the clock during them), taken in proportion to how far the clocks sat apart
# (none at one clock, all of it at the bound). An adjusted `same` is as wide as what the fit does not
# know, and clocks a few MHz apart widen nothing.
POWER_CAP_ELASTICITY_SE = 0.22
POWER_CAP_RESIDUAL_SD = 0.011


class StoredMetric(Protocol):
    """What the judge reads of a stored measurement (model/baseline.py's MetricRecord)."""

    @property
    def method(self) -> str: ...
    @property
    def rounds_ms(self) -> tuple[float, ...]: ...
    @property
    def median_ms(self) -> float: ...
    @property
    def process_rounds(self) -> tuple[int, ...]: ...
    @property
    def resolution_ms(self) -> float | None: ...
    @property
    def occasion_processes(self) -> tuple[int, ...]: ...


@dataclass(frozen=True)
class Rounds:
    """One side of a comparison: a method and its per-round locations (ms per call), grouped by the
    processes that measured them, with the timer's step and the GPU that measured them."""

    method: str
    rounds_ms: tuple[float, ...]
    legacy: bool = False  # a schema-1 baseline entry: its median stands in as one round
    process_rounds: tuple[int, ...] = ()  # rounds of each recording process; (): one process
    step_ms: float | None = None  # the timer's step as seen in the samples
    card: str | None = None  # the GPU's identity (its UUID) where known
    # How many of the processes each recording occasion ran, in order; (): one occasion.
    occasion_processes: tuple[int, ...] = ()

    @classmethod
    def stored(
        cls,
        method: str,
        rounds_ms: Sequence[float],
        median_ms: float,
        process_rounds: Sequence[int] = (),
        step_ms: float | None = None,
        card: str | None = None,
        occasion_processes: Sequence[int] = (),
    ) -> Rounds:
        """A stored measurement (baseline entry): a schema-1 entry has no rounds, and its median
        stands in as one round, judged with the prior's noise."""
        if rounds_ms:
            return cls(
                method,
                tuple(rounds_ms),
                process_rounds=tuple(process_rounds),
                step_ms=step_ms,
                card=card,
                occasion_processes=tuple(occasion_processes),
            )
        return cls(method, (median_ms,), legacy=True, step_ms=step_ms, card=card)

    @classmethod
    def of_stored(cls, record: StoredMetric, card: str | None = None) -> Rounds:
        """A baseline entry's (or a saved run's) record of one metric."""
        return cls.stored(
            record.method,
            record.rounds_ms,
            record.median_ms,
            record.process_rounds,
            record.resolution_ms,
            card,
            record.occasion_processes,
        )

    @property
    def processes(self) -> list[tuple[float, ...]]:
        return prior_mod.groups(self.rounds_ms, self.process_rounds)

    @property
    def level_ms(self) -> float:
        """The figure judged: the mean over processes of each one's geometric mean of rounds."""
        parts = self.processes
        return math.exp(math.fsum(math.log(noise.geometric_mean(p)) for p in parts) / len(parts))


def throttling_explains(throttling: Throttling, ratio: float) -> bool:
    """Whether the recorded clocks could account for a change of this ratio: a kernel that meets
    the power cap at the same clock as its baseline still gets a verdict."""
    if ratio > THROTTLE_LIMIT_RATIO or ratio < 1 / THROTTLE_LIMIT_RATIO:
        return False
    slowdown = throttling.clock_slowdown()
    return slowdown is not None and abs(ratio - 1) <= THROTTLE_MARGIN * slowdown


class _Floors(TypedDict):
    device: str
    threshold: float  # the practical floor: a relative change that counts
    alpha: float  # the run's false-alarm rate, shared by its planned judgements


class JudgeOptions(_Floors, total=False):
    """What judge() is told beside the two measurements: the device, the floors and level (always),
    and what the run knows of the noise, the clock and the kernel's past runs."""

    planned_judgements: int  # Bonferroni's m (1 if not said)
    prior: prior_mod.NoisePrior | None
    throttling: Throttling | None
    baseline_name: str  # what the baseline is called in reasons ("baseline" if not said)
    history: Sequence[Sequence[float]] | None
    # The host's load average per core after this run's rounds, where the host measured the time
    # (verdict/busy_host.py); None: not read, or a device time.
    host_load: float | None


def judge(current: Rounds, baseline: Rounds | None, **options: Unpack[JudgeOptions]) -> Comparison:
    """The verdict on `current` against `baseline` (see the module docstring for the model).
    `history`: the rounds of this kernel's past runs (oldest first), to learn its between-process
    noise from."""
    device, threshold, alpha = options["device"], options["threshold"], options["alpha"]
    planned = max(1, options.get("planned_judgements", 1))
    prior, throttling, history = options.get("prior"), options.get("throttling"), options.get("history")
    baseline_name = options.get("baseline_name", "baseline")
    if baseline is None:
        return Comparison(
            Verdict.NEW,
            reason=f"no {baseline_name} for this device and cache mode",
            threshold=threshold,
            alpha=alpha,
            planned_judgements=planned,
        )
    if baseline.method != current.method:
        return Comparison(
            Verdict.INCOMPARABLE,
            reason=f"{baseline_name} measured with {baseline.method}, this run with {current.method}",
            threshold=threshold,
            alpha=alpha,
            planned_judgements=planned,
        )
    test = round_test(current, baseline, device, alpha / planned, prior, history)
    notes = []
    if baseline.legacy:
        notes.append(
            f"the {baseline_name} predates rounds (schema 1): its median was judged as a single round "
            f"with the prior noise; {UPDATE_HINT}"
        )
    time_ratio = None  # the time's ratio, where the test judges time adjusted for the clock
    if throttling is not None and (adjusted := _clock_adjusted(test, throttling, threshold)) is not test:
        time_ratio, test = test.ratio, adjusted
    ratio = test.ratio
    verdict = _verdict(test, threshold)
    if throttling is not None:
        verdict, note = _throttled(verdict, test, threshold, throttling, time_ratio)
        notes.insert(0, note)
    elif verdict is Verdict.SAME and ratio > 1 + threshold:
        notes.append(NOT_SIGNIFICANT)
    verdict, note = busy_host.judged_on_host(
        verdict, current.rounds_ms, baseline.rounds_ms, options.get("host_load"), baseline_name
    )
    if note:
        notes.insert(0, note)
    remedy = ROUNDS_REMEDY if test.round_share >= 0.5 else PROCESSES_REMEDY
    verdict, note = undetermined(verdict, test.detectable, threshold, remedy)
    if note:
        notes.append(note)
    offset = occasions.needs_occasions(baseline, baseline.step_ms)
    if offset is not None:
        notes.append(offset.note)
    return Comparison(
        verdict,
        ratio=ratio,
        p_value=test.p_faster if ratio < 1 else test.p_slower,
        reason="; ".join(notes),
        ratio_ci=test.ratio_ci,
        level=test.level,
        noise_sd=test.sd,
        noise_source=test.source,
        process_sd=test.process.sd if test.process else None,
        process_source=test.process.source if test.process else "",
        detectable=max(test.detectable, threshold),
        rounds=len(current.rounds_ms),
        baseline_rounds=len(baseline.rounds_ms),
        threshold=threshold,
        alpha=alpha,
        planned_judgements=planned,
        time_ratio=time_ratio,
    )


def _verdict(test: RoundTest, threshold: float) -> Verdict:
    """The verdict of a test: slower or faster needs the evidence at its level AND the ratio beyond
    the floor."""
    if test.p_slower < test.level and test.ratio > 1 + threshold:
        return Verdict.SLOWER
    if test.p_faster < test.level and test.ratio < 1 / (1 + threshold):
        return Verdict.FASTER
    return Verdict.SAME


def _clock_adjusted(test: RoundTest, throttling: Throttling, threshold: float) -> RoundTest:
    """Where the baseline ran at the power cap as this run did and both clocks are known, the test of
    time adjusted for how far the clocks sat apart (POWER_CAP_CLOCK_ELASTICITY, the clocks' ratio
    within POWER_CAP_CLOCK_RANGE), its variance widened by what the fit does not know; else the test
    itself. A clock drop is never excused in part: where this run's clock sat lower and its time rose
    beyond what the fit says the drop explains (the adjusted change still beyond the threshold), the
    change may have drawn the power that lowered the clock, and the time is judged as it is, with the
    widened variance."""
    clock_ratio = throttling.clock_ratio()
    if not throttling.at_power_cap() or clock_ratio is None or clock_ratio == 1:
        return test
    bounded = min(max(clock_ratio, 1 / POWER_CAP_CLOCK_RANGE), POWER_CAP_CLOCK_RANGE)
    shift = POWER_CAP_CLOCK_ELASTICITY * math.log(bounded)
    apart = abs(math.log(bounded))
    extra = (POWER_CAP_ELASTICITY_SE * apart) ** 2 + (
        POWER_CAP_RESIDUAL_SD * apart / math.log(POWER_CAP_CLOCK_RANGE)
    ) ** 2
    se = math.sqrt(test.se**2 + extra)
    d = math.log(test.ratio)
    if clock_ratio > 1 and d - shift > math.log1p(threshold):
        shift = 0.0
    return replace(
        _t_test(d - shift, se, test.df, test.level, test.sd, test.source),
        process=test.process,
        round_share=test.round_share,
    )


def _throttled(
    verdict: Verdict, test: RoundTest, threshold: float, throttling: Throttling, time_ratio: float | None
) -> tuple[Verdict, str]:
    """A throttled measurement's verdict and the note that says why. A baseline that ran under the
    same throttling (a heavy GEMM at the power cap in every process) judges the time as it is, adjusted
    for the clocks where both are known (the test arrives adjusted): the cap is the kernel's usual
    state. Otherwise a lower clock only ever makes a run look slower: it cannot hide a slowdown, so
    only a "slower" is ever left unjudged, and only where the clocks account for it. Where the
    baseline's clock is known the change is judged again in SM cycles (time x clock, at the baseline's
    clock): a slowdown the cycles also show is the code's, whatever the clock did; one the cycles do
    not show is the clock's (`unreliable`)."""
    ratio = test.ratio
    if throttling.as_in_baseline():
        judged = f"the change of {ratio - 1:+.1%} is judged on time"
        if time_ratio is not None:
            at = f"at {throttling.clock_mhz} MHz against the baseline's {throttling.baseline_clock_mhz} MHz"
            adjusted = f"{ratio - 1:+.1%} adjusted for the clock"
            if ratio == time_ratio:  # the drop was not excused (_clock_adjusted)
                adjusted = (
                    "beyond what the clock drop explains: judged on time, with the adjustment's uncertainty"
                )
            judged = f"time changed {time_ratio - 1:+.1%} {at}, {adjusted}"
        described = throttling.describe(clocks_explain=False)
        return verdict, f"{described}, as the baseline's rounds were: the kernel's usual state; {judged}"
    described = throttling.describe()
    if verdict is not Verdict.SLOWER:
        return verdict, f"{described}; no slowdown despite it"
    clock_ratio = throttling.clock_ratio()
    if clock_ratio is not None:
        cycles = _t_test(math.log(ratio / clock_ratio), test.se, test.df, test.level, test.sd, test.source)
        at = f"at {throttling.clock_mhz} MHz against the baseline's {throttling.baseline_clock_mhz} MHz"
        if _verdict(cycles, threshold) is Verdict.SLOWER:
            return Verdict.SLOWER, f"{described}; {at} the SM cycles are {cycles.ratio - 1:+.1%} too"
        return Verdict.UNRELIABLE, (
            f"{described}: {at} the SM cycles changed {cycles.ratio - 1:+.1%}, within the noise, so a "
            f"change of {ratio - 1:+.1%} in time may be the clock's"
        )
    if throttling_explains(throttling, ratio):
        return Verdict.UNRELIABLE, f"{described}: a change of {ratio - 1:+.1%} may be the clock's"
    return Verdict.SLOWER, f"{described}, which cannot explain a change of {ratio - 1:+.1%}"


# A `same` means the test could have seen a change that matters. Where the smallest slowdown it
# detects (with POWER) lies beyond this many times the threshold, and beyond UNDETERMINED_FLOOR, it
# could not: the verdict is `undetermined`, with the remedy. At the default 0.5% threshold the bar
# is 10%: on four H200s the A/A judgements of ordinary kernels detected 1-8% (median 5%), a
# placement-sensitive histogram 15-43%, a loaded CPU 700%.
UNDETERMINED_FACTOR = 4.0
UNDETERMINED_FLOOR = 0.10
# The note of a `same` whose change lies beyond the threshold without the evidence for it.
NOT_SIGNIFICANT = "beyond the threshold, not significant"
# The remedy follows where the test's uncertainty lies: in the rounds, more rounds shrink it; in how
# far a level moves between processes and occasions (an NVRTC SAXPY held in L2 on an H200: its rounds
# 2.3% apart, its processes' levels 1.5% beyond that), only more of those or the pairing do.
ROUNDS_REMEDY = (
    "more rounds (--kernelperf-rounds, --kernelperf-max-rounds), pairs with the code it replaces "
    "(--kernelperf-against), or a quieter machine"
)
PROCESSES_REMEDY = (
    "most of its uncertainty is how far a level may move between processes and occasions, which more "
    "rounds do not shrink: a baseline recorded in more processes or on more occasions "
    "(--kernelperf-record-processes, --kernelperf-add-occasion), a run history (--kernelperf-history), "
    "or pairs with the code it replaces (--kernelperf-against)"
)


def undetermined_beyond(threshold: float) -> float:
    """The smallest detectable slowdown beyond which a `same` is `undetermined`."""
    return max(UNDETERMINED_FACTOR * threshold, UNDETERMINED_FLOOR)


def undetermined_note(threshold: float, remedy: str) -> str:
    """Why a call is `undetermined` and what to do, the same words for every call of a threshold
    (each report prints it once): the call's own figure, the smallest slowdown it could detect, is
    the `±` beside its verdict. The bar and the threshold are named apart: the threshold fails a
    test, the bar says how far a `same` may see."""
    bar = undetermined_beyond(threshold)
    return (
        f"undetermined: the smallest slowdown this test could detect (the ± of its verdict) is beyond "
        f"{percent(bar, 3)}, the most a `same` may leave unseen ({UNDETERMINED_FACTOR:g}x the "
        f"{percent(threshold, 3)} threshold that fails a test, at least {percent(UNDETERMINED_FLOOR)}); "
        f"for a verdict: {remedy}"
    )


def undetermined(verdict: Verdict, detectable: float, threshold: float, remedy: str) -> tuple[Verdict, str]:
    """`same` turned `undetermined` where the test could not have seen a change that matters."""
    if verdict is not Verdict.SAME or not detectable > undetermined_beyond(threshold):
        return verdict, ""
    return Verdict.UNDETERMINED, undetermined_note(threshold, remedy)


@dataclass(frozen=True)
class ProcessNoise:
    """The between-process SD a judgement used (relative, the timer's step included) and its source."""

    sd: float
    source: str


@dataclass(frozen=True)
class RoundTest:
    ratio: float
    ratio_ci: tuple[float, float]
    p_slower: float
    p_faster: float
    level: float
    sd: float  # round-to-round relative SD used
    df: float
    source: str
    detectable: float  # smallest relative slowdown detected with POWER
    se: float = 0.0  # the standard error of the log ratio
    process: ProcessNoise | None = None  # the between-process part, when the test has one
    round_share: float = 1.0  # the rounds' part of the variance of the difference


# A baseline from another GPU of the same model: each kernel's level may sit elsewhere on that card
# (relative SD, added to the between-process part). Measured between two H200s on 38 kernels of the
# scoring suite: per-kernel offsets from -2.5% (memory-bound) to +4.2% (a compiled MLP), GEMMs
# about +1.1%, SD 1.22% (docs/measurement.md, "Cards").
CARD_LEVEL_SD = 0.012
CARD_LEVEL_DF = 37.0  # its degrees of freedom: 38 kernels' offsets
# The degrees of freedom of a variance that is known rather than estimated (the timer's step).
KNOWN_DF = 1e4


def round_test(
    current: Rounds,
    baseline: Rounds,
    device: str,
    level: float,
    prior: prior_mod.NoisePrior | None = None,
    history: Sequence[Sequence[float]] | None = None,
) -> RoundTest:
    """Welch-type t test of the mean log level of this run against the baseline's processes.

    Round variance s^2: the kernel's rounds (pooled within each process), shrunk toward the baseline
    set's fitted prior. Between-process variance sp^2: the spread of the baseline's recording
    processes within their occasions (beyond what their rounds explain), shrunk toward its prior,
    and never below a timer step's quantisation. Between-occasion variance tau^2: the class's
    (verdict/noise.py), or with K >= 2 recording occasions the spread of the occasions' levels
    beyond what their processes explain, shrunk toward it (verdict/occasions.py). The kernel's past
    runs, each its own occasion, scale sp^2 + tau^2 to what they show. With N baseline processes
    the difference has variance s^2 (1/n + sum(1/n_p)/N^2) + sp^2 (1 + 1/N) + tau^2 (1 + w), w the
    sum of the occasions' squared shares of the processes (1/K for K alike); degrees of freedom by
    Satterthwaite."""
    if not current.rounds_ms or not baseline.rounds_ms:
        raise ValueError("a comparison needs at least one round on each side")
    noises = prior or prior_mod.NoisePrior()
    parts = baseline.processes
    base_level = baseline.level_ms
    d = math.log(current.level_ms / base_level)
    rounds_prior = noises.for_kernel(device, current.method, base_level)
    round_var, own_df = prior_mod.within_variance([current.rounds_ms, *parts])
    df_rounds = rounds_prior.df + own_df
    s2 = (rounds_prior.df * rounds_prior.sd**2 + own_df * round_var) / df_rounds
    inverse = math.fsum(1 / len(p) for p in parts)
    n_processes = len(parts)
    round_part = s2 * (1 / len(current.rounds_ms) + inverse / n_processes**2)
    sp2, df_process, source = _between_processes(
        current,
        baseline,
        noises.for_process(device, current.method, base_level),
        s2,
        (round_var if own_df else s2),
    )
    occasion = occasions.occasion_term(
        prior_mod.by_occasion(parts, baseline.occasion_processes), base_level, current.method, sp2, s2
    )
    learnt = prior_mod.history_variance(history) if history else None
    if learnt is not None and sp2 + occasion.variance > 0:
        source += f"; both scaled by {len(history or ())} past runs"
    (sp2, df_process), (tau2, df_occasion) = _scaled_by_history(
        (sp2, df_process), (occasion.variance, occasion.df), learnt
    )
    process_part = sp2 * (1 + 1 / n_processes)
    occasion_part = tau2 * (1 + occasions.level_weight(baseline.occasion_processes))
    if occasion_part:
        source += f"; plus {math.sqrt(tau2):.2%} between occasions ({occasion.evidence})"
    card_part = 0.0
    if current.card and baseline.card and current.card != baseline.card:
        card_part = CARD_LEVEL_SD**2
        source += f"; plus {CARD_LEVEL_SD:.2%} for a baseline from another GPU"
    variance = round_part + process_part + occasion_part + card_part
    df = variance**2 / (
        round_part**2 / df_rounds
        + process_part**2 / df_process
        + occasion_part**2 / df_occasion
        + card_part**2 / CARD_LEVEL_DF
    )
    own = f"this kernel's {len(current.rounds_ms) + len(baseline.rounds_ms)} rounds, shrunk toward "
    test = _t_test(
        d, math.sqrt(variance), df, level, math.sqrt(s2), (own if own_df else "") + rounds_prior.source
    )
    process = ProcessNoise(math.sqrt(sp2), source)
    return replace(test, process=process, round_share=round_part / variance if variance else 1.0)


def _scaled_by_history(
    process: tuple[float, float], occasion: tuple[float, float], learnt: tuple[float, float] | None
) -> tuple[tuple[float, float], tuple[float, float]]:
    """The between-process and between-occasion variances with their degrees of freedom, scaled by
    the kernel's past runs (`learnt`: their run-to-run variance and its degrees of freedom). The
    run is an occasion of its own; past runs, each its own occasion, show this kernel's whole
    run-to-run variance (process and occasion), which then scales both terms, in their proportion,
    by the weight of its evidence."""
    (sp2, df_process), (tau2, df_occasion) = process, occasion
    if learnt is None or sp2 + tau2 <= 0:
        return process, occasion
    run_to_run = sp2 + tau2
    df_prior = run_to_run**2 / (sp2**2 / df_process + tau2**2 / df_occasion)
    pooled = (df_prior * run_to_run + learnt[1] * max(learnt[0], 0.0)) / (df_prior + learnt[1])
    scale = pooled / run_to_run
    return (sp2 * scale, df_process + learnt[1]), (tau2 * scale, df_occasion + learnt[1])


def _between_processes(
    current: Rounds, baseline: Rounds, process_prior: prior_mod.PriorSD, s2: float, round_var: float
) -> tuple[float, float, str]:
    """sp^2, its degrees of freedom and its source: the baseline's recording processes' spread
    within their occasions beyond what their rounds explain (s2), shrunk toward `process_prior`;
    raised to a timer step's quantisation where the rounds (`round_var`) sit on its steps."""
    parts = baseline.processes
    n_processes = len(parts)
    pieces = [(process_prior.sd**2, process_prior.df)]
    spread = prior_mod.level_variance(parts, baseline.occasion_processes)
    source = process_prior.source
    if spread is not None:
        pieces.append((spread[0] - s2 * math.fsum(1 / len(p) for p in parts) / n_processes, spread[1]))
        source = f"{n_processes} recording processes, shrunk toward {process_prior.source}"
    df_process = math.fsum(df for _, df in pieces)
    sp2 = max(math.fsum(v * df for v, df in pieces) / df_process, 0.0)
    # Rounds that hardly move (SD below half a step's uniform SD) sit on the timer's steps without
    # dithering across them: such a level may land anywhere within a step from one process to the next.
    # Rounds that move more (each its own placement and sampling window) carry the step's part in
    # their own spread, which the round variance holds (on an H200, 82 A/A judgements of 1-10 us kernels
    # moved by a third of what a step-wide floor would allow: docs/measurement.md).
    step = max(current.step_ms or 0.0, baseline.step_ms or 0.0)
    quantised = (step / baseline.level_ms) ** 2 / 12
    if quantised > sp2 and round_var < quantised / 4:
        sp2 = quantised
        df_process = KNOWN_DF  # the step is known, not estimated
        source += f"; raised to {math.sqrt(quantised):.2%} by the timer's {duration(step, 2)} step"
    return sp2, df_process, source


def _t_test(d: float, se: float, df: float, level: float, sd: float, source: str) -> RoundTest:
    # Student's t from scipy.special (stdtr: the distribution function, stdtrit: its inverse), whose
    # import costs a third of scipy.stats's; imported on first use: the plugin loads in every run.
    from scipy.special import stdtr, stdtrit

    t = d / se
    critical = float(stdtrit(df, 1 - level))
    power = float(stdtrit(df, POWER))
    return RoundTest(
        ratio=math.exp(d),
        ratio_ci=(math.exp(d - critical * se), math.exp(d + critical * se)),
        p_slower=float(stdtr(df, -t)),
        p_faster=float(stdtr(df, t)),
        level=level,
        sd=sd,
        df=df,
        source=source,
        detectable=math.exp((critical + power) * se) - 1,
        se=se,
    )


# The weight of the round-noise prior in a paired test. Pairs spread far more unevenly from kernel to
# kernel than the prior's class value says: limma's moment fit to the log-ratio variances of 33
# kernels in 11 processes on two H200s (2026-12-01, docs/measurement.md) gave 1.4 degrees of
# freedom. At the prior's usual 4 the p-values of those A/A' pairs ran 1.5-5x too small in the tail.
PAIRED_PRIOR_DF = 1.4


def paired_test(
    fn_ms: Sequence[float],
    reference_ms: Sequence[float],
    device: str,
    method: str,
    limit: float,
    level: float,
    prior: prior_mod.NoisePrior | None = None,
) -> RoundTest:
    """Paired t test of log(fn round / reference round) against log(limit): rounds interleaved in one
    run share their drift, so the pairing removes it. The noise of one log ratio is shrunk toward
    twice the prior's round variance (two independent round levels)."""
    if len(fn_ms) != len(reference_ms) or not fn_ms:
        raise ValueError("a paired test needs as many rounds of fn as of its reference, at least one")
    diffs = [math.log(a / b) for a, b in zip(fn_ms, reference_ms, strict=True)]
    mean = math.fsum(diffs) / len(diffs)
    own_squares = math.fsum((x - mean) ** 2 for x in diffs)
    own_df = len(diffs) - 1
    base_prior = (prior or prior_mod.NoisePrior()).for_kernel(
        device, method, noise.geometric_mean(reference_ms)
    )
    prior_df = min(base_prior.df, PAIRED_PRIOR_DF)
    df = prior_df + own_df
    variance = (prior_df * 2 * base_prior.sd**2 + own_squares) / df
    se = math.sqrt(variance / len(diffs))
    source = f"{len(diffs)} paired rounds, shrunk toward {base_prior.source}" if own_df else base_prior.source
    test = _t_test(mean - math.log(limit), se, df, level, math.sqrt(variance / 2), source)
    # _t_test saw the difference from the limit; report the ratio itself.
    return RoundTest(
        se=se,
        ratio=math.exp(mean),
        ratio_ci=(test.ratio_ci[0] * limit, test.ratio_ci[1] * limit),
        p_slower=test.p_slower,
        p_faster=test.p_faster,
        level=level,
        sd=test.sd,
        df=df,
        source=source,
        detectable=test.detectable,
    )


_THRESHOLD = re.compile(r"^\s*(?P<num>[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(?P<pct>%?)\s*$")
_EXPECTED = "expected a fraction such as 0.05 or a percentage such as 5%"


def _number(value: object) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{_EXPECTED}, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    match = _THRESHOLD.match(str(value))
    if not match:
        raise ValueError(f"{_EXPECTED}, got {value!r}")
    return float(match["num"]) / (100 if match["pct"] else 1)


def parse_threshold(value: object) -> float:
    """A relative change from a fraction (0.05) or a percentage ("5%"). Changes of 100% and more are
    allowed: threshold 2.0 ("200%") fails only a kernel more than 3x slower."""
    number = _number(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"a threshold must be 0 or more (0.005, 5%, 2.0 for 3x slower), got {value!r}")
    return number


def parse_fraction(value: object) -> float:
    """A probability or fraction strictly between 0 and 1, as 0.01 or "1%"."""
    number = _number(value)
    if not math.isfinite(number) or not 0 < number < 1:
        raise ValueError(f"must lie strictly between 0 and 1 (0% and 100%), got {value!r}")
    return number
