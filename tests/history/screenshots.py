"""Screenshots of the dashboard as pixels, read by Pillow (the `dev` extra): enough for a test to look
at what the browser drew, the colour of a status, a legend's marks."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Screenshot:
    """The pixels of a PNG screenshot, read by Pillow (the `dev` extra): enough to look at what the
    browser drew, the colour of a status, a legend's marks."""

    width: int
    height: int
    rgb: tuple[tuple[int, int, int], ...]

    def pixels(self) -> Iterator[tuple[int, int, int]]:
        return iter(self.rgb)

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
    raw = image.tobytes()
    rgb = tuple((raw[i], raw[i + 1], raw[i + 2]) for i in range(0, len(raw), 3))
    return Screenshot(image.width, image.height, rgb)


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
