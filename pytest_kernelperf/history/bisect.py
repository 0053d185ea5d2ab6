"""`python -m pytest_kernelperf bisect GOOD BAD -- PYTEST_ARGS`: the first commit that made a kernel slower.

GOOD is checked out in a temporary git worktree and timed once (`pytest PYTEST_ARGS --kernelperf
--kernelperf-json=...` in a fresh process). Then `git bisect run`, in a second worktree, runs the
same pytest at each commit it picks and judges every measurement against GOOD's with `is_slower`:
a commit is bad when one result is slower, skipped (exit 125) when it gives no result to compare.
The first bad commit is reported with what changed against the run before it (its parent's when
that was timed, else GOOD's): generated code per kernel, kernel inventory, autotune choices and
environment, as for the history's change points. The user's checkout is never touched.

Exit status: 0 when a first bad commit was found, 1 when GOOD..BAD holds no slowdown, 2 for a
usage or git error.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from pytest_kernelperf.results import runfile
from pytest_kernelperf.settings import DEFAULTS
from pytest_kernelperf.verdict.judge import Rounds, Verdict
from pytest_kernelperf.verdict.judge import judge as round_judge

from .changepoints import attribute
from .store import Point

DEFAULT_THRESHOLD = 0.05
SKIP = 125  # git bisect run: this commit cannot be judged
Key = tuple[str, str, str, str]


class BisectError(Exception):
    pass


def is_slower(good_metric: Mapping[str, Any], candidate_metric: Mapping[str, Any], threshold: float) -> bool:
    """The one judge of a bisection step: the plugin's own verdict (verdict/judge.py) on the
    candidate's rounds against GOOD's, with `threshold` as the practical floor and the run's default
    alpha. Both are a run file's `results[].device_time` objects; a side without rounds (a file from
    before rounds) stands as one round of its median."""
    good, candidate = _rounds(good_metric), _rounds(candidate_metric)
    if good is None or candidate is None or good.method != candidate.method:
        return False
    verdict = round_judge(
        candidate, good, device="bisect", threshold=threshold, alpha=DEFAULTS["alpha"], planned_judgements=1
    )
    return verdict.verdict is Verdict.SLOWER


def _rounds(metric: Mapping[str, Any]) -> Rounds | None:
    median, rounds = metric.get("median_ms"), metric.get("rounds_ms") or []
    values = [v for v in rounds if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0]
    if not isinstance(median, (int, float)) or isinstance(median, bool) or median <= 0:
        return None
    return Rounds.stored(str(metric.get("method") or "unknown"), values, float(median))


def _results(run: Mapping[str, Any]) -> dict[Key, Mapping[str, Any]]:
    out: dict[Key, Mapping[str, Any]] = {}
    for r in run.get("results") or []:
        if isinstance(r, dict) and isinstance(r.get("device_time"), dict):
            key = (str(r.get("nodeid")), str(r.get("name") or ""), str(r.get("device")), str(r.get("cache")))
            out.setdefault(key, r)
    return out


def judge(good: Mapping[str, Any], candidate: Mapping[str, Any], threshold: float) -> tuple[int, list[str]]:
    """(exit status for git bisect run, one line per compared result)."""
    goods, cands = _results(good), _results(candidate)
    common = [k for k in goods if k in cands]
    if not common:
        return SKIP, ["no result in common with GOOD's run"]
    lines, slow = [], False
    for key in common:
        g, c = goods[key]["device_time"], cands[key]["device_time"]
        worse = is_slower(g, c, threshold)
        slow = slow or worse
        change = (c["median_ms"] / g["median_ms"] - 1) * 100 if g.get("median_ms") else 0.0
        lines.append(f"{'slower' if worse else 'ok':6} {_label(key)}: {change:+.1f}% against GOOD")
    return (1 if slow else 0), lines


def _label(key: Key) -> str:
    return f"{key[0]}{f'[{key[1]}]' if key[1] else ''} on {key[2]} ({key[3]})"


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise BisectError(
            f"git {' '.join(args)} failed in {repo}: {done.stderr.strip() or done.stdout.strip()}"
        )
    return done


def run_pytest(
    worktree: Path, pytest_args: Sequence[str], json_path: Path, log: Path
) -> dict[str, Any] | None:
    """Time the checkout in a fresh process; its run file's JSON, or None when none was written.

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
        return runfile.read(json_path).data
    except runfile.RunFileError as exc:
        if json_path.exists():  # written, and refused: the log says why
            with log.open("a", encoding="utf-8") as out:
                out.write(f"kernelperf bisect: {exc}\n")
        return None


