"""kernel_bench names, and the file names and table cells made from ids and names, in one place.

The baseline key of a measurement (module, test id, `::name`) is spelled in model/baseline.py
(split_nodeid, entry_test_id). No pytest, no torch.
"""

from __future__ import annotations

import hashlib
import re

_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Lone surrogates: what os.fsdecode gives for a file name that is not UTF-8. They cannot be
# encoded, so no baseline file, run JSON or history could hold the name.
_SURROGATE = re.compile(r"[\ud800-\udfff]")
MAX_FILE_PART = 120  # characters of a file or folder name made from an id (file systems allow 255 bytes)
MAX_DISPLAY = 40  # characters of a name shown in a table cell


def check_name(name: object) -> str | None:
    """A kernel_bench `name=` as given, or a ValueError that says what is wrong with it."""
    if name is None:
        return None
    if not isinstance(name, str):
        raise ValueError(f"name= must be a string, got {type(name).__name__} {name!r}")
    if not name.strip():
        raise ValueError(f"name= must not be empty or blank, got {name!r} (leave it out for an unnamed call)")
    if _CONTROL.search(name):
        raise ValueError(f"name= must not hold control characters such as newlines or tabs, got {name!r}")
    surrogate = _SURROGATE.search(name)
    if surrogate:
        raise ValueError(
            f"name= must be text that can be written as UTF-8, got {name!r}: U+{ord(surrogate.group()):04X} "
            "is a lone surrogate, as os.fsdecode gives for a file name that is not UTF-8 (decode such "
            "bytes with errors='replace')"
        )
    return name


def function_name(fn: object) -> str | None:
    """What a table calls a timed callable: a function's or method's name (`gelu`, `Block.forward`,
    without the `<locals>` of a function made inside another), a partial's or a compiled
    module's own, else the class of a callable object (`GELU`); never a control character."""
    for _ in range(8):  # a partial of a partial, a compiled module: what they wrap
        inner = getattr(fn, "func", None) or getattr(fn, "_orig_mod", None)
        if inner is None or inner is fn:
            break
        fn = inner
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if not isinstance(name, str) or not name:
        name = type(fn).__qualname__
    name = name.rpartition("<locals>.")[2]
    return _CONTROL.sub("?", _SURROGATE.sub("?", name)) or None


def display_name(text: str, width: int = MAX_DISPLAY) -> str:
    """`text` cut to `width` characters for a table cell, with an ellipsis where it was cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


def file_part(text: str, fallback: str = "_", limit: int = MAX_FILE_PART) -> str:
    """`text` as a file or folder name: safe characters only, at most `limit` characters, never
    empty, `.` or `..`. For names made from our own words (a GPU, a plot); see unique_file_part."""
    return (_UNSAFE.sub("_", text).strip("._") or fallback)[:limit]


def unique_file_part(text: str, fallback: str = "_", separator: str = "-") -> str:
    """file_part(text), plus a short hash of `text` wherever it had to change, so that two
    different user-given texts (`a/b` and `a_b`, `.` and `..`, two long names with one prefix)
    never share a file or folder."""
    safe = file_part(text, fallback)
    if safe == text:
        return safe
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{safe[: MAX_FILE_PART - 11]}{separator}{digest}"
