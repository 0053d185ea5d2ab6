"""One name per figure: `level_ms` is the level a verdict judges in the table, the YAML baseline, the
run file and the typed results; `median_ms` is only ever a median of samples. Files written before
(run files of schema 1, baseline files of schema 1 and 2) are read into the new names in memory,
losing nothing, and an error in one names its field as the file spells it."""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import Project, scripted_conftest
from test_reports_json import full_result

from pytest_kernelperf.baselines import yaml_io
from pytest_kernelperf.baselines.schema import LEVEL_SLACK, rounded
from pytest_kernelperf.model.baseline import EntryKey
from pytest_kernelperf.results import runfile
from pytest_kernelperf.verdict.noise import geometric_mean

REPO = Path(__file__).resolve().parent.parent
# A run file written by `pytest --kernelperf --kernelperf-json` at schema 1 (two tests, both
# judged slower against their baselines).
SCHEMA_1_RUN = REPO / "tests" / "adversarial" / "data" / "run.json"

# What schema 1 called each figure that schema 2 renamed, object by object of a result.
SCHEMA_1_NAMES = {
    "device_time": {"level_ms": "median_ms", "round_range_ms": "ci_ms"},
    "host_latency": {"level_ms": "median_ms"},
    "baseline": {"level_ms": "median_ms", "round_range_ms": "ci_ms", "host_level_ms": "host_median_ms"},
    "reference": {"level_ms": "median_ms", "round_range_ms": "ci_ms"},
    "against": {"level_ms": "median_ms"},
}


def as_schema_1(data: dict[str, Any]) -> dict[str, Any]:
    """A schema-2 document as schema 1 wrote it: the old names, no derived sample median."""
    old = copy.deepcopy(data)
    old["schema_version"] = 1
    for result in old["results"]:
        for part, names in SCHEMA_1_NAMES.items():
            if result.get(part) is not None:
                if part == "device_time":
                    result[part].pop("median_ms")  # derived in schema 2; schema 1 had the level there
                result[part] = {names.get(key, key): value for key, value in result[part].items()}
    return old


def full_run() -> runfile.RunReport:
    return runfile.RunReport("0.1.0", "2026-12-01T00:00:00Z", "compare", results=(full_result(),))


# --- run files ------------------------------------------------------------------------------------


def test_a_schema_2_run_names_the_level_and_the_sample_median_apart_and_round_trips() -> None:
    result = full_result()
    data = json.loads(json.dumps(runfile.run_to_dict(full_run())))
    assert data["schema_version"] == 2
    written = data["results"][0]
    assert written["device_time"]["level_ms"] == result.level_ms == 0.5123456789
    assert written["device_time"]["median_ms"] == 0.5123456789  # the median of its three samples
    assert written["device_time"]["round_range_ms"] == [0.5, 0.53]
    assert written["baseline"] == {
        "file": "baselines/tests/test_k.yaml",
        "level_ms": 0.4,
        "round_range_ms": [0.39, 0.41],
        "host_level_ms": 0.019,
        "environment_changes": None,
    }
    assert written["host_latency"] == {"method": "cuda-event", "level_ms": 0.02}
    assert written["reference"]["level_ms"] == 0.25 and written["reference"]["round_range_ms"] == [0.24, 0.26]
    assert written["against"]["level_ms"] == 0.4
    # The entry names its level beside its samples' median, as the YAML file does.
    entry = written["baseline_entry"]["device_time"]
    assert entry["level_ms"] == 0.5 and entry["median_ms"] == 0.5  # no rounds: the level is the median

    checked = runfile.check(data)
    assert checked.report == full_run() and checked.current is checked.data is data


def test_a_schema_1_run_reads_into_the_new_names_with_every_value() -> None:
    new = json.loads(json.dumps(runfile.run_to_dict(full_run())))
    old = as_schema_1(new)
    before = copy.deepcopy(old)

    checked = runfile.check(old)

    assert checked.report == runfile.check(new).report == full_run()
    assert old == before and checked.data is old  # the document as written, for its digest
    current = checked.current
    assert current["schema_version"] == 2
    for part, names in SCHEMA_1_NAMES.items():
        for new_name, old_name in names.items():
            assert current["results"][0][part][new_name] == old["results"][0][part][old_name]
    assert current["results"][0]["baseline_entry"] == old["results"][0]["baseline_entry"]
    # Written again, a schema-1 run is a schema-2 file that reads back the same.
    again = runfile.run_to_dict(checked.report)
    assert again["schema_version"] == 2 and runfile.check(again).report == checked.report


