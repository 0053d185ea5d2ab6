"""The dashboard in a real headless Chromium: no console errors, charts drawn, filters and sorting work."""

from __future__ import annotations

import importlib.util
import io
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_kernelperf import cli
from pytest_kernelperf.history import browser
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
