"""`python -m pytest_kernelperf bisect GOOD BAD -- PYTEST_ARGS`: the first commit that made a kernel slower.

GOOD is checked out in a temporary git worktree and timed once (`pytest PYTEST_ARGS --kernelperf
--kernelperf-json=...` in a fresh process). Then `git bisect run`, in a second worktree, runs the
same pytest at each commit it picks and judges every measurement against GOOD's with `judge_against`:
a commit is bad when one result is slower, skipped (exit 125) when it gives no result to compare.
The first bad commit is reported with what changed against the run before it (its parent's when
that was timed, else GOOD's): generated code per kernel, kernel inventory, autotune choices and
environment, as for the history's change points. The user's checkout is never touched.

With `--paired`, GOOD is not timed on its own: each commit is timed beside GOOD's code in the same
process (`pytest --kernelperf-against GOOD`) and bad when one of its paired judgements is slower;
the between-process noise then plays no part.

Exit status (`EXIT_*` below): 0 when a first bad commit was found; 1 when GOOD..BAD holds no
slowdown; 2 for a usage or git error, or a GOOD (or BAD) that gives no result; 3 when a slowdown was
found but git could not narrow it to one commit, because commits next to it could not be tested
(skipped): the candidates are listed, each with its judgement; 130 on Ctrl-C. Only the temporary
worktrees this command adds are removed afterwards (also on Ctrl-C and on errors); the work folder
with the run files and the pytest log is kept, and named, whenever the outcome is not a clean 0 or 1.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey, MetricRecord, split_nodeid
from pytest_kernelperf.model.device import CARD_KEY
from pytest_kernelperf.model.result import BenchResult
from pytest_kernelperf.results import runfile
from pytest_kernelperf.results.runfile import RunReport, kernel_data
from pytest_kernelperf.settings import DEFAULTS, argument_type, judged_setting
from pytest_kernelperf.verdict.judgement import (
    JudgementContext,
    Measured,
    failures,
    judge_measurement,
    noise_priors,
    suite_judgements,
)
from pytest_kernelperf.verdict.stats import quantile

from .changepoints import attribute
from .points import Point
from .rows import environment_of

SKIP = 125  # git bisect run: this commit cannot be judged
EXIT_FOUND = 0  # a first bad commit
EXIT_NO_SLOWDOWN = 1  # GOOD..BAD holds no slowdown
EXIT_ERROR = 2  # a usage or git error, or GOOD (or BAD) gave no result
EXIT_NOT_NARROWED = 3  # a slowdown, somewhere among commits git could not tell apart (skipped ones)
EXIT_INTERRUPTED = 130  # Ctrl-C (the temporary worktrees are removed first)
JUDGEMENTS = "judgements.jsonl"  # one line per commit the judge saw: commit, verdict, details
Key = tuple[str, str, str, str]


class BisectError(Exception):
    pass


def _record(result: BenchResult) -> MetricRecord:
    """A result's device time as the judge reads a stored metric: its rounds, with the samples'
    median beside them; a side without rounds (a file from before rounds, whose level was its
    samples' median) stands as one round of its level."""
    level = result.level_ms
    assert level is not None
    median = quantile(sorted(result.samples_ms), 0.5) if result.rounds_ms and result.samples_ms else level
    return MetricRecord(
        method=result.method or "unknown",
        median_ms=median,
        ci_ms=(median, median),
        n=0,
        quantiles_ms=(),
        rounds_ms=result.rounds_ms,
        resolution_ms=result.resolution_ms,
    )


def _card(result: BenchResult) -> str | None:
    """The card that measured a result, where its stored entry names it."""
    return (result.entry.environment.get(CARD_KEY) or None) if result.entry is not None else None


@dataclass(frozen=True)
class _Measurements:
    """A run's timed results, as the judgement reads them: per key, the device-time record, and the
    whole run as a baseline set (its prior, its entries)."""

    records: dict[Key, tuple[MetricRecord, str | None]]
    settings: Mapping[str, Any]

    @classmethod
    def of(cls, run: RunReport) -> _Measurements:
        return cls({key: (_record(r), _card(r)) for key, r in _results(run).items()}, run.settings)

    def entry(self, key: Key) -> BaselineEntry | None:
        found = self.records.get(key)
        if found is None:
            return None
        record, card = found
        return BaselineEntry(record, recorded="", environment={CARD_KEY: card} if card else {})

    def setting(self, field: str) -> float:
        """The run's setting `field`, as a saved run's judgement reads it (settings.judged_setting)."""
        return float(judged_setting(field, run=self.settings))


def _module_test(key: Key) -> tuple[str, str]:
    module, test = split_nodeid(key[0])
    return module, test if not key[1] else f"{test}::{key[1]}"


def judge_against(good: RunReport, candidate: RunReport, threshold: float) -> dict[Key, BenchResult]:
    """Per result the two runs share: the candidate's judged against GOOD's, as a pytest
    run or `compare` judges a measurement against its baseline (verdict/judgement.py): the noise
    prior pooled from GOOD's results, alpha (GOOD's run setting) over the results judged, `threshold`
    as the practical floor. Device time only (host latency never fails), and only the judgement
    against GOOD: a max_ratio to a reference is the code's own, and would hold at GOOD too."""
    goods, cands = _Measurements.of(good), _Measurements.of(candidate)
    common = [k for k in goods.records if k in cands.records]
    entries = {k: goods.entry(k) for k in common}
    priors = noise_priors((k[2], e) for k, e in entries.items() if e is not None)
    stored = [EntryKey(_module_test(k)[1], k[2], k[3]) for k in common]
    out: dict[Key, BenchResult] = {}
    for key in common:
        record, card = cands.records[key]
        context = JudgementContext(
            threshold=threshold,
            alpha=goods.setting("alpha"),
            host_threshold=goods.setting("host_threshold"),
            planned_judgements=suite_judgements(stored, key[2]),
            prior=priors.get(key[2]),
            baseline_name="GOOD",
        )
        base = entries[key]
        comparison, _ = judge_measurement(Measured(record, card=card), base, context, device=key[2])
        judged = BenchResult(
            key[0], key[1] or None, key[2], comparison.verdict, cache=key[3], comparison=comparison
        )
        out[key] = judged
    return out


def _results(run: RunReport) -> dict[Key, BenchResult]:
    """The run's timed results by key (the first of a key that appears twice)."""
    out: dict[Key, BenchResult] = {}
    for r in run.results:
        if r.level_ms is not None:
            out.setdefault((r.nodeid, r.name or "", r.device, r.cache), r)
    return out


def judge(good: RunReport, candidate: RunReport, threshold: float) -> tuple[int, list[str]]:
    """(exit status for git bisect run, one line per compared result)."""
    goods, cands = _results(good), _results(candidate)
    if not any(k in cands for k in goods):
        return SKIP, ["no result in common with GOOD's run"]
    failed = {
        key: bool(failures(judged)) for key, judged in judge_against(good, candidate, threshold).items()
    }
    lines = []
    for key in (k for k in goods if k in cands):
        g, c = goods[key].level_ms, cands[key].level_ms
        worse = failed.get(key, False)
        change = (c / g - 1) * 100 if g and c else 0.0
        lines.append(f"{'slower' if worse else 'ok':6} {_label(key)}: {change:+.1f}% against GOOD")
    return (1 if any(failed.values()) else 0), lines


def judge_paired_run(candidate: RunReport) -> tuple[int, list[str]]:
    """(exit status for git bisect run, one line per result) of a run made with
    `--kernelperf-against GOOD`: its own paired verdicts."""
    lines, slower = [], False
    for key, result in _results(candidate).items():
        comparison = result.comparison
        if result.against is None or comparison is None:
            continue
        verdict = str(result.verdict)
        if verdict not in ("same", "slower", "faster"):
            lines.append(f"{verdict:6} {_label(key)}: {comparison.reason or 'not judged'}")
            continue
        slower = slower or verdict == "slower"
        change = ((comparison.ratio or 1.0) - 1) * 100
        word = "slower" if verdict == "slower" else "ok"
        lines.append(f"{word:6} {_label(key)}: {change:+.1f}% against GOOD, paired in one process")
    if not any(line.startswith(("slower", "ok")) for line in lines):
        return SKIP, [*lines, "no result judged against GOOD"]
    return (1 if slower else 0), lines


def paired_arguments(good_sha: str, threshold: float) -> list[str]:
    """The pytest arguments that time a commit beside GOOD's code (`--paired`)."""
    return [f"--kernelperf-against={good_sha}", f"--kernelperf-threshold={threshold!r}"]


def _label(key: Key) -> str:
    return f"{key[0]}{f'[{key[1]}]' if key[1] else ''} on {key[2]} ({key[3]})"


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise BisectError(
            f"git {' '.join(args)} failed in {repo}: {done.stderr.strip() or done.stdout.strip()}"
        )
    return done


def run_pytest(worktree: Path, pytest_args: Sequence[str], json_path: Path, log: Path) -> RunReport | None:
    """Time the checkout in a fresh process; its run file, or None when none was written.

    The artefacts folder is shared by all commits (beside the log), so that the device's copy
    bandwidth is measured once per bisection; PYTEST_ARGS come last and may override it."""
    json_path.unlink(missing_ok=True)
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--kernelperf",
        f"--kernelperf-json={json_path}",
        f"--kernelperf-artifacts={log.parent / 'artifacts'}",
        "-p",
        "no:cacheprovider",
        "-q",
        *pytest_args,
    ]
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ (cd {worktree} && {' '.join(command)})\n")
        out.flush()
        subprocess.run(command, cwd=worktree, stdout=out, stderr=subprocess.STDOUT, check=False)
    try:
        return runfile.load(json_path)
    except runfile.RunFileError as exc:
        if json_path.exists():  # written, and refused: the log says why
            with log.open("a", encoding="utf-8") as out:
                out.write(f"kernelperf bisect: {exc}\n")
        return None


