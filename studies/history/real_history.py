#!/usr/bin/env python3
"""A real run history on a GPU: a small demo repository, one timed run per commit.

    OUT=out python3 studies/history/real_history.py [--commits 16] [--budget-s 240]

Builds a git repository from studies/history/demo_repo under $OUT/real_history/repo, records its
baselines at the first commit, then makes one commit after another and runs
`pytest --kernelperf --kernelperf-history=DB` at each. Two commits are planted: at commit
`--slowdown-at` the Triton scale-add's block shrinks from 1024 to 64 elements per program (a
slowdown), at `--codegen-at` the compiled GELU switches to the tanh approximation (other generated
code). Every other commit edits only the demo's notes. Afterwards `history show`, `detect`,
`export` and `report --html` run on the database. Everything lands under $OUT/real_history as it is
made (a run cut short keeps the runs so far).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from studies.study_common import Budget, out_dir, run_pytest

TEMPLATE = Path(__file__).resolve().parent / "demo_repo"
SLOWDOWN = ("BLOCK = 1024  #", "BLOCK = 64  #")
CODEGEN = ('APPROXIMATE = "none"  #', 'APPROXIMATE = "tanh"  #')


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    if old not in text:
        raise SystemExit(f"{path}: {old!r} not found")
    path.write_text(text.replace(old, new, 1))


def change_for(number: int, args: argparse.Namespace, repo: Path) -> str:
    """Make commit `number`'s change in the work tree; return its message."""
    kernels = repo / "demo_kernels.py"
    if number == args.slowdown_at:
        edit(kernels, *SLOWDOWN)
        return "scale_add: 64 elements per program"
    if number == args.codegen_at:
        edit(kernels, *CODEGEN)
        return "gelu: tanh approximation"
    with (repo / "NOTES.md").open("a") as notes:
        notes.write(f"- note {number}\n")
    return f"notes: entry {number}"


def pytest(repo: Path, log: Path, *options: str, timeout: float) -> tuple[int, float]:
    """Run pytest in the demo repository; its output into `log`; (exit status, 124 on a timeout)."""
    argv = [sys.executable, "-m", "pytest", "-q", "-rfE", *options]
    run = run_pytest(log.stem, argv, {}, timeout, cwd=repo)
    log.write_text(run.stdout)
    return (124 if run.rc is None else run.rc), run.wall_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", help="output folder (default: $OUT, else ./out)")
    parser.add_argument("--commits", type=int, default=16)
    parser.add_argument("--slowdown-at", type=int, default=7)
    parser.add_argument("--codegen-at", type=int, default=12)
    parser.add_argument("--budget-s", type=float, default=240.0)
    parser.add_argument("-k", dest="select", help="only the tests pytest's -k selects")
    args = parser.parse_args(argv)
    budget = Budget(args.budget_s)
    folder = out_dir(args.out) / "real_history"
    repo, logs = folder / "repo", folder / "logs"
    shutil.rmtree(repo, ignore_errors=True)
    logs.mkdir(parents=True, exist_ok=True)
    shutil.copytree(TEMPLATE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "NOTES.md").write_text("# Notes\n")
    database = folder / "history.sqlite"
    database.unlink(missing_ok=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "demo@example.invalid")
    git(repo, "config", "user.name", "Demo")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "demo kernels")
    select = ["-k", args.select] if args.select else []
    rc, wall = pytest(repo, logs / "record.log", "--kernelperf-update-baselines", *select, timeout=180)
    print(f"record: rc={rc} {wall:.1f} s", flush=True)
    if rc != 0:
        raise SystemExit(f"recording the baselines failed: see {logs / 'record.log'}")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", "baselines")
    history = f"--kernelperf-history={database}"
    for number in range(1, args.commits + 1):
        if budget.expired():
            print(f"budget spent after {number - 1} commits", flush=True)
            break
        message = "baselines" if number == 1 else change_for(number, args, repo)
        if number > 1:
            git(repo, "add", "-A")
            git(repo, "commit", "-q", "-m", message)
        log = logs / f"run_{number:02d}.log"
        rc, wall = pytest(repo, log, "--kernelperf", history, *select, timeout=120)
        summary = log.read_text().strip().splitlines()[-1:] or ["(no output)"]
        print(
            f"commit {number:02d} {git(repo, 'rev-parse', '--short', 'HEAD')} {message!r}: "
            f"rc={rc} {wall:.1f} s {summary[0]}",
            flush=True,
        )
    cli = [sys.executable, "-m", "pytest_kernelperf", "history", "--db", str(database)]
    for name, extra in (
        ("show", ["show"]),
        ("detect", ["detect"]),
        ("export", ["export", "--json", str(folder / "history.json")]),
        (
            "report",
            ["report", "--html", str(folder / "dashboard.html"), "--title", "Demo repository on one H200"],
        ),
    ):
        done = subprocess.run(cli + extra, check=False, capture_output=True, text=True, timeout=120)
        (folder / f"{name}.txt").write_text(done.stdout + done.stderr)
        print(f"history {name}: exit {done.returncode}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
