"""`python -m pytest_kernelperf history ...`: the run history on the command line.

    history import RUN.json ...        store runs (again: no-op), with the checkout's git commit
    history show                       every series: runs, latest time, status, change points
    history detect [--since COMMIT]    change points new since COMMIT; exit 1 when one is a slowdown
    history alert --webhook URL ...    each change point once (JSON lines, an Atom feed, a webhook),
                                       remembered in the history; exit 1 on a new slowdown
    history prune --keep N             keep the newest N runs
    history export --csv PATH          every measurement as CSV (or --json PATH); '-' for stdout
    history report --html PATH         a self-contained dashboard page
    history upgrade                    bring the history's schema up to this version's

The database is `--db PATH` or `--db postgresql://...` (a PostgreSQL server; default:
$KERNELPERF_HISTORY, else .kernelperf/history.sqlite), and the repository within it
`--repository NAME` (default: $KERNELPERF_REPOSITORY, else "").
Exit status: 0 on success, 1 when `detect` finds a slowdown (or `alert` sends a new one), 2 for a
usage or file error (a run file the gateway refuses, a damaged database, filters that select
nothing, a sink that did not take the alerts). show, detect, export and report open the database
read-only and leave it unchanged.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from pytest_kernelperf.atomic import make_ignored_folder
from pytest_kernelperf.formatting import escape_controls
from pytest_kernelperf.settings import history_location

from . import alerts, webhook
from .changepoints import (
    ChangePointsUnavailable,
    Params,
    SeriesReport,
    analyse_store,
    change_line,
    new_change_points,
    resolve_commit,
    series_label,
    short,
)
from .database import DamagedHistory, HistoryError, masked
from .git import git_info, rev_parse
from .rows import CSV_COLUMNS
from .status import status_cell
from .store import HistoryStore, load_run_file

DEFAULT_DB = Path(".kernelperf") / "history.sqlite"
ENV_DB = "KERNELPERF_HISTORY"
ENV_REPOSITORY = "KERNELPERF_REPOSITORY"


def default_db() -> Path | str:
    try:
        return history_location(os.environ.get(ENV_DB) or str(DEFAULT_DB))
    except ValueError as exc:
        raise HistoryError(f"${ENV_DB}: {exc}") from None


def _location(text: str) -> Path | str:
    """--db: a server URL as given, a file as a Path; any other URL refused without its text."""
    try:
        return history_location(text)
    except ValueError as exc:  # argparse would quote the value of a ValueError
        raise argparse.ArgumentTypeError(str(exc)) from None


def _shown(db: Path | str) -> str:
    return masked(db) if isinstance(db, str) else str(db)


def add_subparser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `history` and its subcommands to the main CLI's subparsers."""
    history: argparse.ArgumentParser = subparsers.add_parser(
        "history",
        help="store every run, find change points per series, write a dashboard",
        description="The run history: every run file stored in one database (an SQLite file or a "
        "PostgreSQL server), change points per "
        "series (test, name, device, cache mode, metric) with what changed around them.",
    )
    history.set_defaults(run_command=run)
    history.add_argument(
        "--db",
        type=_location,
        default=None,
        metavar="PATH|URL",
        help=f"history database: a file, or postgresql://USER@HOST/DB (a server; the password from "
        f"the URL or libpq's PGPASSWORD or ~/.pgpass) (default: ${ENV_DB}, else {DEFAULT_DB})",
    )
    history.add_argument(
        "--repository",
        default=None,
        metavar="NAME",
        help=f"the repository (or project) whose runs to store and read (default: ${ENV_REPOSITORY}, "
        "else none: the unnamed one)",
    )
    commands = history.add_subparsers(dest="history_command", required=True, metavar="SUBCOMMAND")

    imp = commands.add_parser("import", help="store run files (a run already stored is skipped)")
    imp.add_argument("runs", type=Path, nargs="+", metavar="RUN.json")
    imp.add_argument("--commit", help="git commit of the runs (default: HEAD of --git-dir)")
    imp.add_argument("--branch", help="git branch of the runs (default: that of --git-dir)")
    imp.add_argument(
        "--git-dir", type=Path, default=Path("."), metavar="DIR", help="checkout to ask (default: .)"
    )
    imp.add_argument("--no-git", action="store_true", help="store no commit unless --commit is given")

    show = commands.add_parser("show", help="series, latest status and change points as a table")
    _filters(show)
    show.add_argument("--no-detect", action="store_true", help="only change points already cached (fast)")

    detect = commands.add_parser("detect", help="change points after a commit; exit 1 on a slowdown")
    detect.add_argument(
        "--since",
        metavar="COMMIT",
        help="only change points the history did not show yet at this commit, wherever they lie (a "
        "change point is seen only once runs after it arrive; with no run stored at COMMIT, since the "
        "run before the latest; default: all)",
    )
    _filters(detect)

    alert = commands.add_parser(
        "alert",
        help="send each new change point once (JSON lines, Atom feed, webhook); exit 1 on a new slowdown",
        description="The change points not alerted yet, sent to every sink given and remembered in the "
        "history (a change point whose estimate moves as runs arrive is not sent again). When a sink "
        "fails, nothing is remembered: the next run sends them again. Exit status: 1 when a new "
        "slowdown was sent, 0 otherwise, 2 on an error.",
    )
    alert.add_argument(
        "--jsonl", type=Path, metavar="PATH", help="append one JSON object a line per new alert ('-': stdout)"
    )
    alert.add_argument(
        "--atom",
        type=_feed_path,
        metavar="PATH",
        help="write an Atom feed of the newest alerts (rewritten in place)",
    )
    alert.add_argument(
        "--atom-entries",
        type=_count,
        default=alerts.DEFAULT_FEED_ENTRIES,
        metavar="N",
        help=f"alerts the feed keeps, newest first (default: {alerts.DEFAULT_FEED_ENTRIES})",
    )
    alert.add_argument(
        "--webhook",
        type=_webhook,
        metavar="URL",
        help='POST the new alerts to a chat\'s incoming webhook (Slack-compatible {"text": ...}; the URL '
        "is never shown, only its host)",
    )
    alert.add_argument(
        "--webhook-timeout",
        type=_seconds,
        default=webhook.TIMEOUT_S,
        metavar="S",
        help=f"seconds the webhook has to answer (default: {webhook.TIMEOUT_S:g})",
    )
    alert.add_argument(
        "--link", type=_link, metavar="URL", help="the dashboard's address, for the feed and message"
    )
    alert.add_argument("--slowdowns-only", action="store_true", help="alert slowdowns only, not speed-ups")
    mode = alert.add_mutually_exclusive_group()
    mode.add_argument(
        "--dry-run", action="store_true", help="say what would be sent; send and remember nothing"
    )
    mode.add_argument(
        "--record-only",
        action="store_true",
        help="remember the change points found now as alerted and send nothing (once, to start alerts "
        "on a history that already holds old changes)",
    )
    _filters(alert)

    prune = commands.add_parser("prune", help="remove all but the newest runs")
    prune.add_argument("--keep", type=int, required=True, metavar="N")

    export = commands.add_parser("export", help="every measurement as CSV or JSON")
    fmt = export.add_mutually_exclusive_group(required=True)
    fmt.add_argument("--csv", type=Path, metavar="PATH", help="write CSV ('-': stdout)")
    fmt.add_argument("--json", type=Path, metavar="PATH", help="write JSON ('-': stdout)")

    report = commands.add_parser("report", help="write a self-contained HTML dashboard")
    report.add_argument("--html", type=Path, required=True, metavar="PATH")
    report.add_argument("--title", default="kernelperf history")
    _filters(report)
    upgrade = commands.add_parser("upgrade", help="bring the schema up to this version's (nothing is lost)")
    for sub in (imp, show, detect, alert, prune, export, report, upgrade):  # also after the subcommand
        sub.add_argument(
            "--db", type=_location, default=argparse.SUPPRESS, metavar="PATH|URL", help="history database"
        )
        sub.add_argument("--repository", default=argparse.SUPPRESS, metavar="NAME", help="repository")
    return history


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return int(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 600:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0 (600 at most)")
    return value


def _webhook(text: str) -> str:
    """--webhook: checked, never quoted back (argparse would quote the value of a ValueError)."""
    try:
        return webhook.checked_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _feed_path(text: str) -> Path:
    """--atom: a file (the feed is rewritten in place; "-" is not the output, as for --jsonl)."""
    if text.strip() in ("", "-"):
        raise argparse.ArgumentTypeError("the Atom feed is a file: give its path (it is rewritten in place)")
    return Path(text)


def _link(text: str) -> str:
    if not text.startswith(("https://", "http://")):
        raise argparse.ArgumentTypeError("the dashboard's address is an http:// or https:// URL")
    return text


def _filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--test", metavar="TEXT", help="only series whose test id contains TEXT")
    parser.add_argument("--device", metavar="NAME", help="only series on this device")
    parser.add_argument("--branch", metavar="NAME", help="only runs recorded on this git branch")
    parser.add_argument(
        "--metric",
        choices=("device_time", "host_latency", "all"),
        default="device_time",
        help="default: device_time",
    )


class Escaped:
    """A text stream that shows control characters as escapes (`\\x1b`), so that text stored in a
    history (test ids, names, environment values) cannot rewrite the terminal or a CI log."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(escape_controls(text, keep_line_breaks=True))

    def flush(self) -> None:
        self.stream.flush()


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    return _run(args, Escaped(out or sys.stdout))


def _run(args: argparse.Namespace, out: Any) -> int:
    repository = args.repository if args.repository is not None else os.environ.get(ENV_REPOSITORY, "")
    try:
        db = args.db or default_db()
    except HistoryError as exc:  # no usable location in the environment
        print(f"error: {exc}", file=Escaped(sys.stderr))
        return 2
    try:
        if args.history_command == "import":
            return _import(args, db, repository, out)
        if isinstance(db, Path) and not db.exists():
            raise HistoryError(f"{db}: no such history database (create it with `history import RUN.json`)")
        if args.history_command == "upgrade":
            with HistoryStore(db, create=False, repository=repository) as store:
                print(f"{store.where}: history schema version {store.schema_version}", file=out)
            return 0
        # Only prune and alert write (alert: what it sent): the others read the history and leave it
        # as it is (also on a read-only file system); the change points they find are cached by
        # `import`.
        writes = args.history_command == "prune" or (args.history_command == "alert" and not args.dry_run)
        read_only = not writes
        with HistoryStore(db, create=False, read_only=read_only, repository=repository) as store:
            _require_repository(store)
            if args.history_command == "show":
                return _show(args, store, out)
            if args.history_command == "detect":
                return _detect(args, store, out)
            if args.history_command == "alert":
                return _alert(args, store, out)
            if args.history_command == "prune":
                removed = store.prune(args.keep)
                print(f"removed {removed} runs from {store.where}; {store.run_count()} kept", file=out)
                return 0
            if args.history_command == "export":
                return _export(args, store, out)
            if args.history_command == "report":
                return _report(args, store, out)
    except DamagedHistory as exc:
        print(f"error: {_shown(db)}: a damaged history database: {exc}", file=Escaped(sys.stderr))
        return 2
    except (HistoryError, ChangePointsUnavailable) as exc:
        print(f"error: {exc}", file=Escaped(sys.stderr))
        return 2
    raise AssertionError(args.history_command)


def _import(args: argparse.Namespace, db: Path | str, repository: str, out: TextIO) -> int:
    commit, branch = args.commit, args.branch
    if not args.no_git and commit is None:
        info = git_info(args.git_dir)
        if info is not None:
            commit, branch = info[0], branch or info[1]
    runs = [(path, load_run_file(path)) for path in args.runs]  # every file checked before any is stored
    if db == DEFAULT_DB:  # the artefacts' folder: made ignored by git, as a timed run makes it
        make_ignored_folder(DEFAULT_DB.parent)
    with HistoryStore(db, repository=repository) as store:  # makes any other folder
        stored = False
        for path, data in runs:
            done = store.ingest(data, commit=commit, branch=branch, source=str(path))
            stored |= done.new
            if done.new:
                at = f" at {short(commit)}" if commit else ""
                print(f"stored {path} as run {done.run_id}{at}: {done.measurements} measurements", file=out)
            else:
                print(f"already stored: {path} (run {done.run_id})", file=out)
        if stored:
            # The reading commands never write: the change points of the whole history, and of the
            # runs' branch, are found and cached here (where ruptures is installed).
            with contextlib.suppress(HistoryError):  # stored; the cache can wait
                for on_branch in dict.fromkeys((None, branch)):
                    analyse_store(store, Params(), require=False, branch=on_branch)
    return 0


def _select(args: argparse.Namespace) -> Any:
    def keep(key: Any) -> bool:
        return (
            args.metric in ("all", key.metric)
            and (args.test is None or args.test in key.test or args.test in key.name)
            and (args.device is None or key.device == args.device)
        )

    return keep


def _require_repository(store: HistoryStore) -> None:
    """A repository with no runs in a history that holds others is a usage error that names them
    (a fleet's job that forgot --repository must not read an empty history as a clean one)."""
    if store.run_count():
        return
    others = store.repositories()
    if others:
        shown = ", ".join(repr(name) for name in others[:8]) + (", ..." if len(others) > 8 else "")
        raise HistoryError(
            f"{store.where}: no runs of repository {store.repository!r}; this history holds {shown} "
            f"(choose with --repository NAME or ${ENV_REPOSITORY})"
        )


def _require_match(args: argparse.Namespace, store: HistoryStore, reports: Sequence[SeriesReport]) -> None:
    """Filters that select nothing are a usage error, with the values the history has: a CI gate
    whose `--branch main` meets a `master` history must not pass as if the history were clean."""
    given = [
        f"--{name} {getattr(args, name)}" for name in ("test", "device", "branch") if getattr(args, name)
    ]
    if reports or not given:
        return
    series = [key for key in store.series().values() if args.metric in ("all", key.metric)]

    def listed(values: set[str], most: int = 8) -> str:
        if not values:
            return "none"
        shown = sorted(values)
        return ", ".join(shown[:most]) + (f", ... ({len(shown)} in all)" if len(shown) > most else "")

    branches = {str(run["branch"]) if run["branch"] else "(none)" for run in store.runs()}
    raise HistoryError(
        f"{store.where}: no series matches {' '.join(given)} ({store.run_count()} runs; "
        f"branches: {listed(branches)}; devices: {listed({k.device for k in series})}; "
        f"tests: {listed({k.test for k in series})})"
    )


def _fmt_ms(ms: float) -> str:
    return f"{ms * 1000:.2f} us" if ms < 1 else f"{ms:.3f} ms"


def _table(rows: Sequence[Sequence[str]], out: TextIO) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(), file=out)
        if n == 0:
            print("  ".join("-" * w for w in widths), file=out)


def _show(args: argparse.Namespace, store: HistoryStore, out: TextIO) -> int:
    reports = analyse_store(store, Params(), require=False, series_filter=_select(args), branch=args.branch)
    _require_match(args, store, reports)
    if args.no_detect is False and any(not r.analysed for r in reports):
        print("note: change points not computed: " + str(ChangePointsUnavailable()), file=out)
    print(f"kernelperf history: {store.run_count()} runs, {len(reports)} series in {store.where}", file=out)
    if not reports:
        return 0
    rows = [["series", "device", "cache", "runs", "latest", "change", "status", "change points"]]
    for r in reports:
        rows.append(
            [
                series_label(r),
                r.key.device,
                r.key.cache,
                str(len(r.points)),
                _fmt_ms(r.latest.level_ms),
                f"{r.total_change_pct:+.1f}%",
                status_cell(r),
                str(len(r.change_points)),
            ]
        )
    _table(rows, out)
    _per_series(
        "change points",
        reports,
        lambda r: [f"{cp.commit_range()}  {cp.describe()}" for cp in r.change_points],
        out,
    )
    _per_series(
        "device memory steps (beyond the default memory_threshold)",
        reports,
        lambda r: [step.describe() for step in r.memory_steps],
        out,
    )
    return 0


def _per_series(
    title: str, reports: list[SeriesReport], lines_of: Callable[[SeriesReport], list[str]], out: TextIO
) -> None:
    """A section of `show`: under `title`, each series with lines, and its lines; nothing without any."""
    listed = [(r, lines) for r in reports if (lines := lines_of(r))]
    if listed:
        print(f"\n{title}:", file=out)
    for r, lines in listed:
        print(f"{series_label(r)} on {r.key.device} ({r.key.cache}):", file=out)
        for line in lines:
            print(f"  {line}", file=out)


def _detect(args: argparse.Namespace, store: HistoryStore, out: TextIO) -> int:
    """The change points of the history; with --since, only those it did not show yet when it
    stood at that commit (a gate that ran there saw the others)."""
    since = _since_run(args, store, out) if args.since else None
    reports = analyse_store(store, Params(), require=True, series_filter=_select(args), branch=args.branch)
    _require_match(args, store, reports)
    if since is None:
        found = [(report, cp) for report in reports for cp in report.change_points]
        scope = "in the whole history"
    else:
        since_run, since_name = since
        runs = [run["id"] for run in store.runs()]
        then = analyse_store(
            store,
            Params(),
            require=True,
            series_filter=_select(args),
            branch=args.branch,
            runs=set(runs[: runs.index(since_run) + 1]),
        )
        found = new_change_points(reports, then)
        scope = f"new since {since_name}"
    slow = [f for f in found if f[1].slowdown]
    print(f"kernelperf history detect: {len(found)} change points {scope}, {len(slow)} slowdowns", file=out)
    for report, cp in found:
        print(change_line(report, cp), file=out)
    return 1 if slow else 0


def _alert(args: argparse.Namespace, store: HistoryStore, out: TextIO) -> int:
    """The change points not alerted yet, sent to the sinks given and remembered (alerts.py)."""
    sinks = alerts.Sinks(
        jsonl=args.jsonl,
        atom=args.atom,
        atom_entries=args.atom_entries,
        webhook=args.webhook,
        webhook_timeout=args.webhook_timeout,
        link=args.link,
    )
    if args.record_only and sinks.any():
        raise HistoryError(
            "history alert --record-only sends nothing: give it no --jsonl, --atom or --webhook"
        )
    if not (sinks.any() or args.record_only or args.dry_run):
        raise HistoryError(
            "history alert: say where to send the alerts (--jsonl PATH|-, --atom PATH, --webhook URL), "
            "or give --dry-run to see them"
        )
    reports = analyse_store(store, Params(), require=True, series_filter=_select(args), branch=args.branch)
    _require_match(args, store, reports)
    scope = args.branch or ""
    outcome = alerts.send(
        store,
        reports,
        sinks,
        scope=scope,
        out=out,
        slowdowns_only=args.slowdowns_only,
        mode="dry-run" if args.dry_run else "record-only" if args.record_only else "send",
    )
    # With the JSON lines on the output, the words go to stderr.
    said = Escaped(sys.stderr) if str(args.jsonl) == "-" else out
    new = outcome.new
    what = "would be sent" if args.dry_run else "recorded, not sent" if args.record_only else "sent"
    on = f" on branch {scope}" if scope else ""
    print(
        f"kernelperf history alert: {alerts.plural(len(new), 'new change point')}{on} "
        f"({alerts.plural(outcome.new_slowdowns, 'slowdown')}) {what}; {outcome.known} alerted before",
        file=said,
    )
    for alert in new:
        print(alert.line, file=said)
    if outcome.delivered:
        print(f"sent to: {'; '.join(outcome.delivered)}", file=said)
    return 1 if outcome.new_slowdowns and not args.record_only else 0


def _since_run(args: argparse.Namespace, store: HistoryStore, out: TextIO) -> tuple[int, str]:
    """The run that --since names, and its name: the last stored run at that commit. Where none is
    stored (that push's job was cancelled or failed), the branch's newest run before its latest
    one: a gate run once per push then still reports, once, what its push made detectable (the
    next push's gate would find it already visible at the run before)."""
    ids = _runs_at(args.since, store)
    if ids:
        return ids[-1], args.since
    missing = f"no stored run at commit {args.since!r}"
    earlier = _run_before_latest(store, args.branch)
    if earlier is None:
        info = git_info(Path("."))
        here = f" (HEAD here is {short(info[0])})" if info else ""
        on = f" of branch {args.branch!r}" if args.branch else ""
        raise HistoryError(f"{store.where}: {missing}{here}, and no earlier run{on} to compare with")
    commit = earlier["commit"]
    shown = short(commit) if commit else f"run {earlier['id']}"
    on = f" on {args.branch}" if args.branch else ""
    print(f"note: {missing}; comparing with {shown}, the newest run before the latest{on}", file=out)
    return earlier["id"], commit or f"run {earlier['id']}"


def _runs_at(since: str, store: HistoryStore) -> list[int]:
    """The stored runs at commit `since`: a hash, or a name git resolves here."""
    ids = resolve_commit(store, since)
    if ids:
        return ids
    resolved = rev_parse(".", "--verify", "--quiet", f"{since}^{{commit}}")
    return resolve_commit(store, resolved) if resolved else []


def _run_before_latest(store: HistoryStore, branch: str | None) -> dict[str, Any] | None:
    """The newest run (of `branch`, if given) at another commit than the latest run's (several runs
    of one push are one push), or None when there is none."""
    runs = [run for run in store.runs() if branch is None or run["branch"] == branch]
    if not runs:
        return None
    latest = runs[-1]["commit"]
    earlier = [run for run in runs[:-1] if latest is None or run["commit"] != latest]
    return earlier[-1] if earlier else None


# What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula, made inert with a leading apostrophe
    (numbers are written as they are)."""
    return f"'{value}" if isinstance(value, str) and value.startswith(_FORMULA_START) else value


def _export(args: argparse.Namespace, store: HistoryStore, out: TextIO) -> int:
    target: Path = args.csv or args.json
    buffer = io.StringIO()
    rows = list(store.measurements())
    if args.csv is not None:
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for row in rows:
            writer.writerow(
                [
                    json.dumps(row[c])
                    if isinstance(row[c], list)
                    else ("" if row[c] is None else csv_cell(row[c]))
                    for c in CSV_COLUMNS
                ]
            )
    else:
        json.dump({"runs": store.runs(), "measurements": rows}, buffer, indent=1)
        buffer.write("\n")
    if str(target) == "-":
        out.write(buffer.getvalue())
        return 0
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(buffer.getvalue(), encoding="utf-8")
    except OSError as exc:
        raise HistoryError(f"{target}: cannot write: {exc.strerror or exc}") from None
    print(f"wrote {len(rows)} measurements to {target}", file=out)
    return 0


def _report(args: argparse.Namespace, store: HistoryStore, out: TextIO) -> int:
    from . import vega
    from .dashboard import render

    reports = analyse_store(store, Params(), require=False, series_filter=_select(args), branch=args.branch)
    _require_match(args, store, reports)
    page = render(
        reports,
        title=args.title,
        base=args.html.parent.resolve(),
        repository=store.repository or None,
        branch=args.branch,
    )
    try:
        args.html.parent.mkdir(parents=True, exist_ok=True)
        args.html.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise HistoryError(f"{args.html}: cannot write: {exc.strerror or exc}") from None
    print(f"wrote the dashboard of {len(reports)} series to {args.html}", file=out)
    if vega.bundle() is None:
        print(f"the page has no charts: {vega.INSTALL_HINT}", file=out)
    return 0


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Stand-alone entry point (`python -m pytest_kernelperf.history.cli ...`), for tests and scripts."""
    parser = argparse.ArgumentParser(prog="python -m pytest_kernelperf")
    commands = parser.add_subparsers(dest="command", required=True)
    add_subparser(commands)
    from . import bisect

    bisect.add_subparser(commands)
    args = parser.parse_args(argv)
    return int(args.run_command(args, out))


if __name__ == "__main__":
    sys.exit(main())
