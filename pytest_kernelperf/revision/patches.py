"""The judging code as an import of the revision's code found it, and put back as it was.

The revision's modules share this process's pytest, its plugins, this plugin (loader.SHARED_PACKAGES)
and the standard library: an import can rebind what the judge calls when it decides, at call time
(`pytest.fail = lambda *a, **k: None`, `judge._verdict = ...`, a method of one of its classes, the
`__code__` of one of its functions). `CodeState` records, before such an import, the attributes of
every watched module, of the classes each defines and the code of its functions; `undo` puts back
whatever changed and says what. A module of this plugin that the import loaded for the first time
is dropped from `sys.modules`: the run imports its own copy when it needs one, never one the
revision's code had in hand while it was being imported.

Watched: pytest, _pytest, pluggy, xdist and execnet (the code that runs and reports the tests),
pytest_kernelperf (the code that judges), the modules these name at module level (math, json, yaml
...), and the process's own machinery. What is compared is the identity of each attribute, not its
contents: an item put into a dict held by a module is not seen (docs/reliability.md says so).

No pytest here, no torch: the standard library only.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FunctionType, ModuleType
from typing import Any

# The code that runs, reports and judges the tests: these packages and every module under them.
JUDGING_PACKAGES = ("pytest", "_pytest", "pluggy", "xdist", "execnet", "pytest_kernelperf")
# The process's machinery: what ends it, signals it, runs its threads and its exit handlers.
PROCESS_MODULES = ("builtins", "sys", "os", "posix", "nt", "signal", "threading", "_thread", "atexit", "gc")
PLUGIN = "pytest_kernelperf"
# A class whose attributes cannot be set (CPython's Py_TPFLAGS_IMMUTABLETYPE): nothing to watch.
_IMMUTABLE_TYPE = 1 << 8
_MISSING = object()
_CODE, _DEFAULTS, _KWDEFAULTS = (
    operator.attrgetter(a) for a in ("__code__", "__defaults__", "__kwdefaults__")
)
# Put into a class's namespace by Python itself when first read (type.__annotations__ stores an
# empty dict in a class that has none): data, never code that runs.
_LAZY_CLASS_ATTRIBUTES = frozenset({"__annotations__"})
# Swapped by pytest's capturing, from other threads too (a progress line printed meanwhile); the
# run's reports are written to the streams pytest took at its start, never to these.
_SWAPPED = {"sys": frozenset({"stdin", "stdout", "stderr"})}
# At most this many changes are named in a refusal; the rest are counted.
_NAMED = 4


@dataclass
class _Defined:
    """The classes and functions a module defines, found once per module (and again when its
    namespace changes size): finding them takes longer than taking their state."""

    module: ModuleType
    size: int
    classes: list[type]
    functions: list[FunctionType]


_DEFINED: dict[str, _Defined] = {}


@dataclass
class CodeState:
    """The watched modules' attributes, their classes' and their functions' code, at one moment."""

    modules: dict[str, tuple[ModuleType, dict[str, Any]]] = field(default_factory=dict)
    classes: list[tuple[type, dict[str, Any]]] = field(default_factory=list)
    # The functions, and in step with them what a call of each runs with: code, defaults, keyword
    # defaults (lists of what the functions hold: no new object per function).
    functions: list[FunctionType] = field(default_factory=list)
    codes: list[Any] = field(default_factory=list)
    defaults: list[Any] = field(default_factory=list)
    kwdefaults: list[Any] = field(default_factory=list)

    @classmethod
    def take(cls) -> CodeState:
        state = cls()
        for name, module in _watched():
            namespace = vars(module).copy()
            state.modules[name] = (module, namespace)
            defined = _defined(name, module, namespace)
            state.classes += [(kind, vars(kind).copy()) for kind in defined.classes]
            state.functions += defined.functions
        state.codes, state.defaults, state.kwdefaults = _runs_with(state.functions)
        return state

    def undo(self) -> list[str]:
        """Put back every attribute and code that changed since `take`, and drop this plugin's
        modules loaded since; what changed, said as what the revision's code did."""
        changed = [*self._undo_functions(), *self._undo_classes(), *self._undo_modules()]
        _drop_new_plugin_modules(set(self.modules))
        if len(changed) > _NAMED:
            changed[_NAMED - 1 :] = [f"{len(changed) - _NAMED + 1} more"]
        return [f"changed the judging code ({', '.join(changed)})"] if changed else []

    def _undo_modules(self) -> Iterator[str]:
        for name, (module, before) in self.modules.items():
            now = vars(module)
            if _unchanged(now, before):
                continue
            swapped = _SWAPPED.get(name, frozenset())
            for attribute, value in before.items():
                if now.get(attribute, _MISSING) is not value and attribute not in swapped:
                    setattr(module, attribute, value)
                    yield f"{name}.{attribute}"
            for attribute in [a for a in now if a not in before]:
                value = now[attribute]
                submodule = f"{name}.{attribute}"
                if isinstance(value, ModuleType) and sys.modules.get(submodule) is value:
                    # A submodule imported for the first time: the import system's doing. This
                    # plugin's goes with the module itself (_drop_new_plugin_modules).
                    if name.partition(".")[0] == PLUGIN:
                        delattr(module, attribute)
                    continue
                delattr(module, attribute)
                yield f"{name}.{attribute} (added)"

    def _undo_classes(self) -> Iterator[str]:
        for kind, before in self.classes:
            now = vars(kind)
            if _unchanged(now, before):
                continue
            for attribute, value in before.items():
                if now.get(attribute, _MISSING) is not value:
                    type.__setattr__(kind, attribute, value)
                    yield f"{kind.__module__}.{kind.__qualname__}.{attribute}"
            for attribute in [a for a in now if a not in before and a not in _LAZY_CLASS_ATTRIBUTES]:
                type.__delattr__(kind, attribute)
                yield f"{kind.__module__}.{kind.__qualname__}.{attribute} (added)"

    def _undo_functions(self) -> Iterator[str]:
        now = _runs_with(self.functions)
        if all(map(_unchanged, now, (self.codes, self.defaults, self.kwdefaults))):
            return
        for function, code, defaults, kwdefaults in zip(
            self.functions, self.codes, self.defaults, self.kwdefaults, strict=True
        ):
            if (
                function.__code__ is not code
                or function.__defaults__ is not defaults
                or function.__kwdefaults__ is not kwdefaults
            ):
                function.__code__ = code
                function.__defaults__ = defaults
                function.__kwdefaults__ = kwdefaults
                yield f"the code of {function.__module__}.{function.__qualname__}"


