"""Headless Chromium through Selenium, for checking the history dashboard as a browser shows it.

Debian's `chromium` and `chromium-driver` (studies/history/install_browser.sh installs them) and the
`selenium` package; `find()` says why when one is missing, so that tests can skip with the reason.
`read_png` gives a screenshot's pixels (through Pillow), so that a test can look at what was drawn:
the colour of a status, a legend's marks.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find() -> tuple[str, str] | str:
    """(chromium binary, chromedriver binary), or the reason there is none."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    try:
        import PIL  # noqa: F401
    except ImportError:
        return "Pillow is not installed (pip install pillow)"
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


# --- screenshots -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Screenshot:
    """The pixels of a PNG screenshot, read by Pillow (the `dev` extra): enough to look at what the
    browser drew, the colour of a status, a legend's marks."""

    width: int
    height: int
    rgb: tuple[tuple[int, int, int], ...]

    def count(self, colour: Callable[[int, int, int], bool]) -> int:
        """How many pixels are of `colour` (a test of red, green and blue, 0-255)."""
        return sum(1 for r, g, b in self.rgb if colour(r, g, b))

    def colours(self) -> int:
        return len(set(self.rgb))


def read_png(data: bytes) -> Screenshot:
    """The pixels of a PNG (ValueError when it is not an image Pillow reads)."""
    from PIL import Image, UnidentifiedImageError

    try:
        image = Image.open(io.BytesIO(data)).convert("RGB")
    except UnidentifiedImageError as exc:
        raise ValueError(f"not a PNG: {exc}") from None
    return Screenshot(image.width, image.height, tuple(image.getdata()))


def element_png(driver: Any, element: Any) -> Screenshot:
    """A screenshot of `element` (a WebElement), scrolled into view, as pixels."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    return read_png(element.screenshot_as_png)


def reddish(r: int, g: int, b: int) -> bool:
    """Near the page's red (#cf222e, slower)."""
    return r > 150 and g < 110 and b < 110


def greenish(r: int, g: int, b: int) -> bool:
    """Near the page's green (#1a7f37, faster)."""
    return g > 90 and r < 90 and b < 110 and g > r + 40


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) of a PNG."""
    shot = read_png(data)
    return shot.width, shot.height
