"""README.md against pyproject.toml: the extras table lists every extra with what it installs, the
required packages are the package's dependencies, and the install line works as written (.ci/run
runs it against the wheel it builds, in a fresh venv; .ci/installed_from.py checks pip's report)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest
from conftest import fresh_interpreter

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
# The plugin's own toolchain (ruff, mypy, hypothesis...): the Quick start installs it, not a user.
NOT_FOR_USERS = {"dev"}


def _ci_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / ".ci" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _name(requirement: str) -> str:
    """A requirement's distribution name, lower case: "psycopg[binary]>=3.1" -> "psycopg"."""
    match = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    assert match, requirement
    return match[0].lower()


def readme_extras() -> dict[str, set[str]]:
    """The README's extras table: extra -> the packages its `installs` column names."""
    table = README.split("| extra | installs | for |\n", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `([a-z-]+)` \| ([^|]+) \| [^|]+ \|$", table, flags=re.MULTILINE)
    return {extra: {_name(p) for p in installs.split(",")} for extra, installs in rows}


def test_the_extras_table_lists_each_extra_with_what_pyproject_installs() -> None:
    extras = {
        extra: {_name(r) for r in requirements}
        for extra, requirements in PROJECT["optional-dependencies"].items()
        if extra not in NOT_FOR_USERS
    }
    assert readme_extras() == extras


def test_the_dashboard_extra_alone_brings_the_chart_library() -> None:
    extras = PROJECT["optional-dependencies"]
    assert {_name(r) for r in extras["dashboard"]} == {"vl-convert-python"}
    assert all("vl-convert-python" not in _name(r) for e in extras if e != "dashboard" for r in extras[e])


def test_the_required_packages_are_the_dependencies() -> None:
    said = re.search(r"^Required: (.*?)\.", README, flags=re.MULTILINE)
    assert said, "README.md lost its 'Required: ...' sentence"
    named = {_name(n) for n in re.split(r", | and ", said[1])}
    assert named == {_name(r) for r in PROJECT["dependencies"]}


def test_the_install_line_works_as_written_from_the_clones_wheels() -> None:
    line = _ci_module("readme_commands").install_command(README)
    assert line == 'pip install --find-links dist "pytest-kernelperf[triton,nvml]"'
    assert "<" not in line and "OWNER" not in line  # no placeholder to fill in
    extras = re.search(r"\[(.*)\]", line)
    assert extras and set(extras[1].split(",")) <= set(PROJECT["optional-dependencies"])


def test_ci_runs_that_line_against_the_wheel_it_builds() -> None:
    steps = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "install=$(python3 .ci/readme_commands.py --install)" in steps
    assert 'bash -c "$install"' in steps and 'ln -s "$PWD/.ci-dist" "$fresh/dist"' in steps
    assert 'python3 .ci/installed_from.py "$fresh/report.json" .ci-dist' in steps


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("file://{folder}/pytest_kernelperf-0.1.0-py3-none-any.whl", 0),
        ("https://files.example/pytest_kernelperf-0.1.0-py3-none-any.whl", 1),
        ("file://{folder}/pytest_kernelperf-0.1.0.tar.gz", 1),
    ],
)
def test_the_install_is_checked_to_come_from_the_built_wheel(url: str, status: int, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    entry = {"metadata": {"name": "pytest-kernelperf"}, "download_info": {"url": url.format(folder=tmp_path)}}
    report.write_text(json.dumps({"install": [entry]}))
    assert _ci_module("installed_from").main(report, tmp_path) == status


def test_the_dashboard_imports_its_chart_library_only_to_draw() -> None:
    code = (
        "import sys, pytest_kernelperf.history.dashboard, pytest_kernelperf.history.cli; "
        "print('vl_convert' in sys.modules)"
    )
    assert fresh_interpreter(code) == ["False"]
