"""Reports built from user data (test ids, `name=`, notes): the markdown summary, which GitHub renders
as the step summary, holds them as text, never as HTML, links or extra table cells."""

from __future__ import annotations

import re

import pytest
from conftest import Project

HOSTILE = """
import pytest
import torch

def double(x):
    return x * 2

double.fake_ms = 1.0

@pytest.mark.parametrize("v", [1], ids=["a`</code><img src=https://example.invalid/x.png>`|b|c"])
def test_hostile(kernel_bench, v):
    kernel_bench(double, torch.ones(8), name="n|x`<b>b</b>` [l](u) & _i_")
"""

# A cell boundary: a pipe not escaped by a backslash.
_CELL = re.compile(r"(?<!\\)\|")


def test_markdown_cells_hold_user_data_as_text(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    project.module(HOSTILE)
    summary = project.pytester.path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))

    project.run("--kernelperf", "--kernelperf-markdown=md.md").assert_outcomes(passed=1)

    text = (project.pytester.path / "md.md").read_text()
    assert text in summary.read_text()  # the step summary has the same text
    header, _, row = (line for line in text.splitlines() if line.startswith("|"))
    assert len(_CELL.findall(row)) == len(_CELL.findall(header))  # no cell added
    method = _CELL.split(row)[1].strip()
    assert method == (
        r"a\`&lt;/code&gt;&lt;img src=https://example.invalid/x.png&gt;\`\|b\|c/"
        r"n\|x\`&lt;b&gt;b&lt;/b&gt;\` \[l\](u) &amp; \_i\_"
    )
    # Outside table cells, user data only appears inside code spans, where markdown and HTML do not apply.
    outside = re.sub(r"`[^`\n]*`", "", text.replace(row, ""))
    assert "<img" not in outside and "<b>" not in outside
