"""A git revision resolved to its commit, and its files exported into a folder of their own.

The export is `git archive` of the commit: the user's work tree, index, branches and worktrees are
only read, so nothing of theirs changes, even when a run is killed halfway.
"""

from __future__ import annotations

import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path


class RevisionError(Exception):
    """A revision that cannot be resolved or exported; the message names it and says why."""


@dataclass(frozen=True)
class Revision:
    """A revision as the user named it, the commit it resolved to, and the repository's top folder."""

    ref: str
    commit: str
    top: Path

    @property
    def short(self) -> str:
        return self.commit[:10]

    def describe(self) -> str:
        """How reports name it: "origin/main (1a2b3c4d5e)", or the short commit alone."""
        return self.short if self.commit.startswith(self.ref) else f"{self.ref} ({self.short})"


def _git(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, check=False)


def resolve(where: Path, ref: str) -> Revision:
    """`ref` (a branch, tag, commit or expression such as origin/main~1) in the repository holding
    `where`; RevisionError when there is no repository or no such commit."""
    try:
        found = _git(where, "rev-parse", "--show-toplevel")
    except FileNotFoundError:
        raise RevisionError("git is not installed (it is needed to read the revision)") from None
    if found.returncode != 0:
        raise RevisionError(f"{where} is not inside a git repository ({found.stderr.strip()})")
    top = Path(found.stdout.strip())
    commit = _git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if commit.returncode != 0 or not commit.stdout.strip():
        raise RevisionError(f"{ref!r} is not a commit of the repository at {top}")
    return Revision(ref, commit.stdout.strip(), top)


def export(revision: Revision, into: Path) -> Path:
    """The revision's tracked files written under `into` (which must be empty or absent); `into`."""
    into.mkdir(parents=True, exist_ok=True)
    command = ["git", "-C", str(revision.top), "archive", "--format=tar", revision.commit]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        try:
            with tarfile.open(fileobj=process.stdout, mode="r|") as archive:
                archive.extractall(into, filter="data")
        except tarfile.TarError as exc:
            problem = process.stderr.read().decode(errors="replace").strip() or str(exc)
            raise RevisionError(f"cannot export {revision.describe()}: {problem}") from None
        error = process.stderr.read().decode(errors="replace").strip()
    if process.returncode != 0:
        raise RevisionError(f"cannot export {revision.describe()}: {error}")
    return into


def ignored(top: Path, paths: list[Path]) -> set[Path]:
    """Those of `paths` (inside `top`) that git ignores (a virtual environment, a build folder)."""
    if not paths:
        return set()
    text = "\n".join(str(p) for p in paths) + "\n"
    found = subprocess.run(
        ["git", "-C", str(top), "check-ignore", "--stdin"],
        input=text,
        capture_output=True,
        text=True,
        check=False,
    )
    return {Path(line) for line in found.stdout.splitlines() if line}
