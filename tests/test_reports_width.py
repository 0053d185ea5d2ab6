"""A realistic run's report reads at a glance: every terminal table row within 140 characters, each
cell a word and a number, and every reason and remedy printed once, as a numbered note under the
tables, however many rows cite it (the terminal, the markdown summary and `compare` alike).

The run: scripted timers, one of each verdict (same, slower, faster, new, undetermined three
times, unreliable twice, incomparable, mismatch, checked), a call over its max_ratio, a call
measured twice, long parametrized ids and names. Its terminal section and markdown summary are
checked against golden files: KERNELPERF_WRITE_GOLDEN=1 rewrites them (review the diff)."""

from __future__ import annotations

import io
import json
import os
import re
import textwrap
from pathlib import Path

import pytest
from conftest import Project, recorded_runs

from pytest_kernelperf.cli import main
from pytest_kernelperf.history import synthetic_runs as rf
from pytest_kernelperf.results import pull_request, runfile
from pytest_kernelperf.results.render import MAX_ROW
from pytest_kernelperf.verdict.judge import PROCESSES_REMEDY, ROUNDS_REMEDY
from pytest_kernelperf.verdict.sequential import PAIRED_REMEDY

GOLDEN = Path(__file__).parent / "data" / "reports"
USAGE = Path(__file__).parent.parent / "docs" / "usage.md"
DEVICE = "Test CPU"

# Each kernel states its time and its rounds' spread; the host is "busy" where a kernel says so.
CONFTEST = f'''
import pytest
from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.testing import ScriptedTimer


class PerKernelTimer(ScriptedTimer):
    """Each kernel's rounds spread by its own fake_round_sd."""

    def measure(self, target, plan):
        self.round_sd = float(getattr(target.fn, "fake_round_sd", 0.0))
        return super().measure(target, plan)


@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_make_timer(config, settings, device):
    return PerKernelTimer()


@pytest.hookimpl(tryfirst=True)
def pytest_kernelperf_device_info(config, kind):
    return DeviceInfo(kind="cpu", name="{DEVICE}", environment={{"torch": "test", "threads": "1"}})
'''

# PHASE=record states every kernel's recorded time; PHASE=judge the times, spreads and answers
# judged against it.
KERNELS = """
import os

import pytest
import torch

JUDGE = os.environ.get("PHASE") == "judge"


def kernel(name, ms, recorded_ms=None, round_sd=0.0, wrong=False, load=None):
    def fn(x):
        return x * (3 if wrong and JUDGE else 2)

    fn.__name__ = fn.__qualname__ = name
    fn.fake_ms = ms if JUDGE else (recorded_ms or (ms[-1] if isinstance(ms, list) else ms))
    fn.fake_round_sd = round_sd if JUDGE else 0.0
    if load is not None and JUDGE:
        fn.fake_load = load
    return fn


def reference(x):
    return x + x


reference.fake_ms = 1.0
X = torch.ones(1 << 18)
SHAPES = [
    "bf16-batch8-heads32-seq4096-dim128-causal",
    "fp16-batch1-heads64-seq16384-dim64-sliding_window_4096",
    "fp16-batch1-heads64-seq16384-dim64-sliding_window_8192",
    "fp32-small",
]


@pytest.mark.parametrize("shape", SHAPES)
def test_flash_attention_forward_with_a_long_descriptive_name(kernel_bench, shape):
    spread = {"fp32-small": 0.4}.get(shape, 0.15)
    kernel_bench(kernel("flash_fwd", 1.0, round_sd=spread), X, reference=reference)


def test_layernorm(kernel_bench):
    kernel_bench(kernel("layernorm_fused", 4.0, 1.0), X, reference=reference)


def test_softmax(kernel_bench):
    kernel_bench(kernel("softmax_online", 0.5, 1.0), X, reference=reference)


def test_gelu(kernel_bench):
    kernel_bench(kernel("gelu_tanh", 1.0), X, reference=reference)


def test_wandering(kernel_bench):
    kernel_bench(kernel("rope", [1.2, 1.0]), X, reference=reference)


def test_rmsnorm(kernel_bench):
    kernel_bench(kernel("rmsnorm", 1.0, wrong=True), X, reference=reference)


def test_triton_interpreted(kernel_bench):
    kernel_bench.check(kernel("triton_gelu", 1.0), X, reference=reference, why="Triton interpreter on CPU")


def test_matmul_on_a_busy_host(kernel_bench):
    kernel_bench(kernel("matmul", 3.0, 1.0, load=2.5), X, reference=reference)


def test_incomparable(kernel_bench):
    kernel_bench(kernel("transpose", 1.0), X, reference=reference)


def test_named(kernel_bench):
    kernel_bench(kernel("a", 1.0, round_sd=0.3), X, name="triton", reference=reference)
    kernel_bench(
        kernel("b", 2.0), X, name="cuda_extension_with_a_long_name", reference=reference, max_ratio=1.5
    )


def test_new_kernel(kernel_bench):
    if JUDGE:
        kernel_bench(kernel("fused_moe", 1.0), X, reference=reference)
"""


