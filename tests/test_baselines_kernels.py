"""The optional `kernels:` list of a baseline entry: strict validation, deterministic writing."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_kernelperf.baselines.schema import as_stored
from pytest_kernelperf.baselines.yaml_io import BaselineError, dump, parse
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey, MetricRecord
from pytest_kernelperf.model.call import KernelRecord

PATH = Path("baselines/test_x.yaml")
KEY = EntryKey("test_gelu", "NVIDIA H200", "hot")
METRIC = MetricRecord("cupti", 0.5, (0.49, 0.51), 10, (0.49, 0.5, 0.51))


def entry(kernels: tuple[KernelRecord, ...] | None) -> BaselineEntry:
    return BaselineEntry(
        device_time=METRIC, recorded="2026-11-30T12:00:00Z", environment={"torch": "2.11.0"}, kernels=kernels
    )


def file_with(kernels_yaml: str) -> str:
    body = textwrap.indent(textwrap.dedent(kernels_yaml).strip("\n"), " " * 8)
    return (
        "schema_version: 1\n"
        "entries:\n"
        "  test_gelu:\n"
        "    NVIDIA H200:\n"
        "      hot:\n"
        "        recorded: '2026-11-30T12:00:00Z'\n"
        "        device_time: {method: cupti, median_ms: 0.5, ci_ms: [0.49, 0.51], n: 10,"
        " quantiles_ms: [0.5]}\n"
        f"{body}\n"
    )


def test_round_trip_sorted_by_name_one_line_per_kernel() -> None:
    kernels = (
        KernelRecord("triton_poi_fused_mul_1", 1, 0.3, 0.21, code="0123456789ab"),
        KernelRecord("Memcpy DtoD (Device -> Device)", 2, 0.0, 0.0),
        KernelRecord("gelu_kernel(float const*, float*, long)", 1, 0.7, 0.5),
    )
    text = dump({KEY: as_stored(entry(kernels))})
    assert text == dump({KEY: as_stored(entry(tuple(reversed(kernels))))})  # input order does not matter
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("- {")]
    assert lines == [
        "- {launches: 2, ms: 0.0, name: Memcpy DtoD (Device -> Device), share: 0.0}",
        "- {launches: 1, ms: 0.5, name: 'gelu_kernel(float const*, float*, long)', share: 0.7}",
        "- {code: 0123456789ab, launches: 1, ms: 0.21, name: triton_poi_fused_mul_1, share: 0.3}",
    ]
    assert parse(text, PATH)[KEY] == as_stored(entry(kernels))


def test_entries_without_kernels_stay_without() -> None:
    text = dump({KEY: as_stored(entry(None))})
    assert "kernels" not in text
    assert parse(text, PATH)[KEY].kernels is None
    assert parse(dump({KEY: as_stored(entry(()))}), PATH)[KEY].kernels == ()


def test_a_hash_made_of_digits_stays_a_string() -> None:
    kernels = (KernelRecord("k", 1, 1.0, 0.5, code="012345678901"),)
    assert parse(dump({KEY: as_stored(entry(kernels))}), PATH)[KEY].kernels == kernels


@pytest.mark.parametrize(
    ("kernels_yaml", "problem", "line"),
    [
        ("kernels: {name: k}", "kernels must be a list of mappings", 8),
        ("kernels:\n- just a name", "each item of kernels must be a mapping", 8),
        ("kernels:\n- {name: k, launches: 1, share: 1.0}", "kernels item missing ms", 9),
        ("kernels:\n- {name: k, launches: 1, share: 1.0, ms: 0.5, colour: red}", "unknown key 'colour'", 9),
        ("kernels:\n- {name: '', launches: 1, share: 1.0, ms: 0.5}", "name must be a non-empty string", 9),
        ("kernels:\n- {name: k, launches: 0, share: 1.0, ms: 0.5}", "launches of 'k' must be a positive", 9),
        (
            "kernels:\n- {name: k, launches: 1.5, share: 1.0, ms: 0.5}",
            "launches of 'k' must be a positive",
            9,
        ),
        (
            "kernels:\n- {name: k, launches: 1, share: 1.5, ms: 0.5}",
            "share of 'k' must lie between 0 and 1",
            9,
        ),
        (
            "kernels:\n- {name: k, launches: 1, share: 1.0, ms: -1.0}",
            "ms of 'k' must be a finite positive",
            9,
        ),
        ("kernels:\n- {name: k, launches: 1, share: 1.0, ms: 1e-3}", "write numbers plainly", 9),
        ("kernels:\n- {name: k, launches: 1, share: 1.0, ms: 0.5, code: XYZ}", "must be a hex hash", 9),
        (
            "kernels:\n- {name: k, launches: 1, share: 0.5, ms: 0.5}\n"
            "- {name: k, launches: 1, share: 0.5, ms: 0.5}",
            "kernel 'k' listed twice (first as kernels[0])",
            10,
        ),
    ],
)
def test_bad_kernels_are_refused_with_file_and_line(kernels_yaml: str, problem: str, line: int) -> None:
    with pytest.raises(BaselineError) as caught:
        parse(file_with(kernels_yaml), PATH)
    assert problem in caught.value.problem
    assert caught.value.line == line
    assert str(caught.value).startswith(f"baseline file {PATH}:{line}: test_gelu / NVIDIA H200 / hot")
