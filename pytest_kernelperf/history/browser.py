"""Headless Chromium through Selenium, for checking the history dashboard as a browser shows it.

Debian's `chromium` and `chromium-driver` (studies/history/install_browser.sh installs them) and the
`selenium` package; `find()` says why when one is missing, so that tests can skip with the reason.
"""

from __future__ import annotations

import shutil
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find() -> tuple[str, str] | str:
    """(chromium binary, chromedriver binary), or the reason there is none."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    browser = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        missing = " and ".join(n for n, p in (("chromium", browser), ("chromedriver", driver)) if p is None)
        return f"no {missing} found (run studies/history/install_browser.sh)"
    return browser, driver


def start(width: int = 1280, height: int = 1000) -> Any:
    """A headless Chromium WebDriver that keeps the browser console's log."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    found = find()
    if isinstance(found, str):
        raise RuntimeError(found)
    browser, driver = found
    options = Options()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.add_argument(f"--window-size={width},{height}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


def console_errors(driver: Any) -> list[str]:
    return [str(e.get("message")) for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def wait_ready(driver: Any, timeout: float = 10.0) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script("return document.body && document.body.dataset.ready === '1'")
    )
