"""`compare OLD NEW` judges NEW against OLD: what NEW's own run said against its own baseline (a
call measured twice and judged slower there) must not stand under compare's verdict as if it were
compare's."""

from __future__ import annotations

import io
import json

from conftest import Project

from pytest_kernelperf.cli import main


def test_compare_shows_its_own_verdicts_not_the_runs(project: Project) -> None:
    # Both runs 5x slower than the baseline they ran against (each measured twice, judged slower),
    # so against each other: the same.
    project.module()
    project.run("--kernelperf-update-baselines").assert_outcomes(passed=1)
    project.run("--kernelperf", "--kernelperf-json=old.json", ms=5.0).assert_outcomes(failed=1)
    project.run("--kernelperf", "--kernelperf-json=new.json", ms=5.0).assert_outcomes(failed=1)
    folder = project.pytester.path
    (live,) = json.loads((folder / "new.json").read_text())["results"]
    assert any(note.startswith("measured twice:") for note in live["notes"])
    assert live["baseline"]["environment_changes"] == []  # the same torch as the baseline's
    old = json.loads((folder / "old.json").read_text())
    old["results"][0]["baseline_entry"]["environment"]["torch"] = "2.1.0"  # OLD ran on another
    (folder / "old.json").write_text(json.dumps(old))

    out = io.StringIO()
    args = ["compare", str(folder / "old.json"), str(folder / "new.json"), "--color=no"]
    status = main([*args, "--json", str(folder / "judged.json")], out=out)

    text = out.getvalue()
    assert status == 0 and "kernelperf: 1 same" in text
    assert "measured twice" not in text and "(slower)" not in text
    (judged,) = json.loads((folder / "judged.json").read_text())["results"]
    assert judged["verdict"] == "same" and judged["device_time"]["readings"] == []
    assert not any("measured twice" in note for note in judged["notes"])
    assert any(change.startswith("torch 2.1.0 -> ") for change in judged["baseline"]["environment_changes"])
