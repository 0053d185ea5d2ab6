"""False alarms and detection power of kernel_bench's verdicts, across separate processes.

One process records baselines of the Triton GELU at a small and a large size, written and read back
through the real baseline files. Then COMPARISONS other processes, one after another, each measure
the unchanged kernel (A/A) and slowed-down variants (3%, 5% and 10% more elements, kept a multiple
of 16 so that Triton's alignment specialisation stays the same) and judge each against the stored
baseline, as `pytest --kernelperf` would, at thresholds of 3% and 5%.

The slowdown a variant really causes is measured too (its median over the unchanged kernel's, in
the same process): at small sizes time is not proportional to elements (waves of blocks), so the
detection rate is reported against that real slowdown.

    python studies/verdicts.py [--comparisons 40] [--jobs 4] [--small-by-work] [--out DIR]

Process start-up (importing torch, creating the CUDA context, loading CUPTI) takes most of a
process's life, so JOBS processes start at once, but only one at a time measures: each holds a
file lock on the GPU from its first timed call to its last. Rows are appended to
OUT/verdicts.jsonl as processes finish, so an interrupted run keeps what it measured;
`--render OUT/verdicts.jsonl` prints the table of such a file. Every sample is kept there (the
baseline's in the first line), so that other decision rules can be judged on the same measurements.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))

SIZES = {"small": 1 << 20, "large": 1 << 26}
SLOWDOWNS = {"A/A": 0.0, "+3%": 0.03, "+5%": 0.05, "+10%": 0.10}
THRESHOLDS = (0.03, 0.05)


WORK_STEPS = tuple(range(17))
# Extra dependent steps per element that slow the small kernel by each fraction; set by
# calibrate() in the baseline process when --small-by-work is given, else small kernels get
# more elements like the large ones.
WORK: dict[float, int] = {}


def elements(size: str, slowdown: float) -> int:
    return round(SIZES[size] * (1 + slowdown) / 16) * 16


def measure(size: str, slowdown: float, *, record: bool = False) -> Any:
    import torch

    from example_kernels.gelu import triton_gelu
    from pytest_kernelperf.measure.device import fingerprint
    from pytest_kernelperf.measure.timing import AutoTimer, Target
    from pytest_kernelperf.settings import Settings

    if size == "small" and WORK:
        from slow_gelu import gelu_with_work  # type: ignore[import-not-found]  # studies/ is on sys.path

        x = torch.randn(SIZES[size], device="cuda")
        work = WORK[slowdown]
        call: Any = lambda: gelu_with_work(x, work)  # noqa: E731
    else:
        x = torch.randn(elements(size, slowdown), device="cuda")
        call = lambda: triton_gelu(x)  # noqa: E731
    # A baseline gets the recording rounds, a comparison the comparing rounds, as in a pytest run.
    settings = Settings(compare=not record, update=record)
    return AutoTimer().measure(Target(call, fingerprint("cuda")), settings.plan()).device_time


def calibrate() -> dict[float, int]:
    """The extra steps per element that slow the small GELU by at least each of SLOWDOWNS: the
    fewest steps whose measured slowdown reaches it (time is not monotonic in steps, so no
    interpolation between them)."""
    import torch
    from slow_gelu import gelu_with_work  # type: ignore[import-not-found]  # studies/ is on sys.path

    from pytest_kernelperf.measure.device import fingerprint
    from pytest_kernelperf.measure.timing import AutoTimer, Target
    from pytest_kernelperf.settings import Settings

    x = torch.randn(SIZES["small"], device="cuda")

    def median(work: int) -> float:
        target = Target(lambda: gelu_with_work(x, work), fingerprint("cuda"))
        return float(AutoTimer().measure(target, Settings().plan()).device_time.summary.median_ms)

    base = median(0)
    ratios = {work: median(work) / base for work in WORK_STEPS}
    WORK.clear()
    WORK[0.0] = 0
    for slowdown in SLOWDOWNS.values():
        if slowdown:
            reaching = [work for work, ratio in ratios.items() if ratio >= 1 + slowdown]
            WORK[slowdown] = min(reaching, default=WORK_STEPS[-1])
    return dict(WORK)


def start_up() -> None:
    """Pay the one-off costs before taking the GPU: CUDA context, CUPTI, Triton compilation."""
    import torch

    from example_kernels.gelu import triton_gelu
    from pytest_kernelperf.measure.timing import profile_device_activity

    x = torch.randn(1024, device="cuda")
    triton_gelu(x)
    profile_device_activity(lambda: triton_gelu(x), 1)


def gpu_lock(store: Path) -> Any:
    handle = open(store.with_suffix(".lock"), "w")  # noqa: SIM115 - held for the process's measuring
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def child_baseline(store: Path, small_by_work: bool) -> None:
    from pytest_kernelperf import atomic
    from pytest_kernelperf.baselines import schema, yaml_io
    from pytest_kernelperf.call.judged import record_of as _record_of
    from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey

    start_up()
    if small_by_work:
        WORK[0.0] = 0  # the unchanged kernel is the work kernel with no extra steps
    entries = {}
    samples = {}
    # The baselines first, as a comparison process measures them: calibrating first would leave
    # this process in another state (its allocations, for one), which skewed the small kernel's
    # baseline by 1.3% in earlier runs.
    for size in SIZES:
        metric = measure(size, 0.0, record=True)
        samples[size] = rounded(metric.samples_ms)
        key = EntryKey(f"gelu_{size}", "gpu", "hot")
        entries[key] = schema.as_stored(
            BaselineEntry(device_time=_record_of(metric), recorded="-", environment={})
        )
    atomic.write_atomic(store, yaml_io.dump(entries))
    store.with_suffix(".samples.json").write_text(json.dumps(samples))
    if small_by_work:
        work = calibrate()
        store.with_suffix(".work.json").write_text(json.dumps({str(k): v for k, v in work.items()}))
        print(f"extra steps per element for each slowdown of the small kernel: {work}", flush=True)


def rounded(samples_ms: Any) -> list[float]:
    """Samples to the picosecond, short enough to keep every one (for re-judging offline)."""
    return [round(float(v), 9) for v in samples_ms]


def child_compare(store: Path, result: Path) -> None:
    from pytest_kernelperf.baselines import yaml_io
    from pytest_kernelperf.model.baseline import EntryKey
    from pytest_kernelperf.verdict.judge import Rounds, judge

    stored = yaml_io.read(store)
    calibration = store.with_suffix(".work.json")
    if calibration.exists():
        WORK.update({float(k): int(v) for k, v in json.loads(calibration.read_text()).items()})
    start_up()
    lock = gpu_lock(store)
    rows = []
    for size in SIZES:
        base = stored[EntryKey(f"gelu_{size}", "gpu", "hot")].device_time
        unchanged = None
        for label, slowdown in SLOWDOWNS.items():
            metric = measure(size, slowdown)
            median = metric.summary.median_ms
            unchanged = median if slowdown == 0 else unchanged
            now = Rounds(metric.method, metric.round_locations_ms)
            then = Rounds.stored(base.method, base.rounds_ms, base.median_ms)
            verdicts = {
                str(t): str(judge(now, then, device="gpu", threshold=t, alpha=0.01).verdict)
                for t in THRESHOLDS
            }
            rows.append(
                {
                    "size": size,
                    "variant": label,
                    "median_ms": median,
                    "ratio_to_baseline": median / base.median_ms,
                    "real_slowdown": median / unchanged - 1 if unchanged else 0.0,
                    "verdicts": verdicts,
                    "samples_ms": rounded(metric.samples_ms),
                    "rounds_ms": rounded(metric.round_locations_ms),
                }
            )
    lock.close()
    result.write_text(json.dumps(rows))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--comparisons", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=4, help="processes starting up at once (one measures)")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "out")))
    parser.add_argument("--render", type=Path, help="print the table of a verdicts.jsonl and exit")
    parser.add_argument(
        "--every-baseline",
        type=Path,
        metavar="JSONL",
        help="re-judge a verdicts.jsonl with each other comparison process's A/A samples as the baseline",
    )
    parser.add_argument(
        "--small-by-work",
        action="store_true",
        help="slow the small kernel with calibrated extra arithmetic per element instead of more elements",
    )
    parser.add_argument("--child", choices=["baseline", "compare"])
    parser.add_argument("--store", type=Path)
    parser.add_argument("--result", type=Path)
    args = parser.parse_args()
    if args.child == "baseline":
        child_baseline(args.store, args.small_by_work)
        return
    if args.child == "compare":
        child_compare(args.store, args.result)
        return
    if args.every_baseline:
        lines = [json.loads(line) for line in args.every_baseline.read_text().splitlines()]
        print(every_baseline([row for line in lines[1:] for row in line["rows"]]))
        return
    if args.render:
        lines = [json.loads(line) for line in args.render.read_text().splitlines()]
        meta = {**lines[0], "comparisons": len(lines) - 1}  # the processes that finished
        print(render([row for line in lines[1:] for row in line["rows"]], meta))
        return

    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "verdicts.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "studies")])}
    began = time.time()
    from pytest_kernelperf.measure.device import fingerprint

    device = fingerprint("cuda")
    meta = {
        "device": device.name,
        "environment": device.environment,
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "comparisons": args.comparisons,
    }
    log.write_text(json.dumps(meta) + "\n")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "baseline.yaml"
        script = [sys.executable, __file__]
        baseline = [*script, "--child", "baseline", "--store", str(store)]
        subprocess.run(baseline + (["--small-by-work"] if args.small_by_work else []), check=True, env=env)
        meta["baseline_samples_ms"] = json.loads(store.with_suffix(".samples.json").read_text())
        log.write_text(json.dumps(meta) + "\n")
        running: list[tuple[int, subprocess.Popen[bytes], Path]] = []
        pending = list(range(args.comparisons))
        while pending or running:
            while pending and len(running) < args.jobs:
                i = pending.pop(0)
                result = Path(tmp) / f"r{i}.json"
                command = [*script, "--child", "compare", "--store", str(store), "--result", str(result)]
                running.append((i, subprocess.Popen(command, env=env), result))
            i, process, result = running.pop(0)
            if process.wait() != 0:
                print(f"process {i} failed with exit status {process.returncode}", flush=True)
                continue
            found = [{**row, "process": i} for row in json.loads(result.read_text())]
            rows.extend(found)
            with log.open("a") as handle:
                handle.write(json.dumps({"process": i, "rows": found}) + "\n")
            print(f"process {i + 1}/{args.comparisons} done ({time.time() - began:.0f} s)", flush=True)
    meta["comparisons"] = len({row["process"] for row in rows})
    table = render(rows, meta)
    (args.out / "verdicts.md").write_text(table)
    print(table)


def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    env = meta["environment"]
    lines = [
        f"Verdicts on {meta['device']} (torch {env.get('torch')}, triton {env.get('triton')}, driver "
        f"{env.get('driver')}), {meta['date']}: one baseline process, {meta['comparisons']} comparison "
        f"processes, Triton GELU, kernel_bench defaults (alpha 0.01).",
        "",
        "| size | variant | real slowdown (median, min-max) | median / baseline (min-max) "
        "| 'slower' at 3% threshold | at 5% |",
        "|---|---|---|---|---|---|",
    ]
    for size, count in SIZES.items():
        for variant in SLOWDOWNS:
            subset = [r for r in rows if r["size"] == size and r["variant"] == variant]
            real = [r["real_slowdown"] * 100 for r in subset]
            ratio = [r["ratio_to_baseline"] for r in subset]
            counts = [sum(r["verdicts"][str(t)] == "slower" for r in subset) for t in THRESHOLDS]
            lines.append(
                f"| {size} (2^{count.bit_length() - 1}) | {variant} | {statistics.median(real):+.2f}% "
                f"({min(real):+.2f}% to {max(real):+.2f}%) | "
                f"{statistics.median(ratio):.4f} ({min(ratio):.4f}-{max(ratio):.4f}) | "
                + " | ".join(f"{c}/{len(subset)}" for c in counts)
                + " |"
            )
    return "\n".join(lines) + "\n"


def every_baseline(rows: list[dict[str, Any]]) -> str:
    """Each comparison judged against every other process's unchanged kernel as its baseline, by
    the package's judge (studies/resample.py); rows without rounds (data recorded before rounds)
    count their samples as one round."""
    from studies.resample import Measurement
    from studies.resample import every_baseline as judge_every_baseline

    measurements = [Measurement.from_row(row) for row in rows]
    real: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        real.setdefault((row["size"], row["variant"]), []).append(row["real_slowdown"])
    lines = [
        "| size | variant | real slowdown (median) | 'slower' at 3% threshold | at 5% |",
        "|---|---|---|---|---|",
    ]
    for tally in judge_every_baseline(measurements, THRESHOLDS):
        count = SIZES[tally.kernel]
        slowdown = statistics.median(real[(tally.kernel, tally.variant)]) * 100
        lines.append(
            f"| {tally.kernel} (2^{count.bit_length() - 1}) | {tally.variant} | {slowdown:+.2f}% | "
            + " | ".join(f"{tally.slower[t]}/{tally.pairs} ({tally.rate(t):.1%})" for t in THRESHOLDS)
            + " |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