def read_run(path: Path) -> RunReport:
    """A run file, through the run file gateway (results/runfile.py)."""
    try:
        return runfile.load(path)
    except runfile.RunFileError as exc:
        raise BisectError(str(exc)) from None


def judge_arguments(argv: Sequence[str]) -> argparse.Namespace:
    """judge_main's arguments; --threshold is read as --kernelperf-threshold reads it (5% or 0.05)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--good", type=Path, required=True)
    parser.add_argument("--runs", type=Path, required=True)
    parser.add_argument("--threshold", type=argument_type("threshold"), required=True)
    parser.add_argument("--paired", metavar="GOOD_SHA", help="time each commit beside GOOD's code")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER)
    return parser.parse_args(argv)


def judge_main(argv: Sequence[str]) -> int:
    """The script `git bisect run` calls at each commit (in the bisection worktree)."""
    args = judge_arguments(argv)
    pytest_args = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    worktree = Path.cwd()
    commit = _git(worktree, "rev-parse", "HEAD").stdout.strip()
    args.runs.mkdir(parents=True, exist_ok=True)
    if args.paired:
        pytest_args = [*pytest_args, *paired_arguments(args.paired, args.threshold)]
    candidate = run_pytest(worktree, pytest_args, args.runs / f"{commit}.json", args.runs / "pytest.log")
    if candidate is None:
        status, lines = SKIP, ["pytest wrote no run file"]
    elif args.paired:
        status, lines = judge_paired_run(candidate)
    else:
        status, lines = judge(read_run(args.good), candidate, args.threshold)
    verdict = _VERDICTS.get(status, "skipped")
    _remember(args.runs, commit, verdict, lines)
    print(f"{commit[:10]}: {verdict}")
    for line in lines:
        print(f"  {line}")
    return status


_VERDICTS = {0: "good", 1: "bad"}


def _remember(runs: Path, commit: str, verdict: str, lines: Sequence[str]) -> None:
    """Note a commit's judgement in the work folder, for the report after `git bisect run`."""
    with (runs / JUDGEMENTS).open("a", encoding="utf-8") as out:
        out.write(json.dumps({"commit": commit, "verdict": verdict, "lines": list(lines)}) + "\n")


