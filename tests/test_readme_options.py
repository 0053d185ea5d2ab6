"""docs/options.md's table is settings.OPTIONS: every flag, ini key, marker name and default."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_kernelperf.settings import OPTIONS, Option

OPTIONS_DOC = Path(__file__).resolve().parent.parent / "docs" / "options.md"
ROW = re.compile(
    r"^\| `(?P<flag>--kernelperf[a-z-]*)` \|(?P<ini>[^|]*)\|(?P<marker>[^|]*)\|(?P<default>[^|]*)\|"
)


def documented() -> list[tuple[str, str, str, str]]:
    rows = []
    for line in OPTIONS_DOC.read_text(encoding="utf-8").splitlines():
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


def test_the_options_doc_lists_every_option_as_declared() -> None:
    assert documented() == [declared(option) for option in OPTIONS]
