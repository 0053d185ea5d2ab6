"""`python -m pytest_kernelperf compare | merge | update-baselines` on the JSON of real runs."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SUBPROCESS_ARGS, Project, requires_matplotlib
from reportkit import setup, times

from pytest_kernelperf.cli import main
from pytest_kernelperf.model.result import Verdict
from pytest_kernelperf.results import runfile

ROOT = Path(__file__).parent.parent


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main([*argv], out=out)
    return code, out.getvalue()


def two_runs(project: Project) -> tuple[Path, Path]:
    """old.json: an update run without param d; new.json: b 4x slower, c 2x faster, d new."""
    setup(project)
    times(project)
    update = project.run(
        "--kernelperf-update-baselines",
        "--deselect",
        "test_kernels.py::test_param[d]",
        "--kernelperf-json=old.json",
    )
    update.assert_outcomes(passed=4, deselected=1)
    times(project, b=4.0, c=0.5)
    project.run("--kernelperf", "--kernelperf-json=new.json").assert_outcomes(passed=4, failed=1)
    return project.pytester.path / "old.json", project.pytester.path / "new.json"


def test_compare_reproduces_the_verdicts_of_the_run_that_wrote_the_json(project: Project) -> None:
    old, new = two_runs(project)
    code, text = cli("compare", str(old), str(new), "--color=no", "--json", str(old.parent / "judged.json"))
    assert code == 1  # a regression
    assert "kernelperf: 3 same, 1 slower, 1 faster, 1 new" in text
    assert any(
        line.split()[:1] == ["b"] and "+300.0%" in line and line.endswith("slower +300.0%")
        for line in text.splitlines()
    )

    in_run = {r.label: r for r in runfile.load(new).results}
    judged = {r.label: r for r in runfile.load(old.parent / "judged.json").results}
    assert judged.keys() == in_run.keys()
    for label, result in in_run.items():
        again = judged[label]
        assert again.verdict == result.verdict, label
        assert (
            again.baseline_level_ms == result.baseline_level_ms
            and again.baseline_round_range_ms == result.baseline_round_range_ms
        )
        assert result.comparison is not None and again.comparison is not None
        assert again.comparison.ratio == result.comparison.ratio  # the same numbers, not just verdicts
        assert again.comparison.p_value == result.comparison.p_value
    assert {r.verdict for r in judged.values()} == {Verdict.SAME, Verdict.SLOWER, Verdict.FASTER, Verdict.NEW}


def test_compare_a_run_with_itself_passes_and_options_apply(project: Project) -> None:
    old, new = two_runs(project)
    code, text = cli("compare", str(new), str(new), "--color=no")
    assert code == 0 and "kernelperf: 6 same" in text
    # A 150% threshold: the 2x faster kernel is "same" (faster needs below 1/2.5), the 4x slower one
    # still a regression.
    code, text = cli("compare", str(old), str(new), "--color=no", "--threshold=150%")
    assert code == 1 and "kernelperf: 4 same, 1 slower, 1 new" in text
    # Colour on request.
    code, text = cli("compare", str(old), str(new), "--color=yes")
    assert "\x1b[31;1mslower +300.0%\x1b[0m" in text
    # OLD's results that NEW lacks are listed.
    code, text = cli("compare", str(new), str(old), "--color=no")
    assert "not in " in text and "test_kernels.py::test_param[d] on Test CPU (hot cache)" in text


@requires_matplotlib
def test_compare_as_a_module_writes_markdown_and_plots(project: Project) -> None:
    old, _ = two_runs(project)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    folder = old.parent
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_kernelperf",
            "compare",
            "old.json",
            "new.json",
            "--markdown",
            "ab.md",
            "--plot",
            "ab",
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "kernelperf: 3 same, 1 slower, 1 faster, 1 new" in done.stdout
    assert (
        (folder / "ab.md")
        .read_text()
        .startswith("### kernelperf compare (new.json vs old.json): 3 same, 1 slower")
    )
    assert (folder / "ab" / "test_kernels.py__test_param.png").exists()


def test_merge_combines_shards_and_refuses_duplicates(project: Project) -> None:
    setup(project)
    times(project)
    project.run("--kernelperf", "-k", "test_param", "--kernelperf-json=a.json").assert_outcomes(passed=4)
    project.run("--kernelperf", "-k", "test_named", "--kernelperf-json=b.json").assert_outcomes(passed=1)
    folder = project.pytester.path
    code, text = cli("merge", str(folder / "a.json"), str(folder / "b.json"), "-o", str(folder / "all.json"))
    assert code == 0 and "merged 6 results from 2 files" in text and "6 new" in text
    merged = runfile.load(folder / "all.json")
    assert merged.merged_from == (str(folder / "a.json"), str(folder / "b.json"))
    assert sorted(r.test_id for r in merged.results) == [
        "test_named::first",
        "test_named::second",
        "test_param[a]",
        "test_param[b]",
        "test_param[c]",
        "test_param[d]",
    ]
    assert [d.name for d in merged.devices] == ["Test CPU"] and "Test CPU" in merged.peaks
    code, _ = cli("merge", str(folder / "a.json"), str(folder / "all.json"), "-o", str(folder / "x.json"))
    assert code == 2 and not (folder / "x.json").exists()


def test_merge_names_both_files_of_a_duplicate(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    setup(project)
    times(project)
    project.run("--kernelperf", "-k", "test_named", "--kernelperf-json=b.json").assert_outcomes(passed=1)
    b = str(project.pytester.path / "b.json")
    assert cli("merge", b, b, "-o", str(project.pytester.path / "x.json"))[0] == 2
    assert f"error: {b} and {b} both have a result for test_kernels.py::test_named::first on Test CPU" in (
        capsys.readouterr().err
    )


def test_update_baselines_from_json_equals_the_in_run_update(project: Project) -> None:
    setup(project)
    times(project, a=2.0, first=3.0)
    project.run("--kernelperf-update-baselines", "--kernelperf-json=run.json").assert_outcomes(passed=5)
    in_run = project.baseline_file.read_text()
    project.baseline_file.unlink()
    code, text = cli(
        "update-baselines",
        str(project.pytester.path / "run.json"),
        "--baseline-dir",
        str(project.pytester.path / "baselines"),
    )
    assert code == 0 and "test_kernels.yaml: 6 added, 0 changed, 0 unchanged, 0 kept" in text
    assert project.baseline_file.read_text() == in_run  # byte for byte, dates included

    # From a plain --kernelperf run too; entries of tests not in the JSON are kept.
    project.run("--kernelperf", "-k", "test_named", "--kernelperf-json=named.json").assert_outcomes(passed=1)
    code, text = cli(
        "update-baselines",
        str(project.pytester.path / "named.json"),
        "--baseline-dir",
        str(project.pytester.path / "baselines"),
    )
    # Re-measured within noise (the scripted times did not change): the recorded entries and their
    # dates stay, although a comparing run measures fewer rounds than an update.
    assert code == 0 and "test_kernels.yaml: 0 added, 0 changed, 2 unchanged, 4 kept" in text
    project.run("--kernelperf").assert_outcomes(passed=5)  # the baselines still judge a run


def test_update_baselines_default_folder_and_refusals(
    project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    setup(project)
    times(project)
    project.run("--kernelperf-json=checked.json").assert_outcomes(passed=5)
    folder = project.pytester.path
    monkeypatch.chdir(folder)
    assert cli("update-baselines", "checked.json")[0] == 2
    assert "checked.json has no timed results to record" in capsys.readouterr().err
    (folder / "bad.json").write_text('{"schema": "pytest-kernelperf-run", "schema_version": 1}')
    assert cli("update-baselines", "bad.json")[0] == 2
    assert "bad.json at results: missing" in capsys.readouterr().err
    project.run("--kernelperf", "--kernelperf-json=run.json").assert_outcomes(passed=5)
    assert cli("update-baselines", "run.json")[0] == 0  # ./baselines by default
    assert (folder / "baselines" / "test_kernels.yaml").exists()


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", "only-one.json"])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit):
        main(["compare", "a.json", "b.json", "--threshold=-5%"])
    assert "got '-5%'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["compare", "a.json", "b.json", "--alpha=2"])
    assert "must lie strictly between 0 and 1" in capsys.readouterr().err
    assert cli("compare", "missing-old.json", "missing-new.json")[0] == 2
    assert "missing-old.json: no such file" in capsys.readouterr().err


@pytest.mark.slow
def test_xdist_controller_writes_one_run_with_every_workers_results(project: Project) -> None:
    setup(project)
    times(project)
    project.monkeypatch.setenv("PYTHONPATH", str(ROOT))
    result = project.pytester.runpytest_subprocess(
        *SUBPROCESS_ARGS, "-n", "2", "--kernelperf", "--kernelperf-json=out/run.json"
    )
    result.assert_outcomes(passed=5)
    out = project.pytester.path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["run.json"]  # no per-worker files
    assert len(runfile.load(out / "run.json").results) == 6


@requires_matplotlib
def test_report_renders_a_saved_run(project: Project) -> None:
    _, new = two_runs(project)
    folder = new.parent
    code, text = cli(
        "report", str(new), "--color=no", "--markdown", str(folder / "r.md"), "--plot", str(folder / "r")
    )
    assert code == 0
    assert "kernelperf: 3 same, 1 slower, 1 faster, 1 new" in text and "wrote 3 plots to" in text
    assert (
        (folder / "r.md").read_text().startswith("### pytest-kernelperf: 3 same, 1 slower, 1 faster, 1 new")
    )
    code, text = cli("report", str(new), "--markdown", "-")
    assert code == 0 and text.startswith("### pytest-kernelperf: 3 same, 1 slower")


def timed_run_data(project: Project) -> dict[str, object]:
    setup(project)
    times(project)
    project.run("--kernelperf", "--kernelperf-json=run.json").assert_outcomes(passed=5)
    return json.loads((project.pytester.path / "run.json").read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("change", "where", "problem"),
    [
        ({"method": "Scripted Timer!"}, "device_time.method", "method must be a timer name"),
        ({"median_ms": -1}, "device_time.median_ms", "a time must be a positive number of ms"),
        ({"median_ms": 0.0001}, "device_time.ci_ms", "ci_ms must hold the median"),
        ({"ci_ms": [5.0, 1.0]}, "device_time.ci_ms", "ci_ms must hold the median"),
        ({"n": 0}, "device_time.n", "n must be a positive whole number"),
        ({"quantiles_ms": [2.0, 1.0]}, "device_time.quantiles_ms[1]", "quantiles_ms must be sorted"),
    ],
)
def test_update_baselines_refuses_an_edited_run_file_naming_the_json_path(
    project: Project,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, object],
    where: str,
    problem: str,
) -> None:
    data = timed_run_data(project)
    results = data["results"]
    assert isinstance(results, list)
    results[3]["baseline_entry"]["device_time"].update(change)
    bad = project.pytester.path / "bad.json"
    bad.write_text(json.dumps(data))
    folder = project.pytester.path / "fresh-baselines"

    code, _ = cli("update-baselines", str(bad), "--baseline-dir", str(folder))

    assert code == 2
    err = capsys.readouterr().err
    assert f"{bad} at results[3].baseline_entry.{where}: {problem}" in err, err
    assert not folder.exists()  # nothing written


def test_a_median_outside_its_quantiles_is_refused(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    data = timed_run_data(project)
    record = data["results"][0]["baseline_entry"]["device_time"]  # type: ignore[index]
    record.update(median_ms=0.0001, ci_ms=[0.00005, 0.0002])
    bad = project.pytester.path / "bad.json"
    bad.write_text(json.dumps(data))
    assert cli("update-baselines", str(bad), "--baseline-dir", str(project.pytester.path / "b"))[0] == 2
    assert (
        "results[0].baseline_entry.device_time.median_ms: median_ms 0.0001 lies outside"
        in capsys.readouterr().err
    )


def test_update_baselines_exits_2_when_a_file_is_not_written(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    timed_run_data(project)
    run = str(project.pytester.path / "run.json")
    blocker = project.pytester.path / "blocker"
    blocker.write_text("a file, not a folder")
    code, text = cli("update-baselines", run, "--baseline-dir", str(blocker / "sub"))
    assert code == 2
    assert "test_kernels.yaml: NOT written: " in text
    assert "1 of 1 baseline files NOT written" in capsys.readouterr().err

    # A baseline file that cannot be read is left as it is, and the command fails the same way.
    folder = project.pytester.path / "baselines"
    folder.mkdir()
    broken = "schema_version: 1\nentries:\n<<<<<<< HEAD\n  a: {}\n=======\n  b: {}\n>>>>>>> x\nend: true\n"
    (folder / "test_kernels.yaml").write_text(broken)
    code, text = cli("update-baselines", run, "--baseline-dir", str(folder))
    assert code == 2
    assert (folder / "test_kernels.yaml").read_text() == broken
    assert "NOT written: it cannot be read (line 3: unresolved merge conflict markers)" in text
    assert f"git checkout -- {folder / 'test_kernels.yaml'}" in text


def test_compare_with_a_check_only_run_says_untimed_not_missing(project: Project) -> None:
    setup(project)
    times(project)
    project.run("--kernelperf-json=checked.json").assert_outcomes(passed=5)
    project.run("--kernelperf", "--kernelperf-json=timed.json").assert_outcomes(passed=5)
    checked, timed = project.pytester.path / "checked.json", project.pytester.path / "timed.json"

    code, text = cli("compare", str(checked), str(timed), "--color=no")
    assert code == 0
    assert "not in " not in text
    judged_path = project.pytester.path / "judged.json"
    cli("compare", str(checked), str(timed), "--color=no", "--json", str(judged_path))
    reasons = {r.comparison.reason for r in runfile.load(judged_path).results if r.comparison is not None}
    assert reasons == {f"{checked} has no timing for it (only checked: a run without --kernelperf)"}

    code, text = cli("compare", str(timed), str(checked), "--color=no")
    assert code == 0
    assert "not in " not in text
    assert f"no timing in {checked} for test_kernels.py::test_named" in text
    assert "that run only checked it (a run without --kernelperf)" in text


POWER_CAPPED = """
import os

