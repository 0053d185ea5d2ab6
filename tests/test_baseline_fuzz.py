"""Property tests where random input finds what hand-written cases miss."""

from __future__ import annotations

from pathlib import Path

import pytest
from baseline_samples import sample_entries, sample_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_kernelperf.baselines import yaml_io
from pytest_kernelperf.baselines.store import file_for
from pytest_kernelperf.baselines.yaml_io import BaselineError, dump, parse
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey

pytestmark = pytest.mark.slow  # hundreds of examples each

PATH = Path("fuzz.yaml")
TEXT = sample_text().encode()
ENTRY = next(iter(sample_entries().values()))


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    """The sample file with a few bytes replaced, inserted or deleted."""
    data = bytearray(TEXT)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data) - 1))
        kind = draw(st.sampled_from(["replace", "insert", "delete"]))
        byte = draw(st.sampled_from(b" \t\n\r:-[],{}#&*!|>'\"%@`.0123456789eE+\x00\xff\xc3yn~"))
        if kind == "replace":
            data[at] = byte
        elif kind == "insert":
            data.insert(at, byte)
        else:
            del data[at]
    return bytes(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged())
def test_damaged_file_gives_entries_or_a_clear_error_never_anything_else(raw: bytes) -> None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return  # read() refuses it before parsing (tested in test_baseline_faults)
    try:
        entries = parse(text, PATH)
    except BaselineError as exc:
        assert str(PATH) in str(exc) and "--kernelperf-update-baselines" in str(exc)
        return
    for entry in entries.values():  # whatever validates is usable
        assert entry.device_time.median_ms > 0 and entry.device_time.n >= 1


test_ids = st.text(min_size=1, max_size=80)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        st.tuples(test_ids, st.text(min_size=1, max_size=30), st.sampled_from(["hot", "cold"])),
        st.just(ENTRY),
        min_size=1,
        max_size=4,
    )
)
def test_any_test_id_and_device_name_round_trip(keys: dict[tuple[str, str, str], BaselineEntry]) -> None:
    entries = {EntryKey(*key): entry for key, entry in keys.items()}
    text = dump(entries)
    assert text.isascii()
    assert parse(text, PATH) == entries
    assert dump(dict(reversed(list(entries.items())))) == text  # insertion order never matters


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["..", ".", "/", "a", "é", "*", ":", "b.py", "..b", " ", "\\"]), max_size=8).map(
        "".join
    )
)
def test_any_module_path_maps_inside_the_folder(module: str) -> None:
    folder = Path("/baselines")
    path = file_for(folder, module)
    assert path.parts[: len(folder.parts)] == folder.parts
    assert ".." not in path.parts[len(folder.parts) :]
    assert path.name.endswith(".yaml")


def test_fast_and_pure_loaders_agree_on_the_sample() -> None:
    text = sample_text()
    assert parse(text, PATH, yaml_io._StrictLoader) == parse(text, PATH) == sample_entries()
