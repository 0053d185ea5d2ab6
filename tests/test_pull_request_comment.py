"""The words a pull request gets (results/pull_request.py): one comment, regressions first, the whole
summary folded; an annotation per failing test. The comment is checked against a golden file:
KERNELPERF_WRITE_GOLDEN=1 rewrites it (review the diff)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from prkit import MISMATCH, SLOWER_MESSAGE, gate_run

from pytest_kernelperf.model.result import BenchResult, Verdict
from pytest_kernelperf.results import pull_request

GOLDEN = Path(__file__).parent / "data" / "pull_request_comment.md"
RUN_URL = "https://github.com/acme/kernels/actions/runs/42"
ARTIFACT_URL = "https://github.com/acme/kernels/actions/runs/42/artifacts/7"


def test_the_comment_matches_its_golden_file() -> None:
    text = pull_request.comment(gate_run(), run_url=RUN_URL, artifact_url=ARTIFACT_URL)
    if os.environ.get("KERNELPERF_WRITE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")


def test_regressions_come_first_with_change_interval_and_diagnosis() -> None:
    text = pull_request.comment(gate_run(), run_url=RUN_URL)
    assert text.startswith(pull_request.MARKER + "\n### pytest-kernelperf: 1 same, 1 slower, 1 mismatch\n")
    row = next(
        line for line in text.splitlines() if line.startswith("| `tests/test_gelu.py::test_gelu[compiled]`")
    )
    assert "**+20.2%**" in row and "+19.2% to +21.2%" in row
    assert "kernels.gelu:gelu at origin/main (1a2b3c4d5e), 3 paired rounds; answers identical" in row
    # The regression table before the folded table, the folded table before nothing else.
    assert text.index(row) < text.index("<details><summary>All results</summary>")
    assert text.index("**Other failures**") < text.index("<details>")
    assert f"[the workflow run]({RUN_URL})" in text


def test_other_failures_are_named_with_their_first_line() -> None:
    text = pull_request.comment(gate_run())
    assert f"- `tests/test_gelu.py::test_gelu[triton]`: {MISMATCH.split(';')[0]}" in text.replace("\\", "")
    assert "- `tests/test_softmax.py::test_softmax`: ValueError: no kernel for 3 dimensions" in text


def test_a_run_without_regressions_says_so() -> None:
    run = gate_run(slower=1.0)
    run = replace(run, results=tuple(r for r in run.results if r.verdict is not Verdict.MISMATCH))
    run = replace(run, results=tuple(replace(r, verdict=Verdict.SAME) for r in run.results), tests={})
    text = pull_request.comment(run)
    assert "No regressions." in text and "regression**" not in text


def test_an_undetermined_pair_is_a_regression_unless_the_run_allowed_it() -> None:
    run = gate_run()
    undetermined = tuple(
        replace(r, verdict=Verdict.UNDETERMINED) if r.verdict is Verdict.SLOWER else r for r in run.results
    )
    run = replace(run, results=undetermined)
    assert [r.verdict for r in pull_request.regressions(run)] == [Verdict.UNDETERMINED]
    allowed = replace(run, settings={**run.settings, "allow_undetermined": True})
    assert pull_request.regressions(allowed) == []


def test_a_huge_summary_is_cut_inside_its_fold() -> None:
    run = gate_run()
    many = tuple(
        replace(run.results[0], nodeid=f"tests/test_gelu.py::test_gelu[size{i}]") for i in range(3000)
    )
    text = pull_request.comment(replace(run, results=(*run.results, *many)))
    assert len(text) <= pull_request.MAX_CHARS
    assert text.rstrip().endswith("</details>") and "cut here" in text
    assert "**1 regression**" in text  # what matters is never cut


def test_user_text_cannot_break_out_of_its_cell() -> None:
    run = gate_run()
    slower = run.results[1]
    assert slower.against is not None
    hostile = replace(
        slower,
        nodeid="tests/test_x.py::test_x[a|b]",
        against=replace(slower.against, where="m:<img src=x onerror=alert(1)>|"),
    )
    text = pull_request.comment(replace(run, results=(hostile,), tests={}))
    row = next(line for line in text.splitlines() if "test_x" in line)
    assert "<img" not in row and row.count(" | ") == 4  # five cells, the pipes escaped


def test_each_failing_test_gets_an_annotation_at_its_line() -> None:
    found = pull_request.failure_annotations(gate_run())
    assert len(found) == 3  # the passing test gets none
    slow = next(a for a in found if "compiled" in a.title)
    assert slow.path == "tests/test_gelu.py" and slow.line == 31
    assert slow.title == "tests/test_gelu.py::test_gelu[compiled]: slower +20.2%"
    assert slow.message == SLOWER_MESSAGE
    softmax = next(a for a in found if "softmax" in a.title)
    assert (softmax.path, softmax.line, softmax.title) == (
        "tests/test_softmax.py",
        12,
        "tests/test_softmax.py::test_softmax: failed",
    )


def test_a_failing_test_without_a_known_line_is_not_annotated() -> None:
    run = gate_run()
    tests = {k: replace(t, line=None) for k, t in run.tests.items()}
    assert pull_request.failure_annotations(replace(run, tests=tests)) == []


def test_the_diagnosis_prefers_what_changed_in_the_environment() -> None:
    result = BenchResult(
        "t.py::t",
        None,
        "NVIDIA H200",
        Verdict.SLOWER,
        environment_changes=("driver 570 -> 580",),
        notes=("x",),
    )
    assert pull_request.diagnosis(result) == "environment: driver 570 -> 580"
    assert pull_request.diagnosis(replace(result, environment_changes=())) == "x"
    assert pull_request.diagnosis(replace(result, environment_changes=(), notes=())) == "-"
