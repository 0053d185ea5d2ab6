"""Change points of a series of runs, and what changed around each: code, kernels, autotuning, software.

Detection is split and merge (Hunter's, Fleming et al. 2023, as in Apache Otava): `ruptures`'
binary segmentation proposes candidate splits (`pip install ruptures`, or the `history` extra), and
the least significant is merged away until every one left passes a two-sided Welch t-test between
the segments on either side (at most `window` runs each) and changes the level by at least
`min_magnitude`. Each run contributes one value, `Point.value`: its level, the figure its verdict
judged (runs stored before the level was: the mean of their rounds). Parameters were tuned on
synthetic histories (studies/history/synthetic.py; figures in docs/history.md).

Around each change point, the runs on either side are compared (`attribute`): the generated code's
hash per kernel, the kernel inventory (kernels added or removed), the autotune choices and the
environment (torch, triton, CUDA, driver...). Several change points of the same direction a few
commits apart, or one whose transition is spread over several runs, are reported as a drift.

A call's peak device memory needs no detection: nearly deterministic, it steps (`memory_steps`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

from pytest_kernelperf.formatting import escape_controls
from pytest_kernelperf.settings import DEFAULTS
from pytest_kernelperf.verdict.memory import format_bytes, judge_memory

from .database import HistoryError
from .points import Point
from .rows import SeriesKey
from .store import HistoryStore

INSTALL_HINT = "change points need ruptures: pip install ruptures (or the plugin's `history` extra)"


class ChangePointsUnavailable(RuntimeError):
    """The change point library is not installed."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(INSTALL_HINT + (f" ({detail})" if detail else ""))


@dataclass(frozen=True)
class Params:
    max_pvalue: float = 0.001
    window: int = 30
    min_magnitude: float = 0.005  # relative
    drift_gap: int = 10  # same-direction change points at most this many runs apart form a drift
    ramp_share: float = 0.5  # a transition this spread out around a single change point is a drift

    def key(self) -> str:
        return "split-merge:" + json.dumps(asdict(self), sort_keys=True)


@dataclass(frozen=True)
class RawChange:
    index: int  # first run of the new level
    pvalue: float


Backend = Callable[[Sequence[float], Params], list[RawChange]]


MIN_SEGMENT = 3  # runs on either side of a split: a t-test needs a spread on each


def detector_available() -> bool:
    """Whether ruptures is installed (without importing it: that takes a while, for scipy)."""
    return importlib.util.find_spec("ruptures") is not None


def _welch(left: Sequence[float], right: Sequence[float]) -> tuple[float, float]:
    """(two-sided p-value of Welch's t-test, relative change of the mean) between two segments."""
    from scipy.stats import ttest_ind_from_stats

    m1, m2 = _mean(left), _mean(right)
    s1 = (sum((v - m1) ** 2 for v in left) / (len(left) - 1)) ** 0.5
    s2 = (sum((v - m2) ** 2 for v in right) / (len(right) - 1)) ** 0.5
    magnitude = abs(m2 / m1 - 1) if m1 else 0.0
    if s1 == 0 and s2 == 0:
        return (0.0 if m1 != m2 else 1.0), magnitude
    pvalue = float(ttest_ind_from_stats(m1, s1, len(left), m2, s2, len(right), equal_var=False).pvalue)
    return (pvalue if math.isfinite(pvalue) else 1.0), magnitude  # NaN: no evidence


def split_merge_backend(values: Sequence[float], params: Params) -> list[RawChange]:
    """Candidates from ruptures' binary segmentation (least squares), then merged: the candidate
    with the largest p-value (or a change below `min_magnitude`) goes, until all pass."""
    try:
        import numpy as np
        import ruptures
    except ImportError as exc:
        raise ChangePointsUnavailable(str(exc)) from None
    n = len(values)
    if n < 2 * MIN_SEGMENT:
        return []
    signal = np.asarray(values, dtype=float).reshape(-1, 1)
    most = n // MIN_SEGMENT - 1
    search = ruptures.Binseg(model="l2", min_size=MIN_SEGMENT, jump=1).fit(signal)
    points = sorted(int(i) for i in search.predict(n_bkps=most)[:-1])

    def tested(i: int) -> tuple[float, float]:
        bounds = [0, *points, n]
        at = points[i]
        left = values[max(bounds[i], at - params.window) : at]
        right = values[at : min(bounds[i + 2], at + params.window)]
        return _welch(left, right)

    while points:
        scores = []
        for i in range(len(points)):
            pvalue, magnitude = tested(i)
            scores.append(1.0 if magnitude < params.min_magnitude else pvalue)
        worst = max(range(len(points)), key=scores.__getitem__)
        if scores[worst] <= params.max_pvalue:
            return [RawChange(at, scores[i]) for i, at in enumerate(points)]
        points.pop(worst)
    return []


