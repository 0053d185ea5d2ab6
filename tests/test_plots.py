"""--kernelperf-plot: PNGs per test and per device; a clear error without matplotlib."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Project, requires_matplotlib
from reportkit import KERNELS, RATIO, mixed_verdicts, setup, times

from pytest_kernelperf.model.result import BenchResult, Verdict
from pytest_kernelperf.results import plots

PNG = b"\x89PNG\r\n\x1a\n"


@requires_matplotlib
def test_plots_per_test_and_per_device(project: Project) -> None:
    mixed_verdicts(project)
    project.module(KERNELS + RATIO)
    times(project, b=4.0, c=0.5, slow=2.0)
    result = project.run("--kernelperf", "--kernelperf-plot=plots", "--kernelperf-json=run.json")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(["kernelperf: wrote the plots to plots"])
    folder = project.pytester.path / "plots"
    names = sorted(p.name for p in folder.iterdir())
    assert names == [
        "test_kernels.py__test_named.png",
        "test_kernels.py__test_param.png",
        "test_kernels.py__test_ratio.png",
        "throughput__Test_CPU.png",
    ]
    for name in names:
        data = (folder / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000
    run = (project.pytester.path / "run.json").read_text()
    assert '"plots/throughput__Test_CPU.png"' in run  # listed among the artefacts


@requires_matplotlib
def test_checked_only_results_draw_nothing(tmp_path: Path) -> None:
    checked = [BenchResult("t.py::test", None, "cpu", Verdict.CHECKED)]
    assert plots.write_all(tmp_path, checked, {}) == []


def test_missing_matplotlib_is_a_usage_error_saying_how_to_install(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup(project)
    monkeypatch.setattr(plots, "have_matplotlib", lambda: False)
    result = project.run("--kernelperf", "--kernelperf-plot=plots")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--kernelperf-plot=plots needs matplotlib; install it with `pip install matplotlib`*"]
    )
    with pytest.raises(plots.PlotError, match="plots need matplotlib"):
        plots.write_all(Path("unused"), [], {})
