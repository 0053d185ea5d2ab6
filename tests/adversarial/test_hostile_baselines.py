"""Baseline entries edited by hand or damaged: rounds that the entry's own samples cannot have given
are refused wherever entries are read (a YAML file, a run JSON, another process), and an update does
not keep such rounds as "unchanged"."""

from __future__ import annotations

import io
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import Project

from pytest_kernelperf.baselines.schema import SchemaError, entry_from_data, rounded
from pytest_kernelperf.baselines.store import BaselineStore, merge, within_noise
from pytest_kernelperf.baselines.yaml_io import read
from pytest_kernelperf.cli import main
from pytest_kernelperf.model.baseline import EntryKey
from pytest_kernelperf.results.transport import TransportError, staged_from_data

ROOT = Path(__file__).parent.parent.parent


def recorded(project: Project) -> str:
    """The scratch project's baseline file after an update at 1.0 ms, as text."""
    project.module()
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    text = project.baseline_file.read_text()
    assert "rounds_ms: [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]" in text
    return text


def line_of(text: str, key: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if line.strip().startswith(key))


@pytest.mark.parametrize(
    ("rounds", "problem"),
    [
        (
            "[5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0]",
            "rounds_ms[0] 5.0 lies outside the range of its own samples",
        ),
        # The geometric mean is the median, but no sample was anywhere near either round.
        ("[1.0e-300, 1.0e+300]", "rounds_ms[0] 1e-300 lies outside the range of its own samples"),
    ],
)
def test_edited_rounds_in_a_baseline_file_fail_with_file_line_and_field(
    project: Project, rounds: str, problem: str
) -> None:
    text = recorded(project).replace("[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]", rounds)
    project.baseline_file.write_text(text)

    result = project.run("--kernelperf", ms=5.0)  # 5x slower than every figure but the rounds

    result.assert_outcomes(failed=1)
    where = f"baseline file {project.baseline_file}:{line_of(text, 'rounds_ms:')}: test_kernel / "
    assert re.search(re.escape(where) + r".* / hot: device_time: " + re.escape(problem), result.stdout.str())


def entry(rounds: list[float], n: int = 400, quantiles: list[float] | None = None) -> dict[str, Any]:
    return {
        "recorded": "2026-12-01T00:00:00Z",
        "device_time": {
            "method": "cupti",
            "median_ms": 1.0,
            "ci_ms": [0.999, 1.001],
            "n": n,
            "quantiles_ms": quantiles or [0.99, 0.995, 1.0, 1.005, 1.01],
            "rounds_ms": rounds,
        },
    }


def test_the_level_judged_must_lie_where_the_samples_lie() -> None:
    # Each round just past the stored quantiles: a round of few samples may lie there, but the
    # geometric mean of all of them (the level a verdict judges) may not.
    with pytest.raises(SchemaError) as info:
        entry_from_data(entry([1.015] * 8))
    assert info.value.path == ("device_time", "rounds_ms")
    assert "rounds_ms average 1.015 (their geometric mean: the level a verdict judges) lies outside" in str(
        info.value
    )
    entry_from_data(entry([1.015, *[1.0] * 7]))  # one short round out there: a measurement
    # Up to 32 samples are stored as they are: no round lies beyond them.
    with pytest.raises(SchemaError, match=r"rounds_ms\[1\] 1.015 lies outside"):
        entry_from_data(entry([1.0, 1.015], n=5))


def test_real_entries_pass() -> None:
    """Every entry an H200 recorded: the committed baselines, and each measurement of the real run
    histories (their figures rounded as a baseline file keeps them)."""
    assert len(read(ROOT / "baselines" / "example_kernels" / "test_gelu.yaml")) == 5

    checked = 0
    for db in sorted((ROOT / "docs" / "results" / "real_history").glob("*.sqlite")):
        with sqlite3.connect(db) as connection:
            rows = connection.execute("SELECT median_ms, n, rounds_ms, quantiles_ms FROM measurements")
            for median, n, rounds, quantiles in rows:
                data = entry(
                    [rounded(v) for v in json.loads(rounds)], n, [rounded(v) for v in json.loads(quantiles)]
                )
                data["device_time"].update(median_ms=rounded(median), ci_ms=[rounded(median)] * 2)
                entry_from_data(data)
                checked += 1
    assert checked > 150


