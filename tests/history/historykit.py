"""Helpers of the history tests: a stand-in change point detector for machines without Apache Otava
(the `history` extra), and stores filled with made-up runs."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_kernelperf.history import synthetic_runs as runfiles
from pytest_kernelperf.history.changepoints import Params, RawChange
from pytest_kernelperf.history.store import HistoryStore


def split_backend(values: Sequence[float], params: Params) -> list[RawChange]:
    """Binary segmentation on means: a split is kept when the two sides differ by more than 2%.
    Deterministic and crude: it stands in for Otava in tests of everything around detection."""
    found: list[int] = []

    def segment(lo: int, hi: int) -> None:
        best, best_gap = None, 0.0
        for i in range(lo + 3, hi - 2):
            left, right = values[lo:i], values[i:hi]
            gap = abs(sum(right) / len(right) / (sum(left) / len(left)) - 1)
            if gap > best_gap:
                best, best_gap = i, gap
        if best is not None and best_gap > 0.02:
            found.append(best)
            segment(lo, best)
            segment(best, hi)

    segment(0, len(values))
    return [RawChange(i, 1e-4) for i in sorted(found)]


def commit_of(i: int) -> str:
    return f"{0xC0FFEE00 + i:08x}" + "0" * 32


def fill(
    store: HistoryStore,
    levels: Sequence[float],
    *,
    nodeid: str = "tests/test_gelu.py::test_gelu",
    name: str | None = "gelu",
    code_from: int | None = None,
    first: int = 0,
) -> None:
    """One run per level (a run's three rounds spread by 0.1%); the generated code changes at run
    `code_from`."""
    for i, level in enumerate(levels):
        code = "aaaa1111" if code_from is None or i < code_from else "bbbb2222"
        rounds = [level * f for f in (0.999, 1.0, 1.001)]
        result = runfiles.result(
            nodeid, level, name=name, rounds=rounds, kernels=[("triton_poi_fused_gelu_0", code)]
        )
        store.append_run(
            runfiles.run([result], created=runfiles.created(first + i)), commit=commit_of(first + i)
        )
