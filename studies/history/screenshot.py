#!/usr/bin/env python3
"""A screenshot of a history dashboard in headless Chromium, hovering the first change point so
that its attribution shows.

    python studies/history/screenshot.py history.html docs/images/history_dashboard.png [--height 1560]

Needs selenium and Chromium (studies/history/install_browser.sh).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pytest_kernelperf.history import browser


def screenshot(page: Path, png: Path, width: int = 1280, height: int = 1560) -> None:
    if not page.is_file():
        raise SystemExit(f"{page}: no such page")
    from selenium.webdriver.common.action_chains import ActionChains

    driver = browser.start(width, height)
    try:
        driver.get(page.resolve().as_uri())
        browser.wait_ready(driver)
        # Vega draws the charts in view after the page is ready.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not driver.find_elements("css selector", ".chart[data-drawn]"):
            time.sleep(0.1)
        time.sleep(1.0)
        markers = driver.find_elements("css selector", ".chart svg g.markers_marks line")
        if markers:
            ActionChains(driver).move_to_element(markers[0]).perform()
        errors = browser.console_errors(driver)
        if errors:
            raise SystemExit(f"{page}: console errors: {errors}")
        png.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(png))
    finally:
        driver.quit()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("page", type=Path)
    parser.add_argument("png", type=Path)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=1560)
    args = parser.parse_args()
    screenshot(args.page, args.png, args.width, args.height)
    print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
