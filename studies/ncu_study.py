"""Nsight Compute counters on a GPU: raw CSVs for the tests, and three planted regressions diagnosed.

    python studies/ncu_study.py OUT [--step all|check|record|planted] [--timeout-s 240]

Needs CUDA, Triton and `ncu`. Writes into OUT as each step finishes (a run cut short keeps what it
did):

* `check`: ncu_version.txt, and metrics_check.json: which metrics of the plugin's fixed set
  (profiling/ncu_csv.METRICS) `ncu --query-metrics` lists on this GPU.
* `record`: csv/ncu_<gpu>_raw.csv, ncu's raw CSV page of a few kernels (a Triton kernel, a torch
  elementwise kernel, a cuBLAS matmul) profiled with exactly the plugin's commands
  (profiling/ncu.profile_command, import_command): copy it to tests/data/ and
  tests/test_ncu_counters.py reads it too. csv/parsed.json: what the plugin reads from it.
* `planted`: a pytest project (OUT/project) with three kernels, each with a baseline version and a
  planted regression of one cause, run through the plugin end to end: baselines recorded with
  `--kernelperf-update-baselines --kernelperf-ncu`, a passing run with `--kernelperf
  --kernelperf-ncu` (which must read no counters), then the regressed versions with `--kernelperf
  --kernelperf-ncu`. Each failure message must name the counter of its cause:
  - unfused: one fused Triton kernel -> two kernels with a round trip through DRAM (DRAM bytes up);
  - registers: the same Triton kernel with 128 elements per thread and one warp (registers up,
    occupancy down);
  - uncoalesced: the same copy kernel reading its input column-wise (sectors per request up).
  planted.json: per test, the verdict, the counters that moved (ncu_diff on the baseline's and the
  run's counters), whether the message named the expected one, and the diagnosis's seconds.

Each pytest run is bounded by --timeout-s (default 240); the whole study takes 3-6 minutes.
A dry run of the planted step's plumbing without a GPU: a fake ncu on PATH (tests/test_ncu_flow.py
has one), TRITON_INTERPRET=1 PLANTED_DEVICE=cpu PLANTED_LOG2=12, `--step planted`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import textwrap
import time
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_kernelperf.baselines.schema import entry_from_data  # noqa: E402
from pytest_kernelperf.model.counters import KernelCounters  # noqa: E402
from pytest_kernelperf.profiling import ncu, ncu_csv, ncu_diff  # noqa: E402

# The fused kernel of both scripts: the recorded CSV's Triton kernel and the planted tests' baseline.
FUSED_KERNEL = """@triton.jit
def fused_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * 2.0 + 1.0, mask=mask)
"""

RECORD_SCRIPT = '''
"""A few kernels inside the NVTX range the plugin profiles."""
import torch
import triton
import triton.language as tl


{fused_kernel}

x = torch.randn(1 << 24, device="cuda")
y = torch.empty_like(x)
a = torch.randn(2048, 2048, device="cuda")
grid = (triton.cdiv(x.numel(), 1024),)
for _ in range(3):  # compile, warm up
    fused_kernel[grid](x, y, x.numel(), BLOCK=1024)
    torch.add(x, 1.0)
    a @ a
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("{range}")
fused_kernel[grid](x, y, x.numel(), BLOCK=1024)
torch.add(x, 1.0)
torch.add(x, 1.0)
a @ a
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
'''

PLANTED_TESTS = '''
"""Three kernels, each a baseline version (PLANTED=base) and a planted regression (PLANTED=regressed)."""
import os

import torch
import triton
import triton.language as tl

REGRESSED = os.environ.get("PLANTED") == "regressed"
LOG2 = int(os.environ.get("PLANTED_LOG2", "26"))  # 2^26 float32, 256 MiB: memory-bound, long enough for ncu
DEVICE = os.environ.get("PLANTED_DEVICE", "cuda")  # cpu with TRITON_INTERPRET=1: a dry run of the study
N = 1 << LOG2
ROWS, COLS = 1 << (LOG2 // 2), 1 << (LOG2 - LOG2 // 2)


{fused_kernel}

@triton.jit
def scale_kernel(x_ptr, t_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(t_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


@triton.jit
def shift_kernel(t_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(t_ptr + offs, mask=mask) + 1.0, mask=mask)


def scale_shift(x):
    y = torch.empty_like(x)
    grid = (triton.cdiv(x.numel(), 1024),)
    if REGRESSED:  # unfused: the intermediate makes a round trip through DRAM
        t = torch.empty_like(x)
        scale_kernel[grid](x, t, x.numel(), BLOCK=1024)
        shift_kernel[grid](t, y, x.numel(), BLOCK=1024)
    else:
        fused_kernel[grid](x, y, x.numel(), BLOCK=1024)
    return y


@triton.jit
def wide_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * 2.0 + 1.0, mask=mask)


def wide(x):
    y = torch.empty_like(x)
    # regressed: 4096 elements for one warp, 128 per thread held in registers at once
    block, warps = (4096, 1) if REGRESSED else (1024, 4)
    wide_kernel[(triton.cdiv(x.numel(), block),)](x, y, x.numel(), BLOCK=block, num_warps=warps)
    return y


@triton.jit
def gather_kernel(x_ptr, y_ptr, rows, cols, BLOCK: tl.constexpr, COLUMN_WISE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < rows * cols
    if COLUMN_WISE:  # neighbouring threads read addresses `cols` apart: one sector per element
        source = (offs % rows) * cols + offs // rows
    else:
        source = offs
    tl.store(y_ptr + offs, tl.load(x_ptr + source, mask=mask) * 2.0, mask=mask)


def gather(x):
    y = torch.empty_like(x)
    grid = (triton.cdiv(x.numel(), 1024),)
    gather_kernel[grid](x, y, ROWS, COLS, BLOCK=1024, COLUMN_WISE=REGRESSED)
    return y


def gather_reference(x):
    if REGRESSED:
        return x.view(ROWS, COLS).t().reshape(-1) * 2.0
    return x * 2.0


def make_input(n=N):
    return torch.randn(n, device=DEVICE, generator=torch.Generator(device=DEVICE).manual_seed(0))


def test_unfused(kernel_bench):
    x = make_input()
    kernel_bench(scale_shift, x, reference=lambda x: x * 2.0 + 1.0, bytes=2 * x.numel() * 4)


def test_registers(kernel_bench):
    x = make_input()
    kernel_bench(wide, x, reference=lambda x: x * 2.0 + 1.0, bytes=2 * x.numel() * 4)


def test_uncoalesced(kernel_bench):
    x = make_input(ROWS * COLS)
    kernel_bench(gather, x, reference=gather_reference, bytes=2 * x.numel() * 4)
'''

# What each failure message must name: the counter of the planted cause.
EXPECTED = {
    "test_unfused": r"all kernels of the call: .*DRAM read \S+ \S+ -> \S+ \S+",
    "test_registers": r"registers \d+ -> \d+|occupancy \d+% -> \d+%",
    "test_uncoalesced": r"sectors per global load [\d.]+ -> [\d.]+",
}


def say(text: str) -> None:
    print(text, flush=True)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def step_check(out: Path, tool: str, timeout_s: float) -> None:
    code, version = ncu.run([tool, "--version"], out, os.environ, 60)
    write(out / "ncu_version.txt", version)
    code, listed = ncu.run([tool, "--query-metrics"], out, os.environ, timeout_s)
    write(out / "query_metrics.txt", listed)
    names = set(re.findall(r"^(\S+)", listed, re.MULTILINE))
    found = {metric: metric.split(".")[0] in names for metric in ncu_csv.METRICS}
    write(out / "metrics_check.json", json.dumps({"exit": code, "listed": found}, indent=2) + "\n")
    missing = [metric for metric, ok in found.items() if not ok]
    say(
        f"check: ncu {version.strip().splitlines()[-1] if version.strip() else '?'}; "
        f"{len(found) - len(missing)} of {len(found)} metrics listed; not listed: {missing or 'none'}"
    )


def gpu_slug() -> str:
    import torch

    name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "gpu"
    return re.sub(r"[^a-z0-9]+", "_", name.lower().removeprefix("nvidia ")).strip("_") or "gpu"


def step_record(out: Path, tool: str, timeout_s: float) -> None:
    folder = out / "csv"
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "record_kernels.py"
    write(script, RECORD_SCRIPT.replace("{range}", ncu.RANGE).replace("{fused_kernel}", FUSED_KERNEL))
    began = time.monotonic()
    argv = ncu.profile_command(tool, folder / "record", [sys.executable, str(script)], ncu_csv.METRICS)
    code, output = ncu.run(argv, folder, os.environ, timeout_s)
    write(folder / "profile_output.txt", f"$ {' '.join(argv)}\nexit {code}\n{output}")
    report = folder / "record.ncu-rep"
    if not report.exists():
        say(f"record: no report (exit {code}); see {folder / 'profile_output.txt'}")
        return
    code, text = ncu.run(ncu.import_command(tool, report), folder, os.environ, timeout_s)
    target = folder / f"ncu_{gpu_slug()}_raw.csv"
    write(target, text)
    kernels = ncu_csv.per_kernel(ncu_csv.parse(text))
    parsed = [{"name": k.name, "launches": k.launches, "values": k.values} for k in kernels]
    write(folder / "parsed.json", json.dumps(parsed, indent=2) + "\n")
    say(f"record: {target} ({len(kernels)} kernels, {time.monotonic() - began:.1f} s)")
    for kernel in kernels:
        say(f"  {kernel.name[:80]}: {ncu_diff.summary(kernel)}")


def pytest_run(project: Path, variant: str, timeout_s: float, *args: str) -> tuple[int | None, str, float]:
    env = dict(os.environ, PLANTED=variant)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    installed = any(ep.name == "kernelperf" for ep in entry_points(group="pytest11"))
    plugin = [] if installed else ["-p", "pytest_kernelperf.plugin"]
    argv = [sys.executable, "-m", "pytest", *plugin, "-p", "no:cacheprovider", "-rf", "-o", "log_level=INFO"]
    argv += ["--kernelperf-artifacts", "artifacts", "test_planted.py", *args]
    began = time.monotonic()
    code, output = ncu.run(argv, project, env, timeout_s)
    return code, output, time.monotonic() - began


def failure_sections(output: str) -> dict[str, str]:
    match = re.search(r"^=+ FAILURES =+$(.*?)^=+ ", output, re.MULTILINE | re.DOTALL)
    if not match:
        return {}
    parts = re.split(r"^_+ (\S+) _+$", match[1], flags=re.MULTILINE)
    return {name: text.strip("\n") for name, text in zip(parts[1::2], parts[2::2], strict=True)}


def counters_of(data: Any) -> tuple[KernelCounters, ...] | None:
    return entry_from_data(data).counters if isinstance(data, dict) else None


def step_planted(out: Path, timeout_s: float) -> int:
    import yaml

    project = out / "project"
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    write(project / "pytest.ini", "[pytest]\n")
    tests = textwrap.dedent(PLANTED_TESTS).lstrip().replace("{fused_kernel}", FUSED_KERNEL)
    write(project / "test_planted.py", tests)
    summary: dict[str, Any] = {}

    code, output, seconds = pytest_run(
        project,
        "base",
        timeout_s,
        "--kernelperf-update-baselines",
        "--kernelperf-ncu",
        "--kernelperf-durations=0",
    )
    write(out / "update.txt", output)
    summary["update"] = {"exit": code, "seconds": round(seconds, 1)}
    say(f"planted: update exit {code} in {seconds:.0f} s")
    baseline_file = project / "baselines" / "test_planted.yaml"
    stored: dict[str, Any] = {}
    if baseline_file.exists():
        stored = (yaml.safe_load(baseline_file.read_text()) or {}).get("entries", {})

    passing_json = project / "passing.json"
    code, output, seconds = pytest_run(
        project, "base", timeout_s, "--kernelperf", "--kernelperf-ncu", f"--kernelperf-json={passing_json}"
    )
    write(out / "passing.txt", output)
    read = []
    if passing_json.exists():
        for passed in json.loads(passing_json.read_text())["results"]:
            if (passed.get("baseline_entry") or {}).get("counters"):
                read.append(passed["nodeid"])
    summary["passing"] = {"exit": code, "seconds": round(seconds, 1), "counters_read_for": read}
    say(f"planted: passing run exit {code} in {seconds:.0f} s; counters read for {read or 'no call'}")

    regressed_json = project / "regressed.json"
    code, output, seconds = pytest_run(
        project,
        "regressed",
        timeout_s,
        "--kernelperf",
        "--kernelperf-ncu",
        f"--kernelperf-json={regressed_json}",
        "--kernelperf-durations=0",
    )
    write(out / "regressed.txt", output)
    sections = failure_sections(output)
    write(out / "failure_messages.md", "".join(f"### {n}\n\n```\n{t}\n```\n\n" for n, t in sections.items()))
    say(f"planted: regressed run exit {code} in {seconds:.0f} s; failed: {sorted(sections)}")
    results: list[dict[str, Any]] = []
    if regressed_json.exists():
        results = json.loads(regressed_json.read_text())["results"]
    ok = True
    for test, pattern in EXPECTED.items():
        result: dict[str, Any] = next((r for r in results if r["nodeid"].endswith(f"::{test}")), {})
        now = counters_of(result.get("baseline_entry"))
        entry = next(iter(next(iter(stored.get(test, {}).values()), {}).values()), None)
        before = counters_of(entry)
        moved = ncu_diff.counter_lines(before, now) if now else []
        notes = result.get("notes") or []
        cost = next(
            (
                float(m[1])
                for n in notes
                if (m := re.search(r"counters of \d+ kernel\(s\) read in ([\d.]+) s", n))
            ),
            None,
        )
        named = bool(re.search(pattern, sections.get(test, "")))
        ok = ok and named
        summary[test] = {
            "verdict": result.get("verdict"),
            "change_pct": (result.get("comparison") or {}).get("change_pct"),
            "expected": pattern,
            "named_in_message": named,
            "counters_moved": moved,
            "diagnosis_seconds": cost,
            "notes": [n for n in notes if "Nsight" in n or "ncu" in n],
        }
        say(f"  {test}: verdict {result.get('verdict')}, named {named}, diagnosis {cost} s")
        for line in moved:
            say(f"    {line}")
    summary["passing_pays_nothing"] = not read
    write(out / "planted.json", json.dumps(summary, indent=2) + "\n")
    return 0 if ok and not read else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", help="folder for the results (created)")
    parser.add_argument("--step", choices=("all", "check", "record", "planted"), default="all")
    parser.add_argument("--timeout-s", type=float, default=240.0, help="most seconds per process")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    tool = ncu.find_ncu()
    if tool is None:
        say(f"no ncu: {ncu.ABSENT}")
        return 2
    status = 0
    if args.step in ("all", "check"):
        step_check(out, tool, args.timeout_s)
    if args.step in ("all", "record"):
        step_record(out, tool, args.timeout_s)
    if args.step in ("all", "planted"):
        status = step_planted(out, args.timeout_s)
    return status


if __name__ == "__main__":
    sys.exit(main())