def _runs_with(functions: list[FunctionType]) -> tuple[list[Any], list[Any], list[Any]]:
    """The code, defaults and keyword defaults of each function (read at C speed)."""
    return (
        list(map(_CODE, functions)),
        list(map(_DEFAULTS, functions)),
        list(map(_KWDEFAULTS, functions)),
    )


def _unchanged(now: Any, before: Any) -> bool:
    """Whether two namespaces (or lists) hold the very same keys and values in the same order: by
    identity alone, at C speed, and never through a value's own __eq__ (the revision's could lie)."""
    if len(now) != len(before):
        return False
    if isinstance(before, dict):
        return all(map(operator.is_, now, before)) and all(map(operator.is_, now.values(), before.values()))
    return all(map(operator.is_, now, before))


def _defined(name: str, module: ModuleType, namespace: dict[str, Any]) -> _Defined:
    """The classes module `name` defines (those whose attributes can be set), its functions, and
    its classes' functions (static and class methods' too)."""
    known = _DEFINED.get(name)
    if known is not None and known.module is module and known.size == len(namespace):
        return known
    classes = [
        value
        for value in namespace.values()
        if isinstance(value, type) and value.__module__ == name and not value.__flags__ & _IMMUTABLE_TYPE
    ]
    functions = [v for v in namespace.values() if isinstance(v, FunctionType) and v.__module__ == name]
    for kind in classes:
        members = (getattr(member, "__func__", member) for member in list(vars(kind).values()))
        functions += [member for member in members if isinstance(member, FunctionType)]
    _DEFINED[name] = found = _Defined(module, len(namespace), classes, functions)
    return found


def _watched() -> list[tuple[str, ModuleType]]:
    """The watched modules now loaded, and the modules that this plugin's name at module level."""
    found: dict[str, ModuleType] = {}
    for name, module in list(sys.modules.items()):
        if not isinstance(module, ModuleType):
            continue
        if name in PROCESS_MODULES or name.partition(".")[0] in JUDGING_PACKAGES:
            found[name] = module
            if name.partition(".")[0] == PLUGIN:
                for value in list(vars(module).values()):
                    if isinstance(value, ModuleType) and sys.modules.get(value.__name__) is value:
                        found.setdefault(value.__name__, value)
    return list(found.items())


def _drop_new_plugin_modules(known: set[str]) -> None:
    """This plugin's modules loaded since `take`, out of sys.modules: the run loads its own when it
    needs one (a module of the revision's that imported one keeps that copy)."""
    for name in [n for n in sys.modules if n.partition(".")[0] == PLUGIN and n not in known]:
        del sys.modules[name]
