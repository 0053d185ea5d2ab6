"""`python -m pytest_kernelperf history ...`: import, show, detect, prune, export, report; exit codes."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
from pathlib import Path

import pytest

from pytest_kernelperf import cli
from pytest_kernelperf.history import changepoints, vega
from pytest_kernelperf.history import synthetic_runs as rf
from pytest_kernelperf.history.store import HistoryStore

from .historykit import commit_of


def history(db: Path, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    status = cli.main(["history", "--db", str(db), *args], out=out)
    return status, out.getvalue()


def write_runs(
    folder: Path, levels: list[float], *, code_from: int, nodeid: str = "tests/test_k.py::test_mul"
) -> list[Path]:
    paths = []
    for i, level in enumerate(levels):
        result = rf.result(
            nodeid,
            level,
            rounds=[level * 0.999, level, level * 1.001],
            kernels=[("triton_poi_fused_mul_0", "aaaa1111" if i < code_from else "bbbb2222")],
        )
        path = folder / f"run{i:02d}.json"
        path.write_text(json.dumps(rf.run([result], created=rf.created(i))), encoding="utf-8")
        paths.append(path)
    return paths


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "h.sqlite"


def import_all(db: Path, paths: list[Path]) -> None:
    for i, path in enumerate(paths):
        assert history(db, "import", "--commit", commit_of(i), str(path))[0] == 0


def test_import_is_idempotent_and_says_so(db: Path, tmp_path: Path) -> None:
    (path,) = write_runs(tmp_path, [1.0], code_from=9)
    status, text = history(db, "import", "--commit", "ab" * 20, "--branch", "main", str(path))
    assert status == 0 and f"stored {path} as run 1 at ababababa"[:40] in text and "1 measurements" in text
    status, text = history(db, "import", str(path))
    assert status == 0 and f"already stored: {path} (run 1)" in text
    with HistoryStore(db) as store:
        assert store.runs()[0]["commit"] == "ab" * 20 and store.runs()[0]["branch"] == "main"


def test_import_of_a_bad_file_stores_nothing_and_names_it(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (good,) = write_runs(tmp_path, [1.0], code_from=9)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    status, _ = history(db, "import", "--no-git", str(good), str(bad))
    assert status == 2
    assert f"error: {bad} at line 1: not valid JSON" in capsys.readouterr().err
    assert not db.exists() or HistoryStore(db).run_count() == 0


def test_commands_on_a_missing_database_name_it(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert history(db, "show")[0] == 2
    assert f"error: {db}: no such history database" in capsys.readouterr().err


@pytest.mark.usefixtures("stand_in_detector")
def test_show_and_detect_report_a_slowdown_with_its_attribution(db: Path, tmp_path: Path) -> None:
    import_all(db, write_runs(tmp_path, [1.0] * 8 + [1.06] * 8, code_from=8))
    status, text = history(db, "show")
    assert status == 0
    assert "2 runs" not in text and "16 runs, 1 series" in text
    header, _rule, row = text.splitlines()[1:4]
    assert header.split() == [
        "series",
        "device",
        "cache",
        "runs",
        "latest",
        "change",
        "status",
        "change",
        "points",
    ]
    assert row.split()[:1] == ["tests/test_k.py::test_mul"] and "+6.0%" in row
    assert f"slower since {commit_of(8)[:7]}" in row
    assert (
        f"{commit_of(7)[:7]}..{commit_of(8)[:7]}  at {commit_of(8)[:7]}: +6.0% (>99.9% confidence); "
        "generated code of triton_poi_fused_mul_0 changed; no autotuner choices recorded; "
        "environment unchanged"
    ) in text

    status, text = history(db, "detect")
    assert status == 1 and "1 change points in the whole history, 1 slowdowns" in text
    assert history(db, "detect", "--since", commit_of(15)[:10])[0] == 0  # the last run: nothing new
    status, text = history(db, "detect", "--since", commit_of(7))
    assert status == 1 and text.splitlines()[1].startswith("SLOWER  tests/test_k.py::test_mul on NVIDIA H200")


@pytest.mark.usefixtures("stand_in_detector")
def test_detect_passes_on_a_speed_up(db: Path, tmp_path: Path) -> None:
    import_all(db, write_runs(tmp_path, [1.0] * 8 + [0.9] * 8, code_from=8))
    status, text = history(db, "detect")
    assert status == 0 and "1 change points in the whole history, 0 slowdowns" in text and "faster" in text


def test_detect_since_an_unknown_commit_compares_with_the_run_before_the_latest(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], stand_in_detector: None
) -> None:
    import_all(db, write_runs(tmp_path, [1.0], code_from=9))
    assert history(db, "detect", "--since", "deadbeef")[0] == 2  # one run: nothing to compare with
    error = capsys.readouterr().err
    assert "no stored run at commit 'deadbeef'" in error and ", and no earlier run to compare with" in error
    import_all(db, write_runs(tmp_path, [1.0] * 3, code_from=9))
    status, text = history(db, "detect", "--since", "deadbeef")
    assert status == 0 and text.startswith(
        f"note: no stored run at commit 'deadbeef'; comparing with {commit_of(1)[:7]}, the newest run "
        f"before the latest\nkernelperf history detect: 0 change points new since {commit_of(1)}, "
    )


def test_without_ruptures_show_still_lists_series_and_detect_fails_clearly(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(changepoints, "detector_available", lambda: False)
    import_all(db, write_runs(tmp_path, [1.0] * 6, code_from=9))
    status, text = history(db, "show")
    assert status == 0 and "not analysed" in text and "pip install ruptures" in text
    assert history(db, "detect")[0] == 2
    assert "error: change points need ruptures: pip install ruptures" in capsys.readouterr().err


def test_the_database_may_follow_the_subcommand(db: Path, tmp_path: Path) -> None:
    (path,) = write_runs(tmp_path, [1.0], code_from=9)
    assert cli.main(["history", "import", "--no-git", "--db", str(db), str(path)], out=io.StringIO()) == 0
    assert history(db, "export", "--csv", "-")[1].count("\n") == 2


def test_prune_and_export(db: Path, tmp_path: Path) -> None:
    import_all(db, write_runs(tmp_path, [1.0, 1.1, 1.2], code_from=9))
    status, text = history(db, "export", "--csv", "-")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert status == 0 and [float(r["level_ms"]) for r in rows] == [1.0, 1.1, 1.2]
    assert rows[0]["commit"] == commit_of(0) and json.loads(rows[2]["rounds_ms"])[1] == 1.2
    assert history(db, "prune", "--keep", "2") == (0, f"removed 1 runs from {db}; 2 kept\n")
    out = tmp_path / "export" / "all.json"
    status, text = history(db, "export", "--json", str(out))
    data = json.loads(out.read_text(encoding="utf-8"))
    assert status == 0 and "wrote 2 measurements" in text
    assert [m["level_ms"] for m in data["measurements"]] == [1.1, 1.2] and len(data["runs"]) == 2


def test_the_export_writes_the_columns_the_history_page_lists(db: Path, tmp_path: Path) -> None:
    import_all(db, write_runs(tmp_path, [1.0], code_from=9))
    header = history(db, "export", "--csv", "-")[1].splitlines()[0].split(",")
    page = (Path(__file__).resolve().parents[2] / "docs" / "history.md").read_text(encoding="utf-8")
    listed = page.split("`history export` writes one row per measurement:")[1].split("; the JSON export")[0]
    listed = " ".join(listed.split()).replace("(`history/rows.py`'s `MeasurementRow`, in order)", "")
    assert header == re.findall(r"`(\w+)`", listed) and "level_ms" in header
    assert "median_ms" not in header


@pytest.mark.usefixtures("stand_in_detector")
def test_report_writes_one_self_contained_page(db: Path, tmp_path: Path) -> None:
    import_all(db, write_runs(tmp_path, [1.0] * 8 + [1.06] * 8, code_from=8))
    page_path = tmp_path / "site" / "history.html"
    status, text = history(db, "report", "--html", str(page_path))
    assert status == 0 and "wrote the dashboard of 1 series" in text
    page = page_path.read_text(encoding="utf-8")
    # The page's own markup and code name no address; the chart library's text (which mentions its
    # documentation) is checked in Chromium: the page fetches nothing (test_dashboard_browser.py).
    own = page.replace(vega.bundle() or "", "")
    assert "http://" not in own.replace("http://www.w3.org/2000/svg", "") and "https://" not in own
    assert "<link" not in own and "src=" not in own  # nothing loaded from elsewhere
    data = json.loads(page.split('<script type="application/json" id="data">')[1].split("</script>")[0])
    (series,) = data
    assert series["status"] == "slower" and series["cp"][0]["i"] == 8
    assert "generated code of triton_poi_fused_mul_0 changed" in series["cp"][0]["text"]
    assert len(series["v"]) == 16 and len(series["r"][0]) == 3


def test_the_main_cli_lists_history_and_bisect(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = capsys.readouterr().out
    assert "history" in text and "bisect" in text


def test_import_asks_git_for_the_commit_and_branch(db: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "feature"], cwd=repo, check=True)
    subprocess.run(["git", *env, "commit", "-q", "--allow-empty", "-m", "x"], cwd=repo, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True)
    (path,) = write_runs(tmp_path, [1.0], code_from=9)
    assert history(db, "import", "--git-dir", str(repo), str(path))[0] == 0
    with HistoryStore(db) as store:
        (run,) = store.runs()
    assert (run["commit"], run["branch"]) == (head.stdout.strip(), "feature")


def test_the_page_keeps_markup_in_test_ids_as_text(db: Path, tmp_path: Path) -> None:
    nodeid = "tests/test_k.py::test_x[</script><script>alert(1)</script>]"
    import_all(db, write_runs(tmp_path, [1.0, 1.0], code_from=9, nodeid=nodeid))
    page = tmp_path / "page.html"
    assert history(db, "report", "--html", str(page))[0] == 0
    text = page.read_text(encoding="utf-8")
    assert "<script>alert(1)" not in text
    data = json.loads(text.split('<script type="application/json" id="data">')[1].split("</script>")[0])
    assert data[0]["test"] == nodeid


@pytest.mark.usefixtures("stand_in_detector")
def test_detect_on_one_branch(db: Path, tmp_path: Path) -> None:
    paths = write_runs(tmp_path, [1.0] * 8 + [1.06] * 8, code_from=8)
    for i, path in enumerate(paths):  # the slow runs are a feature branch's
        branch = "main" if i < 8 else "feature"
        assert history(db, "import", "--commit", commit_of(i), "--branch", branch, str(path))[0] == 0
    (tmp_path / "main").mkdir()
    for i, path in enumerate(write_runs(tmp_path / "main", [1.0] * 8, code_from=9)):
        path.write_text(path.read_text().replace("T00:", "T23:"), encoding="utf-8")  # later, distinct runs
        assert history(db, "import", "--commit", commit_of(20 + i), "--branch", "main", str(path))[0] == 0
    assert history(db, "detect", "--branch", "main")[0] == 0
    assert history(db, "detect", "--branch", "feature")[0] == 0  # 8 runs, all slow: no change within
    assert history(db, "detect")[0] == 1  # all runs in time order: the slow ones stand out


def test_show_names_the_run_where_a_calls_device_memory_stepped(db: Path, tmp_path: Path) -> None:
    """Memory is nearly deterministic: a step beyond memory_threshold between two runs is named
    with its commit, up or down; the allocator's small wobble is not."""
    mib = 1 << 20
    peaks = [64 * mib, 64 * mib + 4096, 128 * mib, 128 * mib, 64 * mib]
    for i, peak in enumerate(peaks):
        result = rf.result("tests/test_k.py::test_mul", 1.0, rounds=[1.0, 1.0, 1.0], peak_memory_bytes=peak)
        path = tmp_path / f"run{i:02d}.json"
        path.write_text(json.dumps(rf.run([result], created=rf.created(i))), encoding="utf-8")
        assert history(db, "import", "--commit", commit_of(i), str(path))[0] == 0
    status, text = history(db, "show", "--no-detect")
    assert status == 0
    lines = text.split("device memory steps (beyond the default memory_threshold):\n", 1)[1].splitlines()
    assert lines[1:3] == [
        f"  peak memory 64 MiB -> 128 MiB (+64 MiB) at {changepoints.short(commit_of(2))}",
        f"  peak memory 128 MiB -> 64 MiB (-64 MiB) at {changepoints.short(commit_of(4))}",
    ]
    with HistoryStore(db) as store:
        (report,) = changepoints.analyse_store(store, require=False)
        assert [step.grew for step in report.memory_steps] == [True, False]
    # The dashboard lists them on the series' card, as text.
    page = tmp_path / "history.html"
    assert history(db, "report", "--html", str(page))[0] == 0
    data = json.loads(
        page.read_text().split('<script type="application/json" id="data">', 1)[1].split("</script>")[0]
    )
    assert [m["text"] for m in data[0]["mem"]] == [line.strip() for line in lines[1:3]]


def test_without_the_chart_library_the_page_says_how_to_get_its_charts(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vega, "bundle", lambda: None)
    import_all(db, write_runs(tmp_path, [1.0] * 6, code_from=9))
    page_path = tmp_path / "history.html"
    status, text = history(db, "report", "--html", str(page_path))
    assert status == 0
    page = page_path.read_text(encoding="utf-8")
    assert "pip install vl-convert-python" in page and "test_mul" in page
    # The page and the terminal both name the extra that brings the charts.
    assert "the plugin's `dashboard` extra" in page
    assert "the page has no charts: the dashboard's charts need vl-convert-python" in text


def test_the_chart_library_cannot_close_the_script_it_stands_in() -> None:
    inlined = vega._inline('const a = "</script><b>x</b>", b = "<!-- c";')
    assert "</script" not in inlined.lower() and "<!--" not in inlined
