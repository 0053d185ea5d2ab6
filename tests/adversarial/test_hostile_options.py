"""Options that contradict each other or point at the wrong thing: a usage error naming the option
(and the path), never a run that passes without having compared anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Project

from pytest_kernelperf.settings import SettingsError, resolve

ROOT = Path(__file__).parent


@pytest.mark.parametrize("where", ["test_kernels.py", "test_kernels.py/baselines"])
def test_a_baseline_dir_that_is_a_file_is_a_usage_error(project: Project, where: str) -> None:
    module = project.module()

    result = project.run("--kernelperf", f"--kernelperf-baseline-dir={where}")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"--kernelperf-baseline-dir: {project.pytester.path / where}" in err
    assert "is a file, not a folder of baseline files" in err
    if where != module.name:
        assert f"lies under {module}, which is a file" in err


def test_a_baseline_dir_from_the_ini_file_that_is_a_file_names_the_ini_key(project: Project) -> None:
    project.module()
    project.pytester.makeini("[pytest]\nkernelperf_baseline_dir = test_kernels.py\n")

    result = project.run("--kernelperf-update-baselines")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "kernelperf_baseline_dir in " in result.stderr.str()
    project.run().assert_outcomes(passed=1)  # a run that does not time reads no baselines


def test_a_max_time_below_the_min_time_is_a_usage_error_naming_both(project: Project) -> None:
    project.module()

    result = project.run("--kernelperf", "--kernelperf-min-time", "5", "--kernelperf-max-time", "0.001")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--kernelperf-min-time 5 is more than --kernelperf-max-time 0.001" in result.stderr.str()


@pytest.mark.parametrize(
    ("cli", "ini", "marker", "message"),
    [
        (
            {"min_time": "0.1"},
            {},
            {},
            "--kernelperf-min-time 0.1 is more than --kernelperf-max-time (default) 0.04",
        ),
        ({}, {"max_time": "0.005"}, {}, "--kernelperf-min-time (default) 0.01 is more than "),
        ({"max_time": "0.02"}, {}, {"min_time": 0.03}, "m: min_time 0.03 is more than max_time 0.02"),
    ],
)
def test_the_sampling_window_is_checked_wherever_it_is_set(
    cli: dict[str, object], ini: dict[str, object], marker: dict[str, object], message: str
) -> None:
    with pytest.raises(SettingsError) as info:
        resolve(cli, ini, rootdir=ROOT, ini_file="pytest.ini").with_marker(marker, where="m")
    assert message in str(info.value)


def test_a_baseline_dir_outside_the_rootdir_is_one_folder_however_it_is_spelt(project: Project) -> None:
    # A shared checkout of baselines beside the project: allowed, and the same folder whether it is
    # given relative to the rootdir or absolute.
    project.module()
    outside = project.pytester.path.parent / f"{project.pytester.path.name}-baselines"
    relative = f"../{outside.name}"

    project.run(
        "--kernelperf-update-baselines", f"--kernelperf-baseline-dir={relative}", "--kernelperf-json=up.json"
    ).assert_outcomes(passed=1)

    assert (outside / "test_kernels.yaml").is_file()
    run = json.loads((project.pytester.path / "up.json").read_text())
    assert run["settings"]["baseline_dir"] == str(outside)  # no `..` in what reports and processes see
    again = project.run("--kernelperf", f"--kernelperf-baseline-dir={outside}", "-v")
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["*PASSED (same*"])
