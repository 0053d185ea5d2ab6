from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pytest_kernelperf.measure.timing import SamplingPlan
from pytest_kernelperf.settings import (
    DEFAULTS,
    OPTIONS,
    Settings,
    SettingsError,
    judged_setting,
    merge_markers,
    resolve,
)
from pytest_kernelperf.testing import sampling_plan

ROOT = Path("/project")


def settings(cli: dict[str, object] | None = None, ini: dict[str, object] | None = None) -> object:
    return resolve(cli or {}, ini or {}, rootdir=ROOT, ini_file="pytest.ini")


def test_defaults_and_folders_under_the_rootdir() -> None:
    result = resolve({}, {}, rootdir=ROOT)
    assert result.threshold == 0.005 and result.alpha == 0.01 and result.timer == "auto"
    assert result.baseline_dir == ROOT / "baselines" and result.artifacts == ROOT / ".kernelperf"
    assert not result.timing


def test_update_implies_timing() -> None:
    assert resolve({"update": True}, {}, rootdir=ROOT).timing
    assert resolve({"compare": True}, {}, rootdir=ROOT).timing


def test_compare_and_update_together_is_an_error_naming_both_flags() -> None:
    with pytest.raises(
        SettingsError, match=r"--kernelperf compares .* --kernelperf-update-baselines records"
    ):
        resolve({"compare": True, "update": True}, {}, rootdir=ROOT)
    with pytest.raises(SettingsError, match="pass one of them"):
        resolve({}, {"compare": "true", "update": "true"}, rootdir=ROOT)


def test_the_command_line_mode_overrides_the_ini_mode() -> None:
    updating = resolve({"update": True}, {"compare": "true"}, rootdir=ROOT)
    assert updating.update and not updating.compare
    comparing = resolve({"compare": True}, {"update": "true"}, rootdir=ROOT)
    assert comparing.compare and not comparing.update


def test_prune_needs_update() -> None:
    with pytest.raises(
        SettingsError, match="--kernelperf-prune removes unused baseline entries during an update"
    ):
        resolve({"prune": True, "compare": True}, {}, rootdir=ROOT)
    assert resolve({"prune": True, "update": True}, {}, rootdir=ROOT).prune


def test_every_option_is_a_flag_and_an_ini_key() -> None:
    names = {option.cli_name: option.ini_name for option in OPTIONS}
    assert names["--kernelperf"] == "kernelperf"
    assert names["--kernelperf-update-baselines"] == "kernelperf_update_baselines"
    for flag in ("--kernelperf-prune", "--kernelperf-isolate", "--kernelperf-require-gpu"):
        assert names[flag] == flag.removeprefix("--").replace("-", "_")


def test_settings_defaults_are_the_table_defaults() -> None:
    defaults = Settings()
    for option in OPTIONS:
        assert getattr(defaults, option.field) == option.default, option.field


def test_the_sampling_plan_takes_its_values_from_the_table() -> None:
    # SamplingPlan (measure/timing.py) has no defaults of its own for what options set: a run's plan,
    # and the one tests and studies start from (testing.sampling_plan), come from Settings.plan.
    plan = Settings().plan()
    assert plan.max_rounds == Settings().rounds * DEFAULTS["max_rounds"]
    assert (plan.min_samples, plan.min_time_s, plan.max_time_s, plan.warmup_s) == (
        DEFAULTS["min_samples"],
        DEFAULTS["min_time"],
        DEFAULTS["max_time"],
        DEFAULTS["warmup"],
    )
    assert (plan.rounds, plan.cache) == (DEFAULTS["rounds"], DEFAULTS["cache"])
    assert sampling_plan(rounds=2) == replace(plan, rounds=2, max_rounds=None)
    with pytest.raises(TypeError):
        SamplingPlan()  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("layers", "merged"),
    [
        # the test's own marker, then its class's, then its module's
        (
            [{"threshold": "3%"}, {}, {"alpha": 0.001, "min_samples": 77}],
            {"threshold": "3%", "alpha": 0.001, "min_samples": 77},
        ),
        ([{"threshold": "3%"}, {"threshold": "9%", "cache": "cold"}], {"threshold": "3%", "cache": "cold"}),
        ([], {}),
    ],
)
def test_markers_merge_per_key_and_the_closest_wins(
    layers: list[dict[str, object]], merged: dict[str, object]
) -> None:
    assert merge_markers(layers) == merged


def test_command_line_beats_ini() -> None:
    result = resolve({"threshold": "2%"}, {"threshold": "0.1"}, rootdir=ROOT)
    assert result.threshold == pytest.approx(0.02)
    assert resolve({}, {"threshold": "0.1"}, rootdir=ROOT).threshold == 0.1


