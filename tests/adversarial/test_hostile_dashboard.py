"""The history dashboard built from hostile run files, in a real headless Chromium: an artefact path
that is a `javascript:` URL and a commit id that is HTML do nothing, on load or when clicked."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_kernelperf import cli
from pytest_kernelperf.history import browser, changepoints
from pytest_kernelperf.history import synthetic_runs as rf
from pytest_kernelperf.history.dashboard import _TEMPLATE
from pytest_kernelperf.history.store import HistoryStore

FOUND = browser.find()
in_chromium = pytest.mark.skipif(isinstance(FOUND, str), reason=f"no headless browser: {FOUND}")

SCRIPT = "javascript:window.__xss=(window.__xss||[]).concat(['artifact'])"
HTML_COMMIT = "<b>bold</b>0123456789"  # its first 7 characters, "<b>bold", reach the table


def step_detector(values: Any, params: Any) -> list[changepoints.RawChange]:
    """The one change point of the planted step (runs 0-7 at 1.0, 8-15 at 1.2)."""
    return [changepoints.RawChange(8, 1e-4)]


def hostile_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(changepoints, "detector_available", lambda: True)
    monkeypatch.setattr(changepoints, "split_merge_backend", step_detector)
    (tmp_path / SCRIPT).write_text("", encoding="utf-8")  # a file of that name beside the page
    trace = tmp_path / "profiles" / "javascript:trace.json"
    trace.parent.mkdir()
    trace.write_text("{}", encoding="utf-8")
    db = tmp_path / "h.sqlite"
    with HistoryStore(db) as store:
        for i in range(16):
            level = 1.2 if i >= 8 else 1.0
            result = rf.result(
                "tests/test_k.py::test_mul",
                level,
                rounds=[level * f for f in (0.999, 1.0, 1.001)],
                artifacts=[SCRIPT, str(trace)],
            )
            commit = HTML_COMMIT if i == 8 else f"{i:040x}"
            store.append_run(rf.run([result], created=rf.created(i)), commit=commit)
    page = tmp_path / "history.html"
    assert cli.main(["history", "--db", str(db), "report", "--html", str(page)], out=io.StringIO()) == 0
    return page


def test_the_page_puts_no_data_through_inner_html() -> None:
    assert (
        "innerHTML" not in _TEMPLATE
        and "outerHTML" not in _TEMPLATE
        and "insertAdjacentHTML" not in _TEMPLATE
    )


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    d = browser.start(1280, 1600)
    yield d
    d.quit()


@pytest.mark.extras  # needs Chromium and its driver: studies/history/install_browser.sh
@in_chromium
def test_a_javascript_artifact_and_an_html_commit_do_nothing(
    driver: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = hostile_page(tmp_path, monkeypatch)
    driver.get(page.as_uri())
    browser.wait_ready(driver)

    # Clicking either artefact link runs nothing (a javascript: URL would run in this page).
    for i in range(2):
        driver.execute_script(f"document.querySelectorAll('.arts a')[{i}].click()")
        time.sleep(0.5)
        assert driver.execute_script("return window.__xss === undefined")
        driver.get(page.as_uri())
        browser.wait_ready(driver)

    # The commit is text in the "last change point" cell, not markup.
    cell = driver.execute_script(
        "const td = document.querySelector('#overview tbody tr').cells[6];"
        " return [td.textContent, td.children.length];"
    )
    assert cell == ["+20.0% at <b>bold", 0]
    assert driver.execute_script("return document.querySelectorAll('b').length") == 0

    # Both artefacts are links to the files beside the page: relative, percent-encoded.
    links = driver.execute_script(
        "return [...document.querySelectorAll('.arts a')].map(a => [a.textContent, a.getAttribute('href'),"
        " a.protocol])"
    )
    assert [(name, protocol) for name, _, protocol in links] == [
        (SCRIPT, "file:"),
        ("javascript:trace.json", "file:"),
    ]
    assert links[0][1].startswith("./javascript%3Awindow.__xss%3D")
    assert links[1][1] == "./profiles/javascript%3Atrace.json"
    assert browser.console_errors(driver) == []


@pytest.mark.extras
@in_chromium
def test_a_link_the_page_did_not_write_is_shown_as_text(
    driver: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind the report's own encoding, the page itself refuses any href but ./ and http(s)."""
    page = hostile_page(tmp_path, monkeypatch)
    text = page.read_text(encoding="utf-8")
    planted = text.replace('"./javascript%3Awindow', '"javascript:window', 1)
    assert planted != text
    page.write_text(planted, encoding="utf-8")
    driver.get(page.as_uri())
    browser.wait_ready(driver)

    arts = driver.execute_script(
        "const d = document.querySelector('.arts'); return [d.textContent, d.querySelectorAll('a').length]"
    )
    assert arts == [f"profile artefacts: {SCRIPT}, javascript:trace.json", 1]
    assert browser.console_errors(driver) == []
