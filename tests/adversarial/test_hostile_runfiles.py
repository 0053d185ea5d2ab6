"""Run files and histories edited by hand or by an attacker: every reader of a run file (compare,
merge, report, update-baselines, history import) refuses the same things through one gateway, with
exit 2 and the file and field named; what a history holds reaches the terminal and spreadsheets as
text only; history filters that select nothing and read-only histories say what is wrong."""

from __future__ import annotations

import copy
import csv
import hashlib
import io
import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Project
from history.historykit import split_backend

from pytest_kernelperf import cli
from pytest_kernelperf.history import changepoints
from pytest_kernelperf.history import synthetic_runs as rf
from pytest_kernelperf.history.store import HistoryStore

# A run file written by `pytest --kernelperf --kernelperf-json` (ScriptedTimer, two tests, both
# judged slower against their baselines).
REAL_RUN = Path(__file__).parent / "data" / "run.json"


def real_run() -> dict[str, Any]:
    return json.loads(REAL_RUN.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def kernelperf(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    status = cli.main(list(args), out=out)
    return status, out.getvalue()


def edited(folder: Path, name: str, edit: Callable[[dict[str, Any]], None]) -> Path:
    data = copy.deepcopy(real_run())
    edit(data)
    path = folder / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def stand_in_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changepoints, "detector_available", lambda: True)
    monkeypatch.setattr(changepoints, "split_merge_backend", split_backend)


def planted_history(db: Path, *, series: int = 3, name: str | None = None) -> Path:
    """16 runs on branch main with a +20% step at run 8, in `series` tests."""
    with HistoryStore(db) as store:
        for i in range(16):
            level = 1.0 if i < 8 else 1.2
            results = [
                rf.result(
                    f"tests/test_k.py::test_{j}",
                    level * (1 + j / 10),
                    name=name,
                    rounds=[level * (1 + j / 10) * f for f in (0.999, 1.0, 1.001)],
                )
                for j in range(series)
            ]
            store.append_run(rf.run(results, created=rf.created(i)), commit=f"{i:040x}", branch="main")
    return db


# --- 6: nesting ----------------------------------------------------------------------------------


def deep(folder: Path) -> Path:
    path = folder / "deep.json"
    head = '{"schema": "pytest-kernelperf-run", "schema_version": 1, "results": [], "x": '
    path.write_text(head + "[" * 200_000 + "]" * 200_000 + "}", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["history", "--db", "{tmp}/h.sqlite", "import", "--no-git", "{deep}"],
        ["compare", str(REAL_RUN), "{deep}"],
        ["merge", "{deep}", str(REAL_RUN), "-o", "{tmp}/m.json"],
        ["report", "{deep}", "--markdown", "{tmp}/md.md"],
        ["update-baselines", "{deep}", "--baseline-dir", "{tmp}/b"],
    ],
    ids=["history import", "compare", "merge", "report", "update-baselines"],
)
def test_a_deeply_nested_run_file_is_a_file_error_for_every_reader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    path = deep(tmp_path)
    before = digest(path)

    status, _ = kernelperf(*(arg.format(tmp=tmp_path, deep=path) for arg in command))

    assert status == 2  # a file error, not 1 ("a regression" for compare)
    assert f"error: {path}: not a run file: JSON nested more than 32 levels deep" in capsys.readouterr().err
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deep.json"]  # nothing written


def test_nesting_below_the_recursion_limit_is_refused_with_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = edited(
        tmp_path, "nested.json", lambda d: d["settings"].__setitem__("x", json.loads("[" * 40 + "]" * 40))
    )

    assert kernelperf("report", str(path))[0] == 2
    assert f"{path} at settings.x{'[0]' * 30}: nested more than 32 levels deep" in capsys.readouterr().err


# --- 7 and 12: numbers, times, schema version, text ----------------------------------------------


def _rounds(value: list[float]) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["results"][0]["device_time"].__setitem__("rounds_ms", value)


def _median(value: float) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["results"][0]["device_time"].__setitem__("median_ms", value)


HOSTILE = [
    ("rounds overflow", _rounds([1.7e308, 1.7e308]), "results[0].device_time.rounds_ms[0]", "a time must be"),
    ("zero time", _median(0), "results[0].device_time.median_ms", "a time must be a positive number of ms"),
    (
        "negative time",
        _median(-1),
        "results[0].device_time.median_ms",
        "a time must be a positive number of ms",
    ),
    (
        "version 1.0",
        lambda d: d.__setitem__("schema_version", 1.0),
        "schema_version",
        "expected a whole number, got float",
    ),
    (
        "version true",
        lambda d: d.__setitem__("schema_version", True),
        "schema_version",
        "expected a whole number, got bool",
    ),
    (
        "timed without a method",
        lambda d: d["results"][0]["device_time"].__setitem__("method", None),
        "results[0].device_time.method",
        "missing for a timed result",
    ),
    (
        "tested without an alpha",
        lambda d: d["results"][0]["comparison"].pop("alpha"),
        "results[0].comparison.alpha",
        "missing: a comparison with a p_value and a level",
    ),
    (
        "ANSI in a name",
        lambda d: d["results"][1].__setitem__("name", "ok\x1b[2K\x1b[1A\x1b[31mFAKE LINE\x1b[0m"),
        "results[1].name",
        "a control character '\\x1b'",
    ),
    (
        "newline in a test id",
        lambda d: d["results"][0].__setitem__("nodeid", "test_k.py::test_kernel\nFAKE"),
        "results[0].nodeid",
        "a control character '\\n'",
    ),
    (
        "ANSI in a note",
        lambda d: d["results"][0].__setitem__("notes", ["\x1b]0;title\x07"]),
        "results[0].notes[0]",
        "a control character",
    ),
]


