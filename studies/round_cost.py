"""What one round of a measurement costs, piece by piece, and what shorter rounds do to the noise
that decides verdicts (a GPU study).

A judged measurement is 5 or more rounds (measure/timing.py), each: a fresh placement (a memory
pool, pads, a copy of the arguments), a short warm-up, a host-latency window (a quarter of the
round), a device-time window (one CUPTI profiler session, then reading its events), and an NVML
reading either side. Three parts, on the tuning suite's kernels (`studies/real_kernels`, about 1 us
to 1 ms; nothing here is tuned on the scoring suite):

* `breakdown`: the package's own timer, `AutoTimer().measure`, with the compare plan (5 rounds, up
  to 15 for kernels whose rounds disagree), its pieces timed by wrapping them; each CUPTI session
  is also read the way torch builds `function_events`, to compare that reading's cost and check
  that both give the same durations.
* `sweep`: plans with shorter windows and warm-ups, measured interleaved (each repetition measures
  every plan once, in turn) with 5 rounds each at fresh placements: seconds per round, the
  rounds' spread (the noise a verdict's t test sees), the spread of whole measurements' levels,
  and each plan's level against the current plan's (a shorter warm-up that left the kernel
  unsettled would read slower, against every baseline recorded before).
* `--processes N` runs the sweep in N fresh processes (the between-process part is the kernel's
  own and no plan changes it; the rounds' spread is compared within each process).

    python studies/round_cost.py --out out/round_cost --processes 2   # on a GPU
    python studies/round_cost.py --analyse out/round_cost              # the tables again
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Plans compared, by their sampling windows and later rounds' warm-ups; the first is the reference (the
# defaults before 2026-12-02), the second the defaults since.
PLANS: dict[str, dict[str, float]] = {
    "window 10-40 ms, warm-up 3 ms": {"min_time_s": 0.01, "max_time_s": 0.04, "round_warmup_s": 0.003},
    "window 5-20 ms, warm-up 3 ms": {"min_time_s": 0.005, "max_time_s": 0.02, "round_warmup_s": 0.003},
    "window 5-20 ms, warm-up 1 ms": {"min_time_s": 0.005, "max_time_s": 0.02, "round_warmup_s": 0.001},
    "window 2.5-10 ms, warm-up 1 ms": {"min_time_s": 0.0025, "max_time_s": 0.01, "round_warmup_s": 0.001},
}
REFERENCE = next(iter(PLANS))


def kernels() -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    """name -> (fn, args): the tuning suite's kernels, about 1 us to 1 ms on an H200."""
    import torch
    import torch.nn.functional as F

    from studies.real_kernels import triton_kernels as tk

    def randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        generator = torch.Generator(device="cuda").manual_seed(sum(shape))
        return torch.randn(*shape, device="cuda", generator=generator).to(dtype)

    def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * w

    small = (randn(1 << 14, dtype=torch.float16), randn(1 << 14, dtype=torch.float16))
    square = (randn(4096, 4096, dtype=torch.float16), randn(4096, 4096, dtype=torch.float16))
    wide = randn(8192, 8192, dtype=torch.float16)
    return {
        "vadd_triton_fp16_2^14": (tk.vector_add, small),
        "add_torch_fp16_2^14": (torch.add, small),
        "vadd_triton_fp32_2^25": (tk.vector_add, (randn(1 << 25), randn(1 << 25))),
        "gelu_torch_fp32_2^20": (F.gelu, (randn(1 << 20),)),
        "gelu_torch_fp32_2^26": (F.gelu, (randn(1 << 26),)),
        "softmax_triton_bf16_256x1024": (tk.softmax, (randn(256, 1024, dtype=torch.bfloat16),)),
        "softmax_triton_fp32_8192x4096": (tk.softmax, (randn(8192, 4096),)),
        "matmul_triton_fp16_256": (
            tk.matmul,
            (randn(256, 256, dtype=torch.float16), randn(256, 256, dtype=torch.float16)),
        ),
        "matmul_triton_fp16_4096": (tk.matmul, square),
        "matmul_cublas_fp16_4096": (torch.matmul, square),
        "layernorm_triton_fp16_8192": (
            tk.layer_norm,
            (wide, randn(8192, dtype=torch.float16), randn(8192, dtype=torch.float16)),
        ),
        "rmsnorm_compiled_bf16_4096": (
            torch.compile(rmsnorm),
            (randn(4096, 4096, dtype=torch.bfloat16), randn(4096, dtype=torch.bfloat16)),
        ),
    }


