"""Baseline files are untrusted input: every way a file can be broken gives a clear BaselineError.

Each case checks the three things a user needs: the error names the file (and the line where it
can), says what is wrong, and says how to regenerate the file. Nothing else may escape the loader:
no other exception, no executed code, no hang, no change to the file.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from baseline_samples import sample_entries, sample_text

from pytest_kernelperf import atomic
from pytest_kernelperf.baselines import yaml_io
from pytest_kernelperf.baselines.yaml_io import MAX_FILE_BYTES, BaselineError, parse, read

LOADERS = [
    pytest.param(yaml_io._LOADER, id="default-loader"),
    pytest.param(yaml_io._StrictLoader, id="pure"),
]
REGENERATE = "--kernelperf-update-baselines"


def assert_clear(exc: BaselineError, path: Path, problem: str, line: int | None = None) -> None:
    message = str(exc)
    assert str(path) in message
    assert REGENERATE in message
    assert problem in exc.problem, exc.problem
    if line is not None:
        assert exc.line == line, message
        assert f"{path}:{line}:" in message


# --- truncation at every byte offset ---------------------------------------------------------


@dataclass
class TruncationFigures:
    tried: int = 0
    errors: int = 0
    valid_prefixes: int = 0
    files_changed: int = 0
    crashes: int = 0


def truncate_everywhere(tmp_path: Path) -> TruncationFigures:
    """Read every proper prefix of a real baseline file; count what the loader made of each."""
    full = sample_text().encode("utf-8")
    original = sample_entries()
    path = tmp_path / "test_gelu.yaml"
    figures = TruncationFigures()
    for offset in range(len(full)):
        prefix = full[:offset]
        path.write_bytes(prefix)
        figures.tried += 1
        try:
            entries = read(path)
        except BaselineError as exc:
            assert str(path) in str(exc) and REGENERATE in str(exc)
            figures.errors += 1
        except Exception:
            figures.crashes += 1
        else:
            # The `end: true` line comes last, so a prefix that validates holds the whole file.
            assert entries == original, offset
            figures.valid_prefixes += 1
        if path.read_bytes() != prefix:
            figures.files_changed += 1
    return figures


@pytest.mark.slow
def test_truncation_at_every_byte_gives_a_clear_error_or_a_clean_prefix(tmp_path: Path) -> None:
    figures = truncate_everywhere(tmp_path)
    print(f"truncation figures: {figures}")  # quoted in docs/reliability.md
    assert figures.tried == len(sample_text().encode())
    assert figures.crashes == 0
    assert figures.files_changed == 0
    assert figures.errors + figures.valid_prefixes == figures.tried
    # Only the cut of the final newline leaves a whole file (all entries, the `end` line too).
    assert figures.valid_prefixes == 1
    assert figures.errors == figures.tried - 1


# --- broken content -------------------------------------------------------------------------

GOOD_ENTRY = """\
        device_time:
          ci_ms: [0.9, 1.1]
          median_ms: 1.0
          method: cupti
          n: 50
          quantiles_ms: [0.9, 1.0, 1.1]
        recorded: '2026-11-30T12:00:00Z'
