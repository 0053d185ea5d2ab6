"""Device memory as a judged metric: the peak a call allocates beyond its inputs, against its baseline.

Device memory is nearly deterministic: the same call on the same inputs allocates the same tensors
every time, so no statistics are needed. A call fails when its peak grew beyond the baseline's by
more than `memory_threshold` of the baseline and more than `MEMORY_FLOOR_BYTES` (1 MiB). The floor
keeps small, legitimate wobbles out: the caching allocator rounds every block up (to 512 bytes, more
with `roundup_power2_divisions`), and libraries keep small scratch buffers whose size follows the
kernel configuration chosen (a Triton autotuner's pick, cuBLAS's heuristics); a kernel that starts
allocating a workspace of its own is far above it. The check itself (MemoryCheck) is a record of
model/result.py. Pure: no torch, no pytest.
"""

from __future__ import annotations

from pytest_kernelperf.model.result import MemoryCheck, allowed_growth

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def judge_memory(peak_bytes: int, baseline_bytes: int | None, threshold: float) -> MemoryCheck:
    """The peak judged against the baseline's: exceeded when it grew beyond the allowed growth."""
    exceeded = baseline_bytes is not None and peak_bytes - baseline_bytes > allowed_growth(
        baseline_bytes, threshold
    )
    return MemoryCheck(peak_bytes, baseline_bytes, threshold, exceeded)


def format_bytes(count: int) -> str:
    """ "512 B", "1.5 KiB", "64 MiB", "1.25 GiB": binary units, three significant digits."""
    value = float(count)
    for unit in _UNITS:
        if unit == "B" and abs(value) < 1024:
            return f"{int(value)} B"
        # Rounded to three digits first: 1023.9 KiB reads "1 MiB", not "1024 KiB".
        if round(abs(value), _decimals(abs(value))) < 1024 or unit == _UNITS[-1]:
            return f"{_digits(value)} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _decimals(size: float) -> int:
    return 0 if size >= 99.5 else 1 if size >= 9.995 else 2


def _digits(value: float) -> str:
    """Three significant digits in fixed notation (1000, 64, 1.5, 1.25), never an exponent."""
    decimals = _decimals(abs(value))
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if decimals else text


def memory_text(check: MemoryCheck) -> str:
    """ "192 MiB", or "192 MiB (+64 MiB)" when it differs from its baseline."""
    text = format_bytes(check.peak_bytes)
    growth = check.growth_bytes
    if growth:
        text += f" ({'+' if growth > 0 else '-'}{format_bytes(abs(growth))})"
    return text