def targets(table: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] | None = None) -> dict[str, Any]:
    """name -> Target as kernel_bench builds it, each round at a fresh placement, for `table`'s
    kernels (name -> (fn, args); the tuning suite's by default)."""
    import random

    import torch

    from pytest_kernelperf.measure.device import fingerprint
    from pytest_kernelperf.measure.placement import Placements
    from pytest_kernelperf.measure.timing import Target

    device = fingerprint("cuda")
    out: dict[str, Any] = {}
    for name, (fn, args) in (kernels() if table is None else table).items():
        for _ in range(3):  # compile, JIT and autotune before anything is timed
            fn(*args)
        torch.cuda.synchronize()

        def bind(moved: Any, fn: Callable[..., Any] = fn) -> tuple[Callable[[], Any], None]:
            moved_args = moved[0]
            return (lambda: fn(*moved_args)), None

        placements = Placements((args, {}), bind, "cuda:0", rng=random.Random(len(out)))
        out[name] = Target(functools.partial(fn, *args), device, label=name, fn=fn, placements=placements)
    return out


# --- breakdown ---------------------------------------------------------------------------------


class Pieces:
    """Seconds per piece of the timer, added up while `active`."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.mismatches: list[str] = []

    @contextlib.contextmanager
    def timed(self, piece: str) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[piece] += time.perf_counter() - began


def instrument(pieces: Pieces) -> None:
    """Wrap the timer's pieces (module attributes the rounds look up at call time)."""

    from pytest_kernelperf.measure import health, placement, timing

    def timed_method(owner: Any, name: str, piece: str) -> None:
        original = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with pieces.timed(piece):
                return original(*args, **kwargs)

        setattr(owner, name, wrapper)

    def timed_context(owner: Any, name: str, entering: str, leaving: str) -> None:
        original = getattr(owner, name)

        @contextlib.contextmanager
        def wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
            manager = original(*args, **kwargs)
            with pieces.timed(entering):
                value = manager.__enter__()
            try:
                yield value
            finally:
                with pieces.timed(leaving):
                    manager.__exit__(None, None, None)

        setattr(owner, name, wrapper)

    timed_method(health, "read", "NVML readings")
    timed_method(timing, "warm_up", "warm-up")
    timed_method(timing.CudaEventTimer, "sampler", "host sampler setup (events)")
    timed_method(timing.CuptiTimer, "sampler", "device sampler setup (first round: activity count)")
    timed_method(timing.Metric, "of_rounds", "metric summary")
    timed_context(placement.Placements, "draw", "placement: draw", "placement: release")
    timed_context(timing, "_no_recompile", "recompile guard", "recompile guard")
    collect = timing.collect

    def timed_collect(batch: Any, plan: Any) -> list[float]:
        kind = "host window" if "CudaEventTimer" in batch.__qualname__ else "device window"
        with pieces.timed(kind):
            return collect(batch, plan)

    timing.collect = timed_collect  # type: ignore[assignment]

    def timed_profile(call: Any, calls: int, flush: Any = None) -> list[float]:
        """The package's profile_device_activity, its session and its reading timed apart, and the
        session read the old way too (through function_events) to compare."""
        with pieces.timed("cupti: session"):
            prof = timing.profiled_session(call, calls, flush)
        with pieces.timed("cupti: raw events read"):
            durations = timing.device_durations_us(prof.kineto_results.events())
        with pieces.timed("cupti: function_events read (not paid)"):
            old = sorted(
                (event.time_range.start, event.time_range.elapsed_us())
                for event in prof.function_events
                if timing.is_device_activity(event)
            )
        if len(old) != len(durations) or any(
            abs(a - b[1]) > 1e-3 for a, b in zip(durations, old, strict=False)
        ):
            pieces.mismatches.append(f"{len(durations)} raw, {len(old)} function_events")
        return durations

    timing.profile_device_activity = timed_profile  # type: ignore[assignment]


