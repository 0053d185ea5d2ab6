"""The notes under a report's tables: numbered, each printed once however many rows cite it.

A table cell holds a word and a number (`undetermined ±12%`); why, and what to do, is a note the
cell cites (`undetermined ±12% [1]`) and the report prints once under its tables (`[1] ...`). The
terminal table, the markdown summary (step summary, `report --markdown`) and the pull request's
comment (results/pull_request.py) number and print their notes through this one class; each writes
them in its own markup (results/render.py). A note may keep a mark of its own instead of a number
where a narrow column wants one character (`*`: bytes inferred).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Footnotes:
    """The notes a report's cells cite, in the order first cited."""

    _marks: dict[str, str] = field(default_factory=dict)  # note -> its number, or its own mark
    _numbered: int = 0

    def cite(self, *notes: str) -> str:
        """The citation of `notes` ("[1]", "[1,3]"; "" for none): a note cited before keeps its
        number, a new one takes the next."""
        numbers = []
        for note in dict.fromkeys(n for n in notes if n):
            if note not in self._marks:
                self._numbered += 1
                self._marks[note] = str(self._numbered)
            numbers.append(self._marks[note])
        return f"[{','.join(numbers)}]" if numbers else ""

    def mark(self, note: str, symbol: str) -> str:
        """`symbol`, the mark of `note` (printed before the numbered notes)."""
        self._marks.setdefault(note, symbol)
        return self._marks[note]

    def entries(self) -> list[tuple[str, str]]:
        """(label, note) to print: the marked notes (`*`), then the numbered ones (`[1]`) in order."""
        marked = [(mark, note) for note, mark in self._marks.items() if not mark.isdigit()]
        numbered = [(f"[{mark}]", note) for note, mark in self._marks.items() if mark.isdigit()]
        return marked + numbered

    def __len__(self) -> int:
        return len(self._marks)


def cited(text: str, citation: str) -> str:
    """A cell's text with its citation after it: `undetermined ±12% [1]`."""
    return f"{text} {citation}" if citation and text else citation or text
