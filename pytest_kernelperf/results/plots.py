"""PNG plots of a run (`--kernelperf-plot=DIR`, or `compare --plot DIR`): matplotlib, optional.

* one figure per test: each implementation's median with its 95% confidence interval, next to its
  baseline's (and its reference's, for max_ratio), coloured by verdict;
* one figure per device: GB/s of every result with bytes, against the device's measured copy
  bandwidth (and TFLOP/s where flops were given).

matplotlib is imported inside the functions, and only its object-oriented API is used (Figure and
the Agg canvas, never pyplot): a test run's global backend and open figures stay untouched.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_kernelperf.ids import file_part
from pytest_kernelperf.model.device import Peak
from pytest_kernelperf.model.result import BenchResult, Verdict
from pytest_kernelperf.results.render import VERDICT_STYLE, Group, change_text, groups
from pytest_kernelperf.results.throughput import figures

# The terminal's styles of verdicts, in plot colours: both outputs mark the same verdicts.
_STYLE_COLOURS = {"bad": "#d62728", "good": "#2ca02c", "warn": "#ff7f0e"}
COLOURS = {verdict: _STYLE_COLOURS[style] for verdict, style in VERDICT_STYLE.items()}
CURRENT = "#1f77b4"
BASELINE = "#9e9e9e"
REFERENCE = "#8c564b"
MISSING_HINT = "install it with `pip install matplotlib`"


class PlotError(RuntimeError):
    pass


def file_name(text: str) -> str:
    return file_part(text, "plot")


def have_matplotlib() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def write_all(folder: Path, results: Sequence[BenchResult], peaks: Mapping[str, Peak]) -> list[Path]:
    """Write every plot of these results into `folder`; return the files written."""
    if not have_matplotlib():
        raise PlotError(f"plots need matplotlib; {MISSING_HINT}")
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    used: set[str] = set()
    for group in groups(results, peaks):
        if all(r.level_ms is None for r in group.results):
            continue  # correctness only: nothing to draw
        stem = file_name(f"{group.module}__{group.test}")
        while stem in used:
            stem += "_"
        used.add(stem)
        path = folder / f"{stem}.png"
        _save(times_figure(group), path)
        written.append(path)
    for device in dict.fromkeys(r.device for r in results):
        members = [r for r in results if r.device == device and r.level_ms and (r.bytes or r.flops)]
        if members:
            path = folder / f"throughput__{file_name(device)}.png"
            _save(throughput_figure(device, members, peaks.get(device)), path)
            written.append(path)
    return written


def _save(figure: Any, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=110)


def _error(median: float, ci: tuple[float, float] | None) -> list[list[float]]:
    low, high = ci if ci else (median, median)
    return [[max(median - low, 0.0)], [max(high - median, 0.0)]]


def _bar(
    axes: Any,
    y: float,
    height: float,
    median: float,
    ci: tuple[float, float] | None,
    colour: str,
    note: str,
    text_colour: str = "black",
) -> float:
    """One horizontal bar with its confidence interval and a note at its end; the note's x."""
    axes.barh(y, median, height, xerr=_error(median, ci), color=colour, ecolor="black", capsize=3)
    edge = ci[1] if ci else median
    axes.text(edge, y, note, va="center", fontsize=8, color=text_colour)
    return edge