def breakdown(out: Path, repeats: int) -> None:
    from pytest_kernelperf.measure.timing import AutoTimer
    from pytest_kernelperf.settings import Settings

    table = targets()
    pieces = Pieces()
    instrument(pieces)
    plan = Settings().plan()  # the compare plan, with extra rounds for kernels that disagree
    rows = []
    for name, target in table.items():
        for _ in range(repeats):
            pieces.seconds.clear()
            pieces.mismatches.clear()
            began = time.perf_counter()
            timing = AutoTimer().measure(target, plan)
            wall = time.perf_counter() - began
            rows.append(
                {
                    "kernel": name,
                    "wall_s": wall,
                    "rounds": len(timing.device_time.round_locations_ms),
                    "device_ms": timing.device_time.level_ms,
                    "samples": len(timing.device_time.samples_ms),
                    "pieces": dict(pieces.seconds),
                    "mismatches": list(pieces.mismatches),
                }
            )
    (out / "breakdown.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


# --- sweep -------------------------------------------------------------------------------------


def sweep(out: Path, process: int, repeats: int) -> None:
    from pytest_kernelperf.measure.timing import AutoTimer
    from pytest_kernelperf.testing import sampling_plan

    table = targets()
    plans = {name: sampling_plan(rounds=5, **changes) for name, changes in PLANS.items()}
    with (out / f"sweep_{process}.jsonl").open("w") as sink:
        for repeat in range(repeats):
            for name, target in table.items():
                order = list(plans.items())
                order = (
                    order[repeat % len(order) :] + order[: repeat % len(order)]
                )  # rotate: no plan always first
                for plan_name, plan in order:
                    began = time.perf_counter()
                    timing = AutoTimer().measure(target, replace(plan))
                    row = {
                        "process": process,
                        "repeat": repeat,
                        "kernel": name,
                        "plan": plan_name,
                        "wall_s": time.perf_counter() - began,
                        "rounds_ms": list(timing.device_time.round_locations_ms),
                        "host_rounds_ms": list(timing.host_latency.round_locations_ms)
                        if timing.host_latency
                        else [],
                        "samples": len(timing.device_time.samples_ms),
                    }
                    sink.write(json.dumps(row) + "\n")
                    sink.flush()


# --- analysis ----------------------------------------------------------------------------------


def analyse(folder: Path) -> str:
    lines: list[str] = []
    path = folder / "breakdown.jsonl"
    if path.exists():
        lines += _breakdown_table([json.loads(x) for x in path.read_text().splitlines() if x])
    rows = [
        json.loads(x) for f in sorted(folder.glob("sweep_*.jsonl")) for x in f.read_text().splitlines() if x
    ]
    if rows:
        lines += _sweep_table(rows)
    return "\n".join(lines)


def _breakdown_table(rows: list[dict[str, Any]]) -> list[str]:
    pieces = sorted({p for r in rows for p in r["pieces"]})
    total_rounds = sum(r["rounds"] for r in rows)
    total_wall = sum(r["wall_s"] for r in rows)
    out = [
        f"== breakdown: AutoTimer().measure with the compare plan, {len(rows)} measurements, "
        f"{total_rounds} rounds, {total_wall:.2f} s ({1e3 * total_wall / total_rounds:.1f} ms per round)",
        "piece: ms per round (share of the measurements' wall time)",
    ]
    counted = 0.0
    for piece in pieces:
        seconds = sum(r["pieces"].get(piece, 0.0) for r in rows)
        if "not paid" not in piece and not piece.startswith(("cupti", "device sampler")):
            counted += seconds
        out.append(f"  {piece}: {1e3 * seconds / total_rounds:.2f} ms ({seconds / total_wall:.0%})")
    out.append(f"  rest (outside the pieces above): {1e3 * (total_wall - counted) / total_rounds:.2f} ms")
    out.append(
        "  (the cupti pieces lie inside 'device window', and inside the device sampler setup for the "
        "first round's count; that setup is outside the window and counted in the rest)"
    )
    mismatched = [r for r in rows if r["mismatches"]]
    out.append(f"raw events and function_events gave different durations in {len(mismatched)} of {len(rows)}")
    out.append("per kernel: rounds, ms per round, device time")
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[r["kernel"]].append(r)
    for kernel, mine in by.items():
        rounds = sum(r["rounds"] for r in mine)
        wall = sum(r["wall_s"] for r in mine)
        read = sum(r["pieces"].get("cupti: function_events read (not paid)", 0.0) for r in mine)
        raw = sum(r["pieces"].get("cupti: raw events read", 0.0) for r in mine)
        out.append(
            f"  {kernel:32s} {rounds / len(mine):4.1f} rounds {1e3 * wall / rounds:6.1f} ms/round "
            f"{1e3 * mine[0]['device_ms']:9.2f} us  read: raw {1e3 * raw / rounds:5.2f} ms, "
            f"function_events {1e3 * read / rounds:5.2f} ms per round"
        )
    return out


def _log_sd(values: list[float]) -> float:
    logs = [math.log(v) for v in values]
    return statistics.stdev(logs) if len(logs) > 1 else 0.0


def _sweep_table(rows: list[dict[str, Any]]) -> list[str]:
    plans = list(dict.fromkeys(r["plan"] for r in rows))
    processes = sorted({r["process"] for r in rows})
    out = [
        f"== sweep: {len(rows)} measurements of 5 rounds in {len(processes)} processes, plans interleaved",
        f"plan: ms per round; median over kernels of the rounds' SD, relative to {REFERENCE!r}; of the "
        "measurements' level SD, relative to the same; level against it (geometric mean over kernels, "
        "and the kernels whose level moved beyond its 95% interval)",
    ]
    by: dict[tuple[str, str, int], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["kernel"], r["plan"], r["process"])].append(r)
    kernels_seen = list(dict.fromkeys(r["kernel"] for r in rows))

    def round_sd(kernel: str, plan: str, process: int) -> float:
        """Pooled within-measurement SD of the log round locations."""
        variances = [_log_sd(r["rounds_ms"]) ** 2 for r in by[(kernel, plan, process)]]
        return math.sqrt(statistics.fmean(variances))

    def level(r: dict[str, Any]) -> float:
        return statistics.fmean(math.log(v) for v in r["rounds_ms"])

    for plan in plans:
        wall = sum(r["wall_s"] for r in rows if r["plan"] == plan)
        rounds = sum(len(r["rounds_ms"]) for r in rows if r["plan"] == plan)
        sd_ratios, level_sd_ratios, shifts, moved = [], [], [], []
        for kernel in kernels_seen:
            for process in processes:
                reference_rows, mine = by[(kernel, REFERENCE, process)], by[(kernel, plan, process)]
                if not mine or not reference_rows:
                    continue
                base_sd = round_sd(kernel, REFERENCE, process)
                if base_sd > 0:
                    sd_ratios.append(round_sd(kernel, plan, process) / base_sd)
                base_level_sd = (
                    statistics.stdev(level(r) for r in reference_rows) if len(reference_rows) > 1 else 0.0
                )
                if base_level_sd > 0 and len(mine) > 1:
                    level_sd_ratios.append(statistics.stdev(level(r) for r in mine) / base_level_sd)
                # Paired by repetition: the same kernel, measured back to back under both plans.
                pairs = {r["repeat"]: level(r) for r in reference_rows}
                diffs = [level(r) - pairs[r["repeat"]] for r in mine if r["repeat"] in pairs]
                if len(diffs) > 1:
                    mean = statistics.fmean(diffs)
                    half = 2.0 * statistics.stdev(diffs) / math.sqrt(len(diffs))
                    shifts.append(mean)
                    if plan != REFERENCE and abs(mean) > half:
                        moved.append(f"{kernel}[p{process}] {100 * math.expm1(mean):+.2f}%")
        out.append(
            f"  {plan:38s} {1e3 * wall / rounds:5.1f} ms/round; round SD x{_median(sd_ratios):.2f}; "
            f"level SD x{_median(level_sd_ratios):.2f}; level {100 * math.expm1(_mean(shifts)):+.2f}%; "
            f"moved: {', '.join(moved) or 'none'}"
        )
    out.append("per kernel, rounds' SD (%) under each plan, process by process:")
    out.append("  " + " | ".join(plans))
    for kernel in kernels_seen:
        cells = []
        for plan in plans:
            cells.append(
                "/".join(f"{100 * round_sd(kernel, plan, p):.2f}" for p in processes if by[(kernel, plan, p)])
            )
        out.append(f"  {kernel:32s} " + " | ".join(cells))
    out.append("per kernel, median ms per round under each plan:")
    for kernel in kernels_seen:
        cells = []
        for plan in plans:
            walls = [r["wall_s"] / len(r["rounds_ms"]) for p in processes for r in by[(kernel, plan, p)]]
            cells.append(f"{1e3 * _median(walls):5.1f}")
        out.append(f"  {kernel:32s} " + " | ".join(cells))
    return out


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


# --- driver ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("out/round_cost"))
    parser.add_argument("--processes", type=int, default=2, help="fresh processes for the sweep")
    parser.add_argument("--repeats", type=int, default=6, help="measurements per kernel and plan per process")
    parser.add_argument("--breakdown-repeats", type=int, default=3)
    parser.add_argument("--analyse", type=Path, help="print the tables of a finished study")
    parser.add_argument("--child", choices=["breakdown", "sweep"], help=argparse.SUPPRESS)
    parser.add_argument("--process", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.analyse:
        print(analyse(args.analyse))
        return
    if args.child == "breakdown":
        breakdown(args.out, args.breakdown_repeats)
        return
    if args.child == "sweep":
        sweep(args.out, args.process, args.repeats)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    me = [sys.executable, str(Path(__file__).resolve()), "--out", str(args.out)]
    subprocess.run(
        [*me, "--child", "breakdown", "--breakdown-repeats", str(args.breakdown_repeats)], check=False
    )
    print(analyse(args.out), flush=True)
    for process in range(args.processes):
        subprocess.run(
            [*me, "--child", "sweep", "--process", str(process), "--repeats", str(args.repeats)], check=False
        )
        print(analyse(args.out), flush=True)


if __name__ == "__main__":
    main()
