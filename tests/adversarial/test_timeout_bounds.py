"""The two time limits' bounds, each said in one wording whichever side a value misses:
--kernelperf-ncu-timeout is always a limit (more than 0, at most an hour), --kernelperf-against-timeout
may be 0 (no limit) and is at most a day."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kernelperf.settings import SettingsError, resolve


@pytest.mark.parametrize(
    ("option", "values", "bounds"),
    [
        (
            "ncu_timeout",
            ["0", "-1", "0s", "3601", "nan", "inf"],
            "expected more than 0 and at most 3600 seconds",
        ),
        ("against_timeout", ["-1", "86401", "nan", "-inf"], "expected 0 (no limit) to 86400 seconds"),
    ],
)
def test_a_time_limit_out_of_bounds_is_said_one_way(
    tmp_path: Path, option: str, values: list[str], bounds: str
) -> None:
    name = "--kernelperf-" + option.replace("_", "-")
    for value in values:
        with pytest.raises(SettingsError) as caught:
            resolve({option: value}, {}, rootdir=tmp_path)
        assert str(caught.value) == f"{name}: {bounds}, got {value!r}"


def test_the_time_limits_accept_their_bounds(tmp_path: Path) -> None:
    assert resolve({"ncu_timeout": "3600"}, {}, rootdir=tmp_path).ncu_timeout == 3600
    assert resolve({"ncu_timeout": "0.5s"}, {}, rootdir=tmp_path).ncu_timeout == 0.5
    assert resolve({"against_timeout": "0"}, {}, rootdir=tmp_path).against_timeout == 0
    with pytest.raises(SettingsError, match=r"^--kernelperf-ncu-timeout: expected seconds such as 180, got"):
        resolve({"ncu_timeout": "soon"}, {}, rootdir=tmp_path)