def test_marker_beats_everything() -> None:
    base = resolve({"threshold": "2%"}, {}, rootdir=ROOT)
    assert base.with_marker({"threshold": 0.2, "cache": "cold"}, where="marker").threshold == 0.2


@pytest.mark.parametrize(
    ("cli", "ini", "message"),
    [
        ({"threshold": "abc"}, {}, "--kernelperf-threshold: expected a fraction"),
        ({}, {"threshold": "abc"}, "kernelperf_threshold in pytest.ini: expected a fraction"),
        ({"timer": "stopwatch"}, {}, "--kernelperf-timer: expected one of auto"),
        ({"min_samples": "0"}, {}, "--kernelperf-min-samples: expected at least 1"),
        ({}, {"strict": "maybe"}, "kernelperf_strict in pytest.ini: expected true or false"),
        ({"max_time": "-1"}, {}, "--kernelperf-max-time: expected 0 to 3600 seconds"),
    ],
)
def test_errors_name_where_the_value_came_from(
    cli: dict[str, object], ini: dict[str, object], message: str
) -> None:
    with pytest.raises(SettingsError) as info:
        resolve(cli, ini, rootdir=ROOT, ini_file="pytest.ini")
    assert message in str(info.value)


def test_marker_rejects_unknown_and_non_marker_keys() -> None:
    base = resolve({}, {}, rootdir=ROOT)
    with pytest.raises(SettingsError, match=r"unknown argument 'treshold'.*accepted: threshold"):
        base.with_marker({"treshold": 0.1}, where="@pytest.mark.kernelperf on t")
    with pytest.raises(SettingsError, match="unknown argument 'baseline_dir'"):
        base.with_marker({"baseline_dir": "x"}, where="m")
    with pytest.raises(SettingsError, match="m: threshold: a threshold must be 0 or more"):
        base.with_marker({"threshold": -2}, where="m")
    with pytest.raises(SettingsError, match="m: alpha: must lie strictly between 0 and 1"):
        base.with_marker({"alpha": 2}, where="m")


def test_threshold_accepts_changes_of_100_percent_and_more() -> None:
    base = resolve({"compare": True}, {}, rootdir=ROOT)
    assert base.with_marker({"threshold": 2}, where="m").threshold == 2.0  # fails beyond 3x slower
    assert resolve({"compare": True, "threshold": "150%"}, {}, rootdir=ROOT).threshold == 1.5


def test_rounds_when_comparing_and_when_recording() -> None:
    compare = resolve({"compare": True}, {"rounds": "4"}, rootdir=ROOT)
    assert compare.plan().rounds == 4
    update = resolve({"update": True}, {"baseline_rounds": "9"}, rootdir=ROOT)
    assert update.plan().rounds == 9
    assert resolve({"update": True}, {}, rootdir=ROOT).plan().rounds == 8
    with pytest.raises(SettingsError, match=r"kernelperf_rounds in pytest\.ini: expected at least 1"):
        resolve({"compare": True}, {"rounds": "0"}, rootdir=ROOT, ini_file="pytest.ini")
    assert compare.with_marker({"rounds": 7}, where="m").plan().rounds == 7


def test_every_option_has_help() -> None:
    for option in OPTIONS:
        assert (
            option.help
            and option.cli_name.startswith("--kernelperf")
            and option.ini_name.startswith("kernelperf")
        )


def test_a_relative_history_is_where_pytest_started_or_beside_the_ini_file() -> None:
    started = Path("/somewhere/else")
    given = resolve({"history": "h.sqlite"}, {}, rootdir=ROOT, invocation_dir=started)
    assert given.history == started / "h.sqlite"
    from_ini = resolve({}, {"history": "h.sqlite"}, rootdir=ROOT, invocation_dir=started)
    assert from_ini.history == ROOT / "h.sqlite"
    absolute = resolve({"history": "/data/h.sqlite"}, {}, rootdir=ROOT, invocation_dir=started)
    assert absolute.history == Path("/data/h.sqlite")


def test_a_saved_result_is_judged_with_the_argument_then_its_own_then_the_runs_then_the_default() -> None:
    run = {"threshold": 0.2, "alpha": 0.02}
    assert judged_setting("threshold", given="5%", recorded=0.1, run=run) == pytest.approx(0.05)
    assert judged_setting("threshold", recorded=0.0, run=run) == 0.0  # a threshold of 0 is one
    assert judged_setting("threshold", run=run) == 0.2
    assert judged_setting("threshold", run={"threshold": True}) == DEFAULTS["threshold"]
    assert judged_setting("alpha", recorded=0.0, run=run) == 0.02  # an alpha of 0 was never judged with
    assert judged_setting("alpha", run={"alpha": 2}) == DEFAULTS["alpha"]
    assert judged_setting("host_threshold") == DEFAULTS["host_threshold"]