@pytest.mark.parametrize(("edit", "where", "problem"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_history_import_refuses_what_compare_refuses_with_the_same_words(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Callable[[dict[str, Any]], None],
    where: str,
    problem: str,
) -> None:
    path = edited(tmp_path, "bad.json", edit)
    db = tmp_path / "h.sqlite"

    imported = kernelperf("history", "--db", str(db), "import", "--no-git", str(path))[0]
    import_error = capsys.readouterr().err
    compared = kernelperf("compare", str(REAL_RUN), str(path))[0]
    compare_error = capsys.readouterr().err

    assert imported == compared == 2
    assert f"error: {path} at {where}: {problem}" in import_error
    assert import_error == compare_error  # one validation, one message
    assert "\x1b" not in import_error  # the message shows the escape, it does not send it
    assert not db.exists()


def test_a_byte_count_beyond_64_bits_is_refused_at_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bytes.json"
    path.write_text(
        REAL_RUN.read_text().replace('"bytes": 512', '"bytes": 1' + "0" * 400, 1), encoding="utf-8"
    )

    assert kernelperf("history", "--db", str(tmp_path / "h.sqlite"), "import", "--no-git", str(path))[0] == 2
    assert (
        f"{path} at results[0].throughput.bytes: 10000000000000000000... (401 characters) is out of range"
        in (capsys.readouterr().err)
    )


def test_one_extreme_run_cannot_break_the_report_of_the_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    fine = edited(tmp_path, "fine.json", lambda d: None)
    extreme = edited(tmp_path, "extreme.json", _rounds([1.7e308, 1.7e308]))

    assert kernelperf("history", "--db", str(db), "import", "--no-git", str(fine), str(extreme))[0] == 2
    assert kernelperf("history", "--db", str(db), "import", "--no-git", str(fine))[0] == 0
    status, text = kernelperf("history", "--db", str(db), "report", "--html", str(tmp_path / "h.html"))
    assert status == 0 and "wrote the dashboard of 2 series" in text, capsys.readouterr().err


def test_the_real_run_file_passes_the_gateway(tmp_path: Path) -> None:
    status, text = kernelperf(
        "history", "--db", str(tmp_path / "h.sqlite"), "import", "--no-git", str(REAL_RUN)
    )
    assert status == 0 and "2 measurements" in text


# --- 12: what a history holds, on the terminal and in a spreadsheet -------------------------------


def test_a_name_that_is_a_formula_is_inert_in_the_csv_export(tmp_path: Path) -> None:
    formula = '=HYPERLINK("http://example.invalid","x")'
    path = edited(tmp_path, "formula.json", lambda d: d["results"][0].__setitem__("name", formula))
    db = tmp_path / "h.sqlite"
    assert kernelperf("history", "--db", str(db), "import", "--no-git", str(path))[0] == 0

    status, text = kernelperf("history", "--db", str(db), "export", "--csv", "-")

    assert status == 0
    names = [row["name"] for row in csv.DictReader(io.StringIO(text))]
    assert "'" + formula in names
    assert not [cell for row in csv.reader(io.StringIO(text)) for cell in row if cell[:1] in ("=", "+", "@")]


def test_control_characters_stored_in_a_history_are_shown_as_escapes(
    tmp_path: Path, stand_in_detector: None
) -> None:
    db = planted_history(tmp_path / "h.sqlite", series=1, name="gelu")
    # As written by a version that did not refuse them.
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE series SET name = ?", ("ok\x1b[2K\x1b[1A\x1b[31mFAKE LINE\x1b[0m",))
    connection.close()

    for command in (["show"], ["detect"]):
        status, text = kernelperf("history", "--db", str(db), *command)
        assert status in (0, 1)
        assert "\x1b" not in text and "ok\\x1b[2K\\x1b[1A\\x1b[31mFAKE LINE\\x1b[0m" in text


# --- 8: filters that select nothing --------------------------------------------------------------


@pytest.mark.parametrize(
    "given",
    [["--branch", "master"], ["--branch", "mian"], ["--device", "NVIDIA_H100"], ["--test", "test_gleu"]],
)
@pytest.mark.parametrize("command", ["detect", "show", "report"])
def test_filters_that_match_nothing_are_a_usage_error_naming_what_exists(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    stand_in_detector: None,
    given: list[str],
    command: str,
) -> None:
    db = planted_history(tmp_path / "h.sqlite")
    assert kernelperf("history", "--db", str(db), "detect", "--branch", "main")[0] == 1  # the step is found
    capsys.readouterr()
    extra = ["--html", str(tmp_path / "h.html")] if command == "report" else []

    status, text = kernelperf("history", "--db", str(db), command, *given, *extra)

    assert status == 2 and "0 slowdowns" not in text
    err = capsys.readouterr().err
    assert (
        f"error: {db}: no series matches {' '.join(given)} (16 runs; branches: main; devices: NVIDIA H200;"
        in err
    )
    assert "tests: tests/test_k.py::test_0, tests/test_k.py::test_1, tests/test_k.py::test_2)" in err
    assert not (tmp_path / "h.html").exists()


# --- 9: a history in a folder that does not exist yet --------------------------------------------


def test_the_plugin_makes_the_folder_of_its_history(project: Project) -> None:
    project.module()
    database = project.pytester.path / ".kernelperf" / "sub" / "history.sqlite"

    result = project.run("--kernelperf-update-baselines", f"--kernelperf-history={database}")

    result.assert_outcomes(passed=1)
    assert result.ret == 0, result.stdout.str()
    with HistoryStore(database, read_only=True) as store:
        assert store.run_count() == 1


def test_the_history_store_makes_its_folder(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "new" / "sub" / "h.sqlite") as store:
        store.append_run(real_run())
        assert store.run_count() == 1


# --- 10: read-only histories ---------------------------------------------------------------------


def test_reading_commands_leave_the_file_as_it_is(tmp_path: Path, stand_in_detector: None) -> None:
    db = planted_history(tmp_path / "h.sqlite")
    before = digest(db)
    for command in (
        ["show"],
        ["detect"],
        ["export", "--json", "-"],
        ["report", "--html", str(tmp_path / "x.html")],
    ):
        assert kernelperf("history", "--db", str(db), *command)[0] in (0, 1)
    assert digest(db) == before


def test_import_caches_the_change_points_the_reading_commands_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    def counting(values: Any, params: Any) -> Any:
        calls.append(len(values))
        return split_backend(values, params)

    monkeypatch.setattr(changepoints, "detector_available", lambda: True)
    monkeypatch.setattr(changepoints, "split_merge_backend", counting)
    db = planted_history(tmp_path / "h.sqlite", series=1)  # stored without import: nothing cached
    assert kernelperf("history", "--db", str(db), "detect")[0] == 1
    assert kernelperf("history", "--db", str(db), "detect")[0] == 1
    assert calls == [16, 16]  # a reading command detects, and caches nothing

    extra = edited(tmp_path, "extra.json", lambda d: None)
    status, _ = kernelperf(
        "history", "--db", str(db), "import", "--commit", "f" * 40, "--branch", "main", str(extra)
    )
    assert status == 0 and calls[2:] == [16]  # detected and cached
    html = str(tmp_path / "h.html")
    for command in (["detect"], ["detect", "--branch", "main"], ["show"], ["report", "--html", html]):
        assert kernelperf("history", "--db", str(db), *command)[0] in (0, 1)
    assert len(calls) == 3  # from the cache: every run of the series is on main


READ_ONLY_MOUNT = """
set -e
mount -t tmpfs none ro
cp h.sqlite ro/
mount -o remount,ro ro
for args in show "export --json -" "report --html {tmp}/h.html" "prune --keep 3"; do
    set +e
    {python} -m pytest_kernelperf history --db ro/h.sqlite $args > /dev/null 2> err.txt
    echo "$args: $? $(cat err.txt)"
    set -e
done
"""


def test_a_history_on_a_read_only_file_system_is_read_and_writing_it_says_why(tmp_path: Path) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) to mount a read-only file system")
    planted_history(tmp_path / "h.sqlite")
    (tmp_path / "ro").mkdir()
    script = READ_ONLY_MOUNT.format(tmp=tmp_path, python=sys.executable)
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0 and not done.stdout:  # unshare or mount not permitted here
        pytest.skip(f"no read-only mount here: {done.stderr.strip()}")
    lines = done.stdout.splitlines()
    assert lines[:3] == ["show: 0 ", "export --json -: 0 ", f"report --html {tmp_path}/h.html: 0 "], done
    assert lines[3].startswith(
        "prune --keep 3: 2 error: ro/h.sqlite: cannot be written: the file or its folder is"
    )
    assert "read-only" in lines[3] and "not a history database" not in lines[3]


# --- minor: a reader that goes away ----------------------------------------------------------------


@pytest.mark.parametrize("command", [["show"], ["export", "--csv", "-"]])
def test_output_to_a_closed_pipe_ends_quietly(tmp_path: Path, command: list[str]) -> None:
    db = planted_history(tmp_path / "h.sqlite")
    argv = [sys.executable, "-m", "pytest_kernelperf", "history", "--db", str(db), *command]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()  # `| head` that has read its lines and gone, before anything was written
        err = process.stderr.read().decode()
        status = process.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert status == 141  # as for a process ended by SIGPIPE
