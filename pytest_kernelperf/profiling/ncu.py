"""Nsight Compute (`ncu`) run on one kernel_bench call, after its timing (`--kernelperf-ncu`).

The call runs once more in a child process under ncu: the child runs the test alone, and
kernel_bench there (call/replay.py) runs only the named call, its first call and a few
warm-up calls, then one call inside the NVTX range `kernelperf`; ncu profiles only the kernels in
that range (`--nvtx-include kernelperf/`), with a fixed small metric set (profiling/ncu_csv.py),
so a diagnosis takes seconds and never touches the timed rounds.

Two decisions (docs/profiling.md#nsight-compute-counters):

* `--clock-control none`: ncu's default locks the clocks to base; the plugin measures at the
  clocks users run at, and the counters that diagnose (bytes, occupancy, registers, sectors,
  stalls) do not depend on the clock, while a duration at base clock would disagree with the
  verdict's.
* `--cache-control all` (ncu's default): caches flushed before each replay pass, so DRAM bytes and
  the L2 hit rate are the same from run to run and from pass to pass, which a diff needs.

What cannot run says why, in a note, and never changes the verdict: ncu absent, counters not
permitted (ERR_NVGPUCTRPERM), a kernel ncu cannot replay, nothing in the range, a timeout.
The report (`counters.ncu-rep`, for the Nsight Compute GUI) and its raw CSV page are kept in
the call's artefact folder. No torch, no pytest.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from pytest_kernelperf.formatting import escape_controls
from pytest_kernelperf.model.counters import KernelCounters
from pytest_kernelperf.profiling import ncu_csv
from pytest_kernelperf.profiling.call_context import CallRecord
from pytest_kernelperf.profiling.capture import CallProfile, artifact_folder

RANGE = "kernelperf"  # the NVTX push/pop range around the one profiled call
REPORT = "counters"  # <folder>/counters.ncu-rep and counters.csv
PERMISSION = (
    "ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM): run as root, or allow "
    "every user with the driver option NVreg_RestrictProfilingToAdminUsers=0 (a file in "
    "/etc/modprobe.d, then reload the driver or reboot; in a container, also --cap-add=SYS_ADMIN); "
    "see https://developer.nvidia.com/ERR_NVGPUCTRPERM"
)
ABSENT = (
    "ncu (Nsight Compute) not found on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin; install "
    "Nsight Compute or put ncu on PATH"
)
_ERROR = re.compile(r"^==ERROR==\s*(.*)$", re.MULTILINE)
# How often a running ncu is looked at, and how long its killed process group's leader is waited
# for (one in uninterruptible sleep dies only when it leaves it).
_POLL_S = 0.05
_KILL_WAIT_S = 5.0


@dataclass(frozen=True)
class CounterRequest:
    """One call to read counters of: which call (the test and its name=), where its artefacts go,
    the autotuner choices it was timed with (pinned in the child), and the time allowed."""

    nodeid: str
    name: str | None
    label: str
    folder: Path
    autotune: Mapping[str, str] | None = None
    timeout_s: float = 180.0


@dataclass(frozen=True)
class CounterReading:
    """What ncu gave: the counters per kernel (None: none read), files kept, notes, seconds spent.
    `lasting`: the problem holds for every call of the run (ncu absent, counters not permitted)."""

    kernels: tuple[KernelCounters, ...] | None = None
    artifacts: tuple[Path, ...] = ()
    notes: tuple[str, ...] = ()
    seconds: float = 0.0
    lasting: bool = False


class NcuSettings(Protocol):
    """What the stage reads of the settings (settings.Settings, a floor above)."""

    @property
    def ncu(self) -> bool: ...
    @property
    def update(self) -> bool: ...
    @property
    def profile(self) -> bool: ...
    @property
    def artifacts(self) -> Path: ...
    @property
    def ncu_timeout(self) -> float: ...


def wanted(settings: NcuSettings, slower: bool) -> bool:
    """Counters are read with --kernelperf-ncu for a slower verdict (to diagnose it), for every
    entry an update records (the counters a later diagnosis compares with) and, with
    --kernelperf-profile, for every timed call. A passing run without those pays nothing."""
    return settings.ncu and (settings.update or settings.profile or slower)


def stage(
    collect: Callable[[CounterRequest], CounterReading] | None,
    settings: NcuSettings,
    nodeid: str,
    name: str | None,
    slower: bool,
    record: CallRecord,
    profiled: CallProfile | None,
) -> CallProfile | None:
    """kernel_bench's step after profiling: the call's profile, with its counters where wanted."""
    if collect is None or not wanted(settings, slower):
        return profiled
    label = nodeid if name is None else f"{nodeid} [{name}]"
    folder = artifact_folder(settings.artifacts, nodeid, name)
    request = CounterRequest(nodeid, name, label, folder, record.autotune, settings.ncu_timeout)
    return with_counters(profiled, collect(request))


def with_counters(profiled: CallProfile | None, reading: CounterReading) -> CallProfile:
    """The call's profile with the counters, their files and notes added."""
    profiled = profiled if profiled is not None else CallProfile()
    return replace(
        profiled,
        counters=reading.kernels,
        artifacts=profiled.artifacts + reading.artifacts,
        notes=profiled.notes + reading.notes,
    )