def _judgements(runs: Path) -> dict[str, tuple[str, list[str]]]:
    """commit -> (verdict, detail lines) of every commit judged so far (the last judgement wins)."""
    out: dict[str, tuple[str, list[str]]] = {}
    try:
        text = (runs / JUDGEMENTS).read_text(encoding="utf-8")
    except OSError:
        return out
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line cut short by an interrupted judge
        if isinstance(record, dict) and isinstance(record.get("commit"), str):
            out[record["commit"]] = (str(record.get("verdict")), [str(x) for x in record.get("lines") or []])
    return out


def _point(run: RunReport, result: BenchResult, commit: str) -> Point:
    """A run file's result as a history point, for attribution."""
    entry, level = result.entry, result.level_ms
    assert level is not None
    return Point(
        run_id=0,
        created=run.created,
        commit=commit,
        branch=None,
        level_ms=level,
        rounds_ms=result.rounds_ms or (level,),
        kernels=None if entry is None or entry.kernels is None else tuple(map(kernel_data, entry.kernels)),
        autotune=entry.autotune if entry is not None else None,
        environment=environment_of(run, result.device),
    )


def explain(
    before: RunReport, after: RunReport, before_commit: str, after_commit: str, threshold: float
) -> list[str]:
    """One line per result slower in `after` than in `before`, with its attribution."""
    lines = []
    olds, news = _results(before), _results(after)
    judged = judge_against(before, after, threshold)
    for key, new in news.items():
        old = olds.get(key)
        if old is None or key not in judged or not failures(judged[key]):
            continue
        a, b = _point(before, old, before_commit), _point(after, new, after_commit)
        change = (b.level_ms / a.level_ms - 1) * 100
        lines.append(
            f"{_label(key)}: at {after_commit[:7]}: {change:+.1f}% against {before_commit[:7]}; "
            + attribute(a, b).text()
        )
    return lines