def times_figure(group: Group) -> Any:
    """Horizontal bars per implementation: this run, the baseline, the reference; with 95% CIs."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    timed = [(row, r) for row, r in zip(group.rows, group.results, strict=True) if r.level_ms is not None]
    has_baseline = any(r.baseline_level_ms is not None for _, r in timed)
    has_reference = any(r.ratio is not None for _, r in timed)
    bars = 1 + has_baseline + has_reference
    height = 0.8 / bars
    figure = Figure(figsize=(8.5, 1.6 + 0.32 * bars * len(timed) + 0.25 * len(timed)))
    axes = figure.add_subplot()
    labels = []
    longest = 0.0
    for i, (row, result) in enumerate(timed):
        assert result.level_ms is not None
        y = len(timed) - 1 - i  # first result on top
        labels.append((y, "fn" if row["Method"].text == "-" else row["Method"].text))
        offset = (bars - 1) / 2 * height
        failed_ratio = result.ratio is not None and result.ratio.exceeded
        colour = COLOURS[Verdict.SLOWER] if failed_ratio else COLOURS.get(result.verdict, CURRENT)
        note = f" {result.level_ms:.4g} ms"
        if result.change_pct is not None:
            note += f" ({change_text(result.change_pct)}, {result.verdict})"
        elif result.verdict is not Verdict.SAME:
            note += f" ({result.verdict})"
        width = height * 0.9
        longest = max(
            longest, _bar(axes, y + offset, width, result.level_ms, result.round_range_ms, colour, note)
        )
        slot = offset - height
        if has_baseline:
            if result.baseline_level_ms is not None:
                note = f" baseline {result.baseline_level_ms:.4g} ms"
                ci = result.baseline_round_range_ms
                edge = _bar(axes, y + slot, width, result.baseline_level_ms, ci, BASELINE, note, "dimgray")
                longest = max(longest, edge)
            slot -= height
        if has_reference and result.ratio is not None:
            check = result.ratio
            note = f" reference; ratio {check.describe()}"
            text_colour = COLOURS[Verdict.SLOWER] if check.exceeded else "black"
            ci = check.reference_round_range_ms
            edge = _bar(axes, y + slot, width, check.reference_level_ms, ci, REFERENCE, note, text_colour)
            longest = max(longest, edge)
    axes.set_yticks([y for y, _ in labels], [text for _, text in labels])
    axes.set_xlim(0, longest * 1.45 if longest > 0 else 1)
    axes.set_xlabel("time per call (ms): median, with 95% confidence interval of the median")
    axes.set_title(f"{group.module}::{group.heading}", fontsize=10)
    handles = [Patch(color=CURRENT, label="this run")]
    if has_baseline:
        handles.append(Patch(color=BASELINE, label="baseline"))
    if has_reference:
        handles.append(Patch(color=REFERENCE, label="reference (same run)"))
    handles += [
        Patch(color=COLOURS[v], label=str(v))
        for v in (Verdict.SLOWER, Verdict.FASTER)
        if any(r.verdict is v for _, r in timed)
    ]
    if any(r.ratio is not None and r.ratio.exceeded for _, r in timed):
        handles.append(Patch(color=COLOURS[Verdict.SLOWER], label="over max_ratio"))
    axes.legend(handles=handles, loc="lower right", fontsize=8)
    axes.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    return figure


def throughput_figure(device: str, results: Sequence[BenchResult], peak: Peak | None) -> Any:
    """GB/s of each result against the device's copy bandwidth; TFLOP/s beside it where known."""
    from matplotlib.figure import Figure

    with_flops = [r for r in results if r.flops]
    panels = 2 if with_flops else 1
    figure = Figure(figsize=(8.5 if panels == 1 else 13, 1.8 + 0.38 * len(results)))
    axes = figure.add_subplot(1, panels, 1)
    labels = [r.label for r in results]
    values = []
    for y, result in enumerate(reversed(results)):
        fig = figures(result, peak)
        gbps = fig.gb_per_s or 0.0
        values.append(gbps)
        # One colour: here the length is the message (how close to the copy bandwidth), not the verdict.
        axes.barh(y, gbps, 0.7, color=CURRENT, hatch="//" if fig.bytes_inferred else None, edgecolor="white")
        text = f" {gbps:.4g} GB/s"
        if fig.peak_fraction is not None:
            text += f" ({fig.peak_fraction:.0%} of peak)"
        axes.text(gbps, y, text, va="center", fontsize=8)
    axes.set_yticks(range(len(results)), [_short(label) for label in reversed(labels)], fontsize=8)
    top = max([*values, peak.gb_per_s if peak else 0.0]) or 1.0
    if peak is not None:
        axes.axvline(peak.gb_per_s, color="black", linestyle="--", linewidth=1)
        axes.text(
            peak.gb_per_s,
            len(results) - 0.4,
            f"copy peak {peak.gb_per_s:.4g} GB/s ",
            ha="right",
            va="bottom",
            fontsize=8,
        )
    axes.set_xlim(0, top * 1.35)
    axes.set_ylim(-0.6, len(results) - 0.1)
    label = "GB/s (bytes moved per call / median time"
    if any(r.bytes_inferred for r in results):
        label += "; hatched: bytes inferred from the tensors"
    axes.set_xlabel(label + ")")
    axes.set_title(f"Bandwidth on {device}", fontsize=10)
    axes.grid(axis="x", alpha=0.3)
    if with_flops:
        right = figure.add_subplot(1, panels, 2)
        tflops = [figures(r, peak).tflop_per_s or 0.0 for r in reversed(with_flops)]
        right.barh(range(len(with_flops)), tflops, 0.7, color=CURRENT)
        for y, value in enumerate(tflops):
            right.text(value, y, f" {value:.4g}", va="center", fontsize=8)
        right.set_yticks(range(len(with_flops)), [_short(r.label) for r in reversed(with_flops)], fontsize=8)
        right.set_xlim(0, (max(tflops) or 1.0) * 1.3)
        pad = max(0.0, (3 - len(with_flops)) / 2)  # a lone bar stays a bar, not a wall
        right.set_ylim(-0.6 - pad, len(with_flops) - 0.4 + pad)
        right.set_xlabel("TFLOP/s (flops per call / median time)")
        right.set_title(f"Compute throughput on {device}", fontsize=10)
        right.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    return figure


def _short(label: str, width: int = 48) -> str:
    """A test label that fits beside a bar: the module path dropped, the middle elided if long."""
    text = label.split("::", 1)[-1]
    return text if len(text) <= width else text[: width // 2 - 1] + "..." + text[-(width // 2 - 2) :]
