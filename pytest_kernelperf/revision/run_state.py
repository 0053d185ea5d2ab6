"""The pytest run itself as an import of the revision's code found it, and put back as it was.

patches.py watches pytest's and pluggy's code; the run also lives in objects: the plugin manager
(its plugins, each hook's implementations), the config, the session, the fixture manager. The
revision's code can reach them (`gc.get_objects()` finds the Config) and change the run without
touching any code: register a plugin whose `pytest_runtest_makereport` wrapper turns failures into
passes, or whose `pytest_sessionfinish` sets `session.exitstatus = 0`; add a fixture that overrides
this plugin's; set `session.testsfailed`, an option, an exit cleanup of the config.

`RunState.take(config)` records, before such an import, the attributes of these objects (by
identity, slots too: pluggy's hook callers and implementations have no `__dict__`) and the contents
of the dicts, lists, sets and deques they hold, a few levels deep; `undo` puts back whatever
changed and says what. A plugin registered meanwhile is thus unregistered without running any of
its hooks or pytest's (`pytest_plugin_registered`'s side effects, its fixtures, are put back too).

No pytest here, no torch: the standard library only (pluggy's and pytest's objects are read by
their attributes).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_MISSING = object()
_CONTAINERS = (dict, list, set, deque)
# dict -> dict -> list: the fixture manager's definitions by name, then by node.
_DEPTH = 3
# At most this many changes are named in a refusal; the rest are counted.
_NAMED = 4


@dataclass
class _Held:
    """One object's attributes, and the containers they hold with their contents."""

    obj: Any
    where: str  # how a refusal names it: "session", "config.option"
    attributes: dict[str, Any]
    containers: list[tuple[str, Any, list[Any]]]  # (how named, the container, its contents)

    @classmethod
    def take(cls, obj: Any, where: str) -> _Held:
        attributes = _attributes(obj)
        containers: list[tuple[str, Any, list[Any]]] = []
        for name, value in attributes.items():
            _contents(f"{where}.{name}", value, _DEPTH, containers)
        return cls(obj, where, attributes, containers)

    def undo(self) -> Iterator[str]:
        now = _attributes(self.obj)
        for name in [n for n in now if n not in self.attributes]:
            object.__delattr__(self.obj, name)
            yield f"{self.where}.{name} (added)"
        for name, value in self.attributes.items():
            if now.get(name, _MISSING) is not value:
                object.__setattr__(self.obj, name, value)
                yield f"{self.where}.{name}"
        for named, container, contents in self.containers:
            if not _same(_listed(container), contents):
                _refill(container, contents)
                yield f"the contents of {named}"


def _attributes(obj: Any) -> dict[str, Any]:
    """Its instance attributes: its __dict__'s and its slots' that are set."""
    found = dict(getattr(obj, "__dict__", {}))
    for kind in type(obj).__mro__:
        slots = vars(kind).get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__"):
                value = getattr(obj, name, _MISSING)
                if value is not _MISSING:
                    found[name] = value
    return found


def _contents(named: str, value: Any, depth: int, into: list[tuple[str, Any, list[Any]]]) -> None:
    if depth == 0 or type(value) not in _CONTAINERS:  # exact types: a subclass's own methods could lie
        return
    contents = _listed(value)
    into.append((named, value, contents))
    for key, item in value.items() if isinstance(value, dict) else enumerate(value):
        _contents(f"{named}[{key!r}]", item, depth - 1, into)


def _listed(container: Any) -> list[Any]:
    """A dict's keys and values, a list's or a deque's items in order, a set's items."""
    if isinstance(container, dict):
        return [*container, *container.values()]
    return list(container)


def _same(now: list[Any], before: list[Any]) -> bool:
    """By identity alone, never through an item's own __eq__ (the revision's could lie); a set's
    items in any order."""
    if len(now) != len(before):
        return False
    if all(a is b for a, b in zip(now, before, strict=True)):
        return True
    return {id(item) for item in now} == {id(item) for item in before} and len(set(map(id, now))) == len(now)


def _refill(container: Any, contents: list[Any]) -> None:
    if isinstance(container, dict):
        half = len(contents) // 2
        container.clear()
        container.update(zip(contents[:half], contents[half:], strict=True))
    elif isinstance(container, list):
        container[:] = contents
    else:  # a set or a deque
        container.clear()
        container.update(contents) if isinstance(container, set) else container.extend(contents)


@dataclass
class RunState:
    """The pytest run's objects (of `config`) at one moment; nothing where there is no run."""

    held: list[_Held]
    plugins: dict[str, Any]

    @classmethod
    def take(cls, config: Any | None) -> RunState:
        if config is None:
            return cls([], {})
        manager = config.pluginmanager
        return cls([_Held.take(obj, where) for obj, where in _run_objects(config)], _plugins(manager))

    def undo(self) -> list[str]:
        """What changed, put back (a plugin registered meanwhile is named as such)."""
        if not self.held:
            return []
        now = _plugins(self.held[0].obj.pluginmanager)
        changed = [named for held in self.held for named in held.undo()]
        if not changed:
            return []
        added = [name for name in now if name not in self.plugins]
        removed = [name for name in self.plugins if name not in now]
        if added or removed:
            return [
                f"{done} a pytest plugin ({', '.join(names)})"
                for done, names in (("registered", added), ("unregistered", removed))
                if names
            ]
        shown = changed[:_NAMED] + ([f"{len(changed) - _NAMED} more"] if len(changed) > _NAMED else [])
        return [f"changed the pytest run ({', '.join(shown)})"]


def _plugins(manager: Any) -> dict[str, Any]:
    return dict(getattr(manager, "_name2plugin", {}))


def _run_objects(config: Any) -> Iterator[tuple[Any, str]]:
    """The objects that decide the run, each with how a refusal names it."""
    manager = config.pluginmanager
    yield config, "config"
    for name in ("option", "stash", "_cleanup_stack"):
        if hasattr(config, name):
            yield getattr(config, name), f"config.{name}"
    yield manager, "the plugin manager"
    relay = manager.hook
    yield relay, "config.hook"
    for name, caller in list(vars(relay).items()):
        yield caller, f"the hook {name}"
        for impl in list(getattr(caller, "_hookimpls", ())):
            yield impl, f"an implementation of {name} ({getattr(impl, 'plugin_name', '?')})"
    session = manager.get_plugin("session")
    if session is not None:
        yield session, "session"
        fixtures = getattr(session, "_fixturemanager", None)
        if fixtures is not None:
            yield fixtures, "the fixture manager"
