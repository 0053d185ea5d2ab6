"""The dashboard's chart library, for a page that works offline: Vega, Vega-Lite and vega-embed as
one script, taken from the `vl-convert-python` package (the `dashboard` extra), which ships
them. Making the bundle takes seconds, so it is kept in the user's cache folder per package version.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import os
import re
from pathlib import Path

from pytest_kernelperf.atomic import write_atomic

PACKAGE = "vl-convert-python"
CACHE_FORMAT = 2  # bumped when the cached script changes shape
INSTALL_HINT = (
    "the dashboard's charts need vl-convert-python: pip install vl-convert-python "
    "(or the plugin's `dashboard` extra)"
)


def _cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-kernelperf"


def _inline(script: str) -> str:
    """A script that can stand inside <script>...</script>: no closing tag, no comment opener."""
    script = re.sub(r"</(script)", r"<\\/\1", script, flags=re.IGNORECASE)
    return script.replace("<!--", "<\\!--")


@functools.cache
def bundle() -> str | None:
    """The script that defines `vegaEmbed`, or None when vl-convert-python is not installed."""
    try:
        version = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None
    cached = _cache_folder() / f"vega-embed-{version}-{CACHE_FORMAT}.js"
    with contextlib.suppress(OSError):
        return cached.read_text(encoding="utf-8")
    import vl_convert

    # In a function of its own: its top-level names (`$`...) stay out of the page's; it sets
    # window.vegaEmbed itself.
    library = vl_convert.javascript_bundle(None)  # type: ignore[arg-type]  # None: the default snippet
    script = "(function () {\n" + _inline(library) + "\n})();"
    with contextlib.suppress(OSError):  # an unwritable cache folder: made again next time
        write_atomic(cached, script)
    return script
