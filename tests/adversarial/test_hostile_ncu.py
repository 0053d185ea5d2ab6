"""An Nsight Compute that misbehaves: a descendant that holds its output open past its end, an
`--import` that hangs or fails without a word, error text and kernel names carrying terminal
escape sequences. The timeout holds whatever ncu's descendants do, and what ncu says reaches the
terminal as text (control characters as escapes), never as instructions to it.

The fake ncu is tests/test_ncu_flow.py's scaffold (a project with an `ncu` on PATH) running the
script below instead of its well-behaved one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Project
from test_ncu_flow import BASE_CSV, Ncu

HOSTILE_NCU = """#!{python}
import os, pathlib, subprocess, sys, time

argv = sys.argv[1:]
mode = os.environ.get("FAKE_NCU_MODE", "ok")
if "--import" in argv:
    if mode == "import-hang":
        time.sleep(120)
    if mode == "import-silent":
        sys.exit(3)
    sys.stdout.write(pathlib.Path(os.environ["FAKE_NCU_CSV"]).read_text())
    sys.exit(0)
if mode.startswith("daemon"):
    # A descendant in a session of its own (out of reach of a kill of ncu's group) that keeps
    # ncu's output open long after ncu is gone.
    daemon = subprocess.Popen(["sleep", "60"], start_new_session=True)
    pathlib.Path(os.environ["FAKE_NCU_DAEMON"]).write_text(str(daemon.pid))
    if mode == "daemon-hang":
        time.sleep(120)
if mode == "ansi":
    print("==ERROR== \\x1b[2J\\x1b[31mBOOM\\x1b]8;;http://evil\\x07link\\x1b]8;;\\x07")
    sys.exit(1)
at = argv.index("--export")
pathlib.Path(argv[at + 1] + ".ncu-rep").write_text("fake Nsight Compute report")
"""

# Without the limit enforced, each of these runs waits for the daemon's 60 s or ncu's 120 s.
WELL_WITHIN_S = 25.0


@pytest.fixture
def hostile(project: Project, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ncu]:
    ncu = Ncu(project, tmp_path_factory.mktemp("ncu"))
    (ncu.bin / "ncu").write_text(HOSTILE_NCU.format(python=sys.executable))
    daemon = tmp_path_factory.mktemp("daemon") / "pid"
    project.monkeypatch.setenv("FAKE_NCU_DAEMON", str(daemon))
    yield ncu
    if daemon.exists():  # the daemon the fake ncu started, which nothing else ends
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(daemon.read_text()), signal.SIGKILL)


def _slower_run(ncu: Ncu, mode: str, timeout_s: int, csv: Path = BASE_CSV) -> tuple[str, float]:
    """A baseline, then a 2x slower run with counters read: its output and its seconds."""
    ncu.run("--kernelperf-update-baselines")
    began = time.monotonic()
    result = ncu.run(
        "--kernelperf",
        "--kernelperf-ncu",
        f"--kernelperf-ncu-timeout={timeout_s}",
        mode=mode,
        csv=csv,
        ms=2.0,
    )
    seconds = time.monotonic() - began
    result.assert_outcomes(failed=1)
    return result.stdout.str(), seconds


def test_a_daemon_holding_ncus_output_does_not_stretch_the_timeout(hostile: Ncu) -> None:
    out, seconds = _slower_run(hostile, "daemon-hang", timeout_s=2)
    assert seconds < WELL_WITHIN_S
    assert "ncu did not finish within 2 s (--kernelperf-ncu-timeout); stopped" in out
    assert "performance regression in test_kernels.py::test_kernel" in out  # the verdict stands


def test_a_daemon_left_behind_by_a_finished_ncu_is_not_waited_for(hostile: Ncu) -> None:
    out, seconds = _slower_run(hostile, "daemon-ok", timeout_s=40)
    assert seconds < WELL_WITHIN_S
    assert "Nsight Compute counters of 2 kernel(s) read in" in out


@pytest.mark.slow  # seconds of bounded waiting: the slow tier
def test_a_hanging_import_is_bounded_by_the_time_left_and_says_it_timed_out(hostile: Ncu) -> None:
    out, seconds = _slower_run(hostile, "import-hang", timeout_s=3)
    assert seconds < WELL_WITHIN_S
    assert "counters.ncu-rep` timed out after" in out
    assert "(what was left of --kernelperf-ncu-timeout=3); stopped" in out


def test_an_import_that_fails_without_a_word_says_its_exit_code(hostile: Ncu) -> None:
    out, _ = _slower_run(hostile, "import-silent", timeout_s=30)
    assert "counters.ncu-rep` failed (exit code 3): no output" in out


def test_ncus_error_text_reaches_the_terminal_escaped(hostile: Ncu) -> None:
    out, _ = _slower_run(hostile, "ansi", timeout_s=30)
    assert "\x1b" not in out and "\x07" not in out
    assert r"ncu could not profile the call: \x1b[2J\x1b[31mBOOM\x1b]8;;http://evil\x07link" in out


def test_a_kernel_name_with_escapes_and_a_line_break_stays_on_its_line(hostile: Ncu, tmp_path: Path) -> None:
    csv = tmp_path / "hostile.csv"
    name = "evil\x1b[31mRED\x1b[0m\nsecond line"
    csv.write_text(BASE_CSV.read_text().replace("triton_poi_fused_add_0", name))
    out, _ = _slower_run(hostile, "ok", timeout_s=30, csv=csv)
    assert "\x1b" not in out
    assert r"evil\x1b[31mRED\x1b[0m\nsecond line: duration 33.2 us" in out
