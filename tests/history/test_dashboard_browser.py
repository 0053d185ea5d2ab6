"""The dashboard in a real headless Chromium: no console errors, charts drawn, filters and sorting
work; the header names the repository, branch and dates, the legend lists the marks drawn, each
status agrees with the change and the verdict, and a screenshot shows them so."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_kernelperf import cli
from pytest_kernelperf.history import browser, changepoints, dashboard
from pytest_kernelperf.history import synthetic_runs as rf
from pytest_kernelperf.history.store import HistoryStore

from .historykit import commit_of

FOUND = browser.find()
VEGA_LITE = importlib.util.find_spec("vl_convert") is not None
pytestmark = [
    pytest.mark.extras,  # needs Chromium and its driver: studies/history/install_browser.sh
    pytest.mark.skipif(isinstance(FOUND, str), reason=f"no headless browser: {FOUND}"),
    pytest.mark.skipif(not VEGA_LITE, reason="the charts need the dashboard extra (vl-convert-python)"),
    pytest.mark.usefixtures("stand_in_detector"),
]


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    d = browser.start(1280, 2400)
    yield d
    d.quit()


def make_page(tmp_path: Path) -> Path:
    db = tmp_path / "h.sqlite"
    trace = tmp_path / "profiles" / "trace.json"
    trace.parent.mkdir()
    trace.write_text("{}", encoding="utf-8")
    with HistoryStore(db) as store:
        for i in range(16):
            slow = 1.06 if i >= 8 else 1.0
            results = [
                rf.result(
                    "tests/test_k.py::test_mul",
                    0.02 * slow,
                    rounds=[0.02 * slow * f for f in (0.999, 1.0, 1.001)],
                    kernels=[("triton_poi_fused_mul_0", "aaaa1111" if i < 8 else "bbbb2222")],
                    artifacts=[str(trace)],
                ),
                rf.result("tests/test_k.py::test_add", 0.05 * (1 + (i % 3) / 1000)),
                rf.result("tests/test_k.py::test_add", 0.08, device="NVIDIA A100"),
            ]
            run = rf.run(results, created=rf.created(i), devices=[rf.H200, "NVIDIA A100"])
            store.append_run(run, commit=commit_of(i))
    page = tmp_path / "history.html"
    assert cli.main(["history", "--db", str(db), "report", "--html", str(page)], out=io.StringIO()) == 0
    return page


CHARTS = (
    "return [...document.querySelectorAll('.chart[data-drawn] svg')]"
    ".map(s => { const b = s.getBoundingClientRect();"
    " return [b.width, b.height, s.querySelectorAll('g.trend_marks path').length,"
    " s.querySelectorAll('g.rounds_marks').length, s.querySelectorAll('g.markers_marks line').length]; })"
)


def wait_for_charts(driver: Any, count: int) -> list[list[float]]:
    """The charts' (width, height, trend lines, round marks, change point markers), once `count`
    are drawn (Vega draws after the page is ready)."""
    deadline = time.monotonic() + 30
    while True:
        charts: list[list[float]] = driver.execute_script(CHARTS)
        if len(charts) >= count or time.monotonic() > deadline:
            return charts
        time.sleep(0.1)


def y_labels(driver: Any) -> list[str]:
    """The y axis labels of every chart (Vega's axis groups: the y axis is the one with role axis-label
    texts right-aligned)."""
    return list(
        driver.execute_script(
            "return [...document.querySelectorAll('.chart svg g.role-axis')]"
            ".filter(g => (g.getAttribute('aria-label') || '').startsWith('Y-axis'))"
            ".flatMap(g => [...g.querySelectorAll('g.role-axis-label text')].map(t => t.textContent))"
        )
    )


def test_the_page_loads_draws_its_charts_and_filters(driver: Any, tmp_path: Path) -> None:
    driver.get(make_page(tmp_path).as_uri())
    browser.wait_ready(driver)
    assert browser.console_errors(driver) == []
    charts = wait_for_charts(driver, 3)
    assert all(w > 300 and h > 100 and trend == 1 and dots == 1 for w, h, trend, dots, _ in charts)
    (markers,) = [m for *_, m in charts if m]
    assert markers == 1  # the one change point, of test_mul
    changes = driver.execute_script(
        "return [...document.querySelectorAll('.cps li')].map(li => li.textContent)"
    )
    assert len(changes) == 1 and "generated code of triton_poi_fused_mul_0 changed" in changes[0]
    linear = y_labels(driver)
    assert linear and not any(label.startswith(("-", "\u2212")) for label in linear)  # no negative times
    assert all(label.endswith(("\u00b5s", "ms")) for label in linear)
    driver.execute_script("document.getElementById('f-log').click()")
    wait_for_charts(driver, 3)
    logged = y_labels(driver)
    assert logged and logged != linear and not any(label.startswith(("-", "\u2212")) for label in logged)

    rows = (
        "return [...document.querySelectorAll('#overview tbody tr')].filter(r => !r.hidden)"
        ".map(r => r.cells[0].textContent)"
    )
    assert driver.execute_script(rows)[0] == "tests/test_k.py::test_mul"  # sorted by the size of the change
    driver.execute_script(
        "const s = document.getElementById('f-device'); s.value = 'NVIDIA A100';"
        " s.dispatchEvent(new Event('input'));"
    )
    assert driver.execute_script(rows) == ["tests/test_k.py::test_add"]
    assert driver.find_element("id", "count").text == "1 of 3 series"
    driver.execute_script(
        "const s = document.getElementById('f-device'); s.value = ''; s.dispatchEvent(new Event('input'));"
        " const t = document.getElementById('f-status'); t.value = 'slower';"
        " t.dispatchEvent(new Event('input'));"
    )
    assert driver.execute_script(rows) == ["tests/test_k.py::test_mul"]
    link = driver.execute_script("return document.querySelector('.arts a').getAttribute('href')")
    assert link == "./profiles/trace.json"
    assert browser.console_errors(driver) == []
    # Self-contained: nothing was fetched (no script, style, font or data), with the charts drawn.
    assert driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)") == []
    assert (
        driver.execute_script("return document.querySelectorAll('script[src], link[href], img').length") == 0
    )

    # The header says what the page covers (this page's runs were stored with no branch).
    assert driver.find_element("id", "h-dates").text == "dates 2026-11-01 00:00 to 2026-11-01 00:15 UTC"
    assert driver.find_element("id", "h-runs").text == "16 runs"
    assert driver.find_element("id", "h-branch").text == "branch not recorded"


def sha(i: int) -> str:
    return hashlib.sha1(str(i).encode()).hexdigest()


def make_team_page(tmp_path: Path) -> Path:
    """A repository's history on main, as a team's page shows it: a noisy ms-scale kernel judged
    slower on every run (its committed baseline is stale) whose history has no change point, a
    us-scale kernel that stepped +6% at run 8 and was judged slower from run 9, and a steady one."""
    db = tmp_path / "h.sqlite"
    with HistoryStore(db, repository="mykernels") as store:
        for i in range(16):
            noisy = 100.0 * (1 + 0.004 * (i % 4 - 2))  # +1.2% from the first run to the last
            gelu = rf.result(
                "tests/test_gelu.py::test_x", noisy, rounds=[noisy * f for f in (0.05, 1.0, 2.9)]
            )
            gelu["verdict"] = "slower"
            level = 0.02 * (1.06 if i >= 8 else 1.0)
            mul = rf.result(
                "tests/test_k.py::test_mul", level, rounds=[level * f for f in (0.999, 1.0, 1.001)]
            )
            mul["verdict"] = "slower" if i >= 9 else "same"
            add = rf.result("tests/test_k.py::test_add", 0.05 * (1 + (i % 3) / 1000))
            store.append_run(rf.run([gelu, mul, add], created=rf.created(i)), commit=sha(i), branch="main")
    with HistoryStore(db, repository="mykernels", read_only=True) as store:
        reports = changepoints.analyse_store(store, require=False)
        text = dashboard.render(reports, base=tmp_path, repository=store.repository, branch="main")
    page = tmp_path / "team.html"
    page.write_text(text, encoding="utf-8")
    return page


ROWS = (
    "return Object.fromEntries([...document.querySelectorAll('#overview tbody tr')].map(r => {"
    " const b = r.cells[7].querySelector('.badge');"
    " return [r.cells[0].textContent, [r.cells[5].textContent, r.cells[5].className, b.textContent,"
    " b.className, b.title, r.cells[8].textContent]]; }))"
)
CHART_Y_LABELS = (
    "return Object.fromEntries([...document.querySelectorAll('.card')].map(c =>"
    " [c.querySelector('h3').textContent, [...c.querySelectorAll('.chart svg g.role-axis')]"
    ".filter(g => (g.getAttribute('aria-label') || '').startsWith('Y-axis'))"
    ".flatMap(g => [...g.querySelectorAll('g.role-axis-label text')].map(t => t.textContent))]))"
)


def test_the_header_legend_and_status_read_as_the_history_says(driver: Any, tmp_path: Path) -> None:
    driver.get(make_team_page(tmp_path).as_uri())
    browser.wait_ready(driver)
    wait_for_charts(driver, 3)
    assert browser.console_errors(driver) == []

    # The header: repository, branch, dates of the runs shown.
    facts = [e.text for e in driver.find_elements("css selector", "#facts .fact")]
    assert facts == [
        "repository mykernels",
        "branch main",
        "dates 2026-11-01 00:00 to 2026-11-01 00:15 UTC",
        "16 runs",
    ]

    # Each status agrees with the latest change point and the newest verdict; a change is coloured
    # only where the status says the same.
    rows = driver.execute_script(ROWS)
    change, change_class, word, badge, why, verdict = rows["tests/test_gelu.py::test_x"]
    assert (word, verdict) == ("judged slower", "slower") and "judged" in badge and "b-slower" in badge
    assert "judged slower against its baseline; no change point in the history" in why
    assert change == "+1.2%" and "pos" in change_class  # the verdict says slower too
    change, change_class, word, badge, why, verdict = rows["tests/test_k.py::test_mul"]
    assert (change, word, verdict) == ("+6.0%", "slower", "slower") and "pos" in change_class
    assert why.startswith("the latest change point, at ") and "judged slower against its baseline too" in why
    change, change_class, word, badge, why, verdict = rows["tests/test_k.py::test_add"]
    assert (word, verdict) == ("steady", "same") and "muted" in change_class and "b-steady" in badge
    assert driver.execute_script(
        "return [...document.getElementById('f-status').options].map(o => o.value)"
    ) == ["", "judged slower", "slower", "steady"]

    # The legend names exactly the marks the charts draw, and each is drawn.
    legend = driver.execute_script(
        "return [...document.querySelectorAll('#legend .entry')].map(e => [e.dataset.mark, e.textContent])"
    )
    assert legend == [
        ["rounds", "a round of a run"],
        ["trend", "a run's level (the figure its verdict judged)"],
        ["levels", "level between change points"],
        ["cp-slower", "change point, slower"],
        ["judged-slower", "run judged slower against its baseline"],
    ]
    drawn = driver.execute_script(
        "return ['rounds', 'trend', 'levels', 'markers', 'judged'].map(k =>"
        " document.querySelectorAll('.chart svg g.' + k + '_marks > *').length)"
    )
    assert all(drawn), drawn
    judged = driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('.card')].map(c =>"
        " [c.querySelector('h3').textContent, c.querySelectorAll('g.judged_marks path').length]))"
    )
    assert judged == {
        "tests/test_gelu.py::test_x": 16,
        "tests/test_k.py::test_mul": 7,
        "tests/test_k.py::test_add": 0,
    }

    # One unit per chart, from its data: milliseconds (its origin "0 ms") and microseconds.
    labels = driver.execute_script(CHART_Y_LABELS)
    assert labels["tests/test_gelu.py::test_x"] and all(
        t.endswith(" ms") for t in labels["tests/test_gelu.py::test_x"]
    )
    assert "0 ms" in labels["tests/test_gelu.py::test_x"]
    for test in ("tests/test_k.py::test_mul", "tests/test_k.py::test_add"):
        assert labels[test] and all(t.endswith(" \u00b5s") for t in labels[test]), labels[test]

    # The screenshot: the whole page, then what it shows where it matters.
    png = driver.get_screenshot_as_png()
    (tmp_path / "dashboard.png").write_bytes(png)
    assert browser.png_size(png) == tuple(driver.execute_script("return [innerWidth, innerHeight]"))
    assert len(png) > 50_000  # a page of text and charts, not a blank one

    def shot(xpath: str) -> browser.Screenshot:
        return browser.element_png(driver, driver.find_element("xpath", xpath))

    header = shot("//header")
    assert header.colours() > 20 and header.count(lambda r, g, b: r + g + b < 200) > 200  # dark text
    row = "//tbody/tr[td/a[text()='{}']]/td[8]/span"
    status = shot(row.format("tests/test_gelu.py::test_x"))
    assert status.count(browser.reddish) > 10 and status.count(browser.greenish) == 0
    steady = shot(row.format("tests/test_k.py::test_add"))
    assert steady.count(browser.reddish) == 0 and steady.count(browser.greenish) == 0
    legend_png = shot("//div[@id='legend']")
    assert legend_png.count(browser.reddish) > 20 and legend_png.count(browser.greenish) == 0
    chart = "//section[h3[text()='{}']]/div[contains(@class, 'chart')]"
    gelu = shot(chart.format("tests/test_gelu.py::test_x"))
    assert gelu.count(browser.reddish) > 20  # its runs judged slower, marked in red
    assert shot(chart.format("tests/test_k.py::test_add")).count(browser.reddish) == 0
