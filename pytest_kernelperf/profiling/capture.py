"""torch.profiler capture of one kernel_bench call, after its timing and never during it.

Per call, under `<artefacts>/<sanitized test id>/<name>/`:

* `profile.txt`  the `key_averages()` table sorted by device time (what the lecture prints);
* `trace.json`   a Chrome trace that opens in https://ui.perfetto.dev or chrome://tracing;
* `stacks.txt`   folded stacks (`export_stacks`) for flamegraph.pl or speedscope, with
                 `--kernelperf-profile-stack` (a second profiled run: Python frames recorded for
                 the stacks would crowd the table);
* `kernels.txt`  the kernel inventory (CUDA), most time first;
* `code/`        the PTX and SASS of the Triton kernels, and the SASS of CUDA extension kernels,
                 that the call launched (see codegen).

The kernel inventory comes from the profiler's device events (kernels, memcpy, memset) and is
stored in baselines. On CPU there is none: a CPU run has no device kernels, and the list of aten
operators it would give instead changes with thread counts and library dispatch rather than with
the code under test, so CPU baselines get no `kernels:` key and their profiles only artefacts.

A baseline's profile (an update's, or a history run's: no files) costs a few times the call's own
rounds (`inventory_budget`): `calls` profiled calls, then the code lookup (PTX hashes, extension
SASS) and the launch grids while the budget lasts, each part left out said in a note; the SASS of
Triton kernels (a cuobjdump each, an artefact only: their hash is the PTX's) only where files are
written. torch is imported inside functions.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pytest_kernelperf.ids import unique_file_part
from pytest_kernelperf.measure.timing import is_device_activity, one_cycle_profiler_warning_silenced
from pytest_kernelperf.model.call import KernelRecord
from pytest_kernelperf.model.counters import KernelCounters
from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.profiling import codegen, inventory
from pytest_kernelperf.profiling.inventory import DeviceEvent

PROFILED_CALLS = 3
# A baseline's profile may take this many times the seconds of the call's rounds and warm-up, and
# at least the floor: the profiler's start and a few profiled calls fit in it, and so does
# disassembling a small extension (tens of milliseconds), not a 100 MB one (seconds to minutes).
INVENTORY_BUDGET_FACTOR = 4.0
INVENTORY_BUDGET_FLOOR_S = 2.0
CPU_NO_INVENTORY = "no kernel inventory on CPU (device kernels only)"
# What this module writes into a call's folder; only these are removed before a new profile.
_OUR_FILES = ("profile.txt", "trace.json", "stacks.txt", "kernels.txt")


def artifact_folder(root: Path, nodeid: str, name: str | None) -> Path:
    """`<root>/<sanitized test id>/<name>`: one folder per kernel_bench call, always inside root,
    distinct for distinct calls (see ids.unique_file_part)."""
    test = unique_file_part(nodeid.replace("::", "_"), "test")
    return root / test / (unique_file_part(name, "default") if name else "default")


@dataclass(frozen=True)
class ProfileRequest:
    """One call to profile. `folder` None: only the kernel inventory is wanted, no files."""

    call: Callable[[], object]
    device: DeviceInfo
    folder: Path | None
    with_stack: bool = False
    fn: Callable[..., object] | None = None  # the user's function, for profilers that inspect it
    label: str = ""
    calls: int = PROFILED_CALLS
    budget_s: float | None = None  # what the whole capture may take (inventory_budget); None: no bound


def inventory_budget(measured_s: float) -> float:
    """The seconds a baseline's profile may take, for a call whose rounds and warm-up took
    `measured_s`."""
    return max(INVENTORY_BUDGET_FLOOR_S, INVENTORY_BUDGET_FACTOR * measured_s)


@dataclass(frozen=True)
class CallProfile:
    """What profiling one call gave: the inventory (None where there is none) and files written."""

    kernels: tuple[KernelRecord, ...] | None = None
    artifacts: tuple[Path, ...] = ()
    notes: tuple[str, ...] = ()
    counters: tuple[KernelCounters, ...] | None = None  # Nsight Compute's, with --kernelperf-ncu (ncu.py)


def capture(request: ProfileRequest) -> CallProfile:
    """Profile `request.calls` calls with torch.profiler; the built-in profiling hook."""
    cuda = request.device.kind == "cuda"
    if not cuda and request.folder is None:
        return CallProfile()  # no inventory on CPU, no files wanted: not even a profiler run
    deadline = None if request.budget_s is None else time.monotonic() + request.budget_s
    import torch
    from torch.profiler import ProfilerActivity, profile

    folder = request.folder
    if folder is not None:
        _clear(folder)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    sync: Callable[[], None] = torch.cuda.synchronize if cuda else (lambda: None)
    sync()
    # record_shapes only for the table: the inventory-only run of an update stays light.
    with (
        codegen.triton_launches() as launched,
        one_cycle_profiler_warning_silenced(),
        profile(activities=activities, record_shapes=folder is not None) as prof,
    ):
        for _ in range(request.calls):
            request.call()
        sync()
    kernels = inventory.summarize(device_events(prof), request.calls) if cuda else None
    notes: list[str] = [] if cuda else [CPU_NO_INVENTORY]
    written: list[Path] = []
    codes: codegen.CodeReport = codegen.CodeReport()
    if kernels:
        codes = generated_code(kernels, launched, request.device, sass=folder is not None, deadline=deadline)
        kernels = inventory.with_codes(kernels, {name: code.hash for name, code in codes.codes.items()})
        notes.extend(codes.notes)
    if folder is not None:
        written += _write_profile(prof, folder, cuda)
    if kernels and not any(k.grid for k in kernels):  # torch whose events carry no metadata
        if folder is None and deadline is not None and time.monotonic() >= deadline:
            notes.append(f"launch grids left out: the profile's {request.budget_s:.1f} s were spent")
        else:
            grids = _trace_grids(prof, folder)
            kernels = tuple(replace(k, grid=grids.get(k.name)) for k in kernels)
    if folder is not None:
        if kernels is not None:
            written.append(_write_text(folder / "kernels.txt", "\n".join(inventory.table(kernels))))
        written += codegen.write(codes.codes, folder / "code")
        if request.with_stack:
            written += _stacks(request, folder, activities, sync, cuda)
    return CallProfile(kernels=kernels, artifacts=tuple(written), notes=tuple(notes))


def device_events(prof: object) -> list[DeviceEvent]:
    """Kernels, memcpys and memsets the device ran, from a finished torch.profiler run.

    GPU user annotations are left out (see timing.is_device_activity).
    """
    return [
        DeviceEvent(str(event.name), float(event.time_range.elapsed_us()), _grid(event))
        for event in prof.events()  # type: ignore[attr-defined]
        if is_device_activity(event)
    ]


def _grid(event: object) -> tuple[int, ...] | None:
    """A kernel's launch grid from the event's Kineto metadata (recent torch), else None."""
    grid = getattr(getattr(event, "metadata", None), "grid", None)
    if isinstance(grid, (list, tuple)) and grid and all(isinstance(g, int) and g > 0 for g in grid):
        return tuple(grid)
    return None


def _trace_grids(prof: object, folder: Path | None) -> dict[str, tuple[int, ...]]:
    """Grids from the profile's Chrome trace: the one written, or a temporary export."""
    if folder is not None:
        return grids_from_trace(folder / "trace.json")
    with tempfile.TemporaryDirectory(prefix="kernelperf-trace-") as tmp:
        path = Path(tmp) / "trace.json"
        try:
            prof.export_chrome_trace(str(path))  # type: ignore[attr-defined]
        except Exception:  # grids are a nicety; never fail a profile for them
            return {}
        return grids_from_trace(path)