# --- attribution ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attribution:
    code_changed: tuple[str, ...] = ()  # kernels whose generated code hash differs
    kernels_added: tuple[str, ...] = ()
    kernels_removed: tuple[str, ...] = ()
    inventory_known: bool = False  # both sides have a kernel inventory
    code_known: bool = False  # both sides have code hashes for some common kernel
    autotune_changed: tuple[str, ...] = ()
    # Which sides recorded autotuner choices: a run records None when the call had no autotuner.
    autotune_sides: tuple[bool, bool] = (False, False)
    environment_changed: tuple[tuple[str, str | None, str | None], ...] = ()

    def clauses(self) -> list[str]:
        out: list[str] = []
        if not self.inventory_known:
            out.append("kernel inventory not recorded")
        else:
            if self.code_changed:
                out.append(f"generated code of {', '.join(self.code_changed)} changed")
            elif self.code_known:
                out.append("generated code unchanged")
            else:
                out.append("no code hashes recorded")
            if self.kernels_added:
                out.append(f"kernels added: {', '.join(self.kernels_added)}")
            if self.kernels_removed:
                out.append(f"kernels removed: {', '.join(self.kernels_removed)}")
        if self.autotune_sides == (False, False):
            out.append("no autotuner choices recorded")
        elif self.autotune_sides != (True, True):
            side = "after" if self.autotune_sides[1] else "before"
            out.append(f"autotune choices only {side} the change")
        elif self.autotune_changed:
            out.append(f"autotune choice changed ({', '.join(self.autotune_changed)})")
        else:
            out.append("autotune choice unchanged")
        if self.environment_changed:
            out.append(
                "environment changed: "
                + ", ".join(f"{k} {old or '-'} -> {new or '-'}" for k, old, new in self.environment_changed)
            )
        else:
            out.append("environment unchanged")
        return out

    def text(self) -> str:
        return "; ".join(self.clauses())


def _inventory(point: Point) -> dict[str, set[str | None]] | None:
    kernels = point.inventory()
    if kernels is None:
        return None
    out: dict[str, set[str | None]] = {}
    for kernel in kernels:
        if isinstance(kernel, Mapping) and isinstance(kernel.get("name"), str):
            code = kernel.get("code")
            out.setdefault(kernel["name"], set()).add(code if isinstance(code, str) else None)
    return out


def attribute(before: Point, after: Point) -> Attribution:
    """What differs between the run before a change and the run after it."""
    old, new = _inventory(before), _inventory(after)
    code_changed: list[str] = []
    code_known = False
    added: list[str] = []
    removed: list[str] = []
    if old is not None and new is not None:
        added = sorted(set(new) - set(old))
        removed = sorted(set(old) - set(new))
        for name in sorted(set(old) & set(new)):
            a, b = old[name] - {None}, new[name] - {None}
            if a and b:
                code_known = True
                if a != b:
                    code_changed.append(name)
    autotune_changed: list[str] = []
    sides = (before.autotune is not None, after.autotune is not None)
    if all(sides):
        a_tune, b_tune = dict(before.autotune or {}), dict(after.autotune or {})
        autotune_changed = sorted(k for k in set(a_tune) | set(b_tune) if a_tune.get(k) != b_tune.get(k))
    env_changed = tuple(
        (k, before.environment.get(k), after.environment.get(k))
        for k in sorted(set(before.environment) | set(after.environment))
        if before.environment.get(k) != after.environment.get(k)
    )
    return Attribution(
        code_changed=tuple(code_changed),
        kernels_added=tuple(added),
        kernels_removed=tuple(removed),
        inventory_known=old is not None and new is not None,
        code_known=code_known,
        autotune_changed=tuple(autotune_changed),
        autotune_sides=sides,
        environment_changed=env_changed,
    )


# --- change points -------------------------------------------------------------------------------


