"""The main-branch gate of README.md and docs/ci.md, as CI runs it: after each push, its one run
imported, then `history detect --branch main --since <the commit before the push>`. A step slowdown
is detectable only once runs after it arrive, when it already lies before `--since`: the gate must
still fail, exactly once, on the push that makes it detectable."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest
from history.historykit import split_backend

from pytest_kernelperf import cli
from pytest_kernelperf.history import changepoints
from pytest_kernelperf.history import synthetic_runs as rf

STEP_AT = 6  # the push whose commit makes the kernel 40% slower
ONE_STEP = [1.0] * STEP_AT + [1.4] * 5
TWO_STEPS = [1.0] * STEP_AT + [1.2] * 8 + [1.44] * 8  # 8 runs apart: one drift of two steps


def commit_of(push: int) -> str:
    return f"{push:02x}" * 20


def _history(db: Path, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(["history", "--db", str(db), *args], out=out), out.getvalue()


def _push(db: Path, folder: Path, i: int, level: float) -> tuple[int, str] | None:
    """Push `i`: its run imported, then the gate against the push before (none on the first), also
    where that push's run was never stored."""
    jitter = random.Random(i)
    rounds = [level * (1 + jitter.gauss(0, 0.003)) for _ in range(3)]
    path = folder / f"run{i:02d}.json"
    run = rf.run([rf.result("tests/test_k.py::test_kernel", level, rounds=rounds)], created=rf.created(i))
    path.write_text(json.dumps(run), encoding="utf-8")
    assert _history(db, "import", "--commit", commit_of(i), "--branch", "main", str(path))[0] == 0
    if i == 0:
        return None
    return _history(db, "detect", "--branch", "main", "--since", commit_of(i - 1))


def _gate(folder: Path, levels: list[float], missing: int | None = None) -> list[tuple[int, str]]:
    """The gate's (exit status, output) at each push but the first, one run per push at `levels`;
    push `missing`'s job is cancelled (no run stored, no gate run: the status of 0 stands in)."""
    folder.mkdir(exist_ok=True)
    db = folder / "h.sqlite"
    calls = [(0, "") if i == missing else _push(db, folder, i, level) for i, level in enumerate(levels)]
    return [call for call in calls if call is not None]


def _failing(calls: list[tuple[int, str]]) -> list[int]:
    """The pushes whose gate failed (the others passed)."""
    assert {status for status, _ in calls} <= {0, 1}
    return [i + 1 for i, (status, _) in enumerate(calls) if status == 1]


def _fails_once(calls: list[tuple[int, str]]) -> tuple[int, str]:
    """The push whose gate failed and what it said, checked to be the only one, reporting one
    slowdown as new since the push before."""
    failed = _failing(calls)
    assert len(failed) == 1, [text for _, text in calls]
    push, text = failed[0], calls[failed[0] - 1][1]
    assert f"1 change points new since {commit_of(push - 1)}, 1 slowdowns" in text
    return push, text


@pytest.mark.usefixtures("stand_in_detector")
def test_the_gate_fails_once_when_a_step_becomes_detectable(tmp_path: Path) -> None:
    # The crude stand-in detector sees a step as soon as one slow run arrives (a run early).
    push, text = _fails_once(_gate(tmp_path, ONE_STEP))
    assert push >= STEP_AT and "SLOWER  tests/test_k.py::test_kernel on NVIDIA H200" in text
    assert len(_failing(_gate(tmp_path / "again", TWO_STEPS))) == 2  # each step once


@pytest.mark.usefixtures("stand_in_detector")
@pytest.mark.parametrize("missing", [STEP_AT, STEP_AT + 1])
def test_a_push_whose_run_is_missing_still_fails_the_gate_once(tmp_path: Path, missing: int) -> None:
    # The push after the missing one has no stored run at its --since: it compares with the run
    # before its own. The slow commit's run missing, the push after reports the slowdown; the run
    # after it missing, the slow push reported it and the push after must not again.
    calls = _gate(tmp_path, ONE_STEP, missing=missing)
    failed = _failing(calls)
    assert failed == [STEP_AT + 1 if missing == STEP_AT else STEP_AT], [text for _, text in calls]
    after = calls[missing][1]  # the gate of the push after the missing one
    assert f"note: no stored run at commit {commit_of(missing)!r}" in after
    assert f"comparing with {commit_of(missing - 1)[:7]}, the newest run before the latest on main" in after
    assert f"change points new since {commit_of(missing - 1)}" in after
    assert "SLOWER  tests/test_k.py::test_kernel" in calls[failed[0] - 1][1]


def test_a_missing_since_with_nothing_to_compare_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _gate(tmp_path, [1.0])
    status, _ = _history(tmp_path / "h.sqlite", "detect", "--branch", "main", "--since", commit_of(9))
    error = capsys.readouterr().err
    assert status == 2 and f"no stored run at commit {commit_of(9)!r}" in error
    assert "and no earlier run of branch 'main' to compare with" in error


@pytest.mark.extras
@pytest.mark.skipif(
    not changepoints.detector_available(), reason="needs ruptures: pip install -e '.[history]'"
)
def test_the_gate_fails_once_with_the_real_detector(tmp_path: Path) -> None:
    # A change point needs MIN_SEGMENT runs after it: first seen on the third slow push.
    push, text = _fails_once(_gate(tmp_path, ONE_STEP))
    assert push == STEP_AT + changepoints.MIN_SEGMENT - 1
    step = f"{commit_of(STEP_AT - 1)[:7]}..{commit_of(STEP_AT)[:7]}  at {commit_of(STEP_AT)[:7]}: +40.0%"
    assert step in text
    # A second step later (a drift, as one change point) fails the gate once more, when it is seen.
    again = _failing(_gate(tmp_path / "again", TWO_STEPS))
    assert again == [push, STEP_AT + 8 + changepoints.MIN_SEGMENT - 1]
    # The run of the push that would have seen it never stored: the next push's gate fails instead.
    assert _failing(_gate(tmp_path / "cancelled", ONE_STEP, missing=push)) == [push + 1]


@pytest.fixture
def stand_in_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changepoints, "detector_available", lambda: True)
    monkeypatch.setattr(changepoints, "split_merge_backend", split_backend)
