"""--kernelperf-ncu end to end, with scripted times and a fake ncu on PATH.

The fake ncu (FAKE_NCU below) does what the plugin asks of the real one: profiling (`--export R
... <child command>`) writes R.ncu-rep, and `--import R.ncu-rep --csv --page raw` prints a CSV in
ncu's raw layout from tests/data (FAKE_NCU_CSV). FAKE_NCU_MODE plays what goes wrong on a GPU
machine: counters not permitted, a kernel that cannot be replayed, a metric ncu does not know,
a run that hangs.
"""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import KERNEL_MODULE, Project

from pytest_kernelperf.profiling import ncu as ncu_module

DATA = Path(__file__).resolve().parent / "data"
BASE_CSV = DATA / "ncu_raw.csv"
REGRESSED_CSV = DATA / "ncu_raw_regressed.csv"
H200_CSV = DATA / "ncu_h200_raw.csv"  # recorded by studies/ncu_study.py on an H200

FAKE_NCU = """#!{python}
import os, pathlib, subprocess, sys, time

argv = sys.argv[1:]
with open(os.environ["FAKE_NCU_LOG"], "a") as log:
    log.write(("import " if "--import" in argv else "profile ") + " ".join(argv) + "\\n")
if "--import" in argv:
    sys.stdout.write(pathlib.Path(os.environ["FAKE_NCU_CSV"]).read_text())
    sys.exit(0)
mode = os.environ.get("FAKE_NCU_MODE", "ok")
at = argv.index("--export")
report, child = argv[at + 1], argv[at + 2 :]
metrics = argv[argv.index("--metrics") + 1]
if mode == "permission":
    print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
          "Performance Counters on the target device 0.")
    sys.exit(1)
if mode == "hang":
    time.sleep(120)
if mode == "unknown" and "dram__bytes_write.sum" in metrics:
    print("==ERROR== Failed to find metric dram__bytes_write.sum")
    sys.exit(1)
if mode == "replay":
    print('==ERROR== Failed to profile "triton_poi_fused_add_0" in process 4242: kernel replay failed')
    sys.exit(1)
if mode == "none":
    print("==WARNING== No kernels were profiled.")
    sys.exit(0)
if os.environ.get("FAKE_NCU_RUN_CHILD"):
    done = subprocess.run(child)
    print(f"child exit code {{done.returncode}}")
pathlib.Path(report + ".ncu-rep").write_text("fake Nsight Compute report")
"""


class Ncu:
    """A project with a fake ncu on PATH and a log of its invocations."""

    def __init__(self, project: Project, folder: Path) -> None:
        self.project = project
        self.log = folder / "ncu.log"
        self.log.write_text("")
        tool = folder / "bin" / "ncu"
        tool.parent.mkdir()
        tool.write_text(FAKE_NCU.format(python=sys.executable))
        tool.chmod(0o755)
        self.bin = tool.parent
        monkeypatch = project.monkeypatch
        monkeypatch.setenv("PATH", f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}")
        monkeypatch.delenv("CUDA_HOME", raising=False)
        monkeypatch.setenv("FAKE_NCU_LOG", str(self.log))
        monkeypatch.delenv("FAKE_NCU_MODE", raising=False)
        project.module(KERNEL_MODULE)

    def run(self, *args: str, csv: Path = BASE_CSV, mode: str = "ok", ms: float = 1.0) -> pytest.RunResult:
        self.project.monkeypatch.setenv("FAKE_NCU_CSV", str(csv))
        self.project.monkeypatch.setenv("FAKE_NCU_MODE", mode)
        return self.project.run(*args, ms=ms)

    def calls(self, kind: str = "profile") -> list[str]:
        return [line for line in self.log.read_text().splitlines() if line.startswith(kind)]

    @property
    def folder(self) -> Path:
        return self.project.pytester.path / ".kernelperf" / "test_kernels.py_test_kernel" / "default"


@pytest.fixture
def ncu(project: Project, tmp_path_factory: pytest.TempPathFactory) -> Ncu:
    return Ncu(project, tmp_path_factory.mktemp("ncu"))


def test_an_update_keeps_the_counters_and_the_report(ncu: Ncu) -> None:
    ncu.run("--kernelperf-update-baselines", "--kernelperf-ncu").assert_outcomes(passed=1)
    text = ncu.project.baseline_file.read_text()
    assert "counters:" in text
    assert "dram_read_bytes: 67108900.0" in text  # six significant digits, as every stored figure
    assert "occupancy_pct: 62.35" in text
    assert "stall_long_scoreboard: 18.7" in text
    assert (ncu.folder / "counters.ncu-rep").read_text() == "fake Nsight Compute report"
    assert (ncu.folder / "counters.csv").is_file()
    (profile,) = ncu.calls()
    # The fixed decisions: only the NVTX range, the clocks as users run them, a fixed metric set.
    assert "--nvtx --nvtx-include kernelperf/" in profile
    assert "--clock-control none" in profile
    assert "-m pytest" in profile and "test_kernels.py" in profile


