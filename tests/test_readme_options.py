"""The README's option table is settings.OPTIONS: every flag, ini key, marker name and default."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_kernelperf.settings import OPTIONS, Option

README = Path(__file__).resolve().parent.parent / "README.md"
ROW = re.compile(
    r"^\| `(?P<flag>--kernelperf[a-z-]*)` \|(?P<ini>[^|]*)\|(?P<marker>[^|]*)\|(?P<default>[^|]*)\|"
)


def documented() -> list[tuple[str, str, str, str]]:
    section = README.read_text(encoding="utf-8").split("## Options", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        match = ROW.match(line)
        if match:
            rows.append(tuple(match[key].strip().strip("`") for key in ("flag", "ini", "marker", "default")))
    return rows  # type: ignore[return-value]


def declared(option: Option) -> tuple[str, str, str, str]:
    default = "off" if option.flag else "" if option.default is None else str(option.default)
    return (
        option.cli_name,
        option.ini_name if option.ini else "",
        option.field if option.marker else "",
        default,
    )


def test_the_readme_table_lists_every_option_as_declared() -> None:
    assert documented() == [declared(option) for option in OPTIONS]