def short(commit: str | None) -> str:
    return commit[:7] if commit else "?"


@dataclass(frozen=True)
class ChangePoint:
    index: int  # position of the first run after the change, in the series
    run_id: int
    commit: str | None
    previous_commit: str | None
    previous_run_id: int
    created: str
    before_ms: float  # mean level of the segment before
    after_ms: float  # and after
    pvalue: float
    kind: str  # "step" or "drift"
    attribution: Attribution
    drift_from: int | None = None  # for a drift: index of its first change point
    drift_steps: int = 1

    @property
    def change_pct(self) -> float:
        return (self.after_ms / self.before_ms - 1) * 100 if self.before_ms else 0.0

    @property
    def confidence(self) -> float:
        return max(0.0, 1.0 - self.pvalue)

    @property
    def slowdown(self) -> bool:
        return self.after_ms > self.before_ms

    def commit_range(self) -> str:
        if self.commit is None and self.previous_commit is None:
            return f"run {self.previous_run_id}..run {self.run_id}"
        return f"{short(self.previous_commit)}..{short(self.commit)}"

    def headline(self) -> str:
        where = short(self.commit) if self.commit else f"run {self.run_id}"
        what = f"{self.change_pct:+.1f}% ({_confidence_text(self.confidence)} confidence)"
        if self.kind == "drift":
            what = f"drift, {what} over {self.drift_steps} steps"
        return f"at {where}: {what}"

    def describe(self) -> str:
        return "; ".join([self.headline(), *self.attribution.clauses()])


def _confidence_text(confidence: float) -> str:
    pct = confidence * 100
    if pct >= 99.9:
        return ">99.9%"
    return f"{pct:.0f}%" if pct >= 10 else f"{pct:.1f}%"


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _ramp_share(values: Sequence[float], start: int, index: int, stop: int) -> float:
    """How spread out the transition at `index` is: 0 for a clean step, larger for a ramp.

    Compares the three runs nearest the change on each side with the means of the segments they
    belong to; in a step they match, in a ramp they sit between the two levels."""
    before, after = values[start:index], values[index:stop]
    if len(before) < 6 or len(after) < 6:
        return 0.0
    jump = _mean(after) - _mean(before)
    if jump == 0:
        return 0.0
    near_before, near_after = _mean(before[-3:]), _mean(after[:3])
    return ((_mean(after) - near_after) + (near_before - _mean(before))) / jump


def change_points(
    points: Sequence[Point],
    params: Params = Params(),
    raw: Sequence[RawChange] | None = None,
    backend: Backend | None = None,
) -> list[ChangePoint]:
    """The change points of one series (points in run order), drifts merged into one entry each."""
    values = [p.value for p in points]
    if raw is None:
        raw = (backend or split_merge_backend)(values, params)
    found = sorted((r for r in raw if 0 < r.index < len(points)), key=lambda r: r.index)
    bounds = [0, *(r.index for r in found), len(points)]
    steps: list[ChangePoint] = []
    for i, r in enumerate(found):
        start, stop = bounds[i], bounds[i + 2]
        before, after = values[start : r.index], values[r.index : stop]
        ramp = _ramp_share(values, start, r.index, stop)
        steps.append(
            ChangePoint(
                index=r.index,
                run_id=points[r.index].run_id,
                commit=points[r.index].commit,
                previous_commit=points[r.index - 1].commit,
                previous_run_id=points[r.index - 1].run_id,
                created=points[r.index].created,
                before_ms=_mean(before),
                after_ms=_mean(after),
                pvalue=r.pvalue,
                kind="drift" if ramp >= params.ramp_share else "step",
                attribution=attribute(points[r.index - 1], points[r.index]),
                drift_from=r.index if ramp >= params.ramp_share else None,
            )
        )
    return _merge_drifts(steps, values, points, params)