def _commit_of(top: Path, rev: str, role: str) -> str:
    if rev.startswith("-"):
        raise BisectError(f"{role} {rev!r} is not a revision (it starts with '-')")
    done = _git(top, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if done.returncode != 0:
        raise BisectError(f"{role} {rev!r} is not a commit of {top}")
    return done.stdout.strip()


def revisions(repo: Path, good: str, bad: str) -> tuple[Path, str, str]:
    """(the checkout's top folder, GOOD's commit, BAD's commit), checked before anything is timed:
    both name commits, they differ, and GOOD is an ancestor of BAD."""
    top = Path(_git(repo, "rev-parse", "--show-toplevel").stdout.strip())
    good_sha, bad_sha = _commit_of(top, good, "GOOD"), _commit_of(top, bad, "BAD")
    if good_sha == bad_sha:
        raise BisectError(
            f"GOOD {good} and BAD {bad} are the same commit ({good_sha[:10]}): nothing to bisect; "
            "give GOOD an older commit, without the slowdown"
        )
    if _git(top, "merge-base", "--is-ancestor", good_sha, bad_sha, check=False).returncode != 0:
        raise BisectError(
            f"GOOD {good} ({good_sha[:10]}) is not an ancestor of BAD {bad} ({bad_sha[:10]}): "
            "GOOD must be an older commit of BAD's history"
        )
    return top, good_sha, bad_sha


@dataclass(frozen=True)
class Outcome:
    """Where `git bisect run` stopped, read from the bisection's refs (not from git's messages,
    which vary with its version and language)."""

    bad: str  # the oldest commit known bad
    candidates: tuple[str, ...]  # the commits the first bad one may be, oldest first (bad included)
    skipped: frozenset[str]

    @property
    def found(self) -> bool:
        return self.candidates == (self.bad,)

    @property
    def not_narrowed(self) -> bool:
        """Only commits git was told to skip stand between the last good commit and `bad`."""
        return len(self.candidates) > 1 and all(c == self.bad or c in self.skipped for c in self.candidates)


def outcome(tree: Path) -> Outcome | None:
    """The state of the bisection in `tree`, or None when it holds none."""
    refs = _git(tree, "for-each-ref", "--format=%(objectname) %(refname)", "refs/bisect/").stdout
    bad, goods, skipped = None, [], set()
    for line in refs.splitlines():
        sha, _, name = line.partition(" ")
        if name == "refs/bisect/bad":
            bad = sha
        elif name.startswith("refs/bisect/good-"):
            goods.append(sha)
        elif name.startswith("refs/bisect/skip-"):
            skipped.add(sha)
    if bad is None:
        return None
    listed = _git(tree, "rev-list", "--topo-order", "--reverse", bad, "--not", *goods).stdout.split()
    return Outcome(bad, tuple(listed), frozenset(skipped))


@contextmanager
def _uninterrupted() -> Iterator[None]:
    """Ctrl-C held off while the temporary worktrees are removed (the interrupt that led here, if
    any, goes on afterwards); git, started meanwhile, ignores it too."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _remove_worktree(top: Path, tree: Path) -> None:
    """Remove one worktree this command added, by its path: never `git worktree prune`, which
    would also drop the user's other worktrees whose folders are absent at the moment."""
    _git(top, "worktree", "remove", "--force", "--force", str(tree), check=False)


def bisect(
    repo: Path,
    good: str,
    bad: str,
    pytest_args: Sequence[str],
    threshold: float,
    out: TextIO,
    keep: bool = False,
    paired: bool = False,
) -> int:
    top, good_sha, bad_sha = revisions(repo, good, bad)
    work = Path(tempfile.mkdtemp(prefix="kernelperf-bisect-"))
    runs = work / "runs"
    runs.mkdir()
    good_tree, bisect_tree = work / "good", work / "bisect"
    status: int | None = None
    failed = False
    try:
        job = _Bisection(top, good, bad, good_sha, bad_sha, tuple(pytest_args), threshold, paired)
        status = _bisect(job, out, work)
        return status
    except KeyboardInterrupt:
        raise
    except BaseException:
        failed = True
        raise
    finally:
        with _uninterrupted():
            if (bisect_tree / ".git").exists():
                _git(bisect_tree, "bisect", "reset", check=False)
            for tree in (good_tree, bisect_tree):
                _remove_worktree(top, tree)
            if keep or failed or status in (EXIT_ERROR, EXIT_NOT_NARROWED):
                print(f"kept the run files and pytest log in {runs}", file=out, flush=True)
            else:
                shutil.rmtree(work, ignore_errors=True)


@dataclass(frozen=True)
class _Bisection:
    """What one bisection searches: the checkout's top, GOOD and BAD as given and as commits, the
    pytest arguments, the threshold, and whether each commit is timed beside GOOD's code."""

    top: Path
    good: str
    bad: str
    good_sha: str
    bad_sha: str
    pytest_args: tuple[str, ...]
    threshold: float
    paired: bool = False


def _bisect(job: _Bisection, out: TextIO, work: Path) -> int:
    top, good, bad, good_sha, bad_sha = job.top, job.good, job.bad, job.good_sha, job.bad_sha
    pytest_args, threshold, paired = job.pytest_args, job.threshold, job.paired
    runs = work / "runs"
    log = runs / "pytest.log"
    good_tree, bisect_tree = work / "good", work / "bisect"
    good_run: RunReport | None = None
    if not paired:  # paired: GOOD is timed beside every commit instead
        _git(top, "worktree", "add", "--detach", str(good_tree), good_sha)
        print(f"timing GOOD {good_sha[:10]} in {good_tree}", file=out, flush=True)
        good_run = run_pytest(good_tree, pytest_args, runs / f"{good_sha}.json", log)
        if good_run is None or not _results(good_run):
            raise BisectError(f"GOOD {good} gave no timed result: see {log}")
        _remove_worktree(top, good_tree)
    _git(top, "worktree", "add", "--detach", str(bisect_tree), bad_sha)
    judge_script = work / "judge.py"
    package_parent = Path(__file__).resolve().parents[2]
    judge_script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(package_parent)!r})\n"
        "from pytest_kernelperf.history.bisect import judge_main\n"
        "sys.exit(judge_main(sys.argv[1:]))\n",
        encoding="utf-8",
    )
    _git(bisect_tree, "bisect", "start", bad_sha, good_sha)
    print(
        f"bisecting {good_sha[:10]}..{bad_sha[:10]}: each commit timed in a fresh process",
        file=out,
        flush=True,
    )
    git_log = _bisect_run(
        bisect_tree,
        [
            sys.executable,
            str(judge_script),
            "--good",
            str(runs / f"{good_sha}.json"),
            "--runs",
            str(runs),
            "--threshold",
            repr(threshold),
            *(["--paired", good_sha] if paired else []),
            "--",
            *pytest_args,
        ],
        out,
    )
    state = outcome(bisect_tree)
    if state is None or not (state.found or state.not_narrowed):
        tail = "\n".join(git_log.strip().splitlines()[-8:])
        raise BisectError(f"git bisect run stopped before it found the first bad commit:\n{tail}")
    # Leave bisect mode: its checkout is the last commit tested, not BAD.
    _git(bisect_tree, "bisect", "reset", check=False)
    judgements = _judgements(runs)
    no_slowdown = f"no slowdown beyond {threshold:.1%} between {good_sha[:10]} and {bad_sha[:10]}"
    if state.bad == bad_sha and not (runs / f"{bad_sha}.json").exists():
        # git takes BAD's badness on trust: the judge never ran there.
        _git(bisect_tree, "checkout", "-q", "--detach", bad_sha)
        extra = paired_arguments(good_sha, threshold) if paired else []
        bad_run = run_pytest(bisect_tree, [*pytest_args, *extra], runs / f"{bad_sha}.json", log)
        if bad_run is None:
            raise BisectError(f"BAD {bad} gave no timed result: see {log}")
        if good_run is None:
            bad_status, bad_lines = judge_paired_run(bad_run)
        else:
            bad_status, bad_lines = judge(good_run, bad_run, threshold)
        if bad_status == SKIP:
            raise BisectError(f"BAD {bad} gave no result in common with GOOD's run: see {log}")
        if bad_status != 1:
            print(no_slowdown, file=out)
            return EXIT_NO_SLOWDOWN
        judgements[bad_sha] = ("bad", bad_lines)
    if state.not_narrowed:
        return _not_narrowed(top, state, judgements, good_sha, log, out)
    bad_run = read_run(runs / f"{state.bad}.json")
    first = state.bad
    parent = _git(top, "rev-parse", f"{first}^").stdout.strip()
    before_sha = parent if (runs / f"{parent}.json").exists() else good_sha
    subject = _git(top, "log", "-1", "--format=%s", first).stdout.strip()
    print(f"first bad commit: {first} {subject}", file=out)
    if not (runs / f"{before_sha}.json").exists():  # paired, and the parent was not timed
        lines = judgements.get(first, ("bad", []))[1]
    else:
        before_run = read_run(runs / f"{before_sha}.json")
        lines = explain(before_run, bad_run, before_sha, first, threshold)
        if not lines and good_run is not None:
            lines = explain(good_run, bad_run, good_sha, first, threshold)
    for line in lines:
        print(f"  {line}", file=out)
    return EXIT_FOUND