DEFAULT_CUDA_ROOT = "/usr/local/cuda"


def find_ncu() -> str | None:
    """The ncu executable: on PATH, else in $CUDA_HOME/bin or /usr/local/cuda/bin."""
    found = shutil.which("ncu")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), DEFAULT_CUDA_ROOT):
        if root and os.access(Path(root) / "bin" / "ncu", os.X_OK):
            return str(Path(root) / "bin" / "ncu")
    return None


def profile_command(ncu: str, report: Path, child: Sequence[str], metrics: Sequence[str]) -> list[str]:
    """ncu profiling the kernels of `child` inside the NVTX range, into `report` (.ncu-rep added)."""
    return [
        ncu,
        "--nvtx",
        "--nvtx-include",
        f"{RANGE}/",
        "--metrics",
        ",".join(metrics),
        "--clock-control",
        "none",
        "--cache-control",
        "all",
        "--replay-mode",
        "kernel",
        "--target-processes",
        "all",
        "--force-overwrite",
        "--export",
        str(report),
        *child,
    ]


def import_command(ncu: str, report: Path) -> list[str]:
    """ncu printing a report's raw page as CSV, in base units (bytes, nanoseconds)."""
    return [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]


def collect(
    ncu: str, child: Sequence[str], env: Mapping[str, str], cwd: Path, request: CounterRequest
) -> CounterReading:
    """Run `child` (a pytest command that replays the call) under ncu and read its counters."""
    began = time.monotonic()
    folder = request.folder
    folder.mkdir(parents=True, exist_ok=True)
    report, log = folder / f"{REPORT}.ncu-rep", folder / f"{REPORT}.log"
    report.unlink(missing_ok=True)
    metrics = list(ncu_csv.METRICS)
    notes: list[str] = []

    def left() -> float:
        return request.timeout_s - (time.monotonic() - began)

    def done(problem: str | None = None, lasting: bool = False, **found: object) -> CounterReading:
        seconds = time.monotonic() - began
        # The problem may quote ncu's output: its control characters are shown, not obeyed.
        said = [f"Nsight Compute counters not read: {escape_controls(problem)}"] if problem else []
        return CounterReading(notes=tuple(notes + said), seconds=seconds, lasting=lasting, **found)  # type: ignore[arg-type]

    for attempt in (1, 2):
        code, output = run(profile_command(ncu, folder / REPORT, child, metrics), cwd, env, left())
        log.write_text(output, encoding="utf-8")  # ncu's and the child's output, for a failure's why
        if code is None:
            return done(
                f"ncu did not finish within {request.timeout_s:g} s (--kernelperf-ncu-timeout); stopped"
            )
        if "ERR_NVGPUCTRPERM" in output:
            return done(PERMISSION, lasting=True)
        errors = _ERROR.findall(output)
        # A metric this ncu or GPU does not know stops the whole collection: drop it, try once more.
        unknown = [m for m in metrics if any(m in line for line in errors)]
        if unknown and attempt == 1 and not report.exists():
            metrics = [m for m in metrics if m not in unknown]
            notes.append(f"ncu does not know {', '.join(unknown)}; read without")
            continue
        break
    if not report.exists():
        if "No kernels were profiled" in output:
            why = (
                f"ncu profiled no kernel of the call (none ran inside the NVTX range {RANGE!r}: a call "
                "without CUDA kernels, or a torch without NVTX)"
            )
        elif errors:
            why = f"ncu could not profile the call: {errors[0].strip()}"
        else:
            tail = " | ".join(output.strip().splitlines()[-3:])
            why = f"ncu wrote no report (exit code {code}); its last output: {tail}"
        return done(why)
    # A kernel ncu could not replay: its words, their control characters shown rather than obeyed.
    notes.extend(f"ncu: {escape_controls(line.strip())}" for line in errors[:2])
    kernels, problem, kept, read_notes = _read_report(ncu, report, cwd, env, left(), request.timeout_s)
    notes.extend(read_notes)
    if problem is not None:
        return done(problem, artifacts=kept)
    seconds = time.monotonic() - began
    notes.append(f"Nsight Compute counters of {len(kernels)} kernel(s) read in {seconds:.1f} s")
    return CounterReading(kernels=kernels, artifacts=kept, notes=tuple(notes), seconds=seconds)


