"""A run file as a pull request's paired gate writes it, built in memory: one kernel the same, one
slower than the base branch, one with a wrong answer, and a test that failed on its own."""

from __future__ import annotations

from pathlib import Path

from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.model.result import BenchResult, Comparison, Found, RevisionCheck, Verdict
from pytest_kernelperf.results import runfile

BASE = "origin/main (1a2b3c4d5e)"
COMMIT = "1a2b3c4d5e" + "0" * 30
MISMATCH = (
    "mismatch in output: 4082 of 4096 elements (99.7%) differ beyond rtol=1.3e-06, atol=1e-05; "
    "max abs error 3.92 at index (3908,)"
)
SLOWER_MESSAGE = (
    "performance regression in tests/test_gelu.py::test_gelu[compiled] on NVIDIA H200: 0.03987 ms vs "
    "0.03318 ms at origin/main (1a2b3c4d5e) (+20.2%, practical floor 0.5%).\n  evidence: ratio 1.2016"
)


def _paired(nodeid: str, verdict: Verdict, ratio: float, ci: tuple[float, float], ms: float) -> BenchResult:
    base_ms = ms / ratio
    return BenchResult(
        nodeid=nodeid,
        name=None,
        device="NVIDIA H200",
        verdict=verdict,
        method="cupti",
        level_ms=ms,
        round_range_ms=(ms * 0.99, ms * 1.01),
        rounds_ms=(ms * 0.99, ms, ms * 1.01),
        baseline_level_ms=base_ms,
        comparison=Comparison(verdict, ratio, 1e-9, 0.005, 0.01, "", ratio_ci=ci, level=0.002),
        against=RevisionCheck(
            BASE,
            COMMIT,
            Found.SAME_NAME,
            "kernels.gelu:gelu",
            "",
            base_ms,
            (base_ms,) * 3,
            "cupti",
            "identical",
        ),
    )


def gate_run(rootdir: Path | str = "/work/repo", slower: float = 1.2016) -> runfile.RunReport:
    """The run, its files under `rootdir`; `slower` the compiled kernel's ratio to the base branch."""
    same = _paired("tests/test_gelu.py::test_gelu[manual]", Verdict.SAME, 1.0004, (0.9981, 1.0027), 0.0412)
    slow = _paired(
        "tests/test_gelu.py::test_gelu[compiled]",
        Verdict.SLOWER,
        slower,
        (slower - 0.0099, slower + 0.01),
        0.0332 * slower,
    )
    wrong = BenchResult(
        "tests/test_gelu.py::test_gelu[triton]", None, "NVIDIA H200", Verdict.MISMATCH, notes=(MISMATCH,)
    )
    tests = {
        same.nodeid: runfile.ReportedTest("tests/test_gelu.py", 31, "passed"),
        slow.nodeid: runfile.ReportedTest("tests/test_gelu.py", 31, "failed", SLOWER_MESSAGE),
        wrong.nodeid: runfile.ReportedTest("tests/test_gelu.py", 31, "failed", MISMATCH),
        "tests/test_softmax.py::test_softmax": runfile.ReportedTest(
            "tests/test_softmax.py", 12, "failed", "ValueError: no kernel for 3 dimensions"
        ),
    }
    return runfile.RunReport(
        plugin_version="0.1.0",
        created="2026-12-04T00:00:00Z",
        mode="compare",
        settings={"threshold": 0.005, "alpha": 0.01, "strict": False, "allow_undetermined": False},
        devices=(DeviceInfo("cuda", "NVIDIA H200", 0, {"torch": "2.11.0", "cuda": "13.0"}),),
        results=(same, slow, wrong),
        rootdir=str(rootdir),
        tests=tests,
    )