"""


def file_with(entry: str = GOOD_ENTRY, *, test: str = "test_k", head: str = "schema_version: 1\n") -> str:
    return f"{head}entries:\n  {test}:\n    NVIDIA H200:\n      hot:\n{entry}end: true\n"


def with_value(key: str, value: str) -> str:
    lines = GOOD_ENTRY.splitlines(keepends=True)
    out = [
        f"{line.split(':')[0]}: {value}\n" if line.strip().startswith(f"{key}:") else line for line in lines
    ]
    return file_with("".join(out))


# (case, text, problem substring, line)
BROKEN: list[tuple[str, str, str, int | None]] = [
    (
        "duplicate test id",
        file_with().replace("end: true", "  test_k:\n    NVIDIA H200: {}\nend: true"),
        "duplicate key 'test_k' (first on line 3",
        13,
    ),
    (
        "duplicate metric key",
        with_value("n", "50\n          n: 51"),
        "duplicate key 'n' (first on line 10",
        11,
    ),
    (
        "merge conflict markers",
        "schema_version: 1\nentries:\n<<<<<<< HEAD\n  a: {}\n=======\n  b: {}\n>>>>>>> branch\n",
        "merge conflict",
        3,
    ),
    (
        "merge conflict markers, CRLF",
        "schema_version: 1\r\nentries:\r\n  a: {}\r\n=======\r\n  b: {}\r\n",
        "merge conflict",
        4,
    ),
    (
        "diff3 base marker",
        "schema_version: 1\nentries:\n||||||| base\n  a: {}\n",
        "merge conflict",
        3,
    ),
    ("1e-3 (a string in YAML 1.1)", with_value("median_ms", "1e-3"), "YAML 1.1 reads 1e-3 as a string", 8),
    ("quoted number", with_value("median_ms", "'0.001'"), "median_ms must be a number, got '0.001'", 8),
    ("yes as a number", with_value("median_ms", "yes"), "median_ms must be a number, got True", 8),
    ("yes as a count", with_value("n", "yes"), "n must be a positive whole number, got True", 10),
    ("NaN", with_value("median_ms", ".nan"), "finite positive number, got nan", 8),
    ("inf", with_value("median_ms", ".inf"), "finite positive number, got inf", 8),
    ("-inf in a list", with_value("quantiles_ms", "[0.9, -.inf]"), "finite positive number, got -inf", 11),
    ("zero", with_value("median_ms", "0"), "finite positive number, got 0", 8),
    ("negative", with_value("median_ms", "-1.5"), "finite positive number, got -1.5", 8),
    ("zero in the CI", with_value("ci_ms", "[0.0, 1.1]"), "finite positive number, got 0.0", 7),
    ("float count", with_value("n", "50.0"), "n must be a positive whole number", 10),
    ("short CI", with_value("ci_ms", "[1.0]"), "ci_ms must be a list [low, high]", 7),
    ("empty quantiles", with_value("quantiles_ms", "[]"), "non-empty list", 11),
    ("unquoted date", with_value("recorded", "2026-11-30"), "recorded must be a quoted date string", 12),
    ("impossible date", with_value("recorded", "2026-02-30"), "day is out of range", 12),
    ("unknown method", with_value("method", "'rm -rf /'"), "method must be a timer name", 9),
    ("method with spaces", with_value("method", "'Scripted Timer!'"), "method must be a timer name", 9),
    ("CI reversed", with_value("ci_ms", "[1.1, 0.9]"), "ci_ms must hold the median", 7),
    ("CI beside the median", with_value("ci_ms", "[5.0, 6.0]"), "ci_ms must hold the median", 7),
    (
        "median far below its quantiles",
        with_value("median_ms", "0.0001").replace("[0.9, 1.1]", "[0.00005, 0.0002]"),
        "median_ms 0.0001 lies outside its own quantiles_ms (0.9 to 1.1)",
        8,
    ),
    ("unsorted quantiles", with_value("quantiles_ms", "[1.1, 1.0, 0.9]"), "quantiles_ms must be sorted", 11),
    ("typo in a key", with_value("median_ms", "1.0\n          medain_ms: 1.0"), "unknown key 'medain_ms'", 9),
    ("unknown cache mode", file_with().replace("hot:", "warm:"), "unknown cache mode 'warm'", 5),
    (
        "missing device_time",
        file_with("        recorded: '2026-11-30T12:00:00Z'\n"),
        "missing device_time",
        6,
    ),
    ("empty file", "", "expected a mapping", None),
    ("only whitespace", "  \n\n \n", "expected a mapping", None),
    ("only comments", "# pytest-kernelperf baselines\n", "expected a mapping", None),
    ("null document", "null\n", "expected a mapping", None),
    ("a list", "- schema_version: 1\n", "expected a mapping", None),
    ("missing schema_version", "entries: {}\n", "missing schema_version", 1),
    ("schema_version 4", "schema_version: 4\nentries: {}\n", "unknown schema_version 4", 1),
    ("schema_version '1'", "schema_version: '1'\nentries: {}\n", "unknown schema_version '1'", 1),
    ("schema_version 1.0", "schema_version: 1.0\nentries: {}\n", "unknown schema_version 1.0", 1),
    ("schema_version true", "schema_version: true\nentries: {}\n", "unknown schema_version True", 1),
    ("missing entries", "schema_version: 1\nend: true\n", "missing entries", 1),
    (
        "cut short (no end line)",
        "schema_version: 1\nentries:\n  a: {}\n",
        "missing its last line `end: true`",
        3,
    ),
    ("end false", "schema_version: 1\nentries: {}\nend: false\n", "end must be true", 3),
    ("entries a list", "schema_version: 1\nentries: [a, b]\nend: true\n", "entries must be a mapping", 2),
    ("non-string key", file_with(test="123"), "keys must be strings", 3),
    ("null key", file_with(test="~"), "keys must be strings", 3),
    ("two documents", "schema_version: 1\nentries: {}\n---\nschema_version: 1\n", "another document", 3),
    ("unclosed list", with_value("ci_ms", "[0.9, 1.1"), "not valid YAML", None),
    ("tab indentation", file_with().replace("      hot:", "\thot:"), "not valid YAML", 5),
    ("NUL byte", "schema_version: 1\nentries: {}\n\x00", "characters are not allowed (U+0000)", 3),
    ("merge key", "schema_version: 1\nentries:\n  <<: {a: 1}\n", "merge keys", 3),
    ("anchor", "schema_version: &v 1\nentries: {}\n", "anchors and aliases are not allowed", 1),
    ("integer of 5000 digits", with_value("n", "1" * 5000), "4300 digits", 10),
    ("deep flow nesting", "schema_version: 1\nentries: " + "[" * 200 + "]" * 200 + "\n", "nest", 2),
    (
        "deep block nesting",
        "schema_version: 1\nentries:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 60)),
        "nested more than",
        None,
    ),
]


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize(("text", "problem", "line"), [c[1:] for c in BROKEN], ids=[c[0] for c in BROKEN])
def test_broken_file_gives_a_clear_error(
    tmp_path: Path, loader: type[yaml_io._StrictLoader], text: str, problem: str, line: int | None
) -> None:
    path = tmp_path / "test_k.yaml"
    with pytest.raises(BaselineError) as caught:
        parse(text, path, loader)
    assert_clear(caught.value, path, problem, line)


def test_the_good_entry_used_above_is_valid() -> None:
    assert len(parse(file_with(), Path("x.yaml"))) == 1  # so each broken case breaks one thing


# --- python tags and alias bombs: nothing runs, nothing expands --------------------------------

PYTHON_TAGS = [
    "!!python/object/apply:os.system ['touch {marker}']",
    "!!python/object/apply:subprocess.check_call [['touch', '{marker}']]",
    "!!python/object/new:subprocess.Popen [['touch', '{marker}']]",
    "!!python/name:os.system",
    "!!python/module:os",
    "!!python/object:builtins.object {{}}",
    "!<tag:yaml.org,2002:python/object/apply:os.system> ['touch {marker}']",
]


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("tag", PYTHON_TAGS)
def test_python_tags_run_no_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loader: type[yaml_io._StrictLoader], tag: str
) -> None:
    marker = tmp_path / "pwned"
    calls: list[object] = []

    def system(*args: object) -> int:
        calls.append(args)
        return 0

    monkeypatch.setattr(os, "system", system)
    for text in (
        f"schema_version: 1\nentries: {tag.format(marker=marker)}\n",
        with_value("median_ms", tag.format(marker=marker)),
        f"{tag.format(marker=marker)}\n",
    ):
        with pytest.raises(BaselineError) as caught:
            parse(text, tmp_path / "t.yaml", loader)
        assert str(tmp_path / "t.yaml") in str(caught.value)
    assert not marker.exists()
    assert calls == []


@pytest.mark.parametrize("loader", LOADERS)
def test_alias_bomb_is_refused_before_it_expands(loader: type[yaml_io._StrictLoader]) -> None:
    # Billion laughs: nine levels of ten aliases, 10^9 strings if expanded.
    lines = ["schema_version: 1", 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 10):
        refs = ",".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{refs}]")
    lines.append("entries: *a9")
    with pytest.raises(BaselineError) as caught:
        parse("\n".join(lines) + "\n", Path("bomb.yaml"), loader)
    assert_clear(caught.value, Path("bomb.yaml"), "anchors and aliases are not allowed", 2)


# --- encodings and line endings ---------------------------------------------------------------


@pytest.mark.parametrize(
    "transform",
    [
        pytest.param(lambda b: b"\xef\xbb\xbf" + b, id="BOM"),
        pytest.param(lambda b: b.replace(b"\n", b"\r\n"), id="CRLF"),
        pytest.param(lambda b: b"\xef\xbb\xbf" + b.replace(b"\n", b"\r\n"), id="BOM+CRLF"),
    ],
)
def test_bom_and_crlf_load_like_the_original(tmp_path: Path, transform: object) -> None:
    path = tmp_path / "t.yaml"
    path.write_bytes(transform(sample_text().encode()))  # type: ignore[operator]
    assert read(path) == sample_entries()


@pytest.mark.parametrize(
    ("raw", "line"),
    [
        (b"schema_version: 1\nentries:\n  test_caf\xe9:\n", 3),  # Latin-1
        (b"\xff\xfes\x00c\x00h\x00", 1),  # UTF-16
        (b"schema_version: 1\n\xc3", 2),  # a multi-byte character cut short
    ],
)
def test_non_utf8_is_refused_with_the_byte_and_line(tmp_path: Path, raw: bytes, line: int) -> None:
    path = tmp_path / "t.yaml"
    path.write_bytes(raw)
    with pytest.raises(BaselineError) as caught:
        read(path)
    assert_clear(caught.value, path, "not UTF-8 text (byte", line)


# --- what kind of file --------------------------------------------------------------------------


def test_file_over_the_size_cap_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk, no time
    opened: list[object] = []
    real_open = Path.open

    def spy(self: Path, *args: Any, **kwargs: Any) -> Any:
        opened.append(self)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", spy)
    with pytest.raises(BaselineError) as caught:
        read(path)
    assert_clear(caught.value, path, f"over the {MAX_FILE_BYTES}-byte cap")
    assert opened == []  # refused from its size alone


def test_symlink_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_text(sample_text())
    path = tmp_path / "t.yaml"
    path.symlink_to(secret)
    with pytest.raises(BaselineError) as caught:
        read(path)
    assert_clear(caught.value, path, "symbolic link")


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    os.mkfifo(path)
    with pytest.raises(BaselineError) as caught:
        read(path)  # opening a FIFO with no writer would block forever
    assert_clear(caught.value, path, "not a regular file")


def test_missing_file_has_no_entries(tmp_path: Path) -> None:
    assert read(tmp_path / "none.yaml") == {}


def test_reading_never_changes_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_bytes(b"schema_version: 1\nentries:\n  a: 1\n  a: 2\n")
    before = path.stat()
    with pytest.raises(BaselineError):
        read(path)
    after = path.stat()
    assert (before.st_mtime_ns, before.st_size, before.st_ino) == (
        after.st_mtime_ns,
        after.st_size,
        after.st_ino,
    )


# --- round trip --------------------------------------------------------------------------------


def test_dump_then_read_gives_the_same_entries(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    atomic.write_atomic(path, sample_text())
    assert read(path) == sample_entries()
    assert path.read_bytes().isascii()  # non-ASCII test ids are escaped


def test_read_only_file_mode_is_what_the_umask_gives(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    atomic.write_atomic(path, sample_text())
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask
