"""Nsight Compute's raw CSV read into counters, the diff of two runs' counters, and their schema.

tests/data/ncu_*.csv are in ncu's `--csv --page raw --print-units base` layout: ncu_raw.csv and
ncu_raw_regressed.csv written in that layout for these tests, and ncu_h200_raw.csv recorded by
studies/ncu_study.py on an H200 (Nsight Compute 2025.3.1, 2026-12-03: a Triton kernel, torch's
elementwise add launched twice, a cuBLAS SGEMM, with every device attribute column ncu adds).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kernelperf.baselines.schema import SchemaError, as_stored, entry_from_data, entry_to_data
from pytest_kernelperf.model.counters import COUNTERS, KernelCounters
from pytest_kernelperf.profiling import ncu_csv, ncu_diff

DATA = Path(__file__).resolve().parent / "data"
RECORDED = sorted(DATA.glob("ncu_*.csv"))


@pytest.mark.parametrize("path", RECORDED, ids=[p.name for p in RECORDED])
def test_every_recorded_csv_gives_counters_per_kernel(path: Path) -> None:
    kernels = ncu_csv.per_kernel(ncu_csv.parse(path.read_text(encoding="utf-8")))
    assert kernels
    for kernel in kernels:
        assert kernel.name and kernel.launches >= 1
        assert kernel.values.get("duration_ns", 0) > 0
        assert set(kernel.values) <= {counter.key for counter in COUNTERS}


def test_the_fixture_reads_as_written() -> None:
    add, fill = ncu_csv.per_kernel(ncu_csv.parse((DATA / "ncu_raw.csv").read_text()))
    assert add.name == "triton_poi_fused_add_0" and add.launches == 1
    assert add.values["dram_read_bytes"] == 67108864.0  # "67,108,864": thousands separators
    assert add.values["occupancy_pct"] == 62.35
    assert add.values["registers"] == 64
    assert add.values["shared_bytes"] == 0
    assert add.values["sectors_per_request"] == 4.0
    assert add.stalls()[0] == ("long_scoreboard", 18.7)
    assert "l2_hit_pct" not in fill.values  # n/a: not read


def test_the_h200_recording_reads_as_ncu_wrote_it() -> None:
    triton, add, gemm = ncu_csv.per_kernel(ncu_csv.parse((DATA / "ncu_h200_raw.csv").read_text()))
    assert triton.name == "fused_kernel" and triton.launches == 1
    assert triton.values["dram_read_bytes"] == 67114752.0  # 2^24 fp32 read once, and a little more
    assert triton.values["registers"] == 18 and triton.values["shared_bytes"] == 0
    assert triton.values["sectors_per_request"] == 16.0  # 128-bit loads: 32 lanes x 16 B
    assert triton.stalls()[0] == ("long_scoreboard", 145.61)
    assert add.name.startswith("void at::vectorized_elementwise_kernel<4") and add.launches == 2
    assert gemm.values["shared_bytes"] == 49152.0 and gemm.values["registers"] == 202
    assert gemm.values["occupancy_pct"] == 12.5


HEADER = (
    '"ID","Process ID","Kernel Name","dram__bytes_read.sum","gpu__time_duration.sum",'
    '"launch__registers_per_thread"'
)


def test_units_other_than_the_base_ones_are_scaled() -> None:
    text = "\n".join([HEADER, '"","","","Mbyte","usecond","register/thread"', '"0","1","k","2.5","1.5","40"'])
    (launch,) = ncu_csv.parse(text)
    assert launch.metrics == {
        "dram__bytes_read.sum": 2.5e6,
        "gpu__time_duration.sum": 1500.0,
        "launch__registers_per_thread": 40.0,
    }


def test_launches_of_one_kernel_add_their_time_and_bytes_and_average_the_rest() -> None:
    text = "\n".join(
        [HEADER, '"0","1","k","100","10","32"', '"1","1","k","300","30","64"', '"2","1","","1","1","1"']
    )
    (kernel,) = ncu_csv.per_kernel(ncu_csv.parse(text))  # no units line; a row without a name skipped
    assert kernel.launches == 2
    assert kernel.values == {"dram_read_bytes": 400.0, "duration_ns": 40.0, "registers": 48.0}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("==PROF== Disconnected\n", 'no header line starting with "ID"'),
        ('"ID","Process ID","Stream"\n"0","1","7"\n', "no kernel name column"),
    ],
)
def test_output_that_is_not_the_raw_page_is_refused(text: str, problem: str) -> None:
    with pytest.raises(ncu_csv.CsvError, match=problem):
        ncu_csv.parse(text)


def test_damaged_cells_are_counters_not_read() -> None:
    text = "\n".join([HEADER, '"0","1","k","lots","","inf"'])
    (launch,) = ncu_csv.parse(text)
    assert launch.metrics == {}


def kernel(name: str = "k", **values: float) -> KernelCounters:
    return KernelCounters(name, 1, values)


def test_only_counters_beyond_their_noise_band_are_shown() -> None:
    before = kernel(dram_read_bytes=64 << 20, occupancy_pct=62.0, registers=64, l2_hit_pct=50.0)
    after = kernel(dram_read_bytes=(64 << 20) * 1.02, occupancy_pct=31.0, registers=128, l2_hit_pct=53.0)
    assert ncu_diff.kernel_changes(before, after) == ["occupancy 62% -> 31%", "registers 64 -> 128"]
    assert ncu_diff.counter_lines([before], [before]) == [
        "hardware counters (Nsight Compute): none moved beyond its noise band against the baseline's"
    ]


def test_kernels_added_and_gone_are_named() -> None:
    lines = ncu_diff.counter_lines(
        [kernel("fused", duration_ns=10.0)], [kernel("a", duration_ns=6.0), kernel("b", duration_ns=5.0)]
    )
    assert lines == [
        "hardware counters against the baseline's (Nsight Compute):",
        "  + a: new, duration 6 ns",
        "  + b: new, duration 5 ns",
        "  - fused: gone (it had duration 10 ns)",
    ]


def test_sectors_per_request_show_an_uncoalesced_load() -> None:
    (line,) = ncu_diff.kernel_changes(kernel(sectors_per_request=4.0), kernel(sectors_per_request=32.0))
    assert line == "sectors per global load 4 -> 32 (+700%)"


ENTRY = {
    "recorded": "2026-12-01T00:00:00Z",
    "device_time": {
        "method": "cupti",
        "median_ms": 1.0,
        "ci_ms": [0.9, 1.1],
        "n": 3,
        "quantiles_ms": [0.9, 1.0, 1.1],
    },
}


def test_counters_survive_a_round_trip_through_plain_data() -> None:
    data = {
        **ENTRY,
        "counters": [{"name": "k", "launches": 2, "metrics": {"registers": 64, "stall_wait": 0.25}}],
    }
    entry = entry_from_data(data)
    assert entry.counters == (KernelCounters("k", 2, {"registers": 64.0, "stall_wait": 0.25}),)
    assert entry_from_data(entry_to_data(as_stored(entry))) == entry


@pytest.mark.parametrize(
    ("counters", "where", "problem"),
    [
        ("lots", "counters", "counters must be a list of mappings"),
        ([{"name": "k", "launches": 0, "metrics": {}}], "counters[0].launches", "positive whole number"),
        (
            [{"name": "k", "launches": 1, "metrics": {"warp_speed": 1}}],
            "counters[0].metrics.warp_speed",
            "unknown counter",
        ),
        (
            [{"name": "k", "launches": 1, "metrics": {"registers": -1}}],
            "counters[0].metrics.registers",
            "finite positive",
        ),
        (
            [{"name": "k", "launches": 1, "metrics": {"occupancy_pct": 101}}],
            "counters[0].metrics.occupancy_pct",
            "at most 100",
        ),
        ([{"name": "k", "launches": 1}], "counters[0].metrics", "must be a mapping, got null"),
        ([{"name": "k", "launches": 1, "metrics": {}}] * 2, "counters[1]", "listed twice"),
    ],
)
def test_a_damaged_counters_field_is_refused_naming_it(counters: object, where: str, problem: str) -> None:
    with pytest.raises(SchemaError, match=problem) as caught:
        entry_from_data({**ENTRY, "counters": counters})
    assert str(caught.value).startswith(where + ":")


def test_kernels_split_in_two_show_the_calls_dram_bytes() -> None:
    fused = kernel("fused", dram_read_bytes=256 << 20, dram_write_bytes=256 << 20)
    scale = kernel("scale", dram_read_bytes=256 << 20, dram_write_bytes=256 << 20)
    lines = ncu_diff.counter_lines(
        [fused], [scale, kernel("shift", dram_read_bytes=256 << 20, dram_write_bytes=256 << 20)]
    )
    assert (
        lines[1] == "  all kernels of the call: DRAM read 256 MiB -> 512 MiB (+100%), "
        "DRAM write 256 MiB -> 512 MiB (+100%)"
    )


def test_the_history_keeps_counters_per_series_and_run(tmp_path: Path) -> None:
    from pytest_kernelperf.history import counters
    from pytest_kernelperf.history import synthetic_runs as rf
    from pytest_kernelperf.history.rows import SeriesKey, counters_of
    from pytest_kernelperf.history.store import HistoryStore
    from pytest_kernelperf.results import runfile

    metrics = {"dram_read_bytes": 64.0, "occupancy_pct": 62.0}
    run = rf.run([rf.result("t.py::a", 1.0), rf.result("t.py::b", 1.0), rf.result("t.py::c", 1.0)])
    run["results"][0]["baseline_entry"]["counters"] = [{"name": "add", "launches": 1, "metrics": metrics}]
    run["results"][2]["baseline_entry"] = None
    found = list(counters_of(runfile.check(run).report))
    key = SeriesKey("t.py::a", "", rf.H200, "hot", "device_time")
    assert found == [(key, KernelCounters("add", 1, metrics))]
    with HistoryStore(tmp_path / "history.sqlite") as store:
        stored = store.ingest(run)
        (series_id,) = [sid for sid, k in store.series().items() if k == key]
        assert counters.read(store.db, series_id) == {stored.run_id: (KernelCounters("add", 1, metrics),)}


@pytest.mark.parametrize(
    ("cli", "ini", "problem"),
    [
        (
            {"ncu_timeout": "0"},
            {},
            "--kernelperf-ncu-timeout: expected more than 0 and at most 3600 seconds, got '0'",
        ),
        ({}, {"ncu": "maybe"}, "kernelperf_ncu in tox.ini: expected true or false, got 'maybe'"),
    ],
)
def test_the_ncu_options_are_validated_naming_where_they_came_from(
    tmp_path: Path, cli: dict[str, str], ini: dict[str, str], problem: str
) -> None:
    from pytest_kernelperf.settings import SettingsError, resolve

    with pytest.raises(SettingsError) as caught:
        resolve(cli, ini, rootdir=tmp_path, ini_file="tox.ini")
    assert str(caught.value) == problem


def test_the_marker_may_ask_for_counters() -> None:
    from pytest_kernelperf.settings import Settings, SettingsError

    assert Settings().with_marker({"ncu": True}, where="m").ncu
    with pytest.raises(SettingsError, match="m: ncu: expected true or false"):
        Settings().with_marker({"ncu": "often"}, where="m")