def test_a_slower_call_shows_the_counters_that_moved(ncu: Ncu) -> None:
    ncu.run("--kernelperf-update-baselines", "--kernelperf-ncu")
    result = ncu.run("--kernelperf", "--kernelperf-ncu", csv=REGRESSED_CSV, ms=2.0)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "hardware counters against the baseline's (Nsight Compute):" in out
    assert (
        "triton_poi_fused_add_0: duration 33.2 us -> 61 us (+84%), DRAM read 64 MiB -> 128 MiB (+100%), "
        "occupancy 62% -> 31%, registers 64 -> 128, long_scoreboard stall 18.7 -> 25.3 (+35%)"
    ) in out
    assert (
        "vectorized_elementwise_kernel" not in out.split("hardware counters against")[1].split("\n  env")[0]
    )
    assert "counters.ncu-rep" in out  # the report, for the Nsight Compute GUI
    assert "Nsight Compute counters of 2 kernel(s) read in" in out


def test_a_passing_run_pays_nothing(ncu: Ncu) -> None:
    ncu.run("--kernelperf-update-baselines")
    ncu.run("--kernelperf", "--kernelperf-ncu").assert_outcomes(passed=1)
    assert ncu.calls() == []
    assert not ncu.folder.exists()


def test_without_baseline_counters_the_current_ones_are_shown(ncu: Ncu) -> None:
    ncu.run("--kernelperf-update-baselines")
    result = ncu.run("--kernelperf", "--kernelperf-ncu", ms=2.0)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*hardware counters now (Nsight Compute; the baseline has none: record them with "
            "--kernelperf-update-baselines --kernelperf-ncu):",
            "*triton_poi_fused_add_0: duration 33.2 us, DRAM read 64 MiB, DRAM write 64 MiB, L2 hit rate 3%, "
            "occupancy 62%, registers 64, shared memory per block 0 B, SM throughput 18%, memory throughput "
            "92%, sectors per global load 4, top stalls long_scoreboard 18.7, *",
        ]
    )


def test_ncus_own_output_from_an_h200_reads_through_to_the_message(ncu: Ncu) -> None:
    ncu.run("--kernelperf-update-baselines")
    result = ncu.run("--kernelperf", "--kernelperf-ncu", csv=H200_CSV, ms=2.0)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*hardware counters now (Nsight Compute;*",
            "*cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>*duration 348 us, DRAM read "
            "16.1 MiB, DRAM write 1.7 MiB, L2 hit rate 93%, occupancy 12%, registers 202, shared memory "
            "per block 48 KiB,*",
        ]
    )


TWO_TESTS = (
    KERNEL_MODULE
    + """
def test_other(kernel_bench):
    kernel_bench(kernel, torch.linspace(-3, 3, 64), reference=reference)
"""
)


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("absent", "ncu (Nsight Compute) not found on PATH"),
        ("permission", "NVreg_RestrictProfilingToAdminUsers=0"),
    ],
)
def test_what_holds_for_the_whole_run_is_said_once_and_the_verdict_stands(
    ncu: Ncu, tmp_path: Path, mode: str, said: str
) -> None:
    ncu.project.module(TWO_TESTS)
    ncu.run("--kernelperf-update-baselines")
    if mode == "absent":  # nowhere to be found, on a GPU machine's CUDA install either
        ncu.project.monkeypatch.setenv("PATH", str(tmp_path))
        ncu.project.monkeypatch.delenv("CUDA_HOME", raising=False)
        ncu.project.monkeypatch.setattr(ncu_module, "DEFAULT_CUDA_ROOT", str(tmp_path))
    result = ncu.run("--kernelperf", "--kernelperf-ncu", mode=mode, ms=2.0)
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert out.count("performance regression in") >= 2
    sections = (
        out.split(f" {name} _")[1].split("\n_")[0].split("\n=")[0] for name in ("test_kernel", "test_other")
    )
    first, second = sections
    # The first call says why (in its message, and one warning); the second neither tries nor repeats.
    assert said in first
    assert said not in second
    assert out.count(said) == 2  # the first message and the warnings summary
    assert len(ncu.calls()) == (0 if mode == "absent" else 1)


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("replay", 'ncu could not profile the call: Failed to profile "triton_poi_fused_add_0"'),
        ("none", "ncu profiled no kernel of the call"),
    ],
)
def test_a_call_ncu_cannot_profile_says_why_and_fails_as_slower(ncu: Ncu, mode: str, said: str) -> None:
    ncu.run("--kernelperf-update-baselines")
    result = ncu.run("--kernelperf", "--kernelperf-ncu", mode=mode, ms=2.0)
    result.assert_outcomes(failed=1)
    assert "performance regression in test_kernels.py::test_kernel" in result.stdout.str()
    assert said in result.stdout.str()


