from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kernelperf.settings import OPTIONS, SettingsError, resolve

ROOT = Path("/project")


def settings(cli: dict[str, object] | None = None, ini: dict[str, object] | None = None) -> object:
    return resolve(cli or {}, ini or {}, timing=True, update=False, rootdir=ROOT, ini_file="pytest.ini")


def test_defaults_and_folders_under_the_rootdir() -> None:
    result = resolve({}, {}, timing=False, update=False, rootdir=ROOT)
    assert result.threshold == 0.005 and result.alpha == 0.01 and result.timer == "auto"
    assert result.baseline_dir == ROOT / "baselines" and result.artifacts == ROOT / ".kernelperf"
    assert not result.timing


def test_update_implies_timing() -> None:
    assert resolve({}, {}, timing=False, update=True, rootdir=ROOT).timing


def test_command_line_beats_ini() -> None:
    result = resolve({"threshold": "2%"}, {"threshold": "0.1"}, timing=True, update=False, rootdir=ROOT)
    assert result.threshold == pytest.approx(0.02)
    assert resolve({}, {"threshold": "0.1"}, timing=True, update=False, rootdir=ROOT).threshold == 0.1


def test_marker_beats_everything() -> None:
    base = resolve({"threshold": "2%"}, {}, timing=True, update=False, rootdir=ROOT)
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
        resolve(cli, ini, timing=True, update=False, rootdir=ROOT, ini_file="pytest.ini")
    assert message in str(info.value)


def test_marker_rejects_unknown_and_non_marker_keys() -> None:
    base = resolve({}, {}, timing=True, update=False, rootdir=ROOT)
    with pytest.raises(SettingsError, match=r"unknown argument 'treshold'.*accepted: threshold"):
        base.with_marker({"treshold": 0.1}, where="@pytest.mark.kernelperf on t")
    with pytest.raises(SettingsError, match="unknown argument 'baseline_dir'"):
        base.with_marker({"baseline_dir": "x"}, where="m")
    with pytest.raises(SettingsError, match="m: threshold: a threshold must be 0 or more"):
        base.with_marker({"threshold": -2}, where="m")
    with pytest.raises(SettingsError, match="m: alpha: must lie strictly between 0 and 1"):
        base.with_marker({"alpha": 2}, where="m")


def test_threshold_accepts_changes_of_100_percent_and_more() -> None:
    base = resolve({}, {}, timing=True, update=False, rootdir=ROOT)
    assert base.with_marker({"threshold": 2}, where="m").threshold == 2.0  # fails beyond 3x slower
    assert resolve({"threshold": "150%"}, {}, timing=True, update=False, rootdir=ROOT).threshold == 1.5


def test_rounds_when_comparing_and_when_recording() -> None:
    compare = resolve({}, {"rounds": "4"}, timing=True, update=False, rootdir=ROOT)
    assert compare.plan().rounds == 4
    update = resolve({}, {"baseline_rounds": "9"}, timing=True, update=True, rootdir=ROOT)
    assert update.plan().rounds == 9
    assert resolve({}, {}, timing=True, update=True, rootdir=ROOT).plan().rounds == 8
    with pytest.raises(SettingsError, match=r"kernelperf_rounds in pytest\.ini: expected at least 1"):
        resolve({}, {"rounds": "0"}, timing=True, update=False, rootdir=ROOT, ini_file="pytest.ini")
    assert compare.with_marker({"rounds": 7}, where="m").plan().rounds == 7


def test_every_option_has_help() -> None:
    for option in OPTIONS:
        assert (
            option.help
            and option.cli_name.startswith("--kernelperf-")
            and option.ini_name.startswith("kernelperf_")
        )
