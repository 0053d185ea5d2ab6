"""A baseline's profile costs a few times the call's own rounds: the code lookup of its inventory
disassembles only binaries that name its kernels, within the time left, and no Triton SASS."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from conftest import SCRIPTED_CONFTEST, Project

from pytest_kernelperf.profiling import capture, codegen

KERNEL = "gelu_kernel(float const*, float*, long)"
SASS = """
code for sm_90
        Function : _Z11gelu_kernelPKfPfl
        /*0000*/                   LDC R1, c[0x0][0x28] ;
"""


def binary(folder: Path, name: str, contents: bytes) -> Path:
    path = folder / name
    path.write_bytes(b"\x7fELF host code " + contents + b" more bytes")
    return path


def test_only_binaries_that_name_a_kernel_are_disassembled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    naming = binary(tmp_path, "gelu_ext.so", b"_Z11gelu_kernelPKfPfl")
    other = binary(tmp_path, "torchvision_like.so", b"_Z10roi_alignPKfPf")
    monkeypatch.setattr(codegen, "user_binaries", lambda: [naming, other])
    asked: list[Path] = []

    def disassemble(path: Path, seconds: float) -> dict[tuple[str, str], str]:
        asked.append(path)
        return codegen.split_sass(SASS)

    report = codegen.extension_code([KERNEL], arch="sm_90", disassemble=disassemble)
    assert asked == [naming] and set(report.codes) == {KERNEL}
    assert codegen.mentions(naming, [b"gelu_kernel"]) and not codegen.mentions(other, [b"gelu_kernel"])
    (tmp_path / "empty.so").write_bytes(b"")
    assert not codegen.mentions(tmp_path / "empty.so", [b"x"]) and not codegen.mentions(
        tmp_path / "gone", [b"x"]
    )


def test_no_binary_is_disassembled_past_the_deadline_and_the_note_says_why(tmp_path: Path) -> None:
    naming = binary(tmp_path, "gelu_ext.so", b"_Z11gelu_kernelPKfPfl")
    given: list[float] = []

    def disassemble(path: Path, seconds: float) -> dict[tuple[str, str], str]:
        given.append(seconds)
        return codegen.split_sass(SASS)

    late = codegen.extension_code(
        [KERNEL], binaries=[naming], disassemble=disassemble, deadline=time.monotonic() - 1
    )
    assert given == [] and late.codes == {}
    (note,) = late.notes
    assert f"SASS of the kernels in {naming} not read" in note and "left to the profile" in note
    soon = codegen.extension_code(
        [KERNEL], binaries=[naming], disassemble=disassemble, deadline=time.monotonic() + 5
    )
    assert set(soon.codes) == {KERNEL} and 0 < given[0] <= 5  # the time left, not two minutes


def test_a_binary_too_slow_to_disassemble_is_not_tried_again_with_no_more_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    naming = binary(tmp_path, "big_ext.so", b"_Z11gelu_kernelPKfPfl")
    runs: list[float] = []

    def slow(command: list[str], timeout: float, **options: Any) -> subprocess.CompletedProcess[str]:
        runs.append(timeout)
        raise subprocess.TimeoutExpired(command, timeout)

    monkeypatch.setattr(subprocess, "run", slow)  # the module codegen runs cuobjdump through
    assert codegen._disassemble(naming, "cuobjdump", 0.5) is None
    assert codegen._disassemble(naming, "cuobjdump", 0.2) is None  # not run again: it took longer
    assert runs == [0.5]
    assert codegen._disassemble(naming, "cuobjdump", 3.0) is None  # more time: tried once more
    assert runs == [0.5, 3.0]


class _Asm(Mapping[str, str]):
    """A compiled Triton kernel's `asm`, whose SASS (a cuobjdump run in Triton) is counted."""

    def __init__(self) -> None:
        self.sass_read = 0

    def __getitem__(self, key: str) -> str:
        if key == "sass":
            self.sass_read += 1
            return "SASS"
        if key == "ptx":
            return ".visible .entry my_kernel() { ret; }"
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(("ptx",))

    def __len__(self) -> int:
        return 1


class _Kernel:
    name = "my_kernel"
    function = 7

    def __init__(self) -> None:
        self.asm = _Asm()


def test_an_inventory_without_files_takes_the_triton_kernels_ptx_hash_not_their_sass() -> None:
    kernel = _Kernel()
    inventory_only = codegen.triton_code(["my_kernel"], {"my_kernel": {7}}, kernels=[kernel], sass=False)
    assert kernel.asm.sass_read == 0 and set(inventory_only.codes["my_kernel"].texts) == {"ptx"}
    written = codegen.triton_code(["my_kernel"], {"my_kernel": {7}}, kernels=[kernel])
    assert kernel.asm.sass_read == 1 and written.codes["my_kernel"].texts["sass"] == "SASS"
    assert written.codes["my_kernel"].hash == inventory_only.codes["my_kernel"].hash


def test_the_budget_is_a_multiple_of_the_calls_measuring_with_a_floor() -> None:
    assert capture.inventory_budget(0.0) == capture.INVENTORY_BUDGET_FLOOR_S
    assert capture.inventory_budget(10.0) == capture.INVENTORY_BUDGET_FACTOR * 10.0


BUDGET_LOG = (
    SCRIPTED_CONFTEST
    + """
import os

from pytest_kernelperf.testing import FakeProfiler

@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_profile_call(config, profile_request):
    with open(os.environ["BUDGET_LOG"], "a") as log:
        log.write(f"{profile_request.folder is not None} {profile_request.budget_s}\\n")
    return FakeProfiler()(profile_request)
"""
)


def test_a_baselines_profile_is_bounded_and_one_asked_for_is_not(project: Project, tmp_path: Path) -> None:
    project.pytester.makeconftest(BUDGET_LOG)
    project.module()
    log = tmp_path / "budget.log"
    project.monkeypatch.setenv("BUDGET_LOG", str(log))
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    files, budget = log.read_text().split()
    assert files == "False" and float(budget) >= capture.INVENTORY_BUDGET_FLOOR_S
    log.unlink()
    project.run("--kernelperf", "--kernelperf-profile").assert_outcomes(passed=1)
    assert log.read_text().split() == ["True", "None"]  # files asked for: written in full
