"""The dashboard in a real headless Chromium: no console errors, charts drawn, filters and sorting work."""

from __future__ import annotations

import io
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
pytestmark = [
    pytest.mark.extras,  # needs Chromium and its driver: studies/history/install_browser.sh
    pytest.mark.skipif(isinstance(FOUND, str), reason=f"no headless browser: {FOUND}"),
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
                    kernels=[("triton_poi_fused_mul_0", "aaaa" if i < 8 else "bbbb")],
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


def test_the_page_loads_draws_its_charts_and_filters(driver: Any, tmp_path: Path) -> None:
    driver.get(make_page(tmp_path).as_uri())
    browser.wait_ready(driver)
    assert browser.console_errors(driver) == []
    charts = driver.execute_script(
        "return [...document.querySelectorAll('svg.chart')].map(s => { const b = s.getBoundingClientRect();"
        " return [b.width, b.height, s.querySelectorAll('polyline.trend').length,"
        " s.querySelectorAll('path.rounds').length]; })"
    )
    assert len(charts) == 3
    assert all(w > 300 and h > 100 and trend == 1 and dots == 1 for w, h, trend, dots in charts)
    titles = driver.execute_script(
        "return [...document.querySelectorAll('g.marker title')].map(t => t.textContent)"
    )
    assert len(titles) == 1 and "generated code of triton_poi_fused_mul_0 changed" in titles[0]

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