def _read_report(
    ncu: str, report: Path, cwd: Path, env: Mapping[str, str], allowed: float, limit: float
) -> tuple[tuple[KernelCounters, ...], str | None, tuple[Path, ...], tuple[str, ...]]:
    """The counters per kernel in ncu's report, by `ncu --import` within the `allowed` seconds left
    of the `limit`; why there are none (None: there are); the files kept (its CSV beside it); notes
    on what was read (counters brought within their range)."""
    allowed = max(allowed, 0.0)
    code, text = run(import_command(ncu, report), cwd, env, allowed)
    if code is None:
        return (
            (),
            (
                f"`ncu --import {report}` timed out after {allowed:.1f} s (what was left of "
                f"--kernelperf-ncu-timeout={limit:g}); stopped"
            ),
            (report,),
            (),
        )
    if code != 0:
        said = text.strip()[-300:] or "no output"
        return (), f"`ncu --import {report}` failed (exit code {code}): {said}", (report,), ()
    table = report.with_suffix(".csv")
    table.write_text(text, encoding="utf-8")
    try:
        kernels, out_of_range = ncu_csv.within_range(ncu_csv.per_kernel(ncu_csv.parse(text)))
    except ncu_csv.CsvError as exc:
        return (), f"{exc} ({table})", (report, table), ()
    problem = None if kernels else "ncu's report lists no kernel"
    return kernels, problem, (report, table), (out_of_range,) if out_of_range else ()


def run(argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_s: float) -> tuple[int | None, str]:
    """(exit code, output and errors together); exit code None when it ran past `timeout_s` (or no
    time was left to start it). The output goes to a file, not a pipe: a descendant that outlives
    ncu holding its output open (a daemon in a session of its own, out of reach of a kill) cannot
    keep this waiting for the pipe's end. Whatever is left of ncu's process group when ncu ends, or
    when the time is up, is killed."""
    if timeout_s <= 0:
        return None, ""
    with tempfile.TemporaryFile() as sink:
        try:
            process = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            return 127, f"==ERROR== cannot start {argv[0]}: {exc}"
        ended = _ended_by(process.pid, time.monotonic() + timeout_s)
        _kill_group(process)
        sink.seek(0)
        output = sink.read().decode("utf-8", errors="replace")
    return (process.returncode if ended else None), output


def _ended_by(pid: int, deadline: float) -> bool:
    """Whether the process ended before `deadline`. It is left unreaped (a zombie), so that its
    process id, which names its process group, cannot be reused before the group is killed."""
    while True:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill what is left of the process's group (the pytest child under ncu, what either started
    in it), then reap the process."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.kill()  # where the group could not be signalled; a no-op once it has ended
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=_KILL_WAIT_S)


def synchronize() -> None:
    """Wait for the device's work, where CUDA is in use."""
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


@contextmanager
def nvtx_range(name: str) -> Iterator[None]:
    """An NVTX push/pop range; where torch has no NVTX (a CPU build), none (ncu then finds no
    kernel in the range, and says so)."""
    import torch

    try:
        torch.cuda.nvtx.range_push(name)
    except (RuntimeError, AttributeError):
        yield
        return
    try:
        yield
    finally:
        torch.cuda.nvtx.range_pop()