def test_a_schema_1_run_file_written_by_the_plugin_reads_with_its_values() -> None:
    data = json.loads(SCHEMA_1_RUN.read_text(encoding="utf-8"))
    assert data["schema_version"] == 1

    report = runfile.read(SCHEMA_1_RUN).report

    assert len(report.results) == len(data["results"]) == 2
    for result, old in zip(report.results, data["results"], strict=True):
        assert result.level_ms == old["device_time"]["median_ms"]
        assert result.round_range_ms == tuple(old["device_time"]["ci_ms"])
        assert result.baseline_level_ms == old["baseline"]["median_ms"]
        assert result.baseline_round_range_ms == tuple(old["baseline"]["ci_ms"])
        assert result.host_level_ms is None and result.host_baseline_level_ms is None
        assert result.rounds_ms == tuple(old["device_time"]["rounds_ms"])
        assert result.samples_ms == tuple(old["device_time"]["samples_ms"])
        assert result.comparison is not None and result.comparison.ratio == old["comparison"]["ratio"]
        assert result.entry is not None
        assert result.entry.device_time.median_ms == old["baseline_entry"]["device_time"]["median_ms"]


def test_an_error_in_a_schema_1_file_names_the_field_as_the_file_spells_it(tmp_path: Path) -> None:
    old = as_schema_1(json.loads(json.dumps(runfile.run_to_dict(full_run()))))
    edits = {
        "results[0].device_time.median_ms": lambda r: r["device_time"].update(median_ms="1 ms"),
        "results[0].baseline.host_median_ms": lambda r: r["baseline"].update(host_median_ms=[1]),
        "results[0].reference.ci_ms": lambda r: r["reference"].update(ci_ms=[1.0]),
        "results[0].reference.median_ms": lambda r: r["reference"].pop("median_ms"),
    }
    for where, edit in edits.items():
        data = copy.deepcopy(old)
        edit(data["results"][0])
        path = tmp_path / "old.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(runfile.RunFileError) as caught:
            runfile.read(path)
        assert caught.value.where == where, caught.value


def test_a_schema_2_document_with_a_level_under_the_old_name_is_refused() -> None:
    data = json.loads(json.dumps(runfile.run_to_dict(full_run())))
    against = data["results"][0]["against"]
    against["median_ms"] = against.pop("level_ms")
    refused = r"at results\[0\]\.against\.level_ms: missing where median_ms is given"
    with pytest.raises(runfile.RunFileError, match=refused):
        runfile.check(data)


# --- baseline files ---------------------------------------------------------------------------------

SCHEMA_2_FILE = """\
schema_version: 2
entries:
  test_k:
    Some GPU:
      hot:
        device_time:
          ci_ms: [0.99, 1.02]
          median_ms: 1.0
          method: cupti
          n: 40
          process_rounds: [2, 2]
          quantiles_ms: [0.9, 0.95, 1.0, 1.05, 1.1]
          resolution_ms: 0.001
          rounds_ms: [0.97, 0.99, 1.03, 1.07]
        environment: {torch: '2.11.0'}
        host_latency: {ci_ms: [0.05, 0.07], median_ms: 0.06, method: cuda-event, n: 40,
          quantiles_ms: [0.05, 0.06, 0.08], rounds_ms: [0.07, 0.065]}
        recorded: '2026-11-30T00:00:00Z'
  test_old:
    Some GPU:
      hot:
        device_time: {ci_ms: [1.99, 2.01], median_ms: 2.0, method: cupti, n: 50,
          quantiles_ms: [1.99, 2.0, 2.01]}
        environment: {}
        recorded: '2026-11-01T00:00:00Z'
end: true
"""


