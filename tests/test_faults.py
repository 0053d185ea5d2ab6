"""Faults: a raising kernel, a poisoned CUDA context (faked on CPU), isolation, a lost GPU.

The CUDA context is faked by replacing `pytest_kernelperf.measure.faults.cuda_probe`: a "bad" kernel sets a
flag, and from then on the probe answers like torch.cuda.synchronize() after an illegal memory
access. The real thing runs on the H200 in studies/gpu_reliability.sh.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import SCRIPTED_CONFTEST, SUBPROCESS_ARGS, Project, seed_peak_cache

from pytest_kernelperf.baselines.yaml_io import read
from pytest_kernelperf.measure import faults
from pytest_kernelperf.measure.faults import CudaContextPoisoned, FaultGuard, NotMeasured, kernel_name

ROOT = Path(faults.__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # whole lines in the short test summary


ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered"

# --- the guard alone -----------------------------------------------------------------------------


def bad_kernel() -> None:
    raise RuntimeError("CUDA error: an illegal memory access was encountered")


def test_a_raise_in_a_healthy_context_passes_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(faults, "cuda_probe", lambda: None)
    guard = FaultGuard()
    with pytest.raises(ValueError, match="plain"), guard.around_call("t.py::a", bad_kernel, None):
        raise ValueError("plain")
    assert guard.poisoned is None
    with guard.around_call("t.py::b", bad_kernel, None):
        pass  # the process is still fine


def test_a_raise_that_left_the_context_broken_poisons_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(faults, "cuda_probe", lambda: ILLEGAL)
    guard = FaultGuard()
    with pytest.raises(CudaContextPoisoned) as caught, guard.around_call("t.py::bad", bad_kernel, "fast"):
        bad_kernel()
    message = str(caught.value)
    assert f"CUDA error in kernel {__name__}.bad_kernel (name='fast') (t.py::bad): {ILLEGAL}" in message
    assert "--kernelperf-isolate" in message
    assert isinstance(caught.value.__cause__, RuntimeError)  # the kernel's own traceback stays
    with pytest.raises(NotMeasured, match=r"not measured: CUDA context poisoned by t.py::bad \(kernel"):
        guard.refuse_if_poisoned()
    with pytest.raises(NotMeasured), guard.around_call("t.py::later", bad_kernel, None):
        pass


def test_an_error_that_surfaces_after_the_call_is_pinned_on_the_test(monkeypatch: pytest.MonkeyPatch) -> None:
    guard = FaultGuard()
    monkeypatch.setattr(faults, "cuda_probe", lambda: None)
    with guard.around_call("t.py::quiet", bad_kernel, None):
        pass
    assert guard.after_test("t.py::quiet") is None
    monkeypatch.setattr(faults, "cuda_probe", lambda: ILLEGAL)
    poison = guard.after_test("t.py::quiet")
    assert poison is not None and poison.kernel == f"{__name__}.bad_kernel"
    assert guard.after_test("t.py::next") is None  # reported once, by the test that did it


def test_the_probe_needs_no_torch_import_and_no_cuda() -> None:
    assert faults.cuda_probe() is None  # CUDA never started in this process


def test_kernel_names() -> None:
    assert kernel_name(bad_kernel, None) == f"{__name__}.bad_kernel"
    assert kernel_name(len, "n") == "len (name='n')"
    assert kernel_name(lambda: None, None).endswith("<lambda>")

    class Endless:
        def __call__(self) -> None:
            pass

        def __repr__(self) -> str:
            raise RecursionError("a module holding itself")

    assert kernel_name(Endless(), None) == f"{__name__}.{Endless.__qualname__} object"


# --- in a run ------------------------------------------------------------------------------------

POISON_CONFTEST = (
    SCRIPTED_CONFTEST
    + """
from pytest_kernelperf.measure import faults

STATE = {"broken": False}
_probe = faults.cuda_probe

def fake_probe():
    return "RuntimeError: CUDA error: an illegal memory access was encountered" if STATE["broken"] else None

def pytest_configure(config):
    faults.cuda_probe = fake_probe

def pytest_unconfigure(config):
    faults.cuda_probe = _probe
"""
)

POISON_MODULE = """
import os
import torch
from conftest import STATE

def good(x):
    return x * 2
good.fake_ms = 1.0

def illegal_access(x):
    STATE["broken"] = True  # what an out-of-bounds store does to a real CUDA context
    raise RuntimeError("CUDA error: an illegal memory access was encountered")
illegal_access.fake_ms = 1.0

