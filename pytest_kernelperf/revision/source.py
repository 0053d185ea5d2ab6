"""A git revision resolved to its commit, and its files exported into a folder of their own.

The export reads the commit into an index file of its own and checks it out from there: the user's
work tree, index, branches and worktrees are only read, so nothing of theirs changes, even when a
run is killed halfway.
"""

from __future__ import annotations

import os
import subprocess
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
    # The object first, then its commit: `^{commit}` appended to `:/<text>` (the youngest commit whose
    # message matches) would become part of the text searched for.
    named = _git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", ref)
    commit = named
    if named.returncode == 0 and named.stdout.strip():
        peeled = f"{named.stdout.strip()}^{{commit}}"
        commit = _git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", peeled)
    if commit.returncode != 0 or not commit.stdout.strip():
        raise RevisionError(f"{ref!r} is not a commit of the repository at {top}")
    return Revision(ref, commit.stdout.strip(), top)


def export(revision: Revision, into: Path) -> Path:
    """The revision's tracked files written under `into` (created; it must not hold anything else);
    `into`. Read into an index file of its own and checked out from it (`git read-tree`,
    `git checkout-index`): the repository's index is never touched, symbolic links stay links,
    and `export-ignore` attributes, which `git archive` would honour, hide nothing."""
    into.mkdir(parents=True, exist_ok=True)
    index = into.parent / f"{into.name}.index"
    environment = {**os.environ, "GIT_INDEX_FILE": str(index)}
    steps = (
        ["read-tree", revision.commit],
        ["checkout-index", "--all", "--force", f"--prefix={into}{os.sep}"],
    )
    try:
        for step in steps:
            done = subprocess.run(
                ["git", "-C", str(revision.top), *step],
                capture_output=True,
                text=True,
                env=environment,
                check=False,
            )
            if done.returncode != 0:
                problem = done.stderr.strip() or done.stdout.strip()
                raise RevisionError(f"cannot export {revision.describe()}: {problem}")
    finally:
        index.unlink(missing_ok=True)
    return into


@dataclass(frozen=True)
class NotOwn:
    """What lies in the checkout without being the repository's own code: what git ignores (a
    virtual environment, a build folder) and submodules (another repository, which an export of
    the revision does not hold: the process's checkout of it is shared). Paths relative to the top."""

    ignored: frozenset[str]
    submodules: frozenset[str]

    def covers(self, relative: Path) -> bool:
        parts = relative.parts
        prefixes = {"/".join(parts[:i]) for i in range(1, len(parts) + 1)}
        return bool(prefixes & self.ignored) or bool(prefixes & self.submodules)


def not_own(top: Path) -> NotOwn:
    """The ignored entries (folders whole, as git lists them) and submodules of the checkout."""
    listed = subprocess.run(
        [
            "git",
            "-C",
            str(top),
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    staged = subprocess.run(
        ["git", "-C", str(top), "ls-files", "-z", "--stage"], capture_output=True, text=True, check=False
    )
    ignored = frozenset(entry.rstrip("/") for entry in listed.stdout.split("\0") if entry)
    submodules = frozenset(
        line.partition("\t")[2] for line in staged.stdout.split("\0") if line.startswith("160000 ")
    )
    return NotOwn(ignored, submodules)
