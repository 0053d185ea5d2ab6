"""Headless Chromium through Selenium, for checking the history dashboard as a browser shows it.

Debian's `chromium` and `chromium-driver` (studies/history/install_browser.sh installs them) and the
`selenium` package; `find()` says why when one is missing, so that tests can skip with the reason.
`read_png` gives a screenshot's pixels (with no image library), so that a test can look at what was
drawn: the colour of a status, a legend's marks.
"""

from __future__ import annotations

import shutil
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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


# --- screenshots -----------------------------------------------------------------------------------

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Screenshot:
    """The pixels of a PNG screenshot: enough to look at what the browser drew without an image
    library (8-bit RGB or RGBA, not interlaced: what Chromium writes)."""

    width: int
    height: int
    channels: int
    rows: tuple[bytes, ...]

    def pixels(self) -> Iterator[tuple[int, int, int]]:
        c = self.channels
        for row in self.rows:
            for i in range(0, len(row), c):
                yield row[i], row[i + 1], row[i + 2]

    def count(self, colour: Callable[[int, int, int], bool]) -> int:
        """How many pixels are of `colour` (a test of red, green and blue, 0-255)."""
        return sum(1 for r, g, b in self.pixels() if colour(r, g, b))

    def colours(self) -> int:
        return len(set(self.pixels()))


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def read_png(data: bytes) -> Screenshot:
    """The pixels of a PNG (ValueError when it is not an 8-bit RGB or RGBA one)."""
    if not data.startswith(PNG_SIGNATURE):
        raise ValueError("not a PNG")
    at, header, compressed = len(PNG_SIGNATURE), b"", bytearray()
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at : at + 8])
        body = data[at + 8 : at + 8 + length]
        at += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            compressed += body
        elif kind == b"IEND":
            break
    if len(header) != 13:
        raise ValueError("a PNG without its header")
    width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", header)
    channels = {2: 3, 6: 4}.get(colour_type)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"a PNG of depth {depth}, colour type {colour_type}, interlace {interlace}")
    raw = zlib.decompress(bytes(compressed))
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                line[i] = (line[i] + _paeth(left, up, corner)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return Screenshot(width, height, channels, tuple(rows))


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
    """(width, height) of a PNG, from its header alone."""
    if not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)