def silent_corruption(x):
    STATE["broken"] = True
    return x * 3  # a wrong answer read back from a broken context
silent_corruption.fake_ms = 1.0

def reference(x):
    return x * 2

def test_before(kernel_bench):
    kernel_bench(good, torch.ones(8), reference=reference)

def test_bad(kernel_bench):
    kernel_bench({bad}, torch.ones(8), reference=reference)

def test_after_one(kernel_bench):
    kernel_bench(good, torch.ones(8), reference=reference)

def test_after_two(kernel_bench):
    kernel_bench(good, torch.ones(8), reference=reference)

def test_without_kernel_bench():
    assert True
"""


def poison_project(project: Project, bad: str = "illegal_access") -> None:
    project.pytester.makeconftest(POISON_CONFTEST)
    project.module(POISON_MODULE.format(bad=bad))


NOT_MEASURED = (
    "*not measured: CUDA context poisoned by test_kernels.py::test_bad (kernel test_kernels.{bad}: *"
)


@pytest.mark.parametrize("bad", ["illegal_access", "silent_corruption"])
def test_poisoned_process_fails_the_faulting_test_and_measures_nothing_after(
    project: Project, bad: str
) -> None:
    poison_project(project, bad)

    result = project.run("--kernelperf-update-baselines")

    result.assert_outcomes(passed=2, failed=1, errors=2)
    result.stdout.fnmatch_lines(
        [
            f"*CUDA error in kernel test_kernels.{bad} (test_kernels.py::test_bad): {ILLEGAL}*",
            "*later kernel_bench tests in this process are not measured*",
        ]
    )
    not_measured = (
        f"not measured: CUDA context poisoned by test_kernels.py::test_bad (kernel test_kernels.{bad}: "
        f"{ILLEGAL}); run with --kernelperf-isolate to give each kernel_bench test its own process"
    )
    result.stdout.fnmatch_lines(
        [
            f"ERROR test_kernels.py::test_after_one - Failed: {not_measured}",
            f"ERROR test_kernels.py::test_after_two - Failed: {not_measured}",
        ]
    )
    out = result.stdout.str()
    assert "mismatch" not in out.replace("mismatch in output", "") or bad == "silent_corruption"
    assert "regression" not in out
    result.stdout.fnmatch_lines(["*= kernelperf warnings =*", "baselines NOT updated: the CUDA context of*"])
    assert not project.baseline_file.exists()  # nothing written from a poisoned process


def test_a_mismatch_read_from_a_broken_context_is_reported_as_the_cuda_error(project: Project) -> None:
    poison_project(project, "silent_corruption")
    result = project.run("--kernelperf")
    result.assert_outcomes(passed=2, failed=1, errors=2)
    result.stdout.fnmatch_lines(
        ["FAILED test_kernels.py::test_bad - *CudaContextPoisoned: CUDA error in kernel test_kernels.silent*"]
    )
    assert "mismatch in output" in result.stdout.str()  # the failure it replaced, shown as its cause


def test_a_fault_that_surfaces_after_the_test_fails_that_test(project: Project) -> None:
    project.pytester.makeconftest(POISON_CONFTEST)
    project.module(
        """
        import torch
        from conftest import STATE

        def good(x):
            return x * 2
        good.fake_ms = 1.0

        def latent(x):
            STATE["broken"] = True  # the error is only seen at the next synchronize
            return x * 2
        latent.fake_ms = 1.0

        def test_latent(kernel_bench):
            kernel_bench(latent, torch.ones(8))

        def test_after(kernel_bench):
            kernel_bench(good, torch.ones(8))
        """
    )
    result = project.run("--kernelperf")
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(["*CUDA error in kernel test_kernels.latent (test_kernels.py::test_latent)*"])


def test_a_kernel_that_raises_errors_its_test_with_its_traceback_and_the_rest_continue(
    project: Project,
) -> None:
    project.module(
        """
        import torch

        def good(x):
            return x * 2
        good.fake_ms = 1.0

        def broken(x):
            return x.reshape(3, 5)  # 8 elements: a plain Python-level error
        broken.fake_ms = 1.0

        def test_broken(kernel_bench):
            kernel_bench(broken, torch.ones(8))

        def test_fine(kernel_bench):
            kernel_bench(good, torch.ones(8))
        """
    )
    result = project.run("--kernelperf-update-baselines")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*def broken(x):",
            ">*return x.reshape(3, 5)*",
            "E*RuntimeError: shape *3, 5* is invalid for input of size 8",
        ]
    )
    assert "CUDA context poisoned" not in result.stdout.str()
    assert {key.test for key in read(project.baseline_file)} == {"test_fine"}  # the others still update


# --- isolation -----------------------------------------------------------------------------------

ISOLATED_MODULE = """
import os
import torch
from conftest import STATE

