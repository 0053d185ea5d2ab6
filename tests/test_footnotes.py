"""The pieces of a report that reads at a glance: times in a person's units, notes numbered once,
a reason split into the notes it shares with other rows, a row named by its function, a long
label shortened within the row's width, and the one-line warning of a call not judged."""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import cast

from pytest_kernelperf.formatting import duration, percent
from pytest_kernelperf.ids import function_name
from pytest_kernelperf.model.baseline import BaselineEntry
from pytest_kernelperf.model.result import BenchResult, Comparison, Verdict
from pytest_kernelperf.results import render
from pytest_kernelperf.results.footnotes import Footnotes
from pytest_kernelperf.verdict.judge import NOT_SIGNIFICANT, ROUNDS_REMEDY, undetermined_note
from pytest_kernelperf.verdict.messages import not_judged_warning, regression_message, verdict_figure
from pytest_kernelperf.verdict.notes import PAIRED_NOTE, PAIRED_SHOWN, reason_notes


def test_a_time_reads_in_the_unit_that_suits_it() -> None:
    assert duration(8.72) == "8.72 ms" and duration(8.72, 2) == "8.7 ms"
    assert duration(0.0331) == "33.1 us" and duration(8.5e-4) == "850 ns" and duration(2500.0) == "2.5 s"
    assert duration(0.99996) == "1 ms" and duration(1e-3) == "1 us" and duration(0.0) == "0 ms"
    assert duration(-0.5) == "-500 us"
    assert percent(0.041) == "4.1%" and percent(1.4) == "140%" and percent(0.0125, 3) == "1.25%"


def test_a_note_is_numbered_once_however_many_cells_cite_it() -> None:
    notes = Footnotes()
    assert notes.cite("a") == "[1]" and notes.cite("b", "a") == "[2,1]" and notes.cite("a") == "[1]"
    assert notes.cite() == "" and notes.cite("") == ""
    assert notes.mark("inferred", "*") == "*"
    assert notes.entries() == [("*", "inferred"), ("[1]", "a"), ("[2]", "b")]


def test_a_reason_gives_its_shared_remedy_as_a_note_of_its_own() -> None:
    shared = undetermined_note(0.005, ROUNDS_REMEDY)
    offset = "needs occasions: its recording processes disagree"
    reason = f"{NOT_SIGNIFICANT}; {shared}; {offset}"
    comparison = Comparison(Verdict.UNDETERMINED, ratio=1.02, threshold=0.005, reason=reason)
    assert reason_notes(comparison) == [shared, offset]  # "not significant": the verdict says more
    assert reason_notes(replace(comparison, reason=shared)) == [shared]
    assert reason_notes(replace(comparison, reason="")) == []
    paired = f"±1.7% after 5 pairs, its budget spent: +0.3%; {PAIRED_NOTE}"
    assert reason_notes(replace(comparison, reason=paired)) == [
        PAIRED_SHOWN,
        "±1.7% after 5 pairs, its budget spent: +0.3%",
    ]
    # The bar and the threshold named apart, in the note every undetermined row cites.
    assert "beyond 10%, the most a `same` may leave unseen (4x the 0.5% threshold that fails a test" in shared


class GELU:
    def __call__(self, x: object) -> object:
        return x

    def forward(self, x: object) -> object:
        return x


def gelu(x: object) -> object:
    return x


def test_a_row_is_named_by_its_function() -> None:
    def inner(x: object) -> object:
        return x

    assert function_name(gelu) == "gelu" and function_name(inner) == "inner"
    assert function_name(functools.partial(functools.partial(gelu))) == "gelu"
    assert function_name(GELU()) == "GELU" and function_name(GELU().forward) == "GELU.forward"
    assert function_name(lambda x: x) == "<lambda>"
    result = BenchResult("t.py::test_gelu", None, "cpu", Verdict.CHECKED, function="gelu")
    assert render.group_key(result) == ("t.py::test_gelu", "gelu")
    assert render.group_key(replace(result, function=None)) == ("t.py::test_gelu", "-")
    named = replace(result, nodeid="t.py::test_gelu[big]", name="triton")
    assert render.group_key(named) == ("t.py::test_gelu", "big/triton")


def _undetermined(nodeid: str, detectable: float) -> BenchResult:
    reason = undetermined_note(0.005, ROUNDS_REMEDY)
    comparison = Comparison(
        Verdict.UNDETERMINED, ratio=1.01, threshold=0.005, detectable=detectable, reason=reason
    )
    return BenchResult(
        nodeid,
        None,
        "cpu",
        Verdict.UNDETERMINED,
        method="wall-clock",
        level_ms=1.0,
        baseline_level_ms=1.0,
        comparison=comparison,
    )


def test_long_labels_give_way_in_the_row_and_the_remedy_is_said_once() -> None:
    half = "x" * 60
    results = [
        _undetermined(f"t.py::test_attention[fp16-{half}-causal]", 0.21),
        _undetermined(f"t.py::test_attention[fp16-{half}A{half}-causal]", 0.34),
        _undetermined(f"t.py::test_attention[fp16-{half}B{half}-causal]", 0.34),
    ]
    lines = ["".join(text for text, _ in line) for line in render.styled_lines(results)]
    rows = lines[2:6]  # the module, the test's heading, then its header and rows
    assert max(map(len, rows)) <= render.MAX_ROW
    assert "…" not in rows[1] and rows[1].endswith("undetermined ±21% [1]")
    # Two labels that read alike once shortened cite a note with the whole label.
    assert "…" in rows[2] and rows[2].split()[1:2] == ["[2]"] and rows[3].split()[1:2] == ["[3]"]
    assert f"[2] fp16-{half}A{half}-causal" in lines and f"[3] fp16-{half}B{half}-causal" in lines
    assert " ".join(" ".join(lines).split()).count(ROUNDS_REMEDY) == 1


def test_a_call_not_judged_warns_in_one_line_that_points_at_the_notes() -> None:
    result = _undetermined("t.py::test_x", 0.31)
    warning = not_judged_warning(result)
    assert warning == (
        "t.py::test_x: undetermined ±31% (change +1.0%): not gated; see the notes under the kernelperf table"
    )
    assert "\n" not in warning and ROUNDS_REMEDY not in warning
    assert result.comparison is not None
    judged = replace(result.comparison, verdict=Verdict.UNRELIABLE)
    unreliable = replace(result, verdict=Verdict.UNRELIABLE, comparison=judged)
    assert not_judged_warning(unreliable).startswith("t.py::test_x: unreliable +1.0%: not judged; ")
    assert verdict_figure(replace(result, comparison=None)) == "undetermined"


def test_a_regression_names_its_timer_step_in_a_unit_a_person_reads() -> None:
    # Only the level and the date of the baseline are read.
    stored = SimpleNamespace(device_time=SimpleNamespace(level_ms=8.35), recorded="2026-12-04T00:00:00Z")
    baseline = cast(BaselineEntry, stored)
    comparison = Comparison(Verdict.SLOWER, ratio=12.9, p_value=1e-9, threshold=0.005, level=0.01, alpha=0.01)
    slower = BenchResult(
        "t.py::test_x",
        None,
        "cpu",
        Verdict.SLOWER,
        method="wall-clock",
        level_ms=107.7,
        comparison=comparison,
        rounds_ms=(98.0, 120.0),
        resolution_ms=8.72,
    )
    text = regression_message(slower, baseline, Path("baselines/t.yaml"))
    assert "107.7 ms vs baseline 8.35 ms (+1190.0%, beyond the 0.5% threshold)" in text
    assert "this run's 2 rounds 98 ms to 120 ms, timer step 8.7 ms." in text
