"""studies/verdicts.py's re-judging of recorded samples (no GPU: the samples are made up here)."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "studies" / "verdicts.py"


@pytest.fixture(scope="module")
def verdicts() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_verdicts", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rows(processes: int, slowdowns: dict[str, float]) -> list[dict[str, Any]]:
    rng = random.Random(7)
    out = []
    for process in range(processes):
        for size in ("small", "large"):
            for variant, slowdown in slowdowns.items():
                samples = [(1 + slowdown) * (1 + rng.gauss(0, 0.002)) for _ in range(60)]
                out.append(
                    {
                        "process": process,
                        "size": size,
                        "variant": variant,
                        "samples_ms": samples,
                        "real_slowdown": slowdown,
                    }
                )
    return out


def test_every_baseline_judges_each_pair_of_processes(verdicts: ModuleType) -> None:
    made_up = {"A/A": 0.0, "+3%": 0.01, "+5%": 0.04, "+10%": 0.10}  # +5% lies between the thresholds
    table = verdicts.every_baseline(rows(3, made_up))
    lines = {tuple(cell.strip() for cell in line.split("|")[1:3]): line for line in table.splitlines()[2:]}
    assert len(lines) == 8  # two sizes, four variants
    assert lines[("small (2^20)", "A/A")].endswith("| 0/6 (0.0%) | 0/6 (0.0%) |")
    assert lines[("large (2^26)", "+3%")].endswith("| 0/6 (0.0%) | 0/6 (0.0%) |")
    assert lines[("large (2^26)", "+5%")].endswith("| 6/6 (100.0%) | 0/6 (0.0%) |")
    assert (
        lines[("small (2^20)", "+10%")] == "| small (2^20) | +10% | +10.00% | 6/6 (100.0%) | 6/6 (100.0%) |"
    )