def run_both(project: Project) -> tuple[pytest.RunResult, Path]:
    """The recording run (its JSON), then the judged one (its JSON and markdown); the judged run."""
    project.pytester.makeconftest(CONFTEST)
    cache = project.pytester.path / ".kernelperf" / "peak_bandwidth.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    entry = {"device": DEVICE, "gb_per_s": 100.0, "bytes": 1, "method": "test", "measured": "now"}
    cache.write_text(json.dumps({"schema_version": 1, "devices": {DEVICE: entry}}))
    project.module(textwrap.dedent(KERNELS), name="test_attention")
    project.monkeypatch.setenv("PHASE", "record")
    project.run("--kernelperf-update-baselines", "--kernelperf-json=old.json").assert_outcomes(
        passed=13, failed=1
    )
    stored = project.pytester.path / "baselines" / "test_attention.yaml"
    text = stored.read_text()
    block = text.index("  test_incomparable:")
    stored.write_text(text[:block] + text[block:].replace("method: scripted", "method: cuda-event", 1))
    project.monkeypatch.setenv("PHASE", "judge")
    options = ("--kernelperf", "--color=no", "--kernelperf-json=new.json", "--kernelperf-markdown=summary.md")
    judged = project.run(*options)
    judged.assert_outcomes(passed=11, failed=3)  # slower, mismatch, over its max_ratio
    return judged, project.pytester.path


def section(text: str) -> list[str]:
    """The terminal's kernelperf section: from its title to the peak line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.fullmatch(r"=+ kernelperf =+", line))
    end = next(i for i, line in enumerate(lines) if line.startswith("peak "))
    return lines[start + 1 : end]


def rows(lines: list[str]) -> list[str]:
    """The table rows (headers included): the lines indented four spaces above the first note."""
    first_note = next((i for i, line in enumerate(lines) if re.match(r"(\*|\[\d+\]) ", line)), len(lines))
    return [line for line in lines[:first_note] if line.startswith("    ")]


def matches_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("KERNELPERF_WRITE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_a_realistic_run_reads_in_rows_within_140_characters_and_each_note_once(project: Project) -> None:
    judged, folder = run_both(project)
    out = judged.stdout.str()
    lines = section(out)
    table = rows(lines)
    assert len(table) > 20
    assert max(len(row) for row in table) <= MAX_ROW, "\n".join(r for r in table if len(r) > MAX_ROW)
    # Lines under the tables are wrapped too; only a word longer than a line (a node id) stands out.
    assert all(len(line) <= MAX_ROW or " " not in line.strip() for line in lines)
    # A verdict cell: a word and a number, then the notes it cites.
    assert re.search(r"  undetermined ±\d+% \[\d+\]$", out, re.M)
    assert re.search(r"  slower \+300\.0%$", out, re.M) and re.search(r"  faster -50\.0%$", out, re.M)
    assert re.search(r"  unreliable \+200\.0% \[\d+\]$", out, re.M)
    assert re.search(r"^    gelu_tanh .* same ±\d\.\d+%$", out, re.M)  # the function names the row
    # Each remedy and reason once in the whole output, however many rows cite it (notes wrapped).
    flat = " ".join(out.split())
    assert flat.count(ROUNDS_REMEDY) == 1
    assert flat.count("no baseline for this device and cache mode") == 1
    assert sum("undetermined: the smallest slowdown" in line for line in lines) == 1
    cited = re.findall(r"undetermined ±\d+% \[(\d+)\]", out)
    assert len(cited) >= 3 and len(set(cited)) == 1
    # The warnings say one line each, and send the reader to the notes.
    warnings = [line for line in out.splitlines() if "KernelperfWarning" in line]
    assert len(warnings) == 7 and all(
        line.endswith("see the notes under the kernelperf table") for line in warnings
    )
    # The threshold and the bar, said apart.
    assert "threshold 0.5%, undetermined beyond 10%" in out
    assert (
        "the most a `same` may leave unseen (4x the 0.5% threshold that fails a test, at least 10%)" in flat
    )
    matches_golden("terminal.txt", "\n".join(lines) + "\n")
    assert "\n".join(lines) in USAGE.read_text(), "docs/usage.md shows this run's table: update it"

    summary = (folder / "summary.md").read_text()
    assert summary.count(ROUNDS_REMEDY) == 1 and summary.count("no baseline for this device") == 1
    table_rows = [line for line in summary.splitlines() if line.startswith("| ")]
    assert all("for a verdict" not in row and "mismatch in output" not in row for row in table_rows)
    matches_golden("summary.md", summary)

    # The pull request's comment folds the same tables, with the same notes, each once.
    comment = " ".join(pull_request.comment(runfile.load(folder / "new.json")).split())
    assert comment.count(ROUNDS_REMEDY) == 1 and comment.count("no baseline for this device") == 1
    assert "undetermined ±18% \\[1\\]" in comment


def test_compare_shows_its_own_verdicts_in_rows_within_140_characters(project: Project) -> None:
    """compare judges the new run against the old one's measurements: none of the new run's own
    readings (a call measured twice against its baseline) stands under compare's verdicts."""
    judged, folder = run_both(project)
    assert "test_wandering: measured twice: +20.0% (slower" in judged.stdout.str()  # the run's own
    out = io.StringIO()
    main(["compare", str(folder / "old.json"), str(folder / "new.json"), "--color=no"], out=out)
    text = out.getvalue()
    assert "measured twice" not in text and "judged on both pooled" not in text
    lines = text.splitlines()
    assert max(len(row) for row in rows(lines)) <= MAX_ROW
    flat = " ".join(text.split())
    assert flat.count(ROUNDS_REMEDY) <= 1 and flat.count("no baseline for this device") == 1
    assert all(remedy not in flat for remedy in (PROCESSES_REMEDY, PAIRED_REMEDY))


