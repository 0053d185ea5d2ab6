"""The device's measured copy bandwidth (its peak), and the bytes a call moves.

A memory-bound kernel (GELU, softmax, any elementwise op) is as fast as it can be when it moves its
bytes at the device's copy bandwidth; "0.51 ms" says little across GPUs, "98% of copy bandwidth"
says it is done. The peak is measured, not taken from a spec sheet: a large copy, counting the bytes
read and written, once per device, cached in the artefacts folder (edit or delete that file to
override or re-measure). torch is imported inside the measuring functions only.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pytest_kernelperf.atomic import write_atomic
from pytest_kernelperf.formatting import utc_stamp
from pytest_kernelperf.measure import host_load
from pytest_kernelperf.model.device import DeviceInfo, Peak

CACHE_FILE = "peak_bandwidth.json"
CACHE_VERSION = 1
# Copies big enough to stream from memory: far past any L2 (60 MiB on an H200) or L3.
_CUDA_COPY_BYTES = 1 << 30
_CPU_COPY_BYTES = 256 << 20
_REPEATS = {"cuda": 20, "cpu": 10}


def tensor_bytes(*values: Any) -> int | None:
    """Bytes of all tensors in `values` (nested in tuples, lists and dicts), each tensor counted once.

    Used when a kernel_bench call gives no `bytes=`: the inputs read once plus the outputs written
    once, the least traffic the kernel can have. A kernel that re-reads its input moves more; then
    pass `bytes=` yourself.
    """
    seen: set[int] = set()
    total = 0
    found = False
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, (tuple, list)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif hasattr(value, "element_size") and hasattr(value, "numel") and id(value) not in seen:
            seen.add(id(value))
            found = True
            total += int(value.numel()) * int(value.element_size())
    return total if found else None


# --- measuring ---------------------------------------------------------------------------------


def measure_copy_bandwidth(device: DeviceInfo) -> Peak:
    """Best-of-N bandwidth of a large tensor copy on `device`, counting read and written bytes.

    The best, not the median: the peak is an upper bound, and noise only ever lowers a sample.
    """
    import torch

    repeats = _REPEATS["cuda" if device.kind == "cuda" else "cpu"]
    if device.kind == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        with torch.cuda.device(index):
            free, _ = torch.cuda.mem_get_info()
            size = max(1 << 20, min(_CUDA_COPY_BYTES, free // 4))
            src = torch.empty(size, dtype=torch.uint8, device="cuda").fill_(1)
            dst = torch.empty_like(src)
            best = _best_seconds(lambda: dst.copy_(src), torch.cuda.synchronize, repeats, cuda=True)
            del src, dst
            torch.cuda.empty_cache()
        what = "device-to-device copy"
    else:
        size = _CPU_COPY_BYTES
        src = torch.ones(size, dtype=torch.uint8)
        dst = torch.empty_like(src)
        best = _best_seconds(lambda: dst.copy_(src), lambda: None, repeats, cuda=False)
        what = f"host memory copy with {torch.get_num_threads()} threads"
    return Peak(
        device=device.name,
        gb_per_s=2 * size / best / 1e9,
        bytes=2 * size,
        method=f"{what} of {_human(size)}, best of {repeats}, read+write bytes",
        measured=_now(),
        cache_bytes=last_level_cache_bytes(device),
        load_per_core=None if device.kind == "cuda" else host_load.load_per_core(),
    )


def last_level_cache_bytes(device: DeviceInfo) -> int | None:
    """The largest cache level of `device`: the GPU's L2, or the CPU's largest cache (sysfs)."""
    if device.kind == "cuda":
        import torch

        index = device.index if device.index is not None else torch.cuda.current_device()
        return int(getattr(torch.cuda.get_device_properties(index), "L2_cache_size", 0)) or None
    sizes = []
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = entry.read_text().strip()
        units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
        if text[:-1].isdigit() and text[-1] in units:
            sizes.append(int(text[:-1]) * units[text[-1]])
    return max(sizes) if sizes else None


def _best_seconds(copy: Callable[[], object], sync: Callable[[], None], repeats: int, *, cuda: bool) -> float:
    for _ in range(3):  # first touches: page faults, allocator, clocks ramping up
        copy()
    sync()
    best = math.inf
    for _ in range(repeats):
        if cuda:
            import torch

            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            copy()
            end.record()
            end.synchronize()
            seconds = start.elapsed_time(end) / 1e3
        else:
            t0 = time.perf_counter()
            copy()
            seconds = time.perf_counter() - t0
        best = min(best, seconds)
    return best


def _human(size: int) -> str:
    return f"{size / (1 << 30):g} GiB" if size >= 1 << 30 else f"{size / (1 << 20):g} MiB"


def _now() -> str:
    return utc_stamp()


# --- the per-device cache ----------------------------------------------------------------------


class PeakCacheError(ValueError):
    pass


def read_cache(path: Path) -> dict[str, Peak]:
    """Peaks by device name from the cache file; {} when it does not exist.

    Layout: {"schema_version": 1, "devices": {"NVIDIA H200": {"gb_per_s": ..., ...}}}.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        data = json.loads(text)
        if data.get("schema_version") != CACHE_VERSION:
            raise PeakCacheError(f"unknown schema_version {data.get('schema_version')!r}")
        return {name: peak_from_dict(entry, name) for name, entry in data["devices"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PeakCacheError(
            f"{path}: unreadable peak bandwidth cache ({exc}); delete it to re-measure"
        ) from None


def write_cache(path: Path, peaks: Mapping[str, Peak]) -> None:
    data = {"schema_version": CACHE_VERSION, "devices": {name: asdict(peaks[name]) for name in sorted(peaks)}}
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def peak_from_dict(data: Mapping[str, Any], device: str | None = None) -> Peak:
    gbps = data["gb_per_s"]
    if isinstance(gbps, bool) or not isinstance(gbps, (int, float)) or not math.isfinite(gbps) or gbps <= 0:
        raise PeakCacheError(f"gb_per_s must be a positive number, got {gbps!r}")
    cache_bytes, load = data.get("cache_bytes"), data.get("load_per_core")
    return Peak(
        device=str(data.get("device", device)),
        gb_per_s=float(gbps),
        bytes=int(data.get("bytes", 0)),
        method=str(data.get("method", "")),
        measured=str(data.get("measured", "")),
        cache_bytes=int(cache_bytes) if isinstance(cache_bytes, int) and cache_bytes > 0 else None,
        load_per_core=float(load) if isinstance(load, (int, float)) and not isinstance(load, bool) else None,
    )


def session_peaks(
    devices: Iterable[DeviceInfo],
    folder: Path,
    *,
    measure: Callable[[DeviceInfo], Peak] = measure_copy_bandwidth,
    may_measure: bool = True,
) -> tuple[dict[str, Peak], list[str]]:
    """The peak of each device: from the cache in `folder`, else measured now and cached.

    Returns the peaks and notes for the user (a device that could not be measured, a bad cache).
    """
    path = folder / CACHE_FILE
    notes: list[str] = []
    try:
        cached = read_cache(path)
    except PeakCacheError as exc:
        notes.append(f"{exc}; measuring again")
        cached = {}
    peaks: dict[str, Peak] = {}
    measured = False
    for device in devices:
        if device.name in cached:
            peaks[device.name] = cached[device.name]
            continue
        if not may_measure:
            continue
        try:
            peak = peaks[device.name] = measure(device)
        except Exception as exc:  # a sticky CUDA error from a test must not hide the reports
            problem = f"{type(exc).__name__}: {exc}"
            notes.append(f"could not measure the copy bandwidth of {device.name}: {problem}")
            continue
        if peak.busy:
            assert peak.load_per_core is not None
            notes.append(
                f"the copy bandwidth of {device.name} was measured while the machine was busy (load "
                f"{peak.load_per_core:.2g} per core): used for this run only, not cached"
            )
        else:
            cached[device.name] = peak
            measured = True
    if measured:
        write_cache(path, cached)
    return peaks, notes