def _merge_drifts(
    steps: list[ChangePoint], values: Sequence[float], points: Sequence[Point], params: Params
) -> list[ChangePoint]:
    """Same-direction change points at most `drift_gap` runs apart become one drift."""
    out: list[ChangePoint] = []
    group: list[ChangePoint] = []

    def flush() -> None:
        if not group:
            return
        if len(group) == 1:
            out.append(group[0])
        else:
            first, last = group[0], group[-1]
            start = out[-1].index if out else 0
            after_end = next((s.index for s in steps if s.index > last.index), len(values))
            before = values[start : first.index]
            after = values[last.index : after_end]
            # Attribution spans the whole drift: the run before its first step and after its last.
            out.append(
                ChangePoint(
                    index=last.index,
                    run_id=last.run_id,
                    commit=last.commit,
                    previous_commit=first.previous_commit,
                    previous_run_id=first.previous_run_id,
                    created=last.created,
                    before_ms=_mean(before) if before else first.before_ms,
                    after_ms=_mean(after) if after else last.after_ms,
                    pvalue=max(s.pvalue for s in group),
                    kind="drift",
                    attribution=attribute(points[first.index - 1], points[last.index]),
                    drift_from=first.index,
                    drift_steps=len(group),
                )
            )
        group.clear()

    for step in steps:
        if group and (step.slowdown != group[-1].slowdown or step.index - group[-1].index > params.drift_gap):
            flush()
        group.append(step)
    flush()
    return out


# --- device memory -------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryStep:
    """A run whose call's peak device memory moved from the run before by more than the memory
    threshold allows (verdict/memory.py's rule, either way): memory is nearly deterministic, so a
    step between two runs needs no change point detection."""

    run_id: int
    commit: str | None
    before_bytes: int
    after_bytes: int

    @property
    def grew(self) -> bool:
        return self.after_bytes > self.before_bytes

    def describe(self) -> str:
        """ "peak memory 64 MiB -> 128 MiB (+64 MiB) at 1a2b3c4d" """
        change = self.after_bytes - self.before_bytes
        where = short(self.commit) if self.commit else f"run {self.run_id}"
        return (
            f"peak memory {format_bytes(self.before_bytes)} -> {format_bytes(self.after_bytes)} "
            f"({'+' if change > 0 else '-'}{format_bytes(abs(change))}) at {where}"
        )


def memory_steps(
    points: Sequence[Point], threshold: float = DEFAULTS["memory_threshold"]
) -> list[MemoryStep]:
    """The runs whose peak memory stepped from the run before that measured it."""
    known = [p for p in points if p.peak_memory_bytes is not None]
    steps = []
    for before, after in itertools.pairwise(known):
        old, new = before.peak_memory_bytes, after.peak_memory_bytes
        assert old is not None and new is not None
        if judge_memory(new, old, threshold).exceeded or judge_memory(old, new, threshold).exceeded:
            steps.append(MemoryStep(after.run_id, after.commit, old, new))
    return steps


# --- whole store ---------------------------------------------------------------------------------


@dataclass
class SeriesReport:
    series_id: int
    key: SeriesKey
    points: list[Point]
    change_points: list[ChangePoint] = field(default_factory=list)
    analysed: bool = True  # False: too few runs, or the library is missing

    @cached_property
    def memory_steps(self) -> list[MemoryStep]:
        return memory_steps(self.points)

    @property
    def latest(self) -> Point:
        return self.points[-1]

    @property
    def total_change_pct(self) -> float:
        first, last = self.points[0].value, self.points[-1].value
        return (last / first - 1) * 100 if first else 0.0

    @property
    def last_change(self) -> ChangePoint | None:
        return self.change_points[-1] if self.change_points else None

    @property
    def status(self) -> str:
        """ "slower", "faster" (the latest change point's direction), or "steady"."""
        last = self.last_change
        if last is None:
            return "steady"
        return "slower" if last.slowdown else "faster"


MIN_RUNS = 5


