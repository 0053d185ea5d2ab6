"""The one schema of a baseline entry: what every reader (YAML, run JSON, other processes) uses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from baseline_samples import sample_entries

from pytest_kernelperf.baselines.schema import SchemaError, entry_from_data, entry_to_data, path_text


@pytest.mark.parametrize(
    "key", list(sample_entries()), ids=lambda key: f"{key.test}-{key.device}-{key.cache}"
)
def test_every_sample_entry_survives_plain_data_and_json(key: Any) -> None:
    entry = sample_entries()[key]
    assert entry_from_data(json.loads(json.dumps(entry_to_data(entry)))) == entry


def with_device_time(**change: Any) -> dict[str, Any]:
    data = entry_to_data(next(iter(sample_entries().values())))
    data["device_time"].update(change)
    return data


@pytest.mark.parametrize(
    ("data", "path", "problem"),
    [
        (with_device_time(median_ms=-1), "device_time.median_ms", "finite positive number, got -1"),
        (with_device_time(method="Scripted Timer!"), "device_time.method", "method must be a timer name"),
        (with_device_time(ci_ms=[5.0, 1.0]), "device_time.ci_ms", "ci_ms must hold the median"),
        (with_device_time(ci_ms=[0.1, "x"]), "device_time.ci_ms[1]", "ci_ms must be a number, got 'x'"),
        (with_device_time(n=0), "device_time.n", "n must be a positive whole number, got 0"),
        (with_device_time(extra=1), "device_time.extra", "unknown key 'extra'"),
        ({**with_device_time(), "kernels": [{"name": "k"}]}, "kernels[0].launches", "kernels item missing"),
        ({"recorded": "x"}, "device_time", "missing device_time"),
        ([], "", "an entry must be a mapping, got list"),
    ],
)
def test_errors_give_the_fields_path(data: Any, path: str, problem: str) -> None:
    with pytest.raises(SchemaError) as caught:
        entry_from_data(data)
    assert path_text(caught.value.path) == path
    assert problem in caught.value.problem


def test_path_text_is_a_json_path() -> None:
    assert path_text(("results", 3, "baseline_entry", "ci_ms", 1)) == "results[3].baseline_entry.ci_ms[1]"