def read_run(path: Path) -> dict[str, Any]:
    """A run file's JSON, through the run file gateway (results/runfile.py)."""
    try:
        return runfile.read(path).data
    except runfile.RunFileError as exc:
        raise BisectError(str(exc)) from None


def judge_main(argv: Sequence[str]) -> int:
    """The script `git bisect run` calls at each commit (in the bisection worktree)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--good", type=Path, required=True)
    parser.add_argument("--runs", type=Path, required=True)
    parser.add_argument("--threshold", type=float, required=True)
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    pytest_args = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    worktree = Path.cwd()
    commit = _git(worktree, "rev-parse", "HEAD").stdout.strip()
    args.runs.mkdir(parents=True, exist_ok=True)
    candidate = run_pytest(worktree, pytest_args, args.runs / f"{commit}.json", args.runs / "pytest.log")
    if candidate is None:
        print(f"{commit[:10]}: skipped (pytest wrote no run file)")
        return SKIP
    status, lines = judge(read_run(args.good), candidate, args.threshold)
    verdict = {0: "good", 1: "bad"}.get(status, "skipped")
    print(f"{commit[:10]}: {verdict}")
    for line in lines:
        print(f"  {line}")
    return status


def _point(run: Mapping[str, Any], result: Mapping[str, Any], commit: str) -> Point:
    """A run file's result as a history point, for attribution."""
    env: dict[str, str] = {
        str(k): str(v) for k, v in (run.get("environment") or {}).items() if k != "xdist_worker"
    }
    for device in run.get("devices") or []:
        if isinstance(device, dict) and device.get("name") == result.get("device"):
            env.update({str(k): str(v) for k, v in (device.get("environment") or {}).items()})
    entry = result.get("baseline_entry") if isinstance(result.get("baseline_entry"), dict) else {}
    kernels = entry.get("kernels") if isinstance(entry, dict) else None
    autotune = result.get("autotune", entry.get("autotune") if isinstance(entry, dict) else None)
    metric = result["device_time"]
    return Point(
        run_id=0,
        created=str(run.get("created") or ""),
        commit=commit,
        branch=None,
        median_ms=float(metric["median_ms"]),
        rounds_ms=tuple(metric.get("rounds_ms") or (metric["median_ms"],)),
        kernels=tuple(kernels) if isinstance(kernels, list) else None,
        autotune=autotune if isinstance(autotune, dict) else None,
        environment=env,
    )


def explain(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    before_commit: str,
    after_commit: str,
    threshold: float,
) -> list[str]:
    """One line per result slower in `after` than in `before`, with its attribution."""
    lines = []
    olds, news = _results(before), _results(after)
    for key, new in news.items():
        old = olds.get(key)
        if old is None or not is_slower(old["device_time"], new["device_time"], threshold):
            continue
        a, b = _point(before, old, before_commit), _point(after, new, after_commit)
        change = (b.median_ms / a.median_ms - 1) * 100
        lines.append(
            f"{_label(key)}: at {after_commit[:7]}: {change:+.1f}% against {before_commit[:7]}; "
            + attribute(a, b).text()
        )
    return lines


