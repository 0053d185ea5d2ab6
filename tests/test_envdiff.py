"""Environment diff: what differs between the baseline's environment and this run's."""

from __future__ import annotations

from pytest_kernelperf.profiling import envdiff

BASE = {
    "torch": "2.11.0",
    "triton": "3.6.0",
    "cuda": "13.0",
    "driver": "580.65.06",
    "capability": "9.0",
    "sm_clock_mhz": "1980",
    "python": "3.11.9",
}


def test_same_environment_says_so_and_names_what_was_compared() -> None:
    line = envdiff.describe(BASE, dict(BASE, sm_clock_mhz="1965"))  # clocks wobble a few MHz
    assert line.startswith("environment: same as the baseline (torch 2.11.0, triton 3.6.0, cuda 13.0")
    assert "SM clock 1965 MHz" in line


def test_differences_are_named_in_a_fixed_order() -> None:
    current = dict(BASE, driver="590.10", torch="2.12.0", sm_clock_mhz="1410")
    assert envdiff.differences(BASE, current) == [
        "torch 2.11.0 -> 2.12.0",
        "driver 580.65.06 -> 590.10",
        "SM clock 1980 MHz -> 1410 MHz",
    ]
    assert envdiff.describe(BASE, current).startswith("environment differs from the baseline's: torch 2.11.0")


def test_missing_values() -> None:
    current = {k: v for k, v in BASE.items() if k != "sm_clock_mhz"}
    assert envdiff.differences(BASE, current) == ["SM clock 1980 MHz -> not recorded"]
    # a key that only this run records (a newer plugin) is not a difference
    assert envdiff.differences({"torch": "2.11.0"}, {"torch": "2.11.0", "triton": "3.6.0"}) == []
    assert envdiff.describe({}, BASE) == "environment: the baseline recorded none"
    assert envdiff.differences({"gpu_mode": "a"}, {"gpu_mode": "b"}) == ["gpu_mode a -> b"]