def grids_from_trace(path: Path) -> dict[str, tuple[int, ...]]:
    """Kernel name -> grid from an exported Chrome trace (its kernel events carry `args.grid`), for
    torch versions whose events do not; a kernel launched with several grids is left out."""
    try:
        events = json.loads(path.read_text(encoding="utf-8")).get("traceEvents", [])
    except (OSError, ValueError, AttributeError):
        return {}
    found: dict[str, set[tuple[int, ...]]] = {}
    for event in events if isinstance(events, list) else []:
        args = event.get("args") if isinstance(event, dict) else None
        grid = args.get("grid") if isinstance(args, dict) else None
        if isinstance(grid, list) and grid and all(isinstance(g, int) and g > 0 for g in grid):
            found.setdefault(str(event.get("name")), set()).add(tuple(grid))
    return {name: next(iter(grids)) for name, grids in found.items() if len(grids) == 1}


def generated_code(
    kernels: tuple[KernelRecord, ...],
    launched: dict[str, set[int]],
    device: DeviceInfo,
    *,
    sass: bool = True,
    deadline: float | None = None,
) -> codegen.CodeReport:
    """Code of the Triton kernels (seen launching, or named like torch.compile's; their SASS with
    `sass`) and of the kernels of user CUDA binaries among the inventory's names, disassembled
    before `deadline` (time.monotonic(); None: no bound)."""
    names = [k.name for k in kernels if not k.name.startswith(("Memcpy", "Memset"))]
    triton_names = [n for n in names if n in launched or n.startswith("triton_")]
    triton = codegen.triton_code(triton_names, launched, sass=sass) if triton_names else codegen.CodeReport()
    rest = [n for n in names if n not in triton.codes and n not in launched]
    capability = device.environment.get("capability", "")
    arch = "sm_" + capability.replace(".", "") if capability else None
    extension = codegen.extension_code(rest, arch=arch, deadline=deadline) if rest else codegen.CodeReport()
    return codegen.CodeReport({**triton.codes, **extension.codes}, triton.notes + extension.notes)


