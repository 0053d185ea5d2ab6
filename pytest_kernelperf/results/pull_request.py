"""What a pull request shows of a run: one comment (regressions first, the full summary folded) and
the annotations of a check run (each failing test's file, line and failure). Pure text from the
run file (runfile.RunReport); posting it is pytest_kernelperf/github's job.

A regression is a result the run failed on its performance, by the rule a pytest run fails it by
(verdict/judgement.failures, with the run's settings): slower, over its max_ratio, grown beyond its
memory threshold, or under --kernelperf-against an undetermined pair.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from pytest_kernelperf.model.result import BenchResult, Verdict
from pytest_kernelperf.results import render, runfile
from pytest_kernelperf.results.render import _code, _code_cell, _md
from pytest_kernelperf.verdict.judgement import failures

# Finds the comment again on the next push; HTML comments do not render.
MARKER = "<!-- pytest-kernelperf -->"
TITLE = "pytest-kernelperf"
# GitHub refuses a comment or check-run summary over 65536 characters; the folded table gives way.
MAX_CHARS = 65_000
CUT_NOTE = "\n\n*(cut here: the whole summary is in the run's artefacts)*\n"
NO_DIAGNOSIS = "-"
# The regressions and the other failures are listed up to a number of lines and characters each, so
# that the comment fits with its totals and links however many there are; the rest are counted.
MAX_LISTED = 100
MAX_LISTED_CHARS = 24_000
MAX_DIAGNOSIS_CHARS = 300  # the first line of a note can be a whole log
MORE_NOTE = "*…and {count} more: see the whole run in its artefacts (run.json).*"


def regressions(run: runfile.RunReport) -> list[BenchResult]:
    """The results the run failed on performance, in the run's order."""
    strict = bool(run.settings.get("strict", False))
    allow = bool(run.settings.get("allow_undetermined", False))
    return [r for r in run.results if failures(r, strict=strict, allow_undetermined=allow)]


def interval(result: BenchResult) -> str:
    """The change's interval as the verdict judged it ("+49.0% to +50.5%"); "-" without one."""
    comparison = result.comparison
    if comparison is None or comparison.ratio_ci is None:
        return "-"
    low, high = comparison.ratio_ci
    return f"{render.change_text((low - 1) * 100)} to {render.change_text((high - 1) * 100)}"


def diagnosis(result: BenchResult) -> str:
    """The first line of why, from what the run file keeps: what changed in the environment since
    the baseline, throttling, what was paired (--kernelperf-against), else the call's first note."""
    if result.environment_changes:
        return "environment: " + ", ".join(result.environment_changes)
    if result.throttling is not None:
        return result.throttling.describe()
    if result.verdict is Verdict.MISMATCH and result.notes:
        return result.notes[0].splitlines()[0]
    check = result.against
    if check is not None:
        answers = f"; answers {check.answers}" if check.answers else ""
        return f"{check.where} at {check.revision}, {len(check.rounds_ms)} paired rounds{answers}"
    return result.notes[0].splitlines()[0] if result.notes else NO_DIAGNOSIS


def _change(result: BenchResult) -> str:
    parts = []
    if result.comparison is not None and result.comparison.ratio is not None:
        parts.append(result.comparison.change())
    if result.ratio is not None and result.ratio.exceeded:
        parts.append(f"{result.ratio.ratio:#.3g}x its reference (max_ratio {result.ratio.max_ratio:g})")
    if result.memory is not None and result.memory.exceeded:
        parts.append("device memory over its threshold")
    return "; ".join(parts) or str(result.verdict)


def _word(result: BenchResult) -> str:
    """ "slower +20.2%", "mismatch": a failing call's verdict, and its change where it has one."""
    change = _change(result)
    return str(result.verdict) if change == str(result.verdict) else f"{result.verdict} {change}"


def regression_table(found: Sequence[BenchResult]) -> list[str]:
    """The regressions' table, its first rows within MAX_LISTED and MAX_LISTED_CHARS, then a count
    of the rest."""
    rows = (
        f"| {_code_cell(r.label)} | {_md(str(r.verdict))} | **{_md(_change(r))}** | {_md(interval(r))} | "
        f"{_md(_shortened(diagnosis(r), MAX_DIAGNOSIS_CHARS))} |"
        for r in found
    )
    return [
        "| Test | Verdict | Change | Interval | Diagnosis |",
        "|---|---|--:|--:|---|",
        *_listed(rows, len(found)),
    ]