import torch

def kernel(x):
    return x * 2

kernel.fake_ms = float(os.environ["FAKE_MS"])  # Project.run's ms
kernel.fake_throttle = ("software power cap",)
kernel.fake_clock_mhz = int(os.environ["CLOCK"])

def test_kernel(kernel_bench):
    kernel_bench(kernel, torch.ones(64))
"""


def test_compare_sets_a_capped_kernels_clock_against_the_old_runs_not_the_baseline_it_ran_against(
    project: Project,
) -> None:
    # Both runs at 1545 MHz, the new one 5% slower: compare sees +5% (slower), whatever the baseline
    # both were judged against when they ran (recorded at 1980 MHz, against which the clock adjusts
    # the new run's +5% away).
    project.module(POWER_CAPPED)
    project.monkeypatch.setenv("CLOCK", "1980")
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    project.monkeypatch.setenv("CLOCK", "1545")
    project.run("--kernelperf", "--kernelperf-json=old.json")
    project.run("--kernelperf", "--kernelperf-json=new.json", ms=1.05).assert_outcomes(passed=1)
    old, new = project.pytester.path / "old.json", project.pytester.path / "new.json"
    code, text = cli("compare", str(old), str(new), "--color=no")
    assert code == 1
    assert "kernelperf: 1 slower" in text