def _clear(folder: Path) -> None:
    """Remove the files of an earlier profile of this call, so that none of them is mistaken for
    this run's; anything else in the folder is left alone."""
    for name in _OUR_FILES:
        (folder / name).unlink(missing_ok=True)
    code = folder / "code"
    if code.is_dir():
        for path in code.iterdir():
            if path.suffix in (".ptx", ".sass") and path.is_file():
                path.unlink()


def _write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.rstrip("\n") + "\n", encoding="utf-8")
    return path


def _write_profile(prof: object, folder: Path, cuda: bool) -> list[Path]:
    averages = prof.key_averages()  # type: ignore[attr-defined]
    try:
        text = averages.table(
            sort_by="device_time_total" if cuda else "cpu_time_total", max_name_column_width=80, row_limit=20
        )
    except (AttributeError, KeyError):  # torch before 2.4 named it cuda_time_total
        text = averages.table(sort_by="cuda_time_total", max_name_column_width=80, row_limit=20)
    table = _write_text(folder / "profile.txt", text)
    trace = folder / "trace.json"
    prof.export_chrome_trace(str(trace))  # type: ignore[attr-defined]
    return [table, trace]


def _stacks(
    request: ProfileRequest,
    folder: Path,
    activities: Sequence[object],
    sync: Callable[[], None],
    cuda: bool,
) -> list[Path]:
    """Folded stacks for a flame graph, from a run that records Python stacks."""
    import torch
    from torch.profiler import profile

    # Recording Python frames needs the verbose experimental config (as in the lecture).
    config = getattr(torch.profiler, "_ExperimentalConfig", None)
    extra = {"experimental_config": config(verbose=True)} if config is not None else {}
    sync()
    with (
        one_cycle_profiler_warning_silenced(),
        profile(activities=activities, with_stack=True, **extra) as prof,  # type: ignore[arg-type]
    ):
        for _ in range(request.calls):
            request.call()
        sync()
    path = folder / "stacks.txt"
    prof.export_stacks(str(path), "self_cuda_time_total" if cuda else "self_cpu_time_total")
    return [path] if path.exists() else []