def test_an_old_baseline_file_reads_its_levels_and_an_update_writes_them_by_name(tmp_path: Path) -> None:
    path = tmp_path / "test_k.yaml"
    old = yaml_io.parse(SCHEMA_2_FILE, path)
    gpu = EntryKey("test_k", "Some GPU", "hot")
    device, host = old[gpu].device_time, old[gpu].host_latency
    assert host is not None
    # Two recording processes: the level is the mean of their geometric means' logs.
    by_process = [geometric_mean((0.97, 0.99)), geometric_mean((1.03, 1.07))]
    assert device.level_ms == pytest.approx(math.sqrt(by_process[0] * by_process[1]), rel=1e-12)
    assert device.median_ms == 1.0 and device.level_ms != device.median_ms
    assert host.level_ms == pytest.approx(geometric_mean((0.07, 0.065)))
    one_round = old[EntryKey("test_old", "Some GPU", "hot")].device_time
    assert one_round.level_ms == one_round.median_ms == 2.0  # schema 1: its median stands as the level

    text = yaml_io.dump(old)

    assert text.startswith(yaml_io.HEADER + "schema_version: 3\n")
    assert yaml_io.parse(text, path) == old  # nothing lost, nothing moved
    stored = yaml.safe_load(text)["entries"]
    assert stored["test_k"]["Some GPU"]["hot"]["device_time"]["level_ms"] == rounded(device.level_ms)
    assert stored["test_k"]["Some GPU"]["hot"]["host_latency"]["level_ms"] == rounded(host.level_ms)
    assert stored["test_old"]["Some GPU"]["hot"]["device_time"]["level_ms"] == 2.0
    # The level is added, and nothing else changes.
    for modes in stored.values():
        for metric in (m for record in modes["Some GPU"].values() for m in record.values()):
            if isinstance(metric, dict):
                metric.pop("level_ms", None)
    assert stored == yaml.safe_load(SCHEMA_2_FILE)["entries"]


def test_a_level_that_is_not_its_rounds_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "test_k.yaml"
    text = yaml_io.dump(yaml_io.parse(SCHEMA_2_FILE, path))
    level = yaml.safe_load(text)["entries"]["test_k"]["Some GPU"]["hot"]["device_time"]["level_ms"]
    # Six significant digits either way of the rounds' level read back unchanged.
    for close in (level * (1 + LEVEL_SLACK / 4), level * (1 - LEVEL_SLACK / 4)):
        yaml_io.parse(text.replace(f"level_ms: {level}", f"level_ms: {close!r}", 1), path)
    edited = text.replace(f"level_ms: {level}", "level_ms: 0.9", 1)
    line = 1 + edited.splitlines().index("          level_ms: 0.9")
    with pytest.raises(yaml_io.BaselineError) as caught:
        yaml_io.parse(edited, path)
    assert caught.value.line == line
    assert "level_ms 0.9 is not the level of its own figures" in caught.value.problem
    assert "the geometric mean of rounds_ms" in caught.value.problem


@pytest.mark.parametrize("path", sorted((REPO / "baselines").rglob("*.yaml")), ids=lambda p: p.name)
def test_the_committed_baselines_read_and_are_written_as_the_current_schema(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    entries = yaml_io.read(path)
    assert entries and yaml_io.dump(entries) == text
    for entry in entries.values():
        for record in (entry.device_time, entry.host_latency):
            if record is not None:
                assert f"level_ms: {rounded(record.level_ms)!r}" in text


# --- what a reader sees -----------------------------------------------------------------------------


def test_the_table_the_yaml_and_the_run_file_show_one_baseline_level(project: Project) -> None:
    project.pytester.makeconftest(scripted_conftest(jitter=0.05, round_sd=0.05))
    project.module()
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    (devices,) = yaml.safe_load(project.baseline_file.read_text())["entries"].values()
    (stored,) = (modes["hot"]["device_time"] for modes in devices.values())
    assert stored["level_ms"] != stored["median_ms"]

    result = project.run("--kernelperf", "--kernelperf-json=run.json")

    result.assert_outcomes(passed=1)
    (judged,) = json.loads((project.pytester.path / "run.json").read_text())["results"]
    assert judged["baseline"]["level_ms"] == pytest.approx(stored["level_ms"], rel=LEVEL_SLACK)
    lines = result.stdout.str().splitlines()
    header = next(index for index, line in enumerate(lines) if "Time (ms)" in line and "Baseline" in line)
    column = lines[header].index("Baseline")
    shown = lines[header + 1][column:].split()[0]
    assert re.fullmatch(r"[0-9.]+", shown)
    assert shown == f"{stored['level_ms']:.4g}" != f"{stored['median_ms']:.4g}"