def _listed(lines: Iterable[str], total: int) -> list[str]:
    """The first of `total` lines, within MAX_LISTED lines and MAX_LISTED_CHARS characters, then
    how many more there are."""
    shown: list[str] = []
    room = MAX_LISTED_CHARS
    for line in itertools.islice(lines, MAX_LISTED):
        room -= len(line) + 1
        if room < 0:
            break
        shown.append(line)
    return shown + (["", MORE_NOTE.format(count=total - len(shown))] if len(shown) < total else [])


def _shortened(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _other_failures(run: runfile.RunReport, found: Sequence[BenchResult]) -> list[str]:
    """Tests that failed otherwise: a wrong answer, an exception; each with its failure's first line."""
    listed = {r.nodeid for r in found}
    failed = [
        (nodeid, test)
        for nodeid, test in run.tests.items()
        if test.outcome in ("failed", "error") and nodeid not in listed
    ]
    said = ((nodeid, _first_line(test.message) or test.outcome) for nodeid, test in failed)
    lines = (f"- {_code(nodeid)}: {_md(_shortened(first, MAX_DIAGNOSIS_CHARS))}" for nodeid, first in said)
    return _listed(lines, len(failed))


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def comment(run: runfile.RunReport, *, run_url: str | None = None, artifact_url: str | None = None) -> str:
    """The pull request's one comment: the marker, the totals, the regressions, other failures, the
    whole summary folded, and where the run's files are."""
    found = regressions(run)
    lines = [MARKER, f"### {TITLE}: {render.totals(run.results)}", ""]
    if found:
        lines += [f"**{len(found)} regression{'s' if len(found) != 1 else ''}**", ""]
        lines += [*regression_table(found), ""]
    elif run.results:
        lines += ["No regressions.", ""]
    others = _other_failures(run, found)
    if others:
        lines += ["**Other failures**", "", *others, ""]
    lines += _links(run_url, artifact_url)
    summary = render.markdown(
        run.results, run.peaks, title="All results", environment=runfile.devices_by_name(run.devices)
    )
    head = "\n".join(lines)
    folded = f"<details><summary>All results</summary>\n\n{summary.rstrip()}\n\n</details>\n"
    room = MAX_CHARS - len(head) - len(CUT_NOTE)
    if len(folded) > room:  # cut inside the fold, and close it
        folded = folded[: max(room - 20, 0)] + CUT_NOTE + "\n</details>\n"
    return f"{head}\n{folded}"


def _links(run_url: str | None, artifact_url: str | None) -> list[str]:
    links = []
    if run_url:
        links.append(f"[the workflow run]({run_url})")
    if artifact_url:
        links.append(f"[its artefacts]({artifact_url}) (run.json, JUnit XML, profiles)")
    return [" · ".join(links), ""] if links else []


@dataclass(frozen=True)
class Annotation:
    """A failing test's mark on its file in the pull request's diff."""

    path: str  # the test's file, relative to the run's rootdir
    line: int
    title: str
    message: str


def failure_annotations(run: runfile.RunReport) -> list[Annotation]:
    """One per failing test whose line pytest knew: titled with its failing calls' verdicts (a
    regression's change), its message the failure's text."""
    by_test: dict[str, list[BenchResult]] = {}
    failing = regressions(run)
    for result in run.results:
        if result in failing or result.verdict is Verdict.MISMATCH:
            by_test.setdefault(result.nodeid, []).append(result)
    found = []
    for nodeid, test in run.tests.items():
        if test.outcome not in ("failed", "error") or test.line is None:
            continue
        calls = by_test.get(nodeid, [])
        what = ", ".join(_word(r) for r in calls) or test.outcome
        message = test.message or "\n".join(f"{r.label}: {diagnosis(r)}" for r in calls) or test.outcome
        found.append(Annotation(str(PurePosixPath(test.file)), test.line, f"{nodeid}: {what}", message))
    return found