def test_edited_rounds_in_a_run_json_are_refused_by_update_baselines(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded(project)
    project.run("--kernelperf-update-baselines", "--kernelperf-json=up.json").assert_outcomes(passed=1)
    data = json.loads((project.pytester.path / "up.json").read_text())
    data["results"][0]["baseline_entry"]["device_time"]["rounds_ms"] = [5.0] * 8
    edited = project.pytester.path / "up_edit.json"
    edited.write_text(json.dumps(data))
    folder = project.pytester.path / "fresh"

    code = main(["update-baselines", str(edited), "--baseline-dir", str(folder)], out=io.StringIO())

    assert code == 2
    assert (
        f"{edited} at results[0].baseline_entry.device_time.rounds_ms[0]: rounds_ms[0] 5.0 lies outside"
        in capsys.readouterr().err
    )
    assert not folder.exists()


def test_edited_rounds_from_another_process_are_refused(tmp_path: Path) -> None:
    item = {"file": "test_k.yaml", "key": {"test": "t", "device": "d", "cache": "hot"}, "entry": entry([5.0])}
    with pytest.raises(
        TransportError, match=re.escape("staged[0].entry.device_time.rounds_ms[0]: rounds_ms[0] 5.0")
    ):
        staged_from_data([item], tmp_path)


def test_an_update_does_not_keep_rounds_that_moved_as_unchanged() -> None:
    # Medians and CIs agree, so before rounds counted this re-measurement was "unchanged", and the
    # old rounds (the figures a verdict judges, 1.5% higher) would have stayed in the file.
    old = entry_from_data(entry([1.009, 1.008, 1.009, 1.008]))
    new = entry_from_data(entry([0.994, 0.995, 0.994, 0.995]))
    key = EntryKey("t", "d", "hot")
    assert not within_noise(old, new)
    merged, _, changed, unchanged, _ = merge({key: old}, {key: new})
    assert changed == (key,) and unchanged == 0 and merged[key] is new
    # Rounds that overlap are noise: the old entry and its date stay.
    again = entry_from_data(entry([0.999, 1.001, 1.0, 1.0]))
    assert within_noise(entry_from_data(entry([1.0, 1.001, 0.999])), again)


SURROGATE_NAME = """
import os
import torch

def k(x):
    return x + 1

k.fake_ms = 1.0

def test_ok(kernel_bench):
    kernel_bench(k, torch.ones(8), reference=lambda x: x + 1)

def test_s(kernel_bench):
    kernel_bench(k, torch.ones(8), reference=lambda x: x + 1, name=os.fsdecode(b"input_\\xff.bin"))
"""


def test_a_name_that_cannot_be_encoded_is_refused_and_the_file_stays_readable(project: Project) -> None:
    project.module(SURROGATE_NAME)

    result = project.run("--kernelperf-update-baselines")

    result.assert_outcomes(passed=1, failed=1)
    assert "name= must be text that can be written as UTF-8, got 'input_\\udcff.bin'" in result.stdout.str()
    project.run("--kernelperf").assert_outcomes(passed=1, failed=1)  # the file written reads back
    assert [key.test for key in read(project.baseline_file)] == ["test_ok"]


def test_the_writer_refuses_an_entry_its_reader_would_refuse(tmp_path: Path) -> None:
    # Test ids come from elsewhere too (a run JSON's node ids): the writer is the last guard.
    good = entry_from_data(entry([1.0]))
    path = tmp_path / "test_k.yaml"
    first = BaselineStore(tmp_path)
    first.stage(path, EntryKey("test_ok", "d", "hot"), good)
    assert first.write()[0].error is None
    before = path.read_bytes()
    store = BaselineStore(tmp_path)
    store.stage(path, EntryKey("test_s::\udcff", "d", "hot"), good)

    (update,) = store.write()

    assert update.error is not None
    assert update.error.startswith(
        "the entry 'test_s::\\udcff' on d (hot cache) would make a file that cannot be read back"
    )
    assert path.read_bytes() == before