@pytest.mark.slow
def test_the_gpu_runs_of_the_studies_render_within_the_width_and_cite_each_note_once(tmp_path: Path) -> None:
    """Every run file the GPU studies recorded (docs/results/ archives: H200 runs, stored and paired,
    up to 40 kernels with GB/s, TFLOP/s, host and memory columns) as `report` prints it."""
    rendered = 0
    for i, (name, text) in enumerate(recorded_runs()):
        path = tmp_path / f"{i}.json"
        path.write_bytes(text)
        out = io.StringIO()
        main(["report", str(path), "--color=no"], out=out)
        lines = out.getvalue().splitlines()
        wide = [line for line in lines if len(line) > MAX_ROW]
        assert not wide, f"{name}: {wide[0]}"
        notes = [line for line in lines if re.match(r"\[\d+\] ", line)]
        assert len(notes) == len(set(notes)), name
        rendered += 1
    assert rendered > 100


def _merged_paired_run() -> dict[str, object]:
    """A merged run of two GPUs, one timed hot with CUPTI and one cold with CUDA events, each call
    paired with its code at the base revision and held to a reference's max_ratio."""
    results = []
    for device, cache, timer in (
        ("NVIDIA H200", "hot", "cupti"),
        ("NVIDIA H100 80GB HBM3", "cold", "cuda-event"),
    ):
        for shape in ("bf16-batch8-heads32-seq16384-dim128-causal", "fp16-batch1-heads64-seq8192-dim64"):
            for name in ("triton", "sdpa"):
                level = 0.0466
                result = rf.result(
                    f"tests/test_attention.py::test_attention[{shape}]",
                    level,
                    name=name,
                    device=device,
                    cache=cache,
                    rounds=[level * 0.999, level, level * 1.001],
                    nbytes=1 << 26,
                    reference_ratio=1.7,
                )
                result["device_time"]["method"] = timer
                result["comparison"] = dict(PAIRED_SAME)
                result["against"] = {
                    "revision": "HEAD (27dc1d3657)",
                    "commit": "27dc1d3657f1466f6e8a99ede0bec8a0fa48b263",
                    "found": "found",
                    "where": "tests.kernels:flash_attention",
                    "reason": "",
                    "level_ms": level,
                    "rounds_ms": [level] * 5,
                    "method": timer,
                    "answers": "identical",
                }
                results.append(result)
    peaks = {"NVIDIA H200": 4800.0, "NVIDIA H100 80GB HBM3": 3350.0}
    return rf.run(results, devices=("NVIDIA H200", "NVIDIA H100 80GB HBM3"), peaks=peaks)


# A paired call's comparison, as a GPU run wrote it (against_study_2026-12-01).
PAIRED_SAME = {
    "verdict": "same",
    "ratio": 1.0005,
    "change_pct": 0.05,
    "p_value": 0.357,
    "threshold": 0.005,
    "alpha": 0.01,
    "test": "t test on log round locations",
    "reason": "",
    "ratio_ci": [0.9938, 1.0073],
    "level": 0.00048,
    "planned_judgements": 21,
    "noise_sd": 0.0021,
    "noise_source": "5 paired rounds, shrunk toward built-in prior for 10 us-100 us kernels",
    "process_sd": None,
    "process_source": "",
    "detectable": 0.0092,
    "rounds": 5,
    "baseline_rounds": 5,
    "time_ratio": None,
    "sequential": None,
    "evidence": "ratio 1.0005; round noise SD 0.21%; smallest detectable slowdown 0.92% at 95% power",
}


def test_a_merged_run_whose_rows_differ_in_device_and_cache_gets_a_table_for_each(tmp_path: Path) -> None:
    """Device, Timer and Cache columns beside a paired run's with a reference's would be wider than
    any column left out can make up for: the rows go to one table per device, timer and cache."""
    path = tmp_path / "merged.json"
    path.write_text(json.dumps(_merged_paired_run()))
    out = io.StringIO()
    assert main(["report", str(path), "--color=no"], out=out) == 0
    lines = out.getvalue().splitlines()
    assert max(len(row) for row in rows(lines)) <= MAX_ROW, "\n".join(
        r for r in rows(lines) if len(r) > MAX_ROW
    )
    headings = [line for line in lines if line.startswith("  test_attention")]
    assert [h.split(" [")[0] for h in headings] == [
        "  test_attention (NVIDIA H200, cupti, hot cache)",
        "  test_attention (NVIDIA H100 80GB HBM3, cuda-event, cold cache)",
    ]