def good(x):
    return x * 2
good.fake_ms = 1.0

def illegal_access(x):
    STATE["broken"] = True
    raise RuntimeError("CUDA error: an illegal memory access was encountered")
illegal_access.fake_ms = 1.0

def segfault(x):
    os._exit(139)  # the process dies without a word, as a crashing extension does
segfault.fake_ms = 1.0

def test_before(kernel_bench):
    kernel_bench(good, torch.ones(8))

def test_bad(kernel_bench):
    kernel_bench(illegal_access, torch.ones(8))

def test_crash(kernel_bench):
    kernel_bench(segfault, torch.ones(8))

def test_after(kernel_bench):
    kernel_bench(good, torch.ones(8), name="named")

def test_without_kernel_bench():
    assert os.environ.get("KERNELPERF_ISOLATE_NODEID") is None  # runs in the parent

def test_skips(kernel_bench):
    import pytest
    pytest.skip("no such device here")
"""


@pytest.mark.slow
def test_isolation_confines_faults_to_their_tests(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    project.pytester.makeconftest(POISON_CONFTEST)
    project.module(ISOLATED_MODULE)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))

    # The children get the parent's -p options: hypothesis's plugin would import hypothesis in each.
    result = project.run(
        *SUBPROCESS_ARGS,
        "--kernelperf-update-baselines",
        "--kernelperf-isolate",
        "-rA",
        "--junitxml=report.xml",
    )

    result.assert_outcomes(passed=3, failed=2, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "PASSED test_kernels.py::test_before",
            "PASSED test_kernels.py::test_after",
            "PASSED test_kernels.py::test_without_kernel_bench",
            "SKIPPED ??? test_kernels.py:*: no such device here",
            "FAILED test_kernels.py::test_bad - *CUDA error in kernel test_kernels.illegal_access*",
            "FAILED test_kernels.py::test_crash - the isolated process of test_kernels.py::test_crash "
            "ended without a result (exit code 139)*",
        ]
    )
    result.stdout.fnmatch_lines(["kernelperf: 2 new"])  # the children's results reach the table
    assert {key.test for key in read(project.baseline_file)} == {"test_before", "test_after::named"}


# --- pytest-xdist with a poisoned worker -----------------------------------------------------------


@pytest.mark.slow
def test_a_poisoned_worker_writes_nothing_and_the_others_still_update(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.pytester.makeconftest(POISON_CONFTEST)
    project.module(POISON_MODULE.format(bad="illegal_access"), name="test_poisoned")
    project.module(POISON_MODULE.format(bad="good"), name="test_healthy")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))

    seed_peak_cache(project.pytester.path)
    result = project.pytester.runpytest_subprocess(
        *SUBPROCESS_ARGS, "-n", "2", "--dist", "loadfile", "--kernelperf-update-baselines"
    )

    result.assert_outcomes(passed=7, failed=1, errors=2)
    folder = project.pytester.path / "baselines"
    assert not (folder / "test_poisoned.yaml").exists()
    assert {key.test for key in read(folder / "test_healthy.yaml")} == {
        "test_before",
        "test_bad",
        "test_after_one",
        "test_after_two",
    }
    result.stdout.fnmatch_lines(
        ["*worker gw*: 1 baseline entries not written: the CUDA context of this process was poisoned by*"]
    )


# --- a GPU job without its GPU -----------------------------------------------------------------------


def test_require_gpu_without_a_gpu_errors_every_kernel_bench_test(project: Project) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    project.module(POISON_MODULE.format(bad="good").replace("from conftest import STATE", "STATE = {}"))

    result = project.run("--kernelperf", "--kernelperf-require-gpu")

    result.assert_outcomes(passed=1, errors=4)
    result.stdout.fnmatch_lines(
        [
            "ERROR test_kernels.py::test_before - Failed: --kernelperf-require-gpu is set but no CUDA "
            "device is usable here (torch.cuda.is_available() is False*",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_require_gpu_with_a_gpu_lets_tests_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_kernelperf.measure import device
    from pytest_kernelperf.plugins import gpus

    monkeypatch.setattr(device, "cuda_usable", lambda: True)
    assert gpus.missing_gpu() is None
    monkeypatch.setattr(device, "cuda_usable", lambda: False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    problem = gpus.missing_gpu()
    assert problem is not None and "CUDA_VISIBLE_DEVICES=''" in problem
