"""A series' status in one word, from its latest change point and its newest run's verdict: what the
dashboard's rows and cards and `history show` say alike."""

from __future__ import annotations

from dataclasses import dataclass

from .changepoints import MIN_RUNS, SeriesReport, short, status_text


@dataclass(frozen=True)
class Status:
    """A series' state on the dashboard: the word shown (and filtered on), its direction (the
    colour: "slower", "faster" or "") and where the word comes from, in one sentence."""

    word: str
    direction: str
    why: str


JUDGED = ("slower", "faster")  # the verdicts that say a run changed against its baseline


def where(commit: str | None, run_id: int) -> str:
    """A run by its commit's short hash, else by its id."""
    return short(commit) if commit else f"run {run_id}"


def series_status(report: SeriesReport) -> Status:
    """One status from the latest change point and the newest run's verdict, for every row and card.

    The history's latest change point gives the direction ("slower", "faster", "drift slower"...)
    unless the newest run was judged `slower` or `faster` against its baseline and no change point
    says so: then "judged slower" (or "judged faster"). A change point needs runs after it, so a
    slowdown in the newest commits is first seen as a verdict; the page never reads "steady" beside
    a run judged slower. With neither: "steady", or why no change point was sought."""
    latest = report.latest
    verdict = latest.verdict or ""
    last = report.last_change
    direction = "" if last is None else "slower" if last.slowdown else "faster"
    if last is not None and (verdict not in JUDGED or verdict == direction):
        word = ("drift " if last.kind == "drift" else "") + direction
        why = f"the latest change point, at {where(last.commit, last.run_id)}: {last.change_pct:+.1f}%"
        if verdict == direction:
            why += f"; the newest run was judged {verdict} against its baseline too"
        return Status(word, direction, why)
    if verdict in JUDGED:
        newest = where(latest.commit, latest.run_id)
        why = f"the newest run, at {newest}, was judged {verdict} against its baseline; "
        if last is None:
            why += "no change point in the history (yet: one needs runs after it)"
        else:
            why += f"the latest change point, at {where(last.commit, last.run_id)}, was {direction}"
        return Status(f"judged {verdict}", verdict, why)
    word = status_text(report, since=False)
    runs = len(report.points)
    why = {
        "steady": f"no change point in {runs} runs",
        "too few runs": f"{runs} runs: change points are sought from {MIN_RUNS}",
        "not analysed": "change points were not sought (the change point library is not installed)",
    }.get(word, word)
    if verdict:
        why += f"; the newest run's verdict: {verdict}"
    return Status(word, "", why)


def status_cell(report: SeriesReport) -> str:
    """The status as `history show` prints it: the word, with the commit a change point is at."""
    status = series_status(report)
    return status_text(report) if status.word == status_text(report, since=False) else status.word
