"""`python -m pytest_kernelperf`: compare, merge and record baselines from saved runs.

    python -m pytest_kernelperf compare OLD.json NEW.json      # exit 1 on a regression (or max_ratio)
    python -m pytest_kernelperf merge A.json B.json -o ALL.json
    python -m pytest_kernelperf update-baselines RUN.json [--baseline-dir DIR]
    python -m pytest_kernelperf report RUN.json [--markdown PATH] [--plot DIR]
    python -m pytest_kernelperf github comment --run RUN.json   # the pull request's one comment

Exit status: 0 on success, 1 when `compare` finds a result a pytest run would fail (a regression,
or a max_ratio exceeded), 2 for a usage or file error: a run file that cannot be read or fails its
schema, or a file that could not be written (a baseline file that `update-baselines` left as it
was included). Every error names the file and what is wrong. 141 (as for SIGPIPE) when the reader
of the output went away, as with `... | head`.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from pytest_kernelperf.model.result import BenchResult
from pytest_kernelperf.results import render, runfile, saved_runs
from pytest_kernelperf.settings import DEFAULTS, argument_type
from pytest_kernelperf.verdict.judgement import failures

ANSI = {"bad": "\x1b[31;1m", "good": "\x1b[32m", "warn": "\x1b[33m", "bold": "\x1b[1m"}
RESET = "\x1b[0m"


class CliError(Exception):
    pass


_fraction = argument_type("threshold")
_probability = argument_type("alpha")


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(
        prog="python -m pytest_kernelperf",
        description="Work with the run files written by `pytest --kernelperf --kernelperf-json=PATH`.",
    )
    commands = main.add_subparsers(dest="command", required=True, metavar="COMMAND")

    cmp = commands.add_parser(
        "compare",
        help="verdicts of NEW against OLD (A/B across branches); exit 1 on a regression or max_ratio",
        description="Judge NEW's measurements against OLD's with the statistics of a pytest run "
        "(t test on log round locations at alpha / m, m the entries of OLD that NEW's timed tests are "
        "judged against, and the "
        "ratio beyond the threshold). "
        "Exit status 1 when a result fails as in a pytest run: slower, or its max_ratio exceeded.",
    )
    cmp.add_argument("old", type=Path, metavar="OLD.json", help="the run to compare against (the baseline)")
    cmp.add_argument("new", type=Path, metavar="NEW.json", help="the run to judge")
    cmp.add_argument(
        "--threshold",
        type=_fraction,
        help="practical floor, e.g. 0.005 or 0.5%% (default: what each NEW result was judged with)",
    )
    cmp.add_argument(
        "--alpha", type=_probability, help="false-alarm rate of the run (default: as for --threshold)"
    )
    cmp.add_argument("--json", type=Path, metavar="PATH", help="also write the judged run as JSON")
    cmp.add_argument("--markdown", type=Path, metavar="PATH", help="also write a markdown summary")
    cmp.add_argument("--plot", type=Path, metavar="DIR", help="also write PNG plots (needs matplotlib)")
    cmp.add_argument("--color", choices=("auto", "yes", "no"), default="auto", help="colour the table")

    merge = commands.add_parser(
        "merge",
        help="combine the run files of shards (xdist workers, CI jobs on several GPUs)",
        description="Combine run files into one. A test may appear in one shard only per device and "
        "cache mode.",
    )
    merge.add_argument("inputs", type=Path, nargs="+", metavar="RUN.json")
    merge.add_argument("-o", "--output", type=Path, required=True, metavar="ALL.json")

    update = commands.add_parser(
        "update-baselines",
        help="record baselines from a run file (e.g. a CI artefact from a GPU you do not have)",
        description="Write the baseline entries measured in RUN.json into the YAML baselines, like "
        "`pytest --kernelperf-update-baselines` would have: merged into existing files (entries "
        "of tests not in the run are kept), each file replaced atomically.",
    )
    update.add_argument("run", type=Path, metavar="RUN.json")
    update.add_argument(
        "--baseline-dir",
        type=Path,
        default=DEFAULTS["baseline_dir"],
        help=f"folder of the YAML baselines (default: ./{DEFAULTS['baseline_dir']}, the plugin's default "
        "at the rootdir)",
    )

    show = commands.add_parser(
        "report",
        help="print a run file's table; write its markdown summary and plots (e.g. after merge)",
        description="The end-of-run table of a saved run, and optionally its markdown summary and "
        "plots: for runs whose reports were not written at the time (xdist shards, merged CI jobs).",
    )
    show.add_argument("run", type=Path, metavar="RUN.json")
    show.add_argument(
        "--markdown", type=Path, metavar="PATH", help="write a markdown summary ('-': print it)"
    )
    show.add_argument("--plot", type=Path, metavar="DIR", help="write PNG plots (needs matplotlib)")
    show.add_argument("--color", choices=("auto", "yes", "no"), default="auto", help="colour the table")
    from .github import cli as github_cli  # pull-request feedback: docs/ci.md
    from .history import bisect as history_bisect  # run history: docs/history.md
    from .history import cli as history_cli

    history_cli.add_subparser(commands)
    history_bisect.add_subparser(commands)
    github_cli.add_subparser(commands)
    return main


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    args = parser().parse_args(argv)
    if getattr(args, "run_command", None) is not None:  # history, bisect: own errors and exit codes
        return int(args.run_command(args, out))
    try:
        if args.command == "compare":
            return _compare(args, out)
        if args.command == "merge":
            return _merge(args, out)
        if args.command == "report":
            return _report(args, out)
        return _update(args, out)
    except (CliError, runfile.RunFileError, saved_runs.MergeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def entry_point(run: Callable[[], int]) -> int:
    """`run`'s exit status; when the reader of stdout went away (`... | head`), a quiet stop with
    the status of a process ended by SIGPIPE (141), as `cat` or `grep` give, and no traceback."""
    try:
        status = run()
        sys.stdout.flush()  # a pipe closed early shows here, not at exit
    except BrokenPipeError:
        # Python would flush stdout again at exit and complain: point it at /dev/null first.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    return status


def _load(path: Path) -> runfile.RunReport:
    return runfile.load(path)


def _colour(choice: str, stream: TextIO) -> bool:
    if choice != "auto":
        return choice == "yes"
    return bool(getattr(stream, "isatty", lambda: False)()) and "NO_COLOR" not in os.environ


def _print_lines(lines: list[render.Line], out: TextIO, colour: bool) -> None:
    for line in lines:
        if colour:
            text = "".join(f"{ANSI[style]}{seg}{RESET}" if style in ANSI else seg for seg, style in line)
        else:
            text = "".join(seg for seg, _ in line)
        print(text.rstrip(), file=out)


def _compare(args: argparse.Namespace, out: TextIO) -> int:
    old, new = _load(args.old), _load(args.new)
    compared = saved_runs.compare_runs(
        old, new, old_source=str(args.old), threshold=args.threshold, alpha=args.alpha
    )
    results = compared.results
    print(f"kernelperf compare: {args.new} against {args.old}", file=out)
    _print_lines(render.styled_lines(results, new.peaks), out, _colour(args.color, out))
    for key in compared.missing:
        print(f"not in {args.new}: {saved_runs.describe_key(key)}", file=out)
    for key in compared.untimed:
        print(
            f"no timing in {args.new} for {saved_runs.describe_key(key)}: that run only checked it "
            "(a run without --kernelperf)",
            file=out,
        )
    judged = runfile.RunReport(
        plugin_version=new.plugin_version,
        created=new.created,
        mode="compare",
        settings=dict(new.settings),
        environment=dict(new.environment),
        devices=new.devices,
        peaks=dict(new.peaks),
        results=tuple(results),
        artifacts={"compared": [str(args.old), str(args.new)]},
    )
    if args.plot is not None:
        judged.artifacts["plots"] = [str(p) for p in _plots(args.plot, results, new, out)]
    if args.markdown is not None:
        text = render.markdown(
            results,
            new.peaks,
            title=f"kernelperf compare ({args.new.name} vs {args.old.name})",
            environment=runfile.devices_by_name(new.devices),
        )
        _write(args.markdown, lambda: _write_text(args.markdown, text))
        print(f"wrote the markdown to {args.markdown}", file=out)
    if args.json is not None:
        judged.artifacts["json"] = str(args.json)
        _write(args.json, lambda: runfile.write(args.json, judged))
        print(f"wrote the JSON to {args.json}", file=out)
    # The rule a pytest run fails a test by (without --kernelperf-strict): slower, max_ratio
    # exceeded, or device memory grown.
    return 1 if any(failures(r) for r in results) else 0


def _plots(folder: Path, results: Sequence[BenchResult], run: runfile.RunReport, out: TextIO) -> list[Path]:
    from pytest_kernelperf.results import plots

    try:
        written = plots.write_all(folder, results, run.peaks)
    except plots.PlotError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot write plots to {folder}: {exc}") from None
    print(f"wrote {len(written)} plots to {folder}", file=out)
    return written


def _report(args: argparse.Namespace, out: TextIO) -> int:
    run = _load(args.run)
    text = (
        render.markdown(run.results, run.peaks, environment=runfile.devices_by_name(run.devices))
        if args.markdown is not None
        else ""
    )
    if args.markdown == Path("-"):
        print(text, file=out)
        return 0
    _print_lines(render.styled_lines(run.results, run.peaks), out, _colour(args.color, out))
    if args.markdown is not None:
        _write(args.markdown, lambda: _write_text(args.markdown, text))
        print(f"wrote the markdown to {args.markdown}", file=out)
    if args.plot is not None:
        _plots(args.plot, run.results, run, out)
    return 0


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _write(path: Path, action: Callable[[], object]) -> None:
    try:
        action()
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None


def _merge(args: argparse.Namespace, out: TextIO) -> int:
    loaded = [_load(path) for path in args.inputs]
    merged = saved_runs.merge_runs(loaded, [str(p) for p in args.inputs], output=str(args.output))
    _write(args.output, lambda: runfile.write(args.output, merged))
    print(
        f"merged {len(merged.results)} results from {len(args.inputs)} files into {args.output}: "
        f"{render.totals(merged.results)}",
        file=out,
    )
    return 0


def _update(args: argparse.Namespace, out: TextIO) -> int:
    run = _load(args.run)
    if not any(r.entry is not None for r in run.results):
        raise CliError(
            f"{args.run} has no timed results to record (was it written by a run with --kernelperf "
            "or --kernelperf-update-baselines?)"
        )
    try:
        updates = saved_runs.update_baselines(run, args.baseline_dir)
    except OSError as exc:
        raise CliError(f"cannot write baselines under {args.baseline_dir}: {exc}") from None
    for line in render.update_lines(updates):
        print(line, file=out)
    failed = [update.path for update in updates if update.error]
    if failed:
        raise CliError(
            f"{len(failed)} of {len(updates)} baseline files NOT written ({', '.join(map(str, failed))}); "
            "see why above"
        )
    return 0
