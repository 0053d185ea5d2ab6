"""Check that .ci/run runs the README's Quick start commands exactly as README.md writes them.

The Quick start section's ```bash blocks hold the commands a new contributor copies: the install
and the example suite, then the plugin's own tests. Each must be a line of .ci/run, verbatim, or
verbatim inside one pair of parentheses (a subshell, so that under `set -e` a failure anywhere in
its && chain stops the script). Exit 1, saying which command differs, when they drift apart.

`--install` prints instead the `pip install` line of the "Install into your repository" section,
which .ci/run runs as it stands against the wheel it builds.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Quick start"
INSTALL_SECTION = "## Install into your repository"


def readme_commands(readme: str, section: str = SECTION) -> list[str]:
    """The lines of the ```bash blocks of a section (the Quick start's by default), in order."""
    lines = readme.splitlines()
    try:
        start = lines.index(section)
    except ValueError:
        raise SystemExit(f"README.md has no '{section}' section") from None
    commands: list[str] = []
    in_block = False
    for line in lines[start + 1 :]:
        if line.startswith("## ") and not in_block:
            break
        if line.strip() == "```bash":
            in_block = True
        elif line.strip() == "```":
            in_block = False
        elif in_block and line.strip():
            commands.append(line.strip())
    return commands


def install_command(readme: str) -> str:
    """The one `pip install` line of the README's install section."""
    found = [c for c in readme_commands(readme, INSTALL_SECTION) if c.startswith("pip install ")]
    if len(found) != 1:
        raise SystemExit(
            f"expected one `pip install` line in README.md's '{INSTALL_SECTION}', found {found!r}"
        )
    return found[0]


def main() -> int:
    if sys.argv[1:] == ["--install"]:
        print(install_command((ROOT / "README.md").read_text(encoding="utf-8")))
        return 0
    commands = readme_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    if len(commands) != 2:
        print(f"expected two Quick start commands in README.md, found {commands!r}", file=sys.stderr)
        return 1
    run = {line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()}
    missing = [c for c in commands if c not in run and f"({c})" not in run]
    for command in missing:
        print(f"README.md's command is not run verbatim by .ci/run: {command}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