def test_a_metric_ncu_does_not_know_is_left_out(ncu: Ncu) -> None:
    ncu.run("--kernelperf-update-baselines", "--kernelperf-ncu", mode="unknown").assert_outcomes(passed=1)
    assert len(ncu.calls()) == 2
    assert "dram__bytes_write.sum" not in ncu.calls()[1]
    assert "counters:" in ncu.project.baseline_file.read_text()


def test_a_hanging_ncu_is_stopped_at_the_timeout(ncu: Ncu) -> None:
    ncu.run("--kernelperf-update-baselines")
    began = time.monotonic()
    result = ncu.run("--kernelperf", "--kernelperf-ncu", "--kernelperf-ncu-timeout=1", mode="hang", ms=2.0)
    assert time.monotonic() - began < 60
    result.assert_outcomes(failed=1)
    assert "ncu did not finish within 1 s (--kernelperf-ncu-timeout); stopped" in result.stdout.str()


def test_a_damaged_counters_field_names_the_file_and_line(ncu: Ncu) -> None:
    ncu.run("--kernelperf-update-baselines", "--kernelperf-ncu")
    path = ncu.project.baseline_file
    lines = path.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "occupancy_pct:" in line)
    lines[at] = lines[at].split(":")[0] + ": 162.35"
    path.write_text("\n".join(lines) + "\n")
    result = ncu.run("--kernelperf")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [f"*{path.name}:{at + 1}*occupancy_pct of 'triton_poi_fused_add_0' is a percentage, at most 100*"]
    )


def test_the_marker_asks_for_counters_of_one_test(ncu: Ncu) -> None:
    ncu.project.module(
        KERNEL_MODULE.replace(
            "def test_kernel", "@pytest.mark.kernelperf(ncu=True)\ndef test_kernel"
        ).replace("import torch", "import pytest\nimport torch")
    )
    ncu.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    assert len(ncu.calls()) == 1


REPLAYED_MODULE = """
import os

import torch

def kernel(x):
    with open(os.environ["KERNEL_LOG"], "a") as log:
        log.write(f"kernel {os.getpid()}\\n")
    return x * 2

kernel.fake_ms = float(os.environ.get("FAKE_MS", "1.0"))

def other(x):
    with open(os.environ["KERNEL_LOG"], "a") as log:
        log.write(f"other {os.getpid()}\\n")
    return x * 2

other.fake_ms = 1.0

def test_kernel(kernel_bench):
    x = torch.linspace(-3, 3, 64)
    kernel_bench(other, x, reference=lambda x: x + x, name="other")
    kernel_bench(kernel, x, reference=lambda x: x + x, name="main")
"""


@pytest.mark.slow
def test_the_child_replays_only_the_named_call(ncu: Ncu, tmp_path: Path) -> None:
    """The child process runs the test alone, and only the named call: its first call, the warm-up
    calls and the one call ncu profiles; the other call of the test is not run there."""
    log = tmp_path / "kernel.log"
    ncu.project.monkeypatch.setenv("KERNEL_LOG", str(log))
    ncu.project.monkeypatch.setenv("FAKE_NCU_RUN_CHILD", "1")
    ncu.project.module(textwrap.dedent(REPLAYED_MODULE))
    ncu.run("--kernelperf-update-baselines")
    log.write_text("")
    # Only `main` reads slower; the child replays it.
    result = ncu.run("--kernelperf", "--kernelperf-ncu", ms=2.0)
    result.assert_outcomes(failed=1)
    calls = log.read_text().split()
    here = str(os.getpid())
    child = [calls[i] for i in range(0, len(calls), 2) if calls[i + 1] != here]
    assert child == ["kernel"] * 5  # first call, 3 warm-up calls, the profiled call


def test_the_markdown_and_json_carry_the_counters(ncu: Ncu) -> None:
    import json

    markdown, report = ncu.project.pytester.path / "summary.md", ncu.project.pytester.path / "run.json"
    ncu.run("--kernelperf-update-baselines")
    ncu.run(
        "--kernelperf",
        "--kernelperf-ncu",
        f"--kernelperf-markdown={markdown}",
        f"--kernelperf-json={report}",
        ms=2.0,
    )
    text = markdown.read_text()
    assert "<details><summary>Hardware counters (Nsight Compute)</summary>" in text
    assert (
        "| `test_kernels.py::test_kernel` | `triton_poi_fused_add_0` | duration 33.2 us, DRAM read 64 MiB"
        in text
    )
    (result,) = json.loads(report.read_text())["results"]
    add = result["baseline_entry"]["counters"][0]  # sorted by name, as in a baseline file
    assert add["name"] == "triton_poi_fused_add_0"
    assert add["metrics"]["registers"] == 64


def test_with_every_call_profiled_every_call_is_read(ncu: Ncu) -> None:
    ncu.run("--kernelperf-update-baselines")
    ncu.run("--kernelperf", "--kernelperf-ncu", "--kernelperf-profile").assert_outcomes(passed=1)
    assert len(ncu.calls()) == 1
    assert (ncu.folder / "counters.ncu-rep").is_file()
