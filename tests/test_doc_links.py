"""Every relative link in the README and docs/ leads to a file that exists, and to a heading there.

A moved section or a renamed file leaves links that GitHub renders without complaint and that lead
nowhere; this reads each Markdown link outside code blocks, resolves it against the file it stands
in, and for `#anchor` checks a heading of that file with GitHub's anchor rule.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    ROOT / "studies" / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"`[^`]*`")


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, where a `#` or `[x](y)` is not Markdown."""
    lines, in_code = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            in_code = not in_code
        elif not in_code:
            lines.append(line)
    return lines


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces made hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose_lines(path.read_text(encoding="utf-8")):
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = anchor(match[1])
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(document: Path) -> list[str]:
    broken = []
    for line in prose_lines(document.read_text(encoding="utf-8")):
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: and the like
                continue
            file_part, _, fragment = target.partition("#")
            linked = (document.parent / file_part).resolve() if file_part else document
            if not linked.exists():
                broken.append(f"{target}: no such file")
            elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
                broken.append(f"{target}: no heading #{fragment} in {file_part or document.name}")
    return broken


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(document: Path) -> None:
    assert broken_links(document) == []


def test_anchors_follow_githubs_rule() -> None:
    assert anchor("Timers (`--kernelperf-timer`)") == "timers---kernelperf-timer"
    assert anchor("Does the process offset cancel? (H200, 2026-12-01 and -02)") == (
        "does-the-process-offset-cancel-h200-2026-12-01-and--02"
    )


def test_a_link_to_a_missing_file_or_heading_is_reported(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Present\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#present) [gone](missing.md) [no heading](other.md#absent) `f[x](y)`\n"
        "```\n[in code](ignored.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "other.md#absent: no heading #absent in other.md",
    ]
