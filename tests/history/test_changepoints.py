"""Change points: attribution, drift, caching; and Otava itself where the `history` extra is installed."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from pytest_kernelperf.history import changepoints
from pytest_kernelperf.history.changepoints import (
    ChangePointsUnavailable,
    Params,
    RawChange,
    analyse_store,
    attribute,
    change_points,
)
from pytest_kernelperf.history.points import Point
from pytest_kernelperf.history.store import HistoryStore

from .historykit import commit_of, fill, split_backend

ENV = {"torch": "2.13.0", "triton": "3.6.0", "cuda": "12.8", "driver": "570.86"}


def point(
    i: int,
    value: float,
    *,
    kernels: Sequence[tuple[str, str | None]] | None = (("triton_poi_fused_mul_0", "aaaa"),),
    autotune: dict[str, int] | None = None,
    env: dict[str, str] | None = None,
) -> Point:
    return Point(
        run_id=i + 1,
        created=f"2026-11-01T00:{i:02d}:00Z",
        commit=commit_of(i),
        branch="main",
        level_ms=value,
        rounds_ms=(value,),
        kernels=None if kernels is None else tuple({"name": n, "code": c, "launches": 1} for n, c in kernels),
        autotune=autotune,
        environment=env or ENV,
    )


def test_attribution_names_the_kernel_whose_code_changed() -> None:
    before = point(0, 1.0, kernels=[("triton_poi_fused_mul_0", "aaaa"), ("triton_red_fused_sum_1", "cccc")])
    after = point(1, 1.04, kernels=[("triton_poi_fused_mul_0", "bbbb"), ("triton_red_fused_sum_1", "cccc")])
    found = attribute(before, after)
    assert found.code_changed == ("triton_poi_fused_mul_0",)
    assert found.text() == (
        "generated code of triton_poi_fused_mul_0 changed; no autotuner choices recorded; "
        "environment unchanged"
    )


def test_attribution_of_inventory_autotune_and_environment() -> None:
    before = point(0, 1.0, kernels=[("k_old", "aaaa"), ("k_same", "s")], autotune={"BLOCK": 512, "warps": 4})
    after = point(
        1,
        1.1,
        kernels=[("k_new", "bbbb"), ("k_same", "s")],
        autotune={"BLOCK": 1024, "warps": 4},
        env={**ENV, "triton": "3.7.0", "driver": "575.1"},
    )
    found = attribute(before, after)
    assert (found.kernels_added, found.kernels_removed) == (("k_new",), ("k_old",))
    assert found.autotune_changed == ("BLOCK",)
    assert found.environment_changed == (("driver", "570.86", "575.1"), ("triton", "3.6.0", "3.7.0"))
    assert found.clauses() == [
        "generated code unchanged",
        "kernels added: k_new",
        "kernels removed: k_old",
        "autotune choice changed (BLOCK)",
        "environment changed: driver 570.86 -> 575.1, triton 3.6.0 -> 3.7.0",
    ]


def test_attribution_says_what_was_not_recorded() -> None:
    assert attribute(point(0, 1.0, kernels=None), point(1, 1.0)).text() == (
        "kernel inventory not recorded; no autotuner choices recorded; environment unchanged"
    )
    unchanged = attribute(point(0, 1.0, autotune={"BLOCK": 1}), point(1, 1.0, autotune={"BLOCK": 1}))
    assert "autotune choice unchanged" in unchanged.text()
    no_hashes = attribute(point(0, 1.0, kernels=[("k", None)]), point(1, 1.0, kernels=[("k", None)]))
    assert no_hashes.clauses()[0] == "no code hashes recorded"


def test_a_step_is_reported_with_range_magnitude_confidence_and_attribution() -> None:
    points = [point(i, 1.0) for i in range(10)]
    points += [point(i, 1.041, kernels=[("triton_poi_fused_mul_0", "bbbb")]) for i in range(10, 20)]
    (found,) = change_points(points, raw=[RawChange(10, 0.01)])
    assert (found.index, found.kind, found.slowdown) == (10, "step", True)
    assert found.change_pct == pytest.approx(4.1)
    assert found.confidence == pytest.approx(0.99)
    assert found.commit_range() == f"{commit_of(9)[:7]}..{commit_of(10)[:7]}"
    assert found.describe() == (
        f"at {commit_of(10)[:7]}: +4.1% (99% confidence); generated code of triton_poi_fused_mul_0 changed; "
        "no autotuner choices recorded; environment unchanged"
    )


def test_same_direction_steps_close_together_are_one_drift() -> None:
    levels = [1.0] * 10 + [1.01] * 3 + [1.02] * 3 + [1.03] * 10
    points = [point(i, v) for i, v in enumerate(levels)]
    (drift,) = change_points(points, raw=[RawChange(10, 1e-3), RawChange(13, 1e-3), RawChange(16, 1e-4)])
    assert drift.kind == "drift" and drift.drift_steps == 3 and drift.drift_from == 10
    assert drift.change_pct == pytest.approx(3.0)
    assert drift.commit_range() == f"{commit_of(9)[:7]}..{commit_of(16)[:7]}"
    assert drift.headline().startswith(f"at {commit_of(16)[:7]}: drift, +3.0%")
    assert drift.pvalue == 1e-3  # the weakest of its steps


def test_opposite_or_distant_steps_stay_apart() -> None:
    levels = [1.0] * 10 + [1.05] * 3 + [1.0] * 20 + [1.05] * 10
    points = [point(i, v) for i, v in enumerate(levels)]
    found = change_points(points, raw=[RawChange(10, 1e-4), RawChange(13, 1e-4), RawChange(33, 1e-4)])
    assert [(c.index, c.kind, c.slowdown) for c in found] == [
        (10, "step", True),
        (13, "step", False),
        (33, "step", True),
    ]


def test_a_single_change_point_inside_a_ramp_is_a_drift() -> None:
    levels = [1.0] * 20 + [1.0 + 0.005 * k for k in range(1, 11)] + [1.05] * 20
    points = [point(i, v) for i, v in enumerate(levels)]
    (found,) = change_points(points, raw=[RawChange(25, 1e-4)])
    assert found.kind == "drift"
    (step,) = change_points([point(i, 1.0 if i < 25 else 1.05) for i in range(50)], raw=[RawChange(25, 1e-4)])
    assert step.kind == "step"


def test_results_are_cached_until_a_series_gets_a_new_run(store: HistoryStore) -> None:
    fill(store, [1.0] * 8 + [1.1] * 8, code_from=8)
    calls: list[int] = []

    def counting(values: Sequence[float], params: Params) -> list[RawChange]:
        calls.append(len(values))
        return split_backend(values, params)

    (first,) = analyse_store(store, backend=counting)
    (again,) = analyse_store(store, backend=counting)
    assert calls == [16]
    assert [c.index for c in first.change_points] == [c.index for c in again.change_points] == [8]
    assert first.status == "slower" and first.total_change_pct == pytest.approx(10.0)
    fill(store, [1.1], first=16)
    analyse_store(store, backend=counting)
    assert calls == [16, 17]


def test_series_with_few_runs_are_not_analysed(store: HistoryStore) -> None:
    fill(store, [1.0, 2.0, 1.0])
    (report,) = analyse_store(store, backend=split_backend)
    assert report.change_points == [] and report.status == "steady" and len(report.points) == 3


def test_without_ruptures_detection_fails_with_the_install_command(
    store: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changepoints, "detector_available", lambda: False)
    fill(store, [1.0] * 6)
    with pytest.raises(ChangePointsUnavailable, match=r"pip install ruptures"):
        analyse_store(store)
    (report,) = analyse_store(store, require=False)
    assert not report.analysed


needs_ruptures = pytest.mark.skipif(
    not changepoints.detector_available(),
    reason="ruptures is not installed (pip install ruptures): the real detector is not exercised",
)


@needs_ruptures
def test_the_detector_finds_a_planted_step_and_nothing_in_noise() -> None:
    rng = random.Random(7)
    noisy = [1.0 * (1 + rng.gauss(0, 0.0046)) for _ in range(60)]
    stepped = [v * (1.02 if i >= 30 else 1.0) for i, v in enumerate(noisy)]
    found = changepoints.split_merge_backend(stepped, Params())
    assert [abs(r.index - 30) <= 1 for r in found] == [True]
    assert changepoints.split_merge_backend(noisy, Params()) == []


@needs_ruptures
def test_the_detector_finds_two_steps_and_ignores_changes_below_the_floor() -> None:
    rng = random.Random(3)
    levels = [1.0] * 40 + [1.1] * 40 + [1.0] * 40
    values = [v * (1 + rng.gauss(0, 0.005)) for v in levels]
    assert [r.index for r in changepoints.split_merge_backend(values, Params())] == [40, 80]
    tiny = [v * (1.002 if i >= 40 else 1.0) for i, v in enumerate([1.0] * 80)]
    assert changepoints.split_merge_backend(tiny, Params()) == []
    assert changepoints.split_merge_backend([1.0, 2.0, 3.0], Params()) == []
