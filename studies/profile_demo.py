"""Profiling demo for an H200: a regression whose failure message names its cause.

    OUT=./out python studies/profile_demo.py

Writes a small pytest project under $OUT/profile_demo/project with two tests, records baselines
with the good kernels, then swaps in regressed ones and runs `pytest --kernelperf`:

* test_cuda_gelu: the CUDA GELU with single-precision math (example_kernels/gelu.cu), then the
  lecture's double-precision version (gelu_double.cu): same kernel name, about 3x slower, new SASS;
* test_compiled_gelu: torch.compile of the manual GELU (one fused Triton kernel), then the same
  math with a graph break in the middle (two kernels).

Into $OUT/profile_demo it saves: update.txt and regressed.txt (the two pytest outputs),
failure_messages.md (the failure messages, for the docs), artifacts.txt (the artefacts folder
listing), trace_test_cuda_gelu.json (a trace to open in https://ui.perfetto.dev), baselines.yaml and
checks.json (what the messages were expected to name, and whether they did). Exits 1 when the
regressed run did not fail both tests. Takes about 4 minutes, most of it two load_inline builds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

DEMO_TESTS = '''
"""Profiling demo: DEMO_VARIANT=good records baselines, DEMO_VARIANT=regressed is compared."""

import os

import torch

from example_kernels.gelu import (
    SQRT_2_OVER_PI,
    compiled_gelu,
    cuda_gelu,
    cuda_gelu_double,
    pytorch_gelu,
)

REGRESSED = os.environ.get("DEMO_VARIANT") == "regressed"


def gelu_with_graph_break(x):
    inner = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
    torch._dynamo.graph_break()  # e.g. a print() or .item() someone added: two graphs, two kernels
    return 0.5 * x * (1 + torch.tanh(inner))


def make_input():
    generator = torch.Generator(device="cuda").manual_seed(0)
    return torch.randn(1 << 24, device="cuda", generator=generator)


def test_cuda_gelu(kernel_bench):
    x = make_input()
    gelu = cuda_gelu_double if REGRESSED else cuda_gelu
    kernel_bench(gelu, x, reference=pytorch_gelu, bytes=2 * x.numel() * x.element_size())


def test_compiled_gelu(kernel_bench):
    x = make_input()
    gelu = torch.compile(gelu_with_graph_break) if REGRESSED else compiled_gelu
    kernel_bench(gelu, x, reference=pytorch_gelu, bytes=2 * x.numel() * x.element_size())
'''

# What each failure message should name, to be checked by eye and recorded in checks.json.
EXPECTED = {
    "test_cuda_gelu": {
        "kernel time": r"\* gelu_kernel\(float const\*, float\*, long\): .* ms -> .* ms per call",
        "code changed": r"generated code changed since the baseline: gelu_kernel",
        "environment": r"environment: same as the baseline",
        "profile": r"profile: artifacts/test_gelu_demo\.py_test_cuda_gelu/default \(.*trace\.json",
    },
    "test_compiled_gelu": {
        "added kernel": r"now launches 2 kernels per call instead of 1 \(\+triton_",
        "code changed": r"generated code changed since the baseline",
        "profile": r"profile: artifacts/test_gelu_demo\.py_test_compiled_gelu/default",
    },
}


def pytest_command(*args: str) -> list[str]:
    installed = any(ep.name == "kernelperf" for ep in entry_points(group="pytest11"))
    plugin = [] if installed else ["-p", "pytest_kernelperf.plugin"]
    # log_level=INFO: torch.compile logs empty DEBUG records of its structured trace, which pytest
    # would print under each failure as "Captured log call".
    common = ["-p", "no:cacheprovider", "-rf", "-o", "log_level=INFO", "--kernelperf-artifacts", "artifacts"]
    return [sys.executable, "-m", "pytest", *plugin, *common, "test_gelu_demo.py", *args]


def run(project: Path, variant: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, DEMO_VARIANT=variant)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        pytest_command(*args), cwd=project, env=env, capture_output=True, text=True, check=False
    )


def failure_sections(output: str) -> dict[str, str]:
    """Each failing test's message, from pytest's FAILURES section."""
    sections: dict[str, str] = {}
    match = re.search(r"^=+ FAILURES =+$(.*?)^=+ ", output, re.MULTILINE | re.DOTALL)
    if not match:
        return sections
    parts = re.split(r"^_+ (\S+) _+$", match[1], flags=re.MULTILINE)
    for name, text in zip(parts[1::2], parts[2::2], strict=True):
        sections[name] = text.strip("\n")
    return sections


def main() -> int:
    out = Path(os.environ.get("OUT", "out")).resolve() / "profile_demo"
    project = out / "project"
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    # An ini file of its own: rootdir is the project, not a repository that $OUT may lie in.
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "test_gelu_demo.py").write_text(textwrap.dedent(DEMO_TESTS).lstrip())

    update = run(project, "good", "--kernelperf-update-baselines")
    (out / "update.txt").write_text(update.stdout + update.stderr)
    print(f"update: exit {update.returncode}", flush=True)
    regressed = run(project, "regressed", "--kernelperf")
    (out / "regressed.txt").write_text(regressed.stdout + regressed.stderr)
    print(f"regressed: exit {regressed.returncode}", flush=True)

    sections = failure_sections(regressed.stdout)
    (out / "failure_messages.md").write_text(
        "".join(f"### {name}\n\n```\n{text}\n```\n\n" for name, text in sections.items())
    )
    artifacts = project / "artifacts"
    listing = sorted(
        f"{p.stat().st_size:>10}  {p.relative_to(project)}" for p in artifacts.rglob("*") if p.is_file()
    )
    (out / "artifacts.txt").write_text("\n".join(listing) + "\n")
    baseline = project / "baselines" / "test_gelu_demo.yaml"
    if baseline.exists():
        shutil.copy(baseline, out / "baselines.yaml")
    trace = artifacts / "test_gelu_demo.py_test_cuda_gelu" / "default" / "trace.json"
    trace_ok = False
    if trace.exists():
        shutil.copy(trace, out / "trace_test_cuda_gelu.json")
        events = json.loads(trace.read_text()).get("traceEvents", [])
        trace_ok = any("gelu_kernel" in str(event.get("name", "")) for event in events)

    checks: dict[str, object] = {
        "update_exit": update.returncode,
        "regressed_exit": regressed.returncode,
        "failed": sorted(sections),
        "trace_has_gelu_kernel": trace_ok,
    }
    for test, patterns in EXPECTED.items():
        text = sections.get(test, "")
        checks[test] = {what: bool(re.search(pattern, text)) for what, pattern in patterns.items()}
    (out / "checks.json").write_text(json.dumps(checks, indent=2) + "\n")
    print(json.dumps(checks, indent=2))
    for name, text in sections.items():
        print(f"\n--- {name}\n{text}")
    return 0 if set(sections) == set(EXPECTED) else 1


if __name__ == "__main__":
    sys.exit(main())
