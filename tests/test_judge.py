"""The one judge (verdict/judge.py): the round model, its evidence, and its false-alarm control."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from pytest_kernelperf.measure.timing import Target
from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.model.result import Comparison, Throttling, Verdict
from pytest_kernelperf.testing import ScriptedTimer, sampling_plan
from pytest_kernelperf.verdict import noise, prior
from pytest_kernelperf.verdict.judge import (
    POWER_CAP_CLOCK_ELASTICITY,
    POWER_CAP_CLOCK_RANGE,
    Rounds,
    judge,
    parse_fraction,
    parse_threshold,
    throttling_explains,
)

DEVICE = "NVIDIA H200"


def rounds(level: float, seed: int, n: int, sd: float = 0.002) -> Rounds:
    rng = random.Random(seed)
    return Rounds("cupti", tuple(level * math.exp(rng.gauss(0, sd)) for _ in range(n)))


def verdict_of(current: Rounds, baseline: Rounds | None, **kwargs: object) -> Verdict:
    settings: dict[str, object] = {"device": DEVICE, "threshold": 0.005, "alpha": 0.01, **kwargs}
    return judge(current, baseline, **settings).verdict  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("level", "verdict"),
    [(0.130, Verdict.SAME), (0.1339, Verdict.SLOWER), (0.260, Verdict.SLOWER), (0.125, Verdict.FASTER)],
)
def test_verdicts_of_a_130_us_kernel(level: float, verdict: Verdict) -> None:
    assert verdict_of(rounds(level, 1, 5), rounds(0.130, 2, 8)) is verdict


def test_the_ratio_is_the_ratio_of_geometric_means_of_rounds() -> None:
    current, baseline = Rounds("cupti", (2.0, 8.0)), Rounds("cupti", (4.0,))
    result = judge(current, baseline, device=DEVICE, threshold=0.005, alpha=0.01)
    assert result.ratio == pytest.approx(1.0)
    assert current.level_ms == pytest.approx(4.0)


def test_a_change_beyond_the_floor_but_within_the_noise_is_same() -> None:
    # 2.2 us kernel, 2% slower: the built-in prior (0.8% per round) cannot tell at alpha 0.01 / 200.
    result = judge(
        Rounds("cupti", (0.00224,) * 3),
        Rounds("cupti", (0.0022,) * 5),
        device=DEVICE,
        threshold=0.005,
        alpha=0.01,
        planned_judgements=200,
    )
    assert result.verdict is Verdict.SAME
    assert result.reason == "beyond the threshold, not significant"
    assert result.p_value is not None and result.level is not None and result.p_value >= result.level


def test_a_significant_change_within_the_practical_floor_is_same() -> None:
    verdict = verdict_of(rounds(0.1313, 1, 5, sd=0.0001), rounds(0.130, 2, 8, sd=0.0001), threshold=0.02)
    assert verdict is Verdict.SAME


def test_threshold_above_one_fails_only_beyond_that_many_times_slower() -> None:
    base = rounds(0.130, 2, 8)
    assert verdict_of(rounds(0.130 * 2.9, 1, 5), base, threshold=2.0) is Verdict.SAME
    assert verdict_of(rounds(0.130 * 3.2, 1, 5), base, threshold=2.0) is Verdict.SLOWER


def test_the_level_is_alpha_over_the_planned_judgements() -> None:
    result = judge(
        rounds(0.131, 1, 5),
        rounds(0.130, 2, 8),
        device=DEVICE,
        threshold=0.005,
        alpha=0.01,
        planned_judgements=40,
    )
    assert result.level == pytest.approx(0.01 / 40)
    assert result.planned_judgements == 40
    assert (
        judge(rounds(0.131, 1, 5), rounds(0.13, 2, 8), device=DEVICE, threshold=0, alpha=0.01).level == 0.01
    )


def test_evidence_gives_interval_p_level_noise_and_detectable_change() -> None:
    result = judge(
        rounds(0.26, 1, 5),
        rounds(0.13, 2, 8),
        device=DEVICE,
        threshold=0.005,
        alpha=0.01,
        planned_judgements=4,
    )
    text = result.evidence()
    assert result.ratio_ci is not None and result.ratio_ci[0] < 2.0 < result.ratio_ci[1]
    assert "ratio 2.00" in text and "99.5% CI 1.9" in text
    assert "against level 0.0025 (alpha 0.01 over 4 judgements)" in text
    assert "round noise SD" in text
    assert "this kernel's 13 rounds, shrunk toward built-in prior for 100 us-1 ms kernels" in text
    assert "smallest detectable slowdown" in text and "at 95% power" in text
    assert "Mann-Whitney" not in text


def test_measurements_of_different_methods_are_not_compared() -> None:
    result = judge(
        rounds(4.0, 1, 5),
        Rounds("cuda-graph", (1.0,)),
        device=DEVICE,
        threshold=0.005,
        alpha=0.01,
        baseline_name="old.json",
    )
    assert result.verdict is Verdict.INCOMPARABLE and result.ratio is None
    assert result.reason == "old.json measured with cuda-graph, this run with cupti"


def test_no_baseline_is_new() -> None:
    assert verdict_of(rounds(1.0, 1, 5), None) is Verdict.NEW


def test_a_schema_1_baseline_is_one_round_judged_with_the_prior_and_says_so() -> None:
    legacy = Rounds.stored("cupti", (), 0.130)
    assert legacy.legacy and legacy.rounds_ms == (0.130,)
    result = judge(rounds(0.130, 1, 5), legacy, device=DEVICE, threshold=0.005, alpha=0.01)
    assert result.verdict is Verdict.SAME and result.baseline_rounds == 1
    assert "predates rounds (schema 1)" in result.reason
    assert "pytest --kernelperf-update-baselines" in result.reason
    assert "this kernel's 6 rounds" in result.noise_source  # the current rounds still count


def test_throttling_the_clocks_explain_makes_a_modest_change_unreliable() -> None:
    # The SM clock fell 5% within the measurement: a +7.7% change may be the clock's.
    throttled = Throttling(("software power cap",), clock_drop=0.05, rounds=2)
    result = judge(
        rounds(0.14, 1, 5),
        rounds(0.13, 2, 8),
        device=DEVICE,
        threshold=0.005,
        alpha=0.01,
        throttling=throttled,
    )
    assert result.verdict is Verdict.UNRELIABLE
    assert result.reason.startswith(
        "GPU throttled in 2 rounds (software power cap, clocks account for up to 5.3%): a change of +7.7%"
    )


def test_throttling_without_a_clock_drop_explains_nothing() -> None:
    # A heavy kernel that meets the power cap in every process, at its baseline's clock, still gets a
    # verdict: nothing recorded says its clock was lower than when the baseline was made.
    capped = Throttling(("software power cap",), rounds=5, lowest_clock_mhz=1980, baseline_clock_mhz=1980)
    result = judge(
        rounds(0.14, 1, 5), rounds(0.13, 2, 8), device=DEVICE, threshold=0.005, alpha=0.01, throttling=capped
    )
    assert result.verdict is Verdict.SLOWER
    assert "no clock drop recorded), which cannot explain a change of +7.7%" in result.reason


def test_a_clock_below_the_baselines_explains_a_slowdown_of_its_size() -> None:
    lower = Throttling(("software power cap",), rounds=5, lowest_clock_mhz=1800, baseline_clock_mhz=1980)
    assert lower.clock_slowdown() == pytest.approx(0.1)
    assert throttling_explains(lower, 1.08) and not throttling_explains(lower, 1.5)
    same_clock = Throttling(("software power cap",), rounds=5, lowest_clock_mhz=1980, baseline_clock_mhz=1980)
    assert same_clock.clock_slowdown() is None and not throttling_explains(same_clock, 1.01)


def test_throttling_leaves_an_unchanged_kernel_same() -> None:
    # A lower clock only makes a run look slower: "same" under throttling is still a judgement.
    throttled = Throttling(("software power cap",), clock_drop=None, rounds=3)
    result = judge(
        rounds(0.13, 1, 5),
        rounds(0.13, 2, 8),
        device=DEVICE,
        threshold=0.005,
        alpha=0.01,
        throttling=throttled,
    )
    assert result.verdict is Verdict.SAME
    assert result.reason.startswith(
        "GPU throttled in 3 rounds (software power cap, no clock drop recorded); no"
    )


def test_throttling_cannot_hide_an_8x_slowdown() -> None:
    # A Triton matmul 8.6x slower once passed as `unreliable +760.4%`.
    throttled = Throttling(("software power cap",), clock_drop=0.1, rounds=5)
    result = judge(
        rounds(0.13 * 8.6, 1, 5),
        rounds(0.13, 2, 8),
        device=DEVICE,
        threshold=0.005,
        alpha=0.01,
        throttling=throttled,
    )
    assert result.verdict is Verdict.SLOWER
    assert "which cannot explain a change of +760" in result.reason


def test_a_change_far_beyond_the_clock_drop_is_judged() -> None:
    drop = Throttling(("software power cap",), clock_drop=0.02)
    assert throttling_explains(drop, 1.05) and not throttling_explains(drop, 1.10)
    assert verdict_of(rounds(0.13 * 1.2, 1, 5), rounds(0.13, 2, 8), throttling=drop) is Verdict.SLOWER


def test_a_fitted_prior_replaces_the_builtin_one_with_enough_entries() -> None:
    noises = prior.NoisePrior()
    assert noises.for_kernel(DEVICE, "cupti", 0.0022).source == "built-in prior for 1 us-10 us kernels"
    for seed in range(prior.MIN_FIT_ENTRIES):
        noises.add(DEVICE, "cupti", rounds(0.0022, seed, 8, sd=0.004).rounds_ms)
    fitted = noises.for_kernel(DEVICE, "cupti", 0.0025)
    assert f"fitted to {prior.MIN_FIT_ENTRIES} entries on {DEVICE}" in fitted.source
    assert 0.002 < fitted.sd < 0.006
    # Another method or device keeps the built-in prior; another size scales the fit by its class.
    assert noises.for_kernel(DEVICE, "cuda-graph", 0.0022).source.startswith("built-in")
    assert noises.for_kernel("NVIDIA A100", "cupti", 0.0022).source.startswith("built-in")
    large = noises.for_kernel(DEVICE, "cupti", 0.13)
    scale = noise.builtin_round_sd(0.13, "cupti") / noise.builtin_round_sd(0.0025, "cupti")
    assert large.sd == pytest.approx(fitted.sd * scale)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0.05", 0.05),
        ("5%", 0.05),
        (" 12.5 % ", 0.125),
        (0.2, 0.2),
        ("1e-2", 0.01),
        ("0", 0.0),
        (2.0, 2.0),
        ("150%", 1.5),
    ],
)
def test_parse_threshold(text: object, value: float) -> None:
    assert parse_threshold(text) == pytest.approx(value)


@pytest.mark.parametrize("bad", ["abc", "-5%", True, "nan", ""])
def test_parse_threshold_rejects(bad: object) -> None:
    with pytest.raises(ValueError, match=r"threshold|fraction"):
        parse_threshold(bad)


@pytest.mark.parametrize("bad", ["0", "1", "150%", True, "x"])
def test_parse_fraction_rejects(bad: object) -> None:
    with pytest.raises(ValueError, match=r"between 0 and 1|fraction"):
        parse_fraction(bad)


# --- false alarms and power, on ScriptedTimer's rounds ----------------------------------------

CPU = DeviceInfo(kind="cpu", name="Test CPU", index=None)


def kernel(fake_ms: float) -> Target:
    def fn() -> None:
        return None

    fn.fake_ms = fake_ms  # type: ignore[attr-defined]
    return Target(fn, CPU, label="test_kernel", fn=fn)


def measured(timer: ScriptedTimer, target: Target, rounds_: int) -> Rounds:
    timing = timer.measure(target, sampling_plan(rounds=rounds_, min_samples=10))
    return Rounds("cupti", timing.device_time.round_locations_ms)


def slower_rate(slowdown: float, round_sd: float, level_ms: float, trials: int, planned: int) -> float:
    timer = ScriptedTimer(samples=10, jitter=0.002, round_sd=round_sd, seed=11)
    slower = 0
    for _ in range(trials):
        base = measured(timer, kernel(level_ms), 8)
        current = measured(timer, kernel(level_ms * (1 + slowdown)), 5)
        result = judge(current, base, device=DEVICE, threshold=0.005, alpha=0.01, planned_judgements=planned)
        slower += result.verdict is Verdict.SLOWER
    return slower / trials


def test_a_a_false_slower_rate_stays_under_its_level() -> None:
    # 2000 unchanged 2.2 us kernels at the measured round SD: the per-judgement level is 0.01.
    assert slower_rate(0.0, 0.008, 0.0022, 2000, planned=1) <= 0.01


def test_the_slowdown_a_verdict_says_it_can_detect_is_caught_95_percent_of_the_time() -> None:
    # A 2.2 us kernel: the smallest change it can detect includes the between-process noise of its
    # size class, which the scripted rounds do not even have, so the stated figure is conservative.
    timer = ScriptedTimer(samples=10, jitter=0.002, round_sd=0.008, seed=5)
    base = measured(timer, kernel(0.0022), 8)
    current = measured(timer, kernel(0.0022), 5)
    stated = judge(current, base, device=DEVICE, threshold=0.005, alpha=0.01, planned_judgements=40)
    assert stated.detectable is not None and 0.03 < stated.detectable < 0.1
    assert slower_rate(stated.detectable, 0.008, 0.0022, 400, planned=40) >= 0.95


def test_a_1_percent_slowdown_needs_more_than_the_class_value_to_be_seen() -> None:
    # A 130 us kernel in a 40-kernel run, judged against one recording process: its between-process
    # noise is the class value, known to 8 degrees of freedom, so +1% is beyond what it can see,
    # and +3% is not.
    assert slower_rate(0.01, 0.0009, 0.13, 200, planned=40) < 0.5
    assert slower_rate(0.03, 0.0009, 0.13, 200, planned=40) >= 0.95


def processes(level_ms: float, between_sd: float, count: int, seed: int, per: int = 8) -> Rounds:
    """A baseline recorded in `count` processes whose levels move with `between_sd`."""
    rng = random.Random(seed)
    values: list[float] = []
    for _ in range(count):
        process_level = level_ms * math.exp(rng.gauss(0, between_sd))
        values += [process_level * math.exp(rng.gauss(0, 0.0009)) for _ in range(per)]
    return Rounds("cupti", tuple(values), process_rounds=(per,) * count if count > 1 else ())


def test_a_baseline_from_several_processes_judges_against_their_mean() -> None:
    baseline = Rounds("cupti", (1.0, 1.0, 2.0, 2.0), process_rounds=(2, 2))
    assert baseline.processes == [(1.0, 1.0), (2.0, 2.0)]
    assert baseline.level_ms == pytest.approx(math.sqrt(2))  # the processes weigh alike


def test_recording_processes_that_agree_narrow_the_between_process_noise() -> None:
    quiet = processes(0.13, 0.0003, 5, seed=1)
    one = processes(0.13, 0.0003, 1, seed=1)
    current = rounds(0.13 * 1.01, 3, 5, sd=0.0009)
    settings = {"device": DEVICE, "threshold": 0.005, "alpha": 0.01, "planned_judgements": 40}
    alone = judge(current, one, **settings)  # type: ignore[arg-type]
    several = judge(current, quiet, **settings)  # type: ignore[arg-type]
    assert several.process_sd is not None and alone.process_sd is not None
    assert several.process_sd < 0.9 * alone.process_sd
    assert several.detectable is not None and alone.detectable is not None
    assert several.detectable < alone.detectable
    assert "5 recording processes, shrunk toward 0.15% built in" in several.process_source
    # Processes recorded back to back share their occasion: they cannot narrow its term, and +1% on a
    # 130 us kernel stays beyond what one recording occasion lets a run see.
    assert "plus 0.50% between occasions (1 recording occasion)" in several.process_source
    assert several.verdict is Verdict.SAME


def test_recording_processes_that_disagree_widen_it() -> None:
    noisy = processes(0.13, 0.01, 5, seed=2)
    result = judge(rounds(0.13 * 1.03, 3, 5), noisy, device=DEVICE, threshold=0.005, alpha=0.01)
    assert result.process_sd is not None and result.process_sd > 0.003


def test_an_undetermined_level_that_moves_between_processes_asks_for_processes_not_rounds() -> None:
    """A 12 us kernel whose recording processes sit 6% apart with quiet rounds, one of a run's 40
    judgements: the test cannot see 10%, and more rounds would not help."""
    baseline = Rounds("cupti", (0.0119,) * 8 + (0.0126,) * 8 + (0.0122,) * 8, process_rounds=(8, 8, 8))
    settings = {"device": DEVICE, "threshold": 0.005, "alpha": 0.01, "planned_judgements": 40}
    result = judge(rounds(0.0122, 3, 5), baseline, **settings)  # type: ignore[arg-type]
    assert result.verdict is Verdict.UNDETERMINED
    assert "most of its uncertainty is how far a level may move between processes" in result.reason
    assert "--kernelperf-record-processes" in result.reason
    assert "--kernelperf-rounds" not in result.reason


def test_an_undetermined_level_whose_rounds_disagree_asks_for_more_rounds() -> None:
    """Rounds 30% apart (placement-sensitive), one process each side: more rounds are the cure."""
    result = judge(
        rounds(0.6, 3, 5, sd=0.3), rounds(0.6, 4, 8, sd=0.3), device=DEVICE, threshold=0.005, alpha=0.01
    )
    assert result.verdict is Verdict.UNDETERMINED
    assert "more rounds (--kernelperf-rounds, --kernelperf-max-rounds)" in result.reason


def test_the_timer_step_sets_a_floor_under_a_1_us_kernels_between_process_noise() -> None:
    step = 0.000032  # the H200's CUPTI tick: 3.2% of a 1 us kernel
    current = Rounds("cupti", (0.00101,) * 5, step_ms=step)
    baseline = Rounds("cupti", (0.00099,) * 8, step_ms=step)
    result = judge(current, baseline, device=DEVICE, threshold=0.005, alpha=0.01)
    assert result.process_sd == pytest.approx(step / 0.00099 / math.sqrt(12), rel=0.01)
    assert "by the timer's 32 ns step" in result.process_source
    assert result.verdict is Verdict.SAME  # about a tick apart is within the noise


def test_a_baseline_from_another_card_adds_the_card_to_card_part() -> None:
    here = Rounds("cupti", rounds(0.13, 1, 5).rounds_ms, card="GPU-a")
    same_card = Rounds("cupti", rounds(0.13, 2, 8).rounds_ms, card="GPU-a")
    other_card = Rounds("cupti", same_card.rounds_ms, card="GPU-b")
    same = judge(here, same_card, device=DEVICE, threshold=0.005, alpha=0.01)
    other = judge(here, other_card, device=DEVICE, threshold=0.005, alpha=0.01)
    assert other.detectable is not None and same.detectable is not None
    assert other.detectable > same.detectable
    assert "for a baseline from another GPU" in other.process_source


# --- noise helpers -----------------------------------------------------------------------------


def test_midmean_moves_smoothly_where_the_median_jumps_a_tick() -> None:
    tick = 0.000032
    mostly_70 = [70 * tick] * 11 + [71 * tick] * 9
    mostly_71 = [70 * tick] * 9 + [71 * tick] * 11
    assert noise.midmean(mostly_71) / noise.midmean(mostly_70) < 1.005  # a median would jump 1.4%
    assert noise.midmean([1.0, 1.0, 1.0, 50.0]) == 1.0  # an outlier is trimmed


def test_resolution_is_the_smallest_step_between_distinct_samples() -> None:
    assert noise.resolution([0.002240, 0.002272, 0.002240, 0.002336]) == pytest.approx(0.000032)
    assert noise.resolution([1.0, 1.0]) is None


def test_resolution_sees_the_tick_through_its_jitter() -> None:
    # CUPTI on an H200: 32 ns ticks read with about 1 ns of jitter (an RMSNorm of about 1 us).
    assert noise.resolution([0.000960, 0.000991, 0.000992, 0.000993]) == pytest.approx(0.000032, rel=0.02)
    # A 127 us kernel: few samples share a tick, but every gap is a whole number of ticks.
    rng = random.Random(3)
    samples = [(3970 + rng.randrange(60)) * 0.000032 + rng.choice((-1, 0, 1)) * 1e-6 for _ in range(64)]
    assert noise.resolution(samples) == pytest.approx(0.000032, rel=0.02)
    # A host clock's values form no lattice: the smallest gap is all there is.
    assert noise.resolution([1.0, 1.1, 1.3]) == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("ms", "label"), [(0.0022, "1 us-10 us"), (0.13, "100 us-1 ms"), (5.0, "1 ms-10 ms")]
)
def test_size_classes_are_decades(ms: float, label: str) -> None:
    assert noise.size_class(ms).label == label


def test_between_process_noise_by_size_class_and_for_host_clocks() -> None:
    assert noise.process_level_sd(0.002) == 0.0035  # a 2 us kernel's level moves ~0.3% between processes
    assert noise.process_level_sd(0.05) == 0.003
    assert noise.process_level_sd(0.5) == 0.0015
    assert noise.process_level_sd(0.05, "cuda-event") == noise.HOST_PROCESS_LEVEL_SD  # the launch path


# --- between-process noise learnt from the run history -------------------------------------------


def history_runs(level_ms: float, between_sd: float, runs: int, seed: int = 3) -> list[list[float]]:
    rng = random.Random(seed)
    out = []
    for _ in range(runs):
        run_level = level_ms * math.exp(rng.gauss(0, between_sd))
        out.append([run_level * math.exp(rng.gauss(0, 0.0005)) for _ in range(5)])
    return out


def test_too_short_a_history_leaves_the_class_value() -> None:
    few = history_runs(0.05, 0.0005, noise.HISTORY_MIN_RUNS - 1)
    assert prior.history_variance(few) is None
    result = verdict_comparison(few)
    assert result.process_source == (
        "0.30% built in for 10 us-100 us kernels; plus 0.20% between occasions (1 recording occasion)"
    )


def verdict_comparison(history: list[list[float]]) -> Comparison:
    return judge(
        rounds(0.05, 1, 5), rounds(0.05, 2, 8), device=DEVICE, threshold=0.005, alpha=0.01, history=history
    )


def test_a_quiet_kernels_history_narrows_its_between_process_noise() -> None:
    runs = history_runs(0.05, 0.0005, 40)
    estimate = prior.history_variance(runs)
    assert estimate is not None
    variance, df = estimate
    assert df == pytest.approx(26) and 0.0003 < math.sqrt(variance) < 0.0008  # drawn with 0.05%
    result = verdict_comparison(runs)
    assert result.process_sd is not None and result.process_sd < 0.7 * noise.process_level_sd(0.05)
    assert "both scaled by 40 past runs; plus 0.13% between occasions" in result.process_source


def test_a_step_inside_the_history_barely_widens_the_noise() -> None:
    # A +1% change accepted as "same" half-way through 20 runs: the plain SD of the runs' levels grows
    # to about 0.5%; their successive differences see one step among 19.
    runs = history_runs(0.05, 0.0005, 10) + history_runs(0.05 * 1.01, 0.0005, 10, seed=4)
    estimate = prior.history_variance(runs)
    means = [sum(math.log(v) for v in r) / len(r) for r in runs]
    grand = sum(means) / len(means)
    plain = math.sqrt(sum((m - grand) ** 2 for m in means) / (len(means) - 1))
    assert estimate is not None and plain > 0.0045 and math.sqrt(estimate[0]) < 0.5 * plain


def test_the_history_lets_a_quiet_kernel_show_a_1_5_percent_slowdown() -> None:
    timer = ScriptedTimer(samples=10, jitter=0.002, round_sd=0.0005, seed=9)
    base = measured(timer, kernel(0.05), 8)
    current = measured(timer, kernel(0.05 * 1.015), 5)
    settings = {"device": DEVICE, "threshold": 0.005, "alpha": 0.01, "planned_judgements": 40}
    assert judge(current, base, **settings).verdict is Verdict.SAME  # type: ignore[arg-type]
    learnt = judge(current, base, history=history_runs(0.05, 0.0005, 40), **settings)  # type: ignore[arg-type]
    assert learnt.verdict is Verdict.SLOWER
    assert "between-process SD" in learnt.evidence() and "40 past runs" in learnt.evidence()


def test_rounds_that_are_not_positive_times_are_left_out_of_the_history() -> None:
    runs = [*history_runs(0.05, 0.0005, noise.HISTORY_MIN_RUNS), [0.0, 0.05], [-1.0], [math.inf]]
    estimate = prior.history_variance(runs)
    assert estimate is not None
    assert estimate[1] == pytest.approx(prior.HISTORY_EFFICIENCY * (noise.HISTORY_MIN_RUNS - 1))


def test_a_slowdown_at_the_power_cap_the_baseline_also_ran_at_is_judged_on_time() -> None:
    # A heavy GEMM runs at the software power cap in every process: the clock NVML reads after its
    # rounds swings (1710 MHz here, 1905 when recorded) without moving its time, so its cycles say
    # nothing. The baseline ran capped too: the time is judged as it is.
    capped = Throttling(
        ("software power cap",),
        rounds=30,
        clock_mhz=1710,
        baseline_clock_mhz=1905,
        baseline_reasons=("software power cap",),
    )
    result = judge(
        rounds(0.14, 1, 5), rounds(0.13, 2, 8), device=DEVICE, threshold=0.005, alpha=0.01, throttling=capped
    )
    assert result.verdict is Verdict.SLOWER
    assert "as the baseline's rounds were" in result.reason
    # A baseline that ran at full clock leaves the cycles to judge: they show nothing here.
    unthrottled = replace(capped, baseline_reasons=())
    result = judge(
        rounds(0.14, 1, 5),
        rounds(0.13, 2, 8),
        device=DEVICE,
        threshold=0.005,
        alpha=0.01,
        throttling=unthrottled,
    )
    assert result.verdict is Verdict.UNRELIABLE
    assert "the SM cycles changed -3.3%, within the noise" in result.reason


def power_capped(clock_mhz: int, baseline_clock_mhz: int) -> Throttling:
    return Throttling(
        ("software power cap",),
        rounds=70,
        clock_mhz=clock_mhz,
        baseline_clock_mhz=baseline_clock_mhz,
        baseline_reasons=("software power cap",),
    )


def gemm_judged(time_factor: float, throttling: Throttling) -> Comparison:
    """A 0.48 ms GEMM's 20 rounds, `time_factor` times its baseline's 40, judged under `throttling`
    (one of a run's two judgements)."""
    return judge(
        rounds(0.48 * time_factor, 1, 20),
        rounds(0.48, 2, 40),
        device=DEVICE,
        threshold=0.005,
        alpha=0.01,
        planned_judgements=2,
        throttling=throttling,
    )


def test_a_capped_gemm_whose_process_ran_at_a_lower_clock_is_judged_on_clock_adjusted_time() -> None:
    # A GEMM at the power cap, its process at 1545 MHz where the baseline's sat at 1980: a time rise
    # of 2%, within what the drop explains ((1980/1545)^0.2 taken at the bound 1.15^0.2 = +2.8%).
    capped = power_capped(1545, 1980)
    explained = gemm_judged(1.02, capped)
    # Not a false slower; and with the adjustment's uncertainty (about 3.3% at that clock) the test
    # cannot see 10%: undetermined, which says so.
    assert explained.verdict is Verdict.UNDETERMINED and explained.ratio is not None
    assert explained.ratio == pytest.approx(
        1.02 / POWER_CAP_CLOCK_RANGE**POWER_CAP_CLOCK_ELASTICITY, rel=0.002
    )
    adjusted = f"{explained.ratio - 1:+.1%} adjusted for the clock"
    assert explained.time_ratio is not None
    time = f"{explained.time_ratio - 1:+.1%}"
    assert f"time changed {time} at 1545 MHz against the baseline's 1980 MHz, {adjusted}" in explained.reason
    # The same GEMM really 10% slower at that clock: +15% in time, slower.
    assert gemm_judged(1.15, capped).verdict is Verdict.SLOWER
    # A process at a higher clock than the baseline's hides part of a slowdown; the adjustment shows
    # it: a real +10% reads +13% adjusted, slower.
    faster_clock = gemm_judged(1.10, power_capped(1980, 1545))
    assert faster_clock.verdict is Verdict.SLOWER
    assert faster_clock.ratio == pytest.approx(
        1.10 * POWER_CAP_CLOCK_RANGE**POWER_CAP_CLOCK_ELASTICITY, rel=0.002
    )


def test_a_clock_drop_is_never_excused_in_part() -> None:
    # +5.7% at 1545 against 1980 MHz: beyond the 2.8% the drop explains, so the change may have drawn
    # the power that lowered the clock: judged on time, with the adjustment's uncertainty.
    judged = gemm_judged(1.057, power_capped(1545, 1980))
    assert judged.ratio == pytest.approx(1.057, rel=0.002) and judged.time_ratio is not None
    assert "beyond what the clock drop explains: judged on time" in judged.reason
    assert gemm_judged(1.15, power_capped(1545, 1980)).ratio == pytest.approx(1.15, rel=0.002)


def test_an_adjusted_test_carries_the_adjustments_own_uncertainty() -> None:
    level = gemm_judged(1.0, power_capped(1980, 1980))  # no clock apart: not adjusted
    adjusted = gemm_judged(1.0, power_capped(1545, 1980))
    assert level.ratio_ci is not None and adjusted.ratio_ci is not None
    # The elasticity's SE times log(1.15) and the 1.1% residual, beside the test's own.
    extra = math.hypot(0.22 * math.log(1.15), 0.011)
    own = math.log(level.ratio_ci[1] / level.ratio_ci[0])
    assert math.log(adjusted.ratio_ci[1] / adjusted.ratio_ci[0]) > own + 2 * 2 * extra
    assert adjusted.detectable is not None and level.detectable is not None
    assert adjusted.detectable > 3 * level.detectable


def test_clocks_a_few_mhz_apart_widen_nothing() -> None:
    # +4% at 1701 against 1700 MHz, one judgement of a suite of 40: the clocks explain none of it,
    # and the test stays as sharp as at one clock.
    for clock in (1699, 1700, 1701):
        judged = judge(
            rounds(0.48 * 1.04, 1, 20),
            rounds(0.48, 2, 40),
            device=DEVICE,
            threshold=0.005,
            alpha=0.01,
            planned_judgements=40,
            throttling=power_capped(clock, 1700),
        )
        assert judged.verdict is Verdict.SLOWER, clock


def test_the_clock_adjustment_is_bounded_and_only_for_the_power_cap() -> None:
    # A clock read of 400 MHz against 1980 excuses no more than the bound allows (about 2.8%).
    far = gemm_judged(1.02, power_capped(400, 1980))
    assert far.ratio == pytest.approx(1.02 / POWER_CAP_CLOCK_RANGE**POWER_CAP_CLOCK_ELASTICITY, rel=0.003)
    assert gemm_judged(1.30, power_capped(400, 1980)).verdict is Verdict.SLOWER
    # Thermal throttling in run and baseline is judged on time as it is.
    thermal = ("software thermal slowdown",)
    hot = replace(power_capped(1545, 1980), reasons=thermal, baseline_reasons=thermal)
    judged = gemm_judged(1.05, hot)
    assert judged.verdict is Verdict.SLOWER and judged.time_ratio is None


@pytest.mark.parametrize(
    ("clock", "read"),
    [("1980", 1980), ("1980 MHz", None), ("0", None), ("-5", None), ("²", None), ("１９８０", None)],
)
def test_a_baselines_clock_and_reasons_are_read_as_recorded_or_not_at_all(
    clock: str, read: int | None
) -> None:
    environment = {"sm_clock_mhz": clock, "throttled": "software power cap,hardware slowdown"}
    throttling = power_capped(1545, 0).with_baseline(environment)
    assert throttling.baseline_clock_mhz == read
    assert throttling.baseline_reasons == ("software power cap", "hardware slowdown")
    assert power_capped(1545, 0).with_baseline({"throttled": "no"}).baseline_reasons == ()
    assert power_capped(1545, 0).with_baseline(None).baseline_reasons is None


def test_a_slowdown_the_cycles_also_show_is_judged_slower_despite_throttling() -> None:
    hotter = Throttling(("software thermal slowdown",), rounds=5, clock_mhz=1800, baseline_clock_mhz=1980)
    result = judge(
        rounds(0.16, 1, 5), rounds(0.13, 2, 8), device=DEVICE, threshold=0.005, alpha=0.01, throttling=hotter
    )
    assert result.verdict is Verdict.SLOWER
    assert "at 1800 MHz against the baseline's 1980 MHz the SM cycles are +11.9% too" in result.reason
