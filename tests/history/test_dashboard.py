"""The dashboard's status of a series (one rule, from the latest change point and the newest
verdict) and its header's facts, without a browser."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pytest_kernelperf.history import vega
from pytest_kernelperf.history.changepoints import Attribution, ChangePoint, SeriesReport
from pytest_kernelperf.history.dashboard import header_facts, render, series_status
from pytest_kernelperf.history.points import Point
from pytest_kernelperf.history.rows import SeriesKey

KEY = SeriesKey("tests/test_k.py::test_mul", "", "NVIDIA H200", "hot", "device_time")


def points(verdicts: Sequence[str | None], branch: str | None = "main") -> list[Point]:
    return [
        Point(i, f"2026-12-0{1 + i // 4}T0{i % 4}:30:00Z", f"{i:x}" * 40, branch, 1.0, (1.0,), verdict=v)
        for i, v in enumerate(verdicts)
    ]


def change(index: int, before: float, after: float, kind: str = "step") -> ChangePoint:
    return ChangePoint(
        index, index, f"{index:x}" * 40, None, index - 1, "", before, after, 1e-4, kind, Attribution()
    )


def report(verdicts: Sequence[str | None], *changes: ChangePoint, analysed: bool = True) -> SeriesReport:
    return SeriesReport(1, KEY, points(verdicts), list(changes), analysed=analysed)


def test_a_run_judged_slower_with_no_change_point_reads_judged_slower_not_steady() -> None:
    status = series_status(report(["same"] * 7 + ["slower"]))
    assert (status.word, status.direction) == ("judged slower", "slower")
    assert status.why == (
        "the newest run, at 7777777, was judged slower against its baseline; no change point in the "
        "history (yet: one needs runs after it)"
    )


def test_the_latest_change_point_gives_the_status_when_the_verdict_agrees_or_says_nothing() -> None:
    slower = series_status(report(["same"] * 5 + ["slower"] * 3, change(5, 1.0, 1.1)))
    assert (slower.word, slower.direction) == ("slower", "slower")
    assert slower.why == (
        "the latest change point, at 5555555: +10.0%; the newest run was judged slower against its "
        "baseline too"
    )
    # A baseline recorded again after the change: the verdict is `same`, the history still slower.
    accepted = series_status(report(["same"] * 8, change(5, 1.0, 1.1)))
    assert (accepted.word, accepted.why) == ("slower", "the latest change point, at 5555555: +10.0%")
    drift = series_status(report(["undetermined"] * 12, change(8, 1.2, 1.0, kind="drift")))
    assert (drift.word, drift.direction) == ("drift faster", "faster")


def test_a_verdict_against_the_latest_change_point_is_the_status() -> None:
    status = series_status(report(["same"] * 7 + ["slower"], change(3, 1.1, 1.0)))
    assert (status.word, status.direction) == ("judged slower", "slower")
    assert status.why.endswith("the latest change point, at 3333333, was faster")


def test_steady_and_the_reasons_no_change_point_was_sought() -> None:
    steady = series_status(report(["same"] * 8))
    assert (steady.word, steady.direction) == ("steady", "")
    assert steady.why == "no change point in 8 runs; the newest run's verdict: same"
    few = series_status(report(["new", "same"]))
    assert (few.word, few.why) == (
        "too few runs",
        "2 runs: change points are sought from 5; the newest run's verdict: same",
    )
    assert series_status(report(["same"] * 6, analysed=False)).word == "not analysed"
    assert series_status(report(["new", "faster"])).word == "judged faster"  # a verdict needs no history


def test_the_header_names_repository_branch_and_dates() -> None:
    reports = [report(["same"] * 8)]
    assert header_facts(reports, repository="mykernels") == {
        "repository": "mykernels",
        "branch": "main",
        "runs": "8",
        "dates": "2026-12-01 00:30 to 2026-12-02 03:30 UTC",
    }
    assert header_facts(reports, repository="")["repository"] == "(unnamed)"
    assert "repository" not in header_facts(reports)  # the caller did not say
    assert header_facts(reports, branch="release")["branch"] == "release"
    mixed = [
        SeriesReport(1, KEY, points(["same"] * 2, branch="main")),
        SeriesReport(2, KEY, points(["same"] * 2, branch=None)),
        SeriesReport(3, KEY, points(["same"] * 5, branch="feature")[2:]),
    ]
    assert header_facts(mixed)["branch"] == "feature, main (some runs without one)"
    assert header_facts([SeriesReport(1, KEY, points(["same"], branch=None))])["branch"] == "not recorded"


def test_the_header_keeps_markup_in_names_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vega, "bundle", lambda: None)
    page = render([report(["same"] * 8)], repository="<b>team</b>", branch="</header><script>x()")
    assert "<b>team</b>" not in page and "<script>x()" not in page
    assert '<span class="fk">repository</span> &lt;b&gt;team&lt;/b&gt;' in page