def analyse_store(
    store: HistoryStore,
    params: Params = Params(),
    backend: Backend | None = None,
    *,
    require: bool = True,
    series_filter: Callable[[SeriesKey], bool] | None = None,
    branch: str | None = None,
    runs: Collection[int] | None = None,
) -> list[SeriesReport]:
    """Every series with its change points; detection results are cached in the store per series
    until a newer run arrives. With `require`, a missing library raises ChangePointsUnavailable;
    without, series that are not in the cache are returned unanalysed. With `branch`, only the
    runs recorded on that git branch count; with `runs`, only the runs of those ids (the history as
    it stood at an earlier run: its analysis is not cached, the store keeping one per series)."""
    keys = store.series()
    all_points = store.points()
    available = backend is not None or detector_available()
    if require and not available:
        raise ChangePointsUnavailable()
    run_backend = backend or split_merge_backend
    cache_key = (
        params.key()
        if backend is None
        else f"custom:{getattr(backend, '__name__', 'backend')}:{params.key()}"
    )
    reports: list[SeriesReport] = []
    fresh: list[tuple[int, int, int, str, Any]] = []
    for sid, key in keys.items():
        if series_filter is not None and not series_filter(key):
            continue
        points = all_points.get(sid)
        if points and runs is not None:
            points = [p for p in points if p.run_id in runs]
        key_of_series = cache_key
        if points and branch is not None:
            on_branch = [p for p in points if p.branch == branch]
            if len(on_branch) != len(points):  # else the same series, and the same analysis
                points, key_of_series = on_branch, f"{cache_key}:branch={branch}"
        if not points:
            continue
        if len(points) < MIN_RUNS:
            reports.append(SeriesReport(sid, key, points))
            continue
        cached = store.cached_analysis(sid, points[-1].run_id, len(points), key_of_series)
        if cached is not None:
            raw = [RawChange(int(i), float(p)) for i, p in cached]
        elif available:
            raw = run_backend([p.value for p in points], params)
            if runs is None:
                fresh.append(
                    (sid, points[-1].run_id, len(points), key_of_series, [[r.index, r.pvalue] for r in raw])
                )
        else:
            reports.append(SeriesReport(sid, key, points, analysed=False))
            continue
        reports.append(SeriesReport(sid, key, points, change_points(points, params, raw=raw)))
    with contextlib.suppress(HistoryError):  # a read-only or busy database: the cache can wait
        store.cache_analyses(fresh)
    return reports


# As runs arrive after a change point, its position moves by a run or two. Two change points of one
# direction are at least MIN_SEGMENT runs apart (or merged into one drift), so one nearer than that
# to an earlier change point of its direction is that change point, not another.
SAME_CHANGE_RUNS = MIN_SEGMENT - 1


def new_change_points(
    now: Sequence[SeriesReport], earlier: Sequence[SeriesReport]
) -> list[tuple[SeriesReport, ChangePoint]]:
    """The change points of `now` that `earlier` (the same series on the history as it stood at
    an earlier run) did not show: those detectable only since. A change point needs runs after it,
    so one is first seen after runs that follow it: its position says nothing of when it was found.
    A drift that gained a step since is new (its last step moved)."""
    before = {report.series_id: report.change_points for report in earlier}
    return [
        (report, cp)
        for report in now
        for cp in report.change_points
        if not any(
            old.slowdown == cp.slowdown and abs(old.index - cp.index) <= SAME_CHANGE_RUNS
            for old in before.get(report.series_id, ())
        )
    ]


def resolve_commit(store: HistoryStore, commit: str) -> list[int]:
    """Run ids whose commit starts with `commit` (a full or abbreviated hash)."""
    return store.run_ids_at(commit)


def status_text(report: SeriesReport, *, since: bool = True) -> str:
    """A series' state in words: not analysed, too few runs, steady, or its last change (with the
    commit it happened at, unless `since` is off: the dashboard filters on the bare words)."""
    if not report.analysed:
        return "not analysed"
    if len(report.points) < 5:
        return "too few runs"
    last = report.last_change
    if last is None:
        return "steady"
    word = f"{'drift ' if last.kind == 'drift' else ''}{'slower' if last.slowdown else 'faster'}"
    if not since:
        return word
    return f"{word} since {short(last.commit) if last.commit else f'run {last.run_id}'}"


def series_label(report: SeriesReport) -> str:
    """ "tests/test_k.py::test_mul [gelu] (host_latency)": the test, the call's name, a metric other
    than device time."""
    key = report.key
    name = f" [{key.name}]" if key.name else ""
    metric = "" if key.metric == "device_time" else f" ({key.metric})"
    return f"{key.test}{name}{metric}"


def change_line(report: SeriesReport, cp: ChangePoint) -> str:
    """One change point on one line, as `history detect` and `history alert` say it: a line break
    in a stored name (a history written by other means than `import`) shown as an escape, so that
    it cannot make a line of its own in a terminal, a log or a chat message."""
    mark = "SLOWER" if cp.slowdown else "faster"
    line = f"{mark:6}  {series_label(report)} on {report.key.device}: {cp.commit_range()}  {cp.describe()}"
    return escape_controls(line)
