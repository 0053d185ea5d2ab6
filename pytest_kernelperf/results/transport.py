"""Results and staged baseline entries as plain data, to cross a process boundary.

pytest-xdist workers hand their results to the controller through `config.workeroutput` (sent by
execnet), and an isolated test's subprocess through a JSON file: both carry only dicts, lists,
strings, numbers, booleans and None. Results and entries travel in the run file's encoding
(runfile.result_to_dict, schema.entry_to_data) and are read back by the same validating readers:
one encoding of a BenchResult and of a baseline entry, whichever way it goes. Other small records
(a poisoned CUDA context) are encoded field by field by `encode`/`decode`. No pytest, no torch.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from pytest_kernelperf.baselines.schema import SchemaError, entry_from_data, entry_to_data, path_text
from pytest_kernelperf.model.baseline import BaselineEntry, EntryKey
from pytest_kernelperf.model.names import CACHE_MODES
from pytest_kernelperf.model.result import BenchResult
from pytest_kernelperf.results.runfile import RunFileError, result_from_dict, result_to_dict

T = TypeVar("T")


class TransportError(ValueError):
    """Data from another process that does not decode (another plugin version, or tampering)."""


def encode(value: Any) -> Any:
    """`value` as dicts, lists, strings, numbers, booleans and None."""
    if isinstance(value, enum.Enum):
        return encode(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [encode(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): encode(item) for key, item in value.items()}
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TransportError(f"cannot send a {type(value).__name__} to another process")


def decode(cls: type[T], data: Any) -> T:
    """The dataclass `cls` from what `encode` made of one; unknown keys are ignored."""
    try:
        return typing.cast(T, _decode(cls, data))
    except (TypeError, ValueError, KeyError) as exc:
        raise TransportError(f"cannot read a {cls.__name__} from {data!r:.200}: {exc}") from None


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _decode(kind: Any, value: Any) -> Any:
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        options = [arg for arg in typing.get_args(kind) if arg is not type(None)]
        return _decode(options[0], value) if len(options) == 1 else value
    if origin is tuple:
        args = typing.get_args(kind)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], item) for item in value)
        return tuple(_decode(arg, item) for arg, item in zip(args, value, strict=True))
    if origin is list:
        return [_decode(typing.get_args(kind)[0], item) for item in value]
    if origin is dict:
        key_kind, value_kind = typing.get_args(kind)
        return {_decode(key_kind, k): _decode(value_kind, v) for k, v in dict(value).items()}
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return kind(value)
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        if not isinstance(value, Mapping):
            raise TypeError(f"expected a mapping for {kind.__name__}, got {type(value).__name__}")
        hints = _hints(kind)
        known = {f.name for f in dataclasses.fields(kind) if f.init}
        return kind(**{name: _decode(hints[name], item) for name, item in value.items() if name in known})
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # JSON writes 2.0 as 2
    if kind is Path:
        return Path(value)
    return value


# --- what crosses: results and staged entries ----------------------------------------------------


def results_to_data(results: Iterable[BenchResult]) -> list[Any]:
    return [result_to_dict(result) for result in results]


def results_from_data(data: Iterable[Any], origin: str = "another process") -> list[BenchResult]:
    try:
        return [result_from_dict(item, origin, f"results[{index}]") for index, item in enumerate(data)]
    except RunFileError as exc:
        raise TransportError(f"{exc.source} at {exc.where}: {exc.problem}") from None


def staged_to_data(staged: Mapping[Path, Mapping[EntryKey, BaselineEntry]], folder: Path) -> list[Any]:
    """Staged entries with their file relative to the baseline folder (the receiver's may differ)."""
    out = []
    for path, entries in sorted(staged.items()):
        relative = path.relative_to(folder).as_posix()
        for key, entry in entries.items():
            out.append(
                {
                    "file": relative,
                    "key": {"test": key.test, "device": key.device, "cache": key.cache},
                    "entry": entry_to_data(entry),
                }
            )
    return out


def staged_from_data(
    data: Iterable[Any], folder: Path, origin: str = "another process"
) -> dict[Path, dict[EntryKey, BaselineEntry]]:
    """Staged entries under the receiver's baseline folder, validated by the baseline schema; a
    file outside the folder is refused."""
    out: dict[Path, dict[EntryKey, BaselineEntry]] = {}
    for index, item in enumerate(data):
        where = f"{origin} at staged[{index}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("key"), Mapping):
            raise TransportError(f"{where}: expected an object with file, key and entry")
        relative = PurePosixPath(str(item.get("file", "")))
        if relative.is_absolute() or ".." in relative.parts or not relative.parts:
            raise TransportError(
                f"{where}.file: a staged baseline file outside the baseline folder: {relative}"
            )
        raw_key = item["key"]
        parts = [raw_key.get(name) for name in ("test", "device", "cache")]
        if not all(isinstance(part, str) and part for part in parts) or parts[2] not in CACHE_MODES:
            raise TransportError(
                f"{where}.key: expected test, device and cache (hot or cold), got {raw_key!r:.200}"
            )
        try:
            entry = entry_from_data(item.get("entry"))
        except SchemaError as exc:
            raise TransportError(
                f"{where}.entry.{path_text(exc.path)}".rstrip(".") + f": {exc.problem}"
            ) from None
        out.setdefault(folder.joinpath(*relative.parts), {})[EntryKey(*parts)] = entry
    return out