def bisect(
    repo: Path,
    good: str,
    bad: str,
    pytest_args: Sequence[str],
    threshold: float,
    out: TextIO,
    keep: bool = False,
) -> int:
    top = Path(_git(repo, "rev-parse", "--show-toplevel").stdout.strip())
    good_sha = _git(top, "rev-parse", "--verify", f"{good}^{{commit}}").stdout.strip()
    bad_sha = _git(top, "rev-parse", "--verify", f"{bad}^{{commit}}").stdout.strip()
    if _git(top, "merge-base", "--is-ancestor", good_sha, bad_sha, check=False).returncode != 0:
        raise BisectError(f"GOOD {good} is not an ancestor of BAD {bad}")
    work = Path(tempfile.mkdtemp(prefix="kernelperf-bisect-"))
    runs = work / "runs"
    runs.mkdir()
    good_tree, bisect_tree = work / "good", work / "bisect"
    try:
        _git(top, "worktree", "add", "--detach", str(good_tree), good_sha)
        print(f"timing GOOD {good_sha[:10]} in {good_tree}", file=out, flush=True)
        good_run = run_pytest(good_tree, pytest_args, runs / f"{good_sha}.json", runs / "pytest.log")
        if good_run is None or not _results(good_run):
            raise BisectError(f"GOOD {good} gave no timed result: see {runs / 'pytest.log'}")
        _git(top, "worktree", "remove", "--force", str(good_tree))
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
        done = _git(
            bisect_tree,
            "bisect",
            "run",
            sys.executable,
            str(judge_script),
            "--good",
            str(runs / f"{good_sha}.json"),
            "--runs",
            str(runs),
            "--threshold",
            repr(threshold),
            "--",
            *pytest_args,
            check=False,
        )
        log = done.stdout + done.stderr
        judged = False  # the judge's lines: its verdict, then its indented details
        for line in log.splitlines():
            if re.match(r"^[0-9a-f]{10}: (good|bad|skipped)", line):
                judged = True
            elif not (judged and line.startswith("  ")):
                judged = False
                continue
            print(line, file=out)
        found = re.search(r"^([0-9a-f]{40}) is the first bad commit", log, re.M)
        if found is None:
            if "only skipped commits" in log:
                print("no first bad commit: the candidates could not be judged (see the log)", file=out)
                return 2
            print(f"no slowdown beyond {threshold:.1%} between {good_sha[:10]} and {bad_sha[:10]}", file=out)
            return 1
        first = found.group(1)
        untimed = first == bad_sha and not (runs / f"{first}.json").exists()
        if (
            untimed
            and run_pytest(bisect_tree, pytest_args, runs / f"{first}.json", runs / "pytest.log") is None
        ):
            raise BisectError(f"BAD {bad} gave no timed result: see {runs / 'pytest.log'}")
        bad_run = read_run(runs / f"{first}.json")
        if first == bad_sha:
            bad_status, _ = judge(good_run, bad_run, threshold)
            if bad_status != 1:
                print(
                    f"no slowdown beyond {threshold:.1%} between {good_sha[:10]} and {bad_sha[:10]}", file=out
                )
                return 1
        parent = _git(top, "rev-parse", f"{first}^").stdout.strip()
        before_sha = parent if (runs / f"{parent}.json").exists() else good_sha
        before_run = read_run(runs / f"{before_sha}.json")
        subject = _git(top, "log", "-1", "--format=%s", first).stdout.strip()
        print(f"first bad commit: {first} {subject}", file=out)
        lines = explain(before_run, bad_run, before_sha, first, threshold) or explain(
            good_run, bad_run, good_sha, first, threshold
        )
        for line in lines:
            print(f"  {line}", file=out)
        return 0
    finally:
        _git(bisect_tree, "bisect", "reset", check=False) if bisect_tree.exists() else None
        for tree in (good_tree, bisect_tree):
            if tree.exists():
                _git(top, "worktree", "remove", "--force", str(tree), check=False)
        _git(top, "worktree", "prune", check=False)
        if keep:
            print(f"kept the run files and pytest log in {runs}", file=out)
        else:
            shutil.rmtree(work, ignore_errors=True)


def _fraction(text: str) -> float:
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a fraction: {text!r} (e.g. 0.05 or 5%)") from None
    if not 0 < value < 10:
        raise argparse.ArgumentTypeError(f"threshold {text!r} out of range")
    return value


def add_subparser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bisect",
        help="find the first commit between GOOD and BAD that made a kernel slower",
        description="Time GOOD once, then let `git bisect run` time each commit it picks with the same "
        "pytest arguments (in temporary worktrees) and judge it against GOOD. "
        "Usage: bisect GOOD BAD -- PYTEST_ARGS",
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
        type=_fraction,
        default=DEFAULT_THRESHOLD,
        help="relative slowdown that counts (default 5%%)",
    )
    parser.add_argument("--repo", type=Path, default=Path("."), help="the git checkout (default: .)")
    parser.add_argument("--keep", action="store_true", help="keep the run files and the pytest log")


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
        return bisect(args.repo, args.good, args.bad, pytest_args, args.threshold, out, keep=args.keep)
    except BisectError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