def _bisect_run(tree: Path, command: Sequence[str], out: TextIO) -> str:
    """`git bisect run COMMAND` in `tree`; the judge's lines (its verdict, then its indented
    details) are shown as each commit is judged, so a long bisection is never silent. Everything
    git printed, returned."""
    process = subprocess.Popen(
        ["git", "bisect", "run", *command],
        cwd=tree,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    assert process.stdout is not None
    lines = []
    judged = False
    with process:
        for line in process.stdout:
            lines.append(line)
            text = line.rstrip("\n")
            if re.match(r"^[0-9a-f]{10}: (good|bad|skipped)", text):
                judged = True
            elif not (judged and text.startswith("  ")):
                judged = False
                continue
            print(text, file=out, flush=True)
    return "".join(lines)


def _not_narrowed(
    top: Path,
    state: Outcome,
    judgements: Mapping[str, tuple[str, list[str]]],
    good_sha: str,
    log: Path,
    out: TextIO,
) -> int:
    """The slowdown lies in one of several commits that git could not tell apart: list them."""
    print(
        f"slowdown found, not narrowed to one commit: git could not test the commits next to it "
        f"(skipped), so the first bad commit is one of these {len(state.candidates)}, oldest first, "
        f"each judged against GOOD {good_sha[:10]} (pytest log: {log}):",
        file=out,
    )
    for commit in state.candidates:
        subject = _git(top, "log", "-1", "--format=%s", commit).stdout.strip()
        verdict, lines = judgements.get(commit, ("skipped" if commit in state.skipped else "not judged", []))
        print(f"  {commit[:10]} {verdict}: {subject}", file=out)
        for line in lines:
            print(f"    {line}", file=out)
    return EXIT_NOT_NARROWED


def add_subparser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bisect",
        help="find the first commit between GOOD and BAD that made a kernel slower",
        description="Time GOOD once, then let `git bisect run` time each commit it picks with the same "
        "pytest arguments (in temporary worktrees) and judge it against GOOD. "
        "Usage: bisect GOOD BAD -- PYTEST_ARGS",
        epilog="Exit status: 0 a first bad commit found; 1 no slowdown between GOOD and BAD; 2 a usage or "
        "git error, or GOOD gave no result; 3 a slowdown found but not narrowed to one commit (commits "
        "next to it could not be tested): the candidates are listed with their judgements.",
    )
    parser.set_defaults(run_command=run)
    parser.add_argument("good", metavar="GOOD")
    parser.add_argument("bad", metavar="BAD")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, metavar="-- PYTEST_ARGS")
    _options(parser)
    return parser


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threshold",
        type=argument_type("threshold"),
        default=DEFAULTS["threshold"],
        help=f"practical floor: the relative slowdown that counts, as for --kernelperf-threshold "
        f"(default {DEFAULTS['threshold']:g})",
    )
    parser.add_argument("--repo", type=Path, default=Path("."), help="the git checkout (default: .)")
    parser.add_argument("--keep", action="store_true", help="keep the run files and the pytest log")
    parser.add_argument(
        "--paired",
        action="store_true",
        help="time each commit beside GOOD's code in the same process (--kernelperf-against GOOD) "
        "instead of against one timing of GOOD: no between-process noise, 1%% within reach",
    )


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    pytest_args = list(args.pytest_args)
    if "--" in pytest_args:  # options given between BAD and `--` are bisect's own
        split = pytest_args.index("--")
        head, pytest_args = pytest_args[:split], pytest_args[split + 1 :]
        if head:
            parser = argparse.ArgumentParser(prog="python -m pytest_kernelperf bisect GOOD BAD")
            _options(parser)
            parser.parse_args(head, namespace=args)
    try:
        return bisect(
            args.repo,
            args.good,
            args.bad,
            pytest_args,
            args.threshold,
            out,
            keep=args.keep,
            paired=args.paired,
        )
    except BisectError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted: the temporary worktrees were removed", file=sys.stderr)
        return EXIT_INTERRUPTED
