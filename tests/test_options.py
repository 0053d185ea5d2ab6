"""Options, marker and modes, through pytest itself."""

from __future__ import annotations

import pytest
from conftest import Project


def test_no_flag_checks_once_without_timing_or_files(project: Project) -> None:
    project.module(
        """
        import torch
        calls = []
        def kernel(x):
            calls.append(1)
            return x * 2
        kernel.fake_ms = 1.0
        def test_kernel(kernel_bench):
            result = kernel_bench(kernel, torch.ones(4), reference=lambda x: x + x)
            assert len(calls) == 1
            assert result.verdict == "checked" and result.level_ms is None
        """
    )
    result = project.run()
    result.assert_outcomes(passed=1)
    assert not (project.pytester.path / "baselines").exists()
    assert not (project.pytester.path / ".kernelperf").exists()


def test_marker_threshold_applies_to_its_test(project: Project) -> None:
    project.module(
        """
        import os, pytest, torch
        def kernel(x):
            return x
        kernel.fake_ms = float(os.environ["FAKE_MS"])
        @pytest.mark.kernelperf(threshold="10%")
        def test_loose(kernel_bench):
            kernel_bench(kernel, torch.ones(4))
        def test_default(kernel_bench):
            kernel_bench(kernel, torch.ones(4))
        """
    )
    project.run("--kernelperf-update-baselines")
    result = project.run("--kernelperf", ms=1.07)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAILED test_kernels.py::test_default*regression*"])


def test_unknown_marker_argument_is_a_clear_error(project: Project) -> None:
    project.module(
        """
        import pytest, torch
        @pytest.mark.kernelperf(treshold=0.1)
        def test_typo(kernel_bench):
            kernel_bench(lambda x: x, torch.ones(4))
        """
    )
    result = project.run("--kernelperf")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*unknown argument 'treshold' to @pytest.mark.kernelperf*accepted: threshold*"]
    )


def test_bad_command_line_value_is_a_usage_error(project: Project) -> None:
    project.module()
    result = project.run("--kernelperf", "--kernelperf-threshold=lots")
    assert result.ret == 4  # pytest's usage error
    result.stderr.fnmatch_lines(["*--kernelperf-threshold: expected a fraction*"])


def test_bad_ini_value_names_the_ini_key(project: Project) -> None:
    project.module()
    project.pytester.makeini("[pytest]\nkernelperf_timer = stopwatch\n")
    result = project.run("--kernelperf")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*kernelperf_timer in *tox.ini: expected one of auto*"])


def test_ini_baseline_dir(project: Project) -> None:
    project.module()
    project.pytester.makeini("[pytest]\nkernelperf_baseline_dir = perf/base\n")
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    assert (project.pytester.path / "perf" / "base" / "test_kernels.yaml").exists()


def test_named_calls_are_separate_entries_and_one_table(project: Project) -> None:
    project.module(
        """
        import torch
        def fast(x):
            return x
        fast.fake_ms = 1.0
        def slow(x):
            return x
        slow.fake_ms = 8.0
        def test_ways(kernel_bench):
            kernel_bench(fast, torch.ones(4), name="fast")
            kernel_bench(slow, torch.ones(4), name="slow")
        """
    )
    result = project.run("--kernelperf-update-baselines")
    result.stdout.fnmatch_lines(
        ["test_kernels.py", "  test_ways (*)", "*Method*Time (ms)*", "*fast  *1 *", "*slow  *8 *"]
    )
    text = project.baseline_file.read_text()
    assert "test_ways::fast:" in text and "test_ways::slow:" in text


def test_the_same_name_twice_fails(project: Project) -> None:
    project.module(
        """
        import torch
        def k(x):
            return x
        def test_twice(kernel_bench):
            kernel_bench(k, torch.ones(4))
            kernel_bench(k, torch.ones(4))
        """
    )
    project.run().stdout.fnmatch_lines(["*called twice without a name*give each call its own name=*"])


def test_a_kernel_that_raises_errors_its_test_only(project: Project) -> None:
    project.module(
        """
        import torch
        def broken(x):
            raise ValueError("bad launch config")
        def fine(x):
            return x
        fine.fake_ms = 1.0
        def test_broken(kernel_bench):
            kernel_bench(broken, torch.ones(4))
        def test_fine(kernel_bench):
            kernel_bench(fine, torch.ones(4))
        """
    )
    result = project.run("--kernelperf")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*ValueError: bad launch config*"])


def test_plain_run_does_not_import_torch(pytester: object) -> None:
    import pytest

    assert isinstance(pytester, pytest.Pytester)
    pytester.makepyfile(
        test_plain="""
        import sys
        def test_plain():
            assert "torch" not in sys.modules
            assert "scipy" not in sys.modules
            # --kernelperf-against's loader and git helpers load only with the option.
            assert "pytest_kernelperf.revision.loader" not in sys.modules
            assert "pytest_kernelperf.plugins.against" not in sys.modules
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:hypothesispytest"
    )
    result.assert_outcomes(passed=1)


def test_markers_of_module_class_and_test_merge_per_key(project: Project) -> None:
    project.module(
        """
        import pytest

        pytestmark = pytest.mark.kernelperf(alpha=0.001, min_samples=77)

        @pytest.mark.kernelperf(threshold="3%")
        def test_own_marker(kernel_bench):
            s = kernel_bench.settings
            assert (s.threshold, s.alpha, s.min_samples) == (0.03, 0.001, 77)

        @pytest.mark.kernelperf(threshold="9%", cache="cold")
        class TestK:
            @pytest.mark.kernelperf(threshold="2%")
            def test_method(self, kernel_bench):
                s = kernel_bench.settings
                assert (s.threshold, s.cache, s.alpha, s.min_samples) == (0.02, "cold", 0.001, 77)

            def test_plain(self, kernel_bench):
                assert (kernel_bench.settings.threshold, kernel_bench.settings.cache) == (0.09, "cold")
        """
    )
    project.run().assert_outcomes(passed=3)


def test_compare_and_update_in_one_run_is_a_usage_error(project: Project) -> None:
    project.module()
    result = project.run("--kernelperf", "--kernelperf-update-baselines")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--kernelperf compares with the baselines and --kernelperf-update-baselines*"]
    )
    assert not project.baseline_file.exists()


def test_every_option_has_an_ini_key(project: Project) -> None:
    project.module()
    project.pytester.makeini("[pytest]\nkernelperf_update_baselines = true\nkernelperf_json = run.json\n")
    project.run().assert_outcomes(passed=1)
    assert project.baseline_file.exists() and (project.pytester.path / "run.json").exists()
