"""Verdicts that depended on what ran earlier, on a GPU (or the CPU).

    OUT=./out python studies/compile_context_demo.py

Writes a pytest project under $OUT/compile_context/project whose one module-level
`compiled = torch.compile(layer_norm)` is parametrized over two shapes (the usual way), plus a
Triton GELU whose element count comes from the environment, and runs:

1. `--kernelperf-update-baselines -k big`: the big shape's baseline, recorded alone;
2. `--kernelperf` (fresh compile context, the default): small then big in one process;
3. `--kernelperf -o kernelperf_compile_context=shared`: the same, measuring the process's
   warmed caches (the big shape is compiled with dynamic shapes);
4. `--kernelperf` with the GELU given 10% more elements than its baseline.

Saves each run's output (run1.txt ... run4.txt), the baselines and checks.json (what each run
was expected to show, and whether it did). The fresh context's cost is the difference of the
wall times of runs 2 and 3 (`wall_s` in checks.json).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from importlib.metadata import entry_points
from pathlib import Path

from pytest_kernelperf.results import runfile

REPO = Path(__file__).resolve().parents[1]

TESTS = """
import os

import pytest
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def layer_norm(x):
    return torch.nn.functional.layer_norm(x, x.shape[-1:])


compiled = torch.compile(layer_norm)  # one module-level compiled function, shared by the tests


@pytest.mark.parametrize("rows", [64, 8192], ids=["small", "big"])
def test_layer_norm(kernel_bench, rows):
    x = torch.randn(rows, 4096, device=DEVICE)
    kernel_bench(compiled, x, reference=layer_norm)


try:
    import triton
    import triton.language as tl
except ImportError:
    triton = None

if triton is not None and DEVICE == "cuda":

    @triton.jit
    def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        y = 0.5 * x * (1 + tl.erf(x * 0.7071067811865476))
        tl.store(y_ptr + offsets, y, mask=mask)

    def triton_gelu(x):
        y = torch.empty_like(x)
        gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y

    @triton.autotune(
        configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((512, 4), (1024, 4), (2048, 8))],
        key=["n"],
    )
    @triton.jit
    def tuned_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)

    def tuned(x):
        y = torch.empty_like(x)
        tuned_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, x.numel())
        return y

    def test_triton_gelu(kernel_bench):
        x = torch.randn(int(os.environ.get("GELU_ELEMENTS", 1 << 26)), device=DEVICE)
        kernel_bench(triton_gelu, x, reference=lambda t: torch.nn.functional.gelu(t))

    def test_autotuned(kernel_bench):
        x = torch.randn(1 << 24, device=DEVICE)
        kernel_bench(tuned, x, reference=lambda t: t * 2)
"""


def pytest_command(*args: str) -> list[str]:
    installed = any(ep.name == "kernelperf" for ep in entry_points(group="pytest11"))
    plugin = [] if installed else ["-p", "pytest_kernelperf.plugin"]
    common = ["-p", "no:cacheprovider", "-rf", "-o", "log_level=INFO", "--kernelperf-artifacts", "artifacts"]
    return [sys.executable, "-m", "pytest", *plugin, *common, "test_context.py", *args]


def run(project: Path, env_extra: dict[str, str], *args: str) -> tuple[str, float]:
    env = dict(os.environ, **env_extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    start = time.perf_counter()
    done = subprocess.run(
        pytest_command(*args), cwd=project, env=env, capture_output=True, text=True, check=False
    )
    return done.stdout + done.stderr, time.perf_counter() - start


def main() -> int:
    out = Path(os.environ.get("OUT", "out")) / "compile_context"
    project = out / "project"
    shutil.rmtree(out, ignore_errors=True)
    project.mkdir(parents=True)
    (project / "test_context.py").write_text(textwrap.dedent(TESTS))
    elements = 1 << 26
    runs = [
        (
            "run1",
            {"GELU_ELEMENTS": str(elements)},
            ("--kernelperf-update-baselines", "-k", "big or gelu or autotuned"),
        ),
        ("run2", {"GELU_ELEMENTS": str(elements)}, ("--kernelperf", "-v", "-k", "layer_norm")),
        (
            "run3",
            {"GELU_ELEMENTS": str(elements)},
            ("--kernelperf", "-v", "-k", "layer_norm", "-o", "kernelperf_compile_context=shared"),
        ),
        (
            "run4",
            {"GELU_ELEMENTS": str(elements * 11 // 10)},
            ("--kernelperf", "-v", "-k", "gelu or autotuned"),
        ),
    ]
    outputs: dict[str, str] = {}
    walls: dict[str, float] = {}
    for name, env, args in runs:
        text, wall = run(project, env, *args, f"--kernelperf-json={(out / name).resolve()}.json")
        outputs[name], walls[name] = text, wall
        (out / f"{name}.txt").write_text(text)
        print(f"== {name} ({wall:.1f} s)\n{text[-6000:]}", flush=True)
    baselines = project / "baselines" / "test_context.yaml"
    if baselines.exists():
        shutil.copy(baselines, out / "baselines.yaml")
    text = baselines.read_text() if baselines.exists() else ""
    checks = {
        "baseline static context recorded": "shapes: static" in text,
        "baseline inputs recorded": "inputs:" in text,
        "baseline grid recorded": "grid: [" in text,
        "baseline autotune recorded": "tuned_kernel:" in text,
        "fresh: big passes after small": bool(re.search(r"test_layer_norm\[big\] PASSED", outputs["run2"])),
        "shared: big compiled dynamic, and said so": "compiled with dynamic shapes (x: dim 0)"
        in outputs["run3"]
        or any(
            "compile context differs" in note
            for result in runfile.read(out / "run3.json").data["results"]
            for note in result["notes"]
        ),
        "grown input named": "x grew 10%" in outputs["run4"],
        "grid change named": "blocks ->" in outputs["run4"],
        "wall_s": walls,
    }
    (out / "checks.json").write_text(json.dumps(checks, indent=2))
    print(json.dumps(checks, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
