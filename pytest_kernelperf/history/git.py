"""What the history asks of git: the commit and branch of a checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path


def rev_parse(cwd: Path | str, *args: str) -> str | None:
    """`git rev-parse ARGS` in `cwd`, or None when git is missing, fails or says nothing."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None


def git_info(rootdir: Path | str) -> tuple[str, str | None] | None:
    """(commit, branch) of the checkout at `rootdir`, or None outside git; branch None when detached."""
    commit = rev_parse(rootdir, "HEAD")
    if commit is None:
        return None
    branch = rev_parse(rootdir, "--abbrev-ref", "HEAD")
    return commit, None if branch in (None, "HEAD") else branch
