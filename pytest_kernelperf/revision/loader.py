"""Finds the function a test times as it is at another revision, loaded into this process.

For `fn` the loader takes the module that defines it (or, failing that, the test module) and the
name it has there, and imports that module from the revision's files under its own name, with every
other module of the repository it imports also taken from the revision: for the length of the
import, the repository's modules leave `sys.modules` and the revision's folders (mirrors of the
repository folders on `sys.path`, and of the import roots of its loaded modules, so a src/ layout
or an editable install is found too) go first on `sys.path`; afterwards the revision's modules are
set aside (reused by later lookups) and the process's own come back. The revision's functions keep
their own module globals, so relative imports, module constants, Triton kernels, `torch.compile`
and extensions built from its sources all stay the revision's.

What cannot be told apart stays shared: packages outside the repository (torch, triton, this
plugin) and imports a function makes only when called, after the lookup.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import enum
import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import sys
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from types import CodeType, MethodType, ModuleType
from typing import Any

from pytest_kernelperf.model.result import Found
from pytest_kernelperf.revision.armed import LeftArmed, nothing_left_armed
from pytest_kernelperf.revision.containment import no_process_exit
from pytest_kernelperf.revision.probe import import_returns
from pytest_kernelperf.revision.source import NotOwn, not_own
from pytest_kernelperf.revision.time_limit import TimeLimit

# Never loaded twice: the plugin measuring both sides must be one.
SHARED_PACKAGES = ("pytest_kernelperf",)


@dataclass(frozen=True)
class Lookup:
    found: Found
    fn: Callable[..., Any] | None = None
    where: str = ""  # "example_kernels.gelu:triton_gelu"
    reason: str = ""  # why there is no counterpart
    # fn's arguments as the counterpart expects them (RevisionCode.translate)
    adapt: Callable[[Any], Any] = lambda value: value
    # How many imports the revision's code has made when called, so far (RevisionCode._import)
    imports_when_called: Callable[[], int] = lambda: 0
    # Bounds a call of fn (its first, which compiles it) by --kernelperf-against-timeout, and keeps
    # it from ending the process (containment.py)
    bounded: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext


class RevisionCode:
    """The code of one revision (its files exported under `base_top`) beside this process's own,
    whose repository is at `top`."""

    def __init__(
        self,
        top: Path,
        base_top: Path,
        name: str,
        limit_s: float | None = None,
        say: Callable[[str], None] | None = None,
        run: Callable[[], object | None] = lambda: None,
    ) -> None:
        self.top = top.resolve()
        self.base_top = base_top.resolve()
        self.name = name  # how messages name the revision
        self.limit_s = limit_s  # seconds an import or a first call of its code may take (None: any)
        self._say = say  # the line before a call that cannot be stopped ends the process (time_limit.py)
        self._run = run  # the pytest config of the run, whose plugins and session the guards watch
        self._loaded: dict[str, ModuleType] = {}  # the revision's modules, by name
        self._failed: dict[str, str] = {}  # module name -> why the revision's cannot be imported
        self._inside: dict[str, Path | None] = {}  # module file -> its path in the repo (None: outside)
        self._importing = 0  # imports of the revision's code in progress (sys.modules is its view)
        self._probing = False  # in the forked copy that tries an import first (probe.py)
        self._loaded_by_last_import: list[str] = []  # the revision's modules the last import loaded
        # Imports the revision's functions made when called: each goes through this loader, whose
        # Python costs another time than the interpreter's own import (host-timed pairs differ).
        self.imports_when_called = 0
        # What each import statement of the revision's code gave: (package, name, level, fromlist).
        self._imported: dict[tuple[Any, str, int, tuple[str, ...]], ModuleType] = {}
        self._classes: dict[type, type | None] = {}  # the repository's class -> the revision's
        self._roots_seen: list[Path] = []  # the import roots found so far, relative to the top
        # The builtins the revision's modules run with: an import made inside one of its functions,
        # when called (`from .triton_gelu import run`), gets the revision's module too.
        self.builtins = {**vars(builtins), "__import__": self._import}

    # -- public ------------------------------------------------------------------------------------

    def find(self, fn: Callable[..., Any], test_module: Path | None = None) -> Lookup:
        """fn's counterpart at the revision, by a name some module of the repository holds it under:
        fn's own module first, then the test's module (a function made there, e.g. torch.compile
        of an imported one), then every other; a bound method by the name of what it is bound to
        (`MyFunction.apply`, `model.forward`). The first name the revision also has wins; failing
        all, why."""
        home = sys.modules.get(getattr(fn, "__module__", None) or "")
        defined = inspect.isfunction(fn) or inspect.isbuiltin(fn) or inspect.isclass(fn)
        # A function's module is where its code is (an object's is only its type's).
        outside = Lookup(
            Found.OUTSIDE,
            reason=f"{_describe(fn)} comes from {getattr(home, '__name__', '?')}, outside the "
            f"repository: {self.name} runs the same code",
        )
        owner = getattr(fn, "__self__", None)
        target, attribute = (owner, getattr(fn, "__name__", "")) if _bound(fn) else (fn, "")
        tried: list[Lookup] = []
        for module in self._homes(target, test_module):
            # Held by a module that did not define it (imported there): the revision's object of
            # that name must not have been defined there either, or it is another function.
            borrowed = module.__name__ != getattr(target, "__module__", None)
            for name in _names_in(module, target):
                lookup = self._counterpart(module, f"{name}.{attribute}" if attribute else name, borrowed)
                if lookup.found is Found.SAME_NAME and lookup.fn is fn:
                    return outside  # the revision holds the very same object: shared code
                if lookup.found is Found.SAME_NAME:
                    return lookup
                tried.append(lookup)
        if not tried and (not defined or attribute):
            made = self._object_counterpart(target, attribute)
            if made is not None:
                return made
        if defined and home is not None and self._repo_file(home) is None:
            return outside
        if tried and tried[0].found is Found.ABSENT:  # its likeliest home lacks the name
            renamed = self._renamed(fn, self._homes(target, test_module)[:2])
            if renamed is not None:
                return renamed
            return replace(tried[0], reason=tried[0].reason + RENAME_HINT)
        if tried:
            return tried[0]
        return Lookup(
            Found.UNLOADABLE,
            reason=f"{_describe(fn)} is held under no name at module level of the repository's modules "
            "(a lambda, a closure, or an object made inside a test of a class that is not the "
            "repository's, cannot be found at another revision); give it a name at module level",
        )

    def translate(self, value: Any) -> Any:
        """`value` as the revision's code expects it: an enum member, a dataclass or a named tuple of
        a class the repository defines becomes one of the revision's class of the same module and
        name (so that `mode is Mode.FAST` and `isinstance(cfg, Config)` hold there too); tuples,
        lists and dicts item by item; anything else (tensors, numbers, objects of other classes) as
        it is."""
        kind = type(value)
        # A container is rebuilt only where an item changes: an in-place kernel's list stays the
        # list its inputs are restored into.
        if kind in (tuple, list):
            items = [self.translate(item) for item in value]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else kind(items)
        if kind is dict:
            changed = {key: self.translate(item) for key, item in value.items()}
            return value if all(changed[key] is value[key] for key in value) else changed
        other = self._revision_class(kind)
        if other is None:
            return value
        if isinstance(value, enum.Enum) and issubclass(other, enum.Enum):
            return other.__members__.get(value.name, value)
        if dataclasses.is_dataclass(value):
            fields = dataclasses.fields(value)
            made = other(**{f.name: self.translate(getattr(value, f.name)) for f in fields if f.init})
            for field in fields:
                if not field.init:
                    object.__setattr__(made, field.name, self.translate(getattr(value, field.name)))
            return made
        if isinstance(value, tuple) and hasattr(kind, "_fields"):
            return other(*(self.translate(item) for item in value))
        return value

    # -- steps -------------------------------------------------------------------------------------

    def _object_counterpart(self, fn: object, attribute: str = "") -> Lookup | None:
        """For a callable object made in a test (`MLPBlock(...)`, `torch.compile(MLPBlock(...))`, or
        the `attribute` of one, `block.forward`) whose class the repository defines: the same object
        as the revision's class, its state shared (parameters, buffers) and the repository's
        objects in it made the revision's too (see _twin); a torch.compile'd module is compiled
        the same way again around the revision's. None where fn is no such object; the reason
        where the revision lacks the class or the object cannot be rebuilt."""
        original = getattr(fn, "_orig_mod", None)  # torch.compile of a module: OptimizedModule
        kind = type(original if original is not None else fn)
        if not self._from_repository(kind) or "<locals>" in kind.__qualname__:
            return None  # not the repository's class, or one no name finds
        where = f"{kind.__module__}:{kind.__qualname__}{'.' + attribute if attribute else ''}"
        where += " (an object made in the test)"
        there = self._counterpart(sys.modules[kind.__module__], kind.__qualname__)
        if there.found is not Found.SAME_NAME:
            return replace(there, where=where)  # the class is new, or its module does not import
        if not isinstance(there.fn, type) or there.fn is kind:
            return None
        if attribute and not hasattr(there.fn, attribute):
            reason = f"{kind.__qualname__} at {self.name} has no {attribute}"
            return Lookup(Found.ABSENT, where=where, reason=reason)
        try:
            twin = self._twin(fn)
            if attribute:
                twin = getattr(twin, attribute)
        except Exception as exc:  # an object this cannot rebuild: say why, time nothing
            return Lookup(
                Found.UNLOADABLE,
                where=where,
                reason=f"{_describe(fn)} (an object made in the test) could not be rebuilt as "
                f"{self.name}'s {kind.__qualname__}: {type(exc).__name__}: {exc}",
            )
        return self._found(twin, where)

    def _twin(self, value: Any) -> Any:
        """`value` with the revision's code wherever the repository's is in it, failing closed:
        whatever holds the repository's code and cannot be given the revision's raises TypeError,
        never keeps this code silently. Objects that hold none of it stay shared (tensors,
        parameters, numbers); a value held twice or in a cycle is rebuilt once.

        * an object of a repository class: an object of the revision's class of that name with
          the same attributes, each rebuilt (a shallow copy: tensors stay shared); an object of
          another class that holds the repository's code (`nn.ModuleList`, `nn.Sequential`): a
          copy of the same class, its attributes rebuilt;
        * a function or class of the repository: the revision's of that name; a method bound to a
          rebuilt object: the revision's function of that name bound to it; `functools.partial`,
          lists, tuples (named tuples too), sets and dicts (hooks are kept in ordered dicts): item
          by item; an enum member: the revision's member of that name; a torch.compile'd module:
          compiled again, with the same options, around its rebuilt module.

        Raises TypeError for what cannot be rebuilt without running this code: state in
        __slots__, a module compiled in place (`module.compile()`), code the revision lacks."""
        return self._rebuild(value, {}, {})

    def _rebuild(self, value: Any, made: dict[int, Any], touched: dict[int, bool]) -> Any:
        if not self._touches(value, touched):
            return value
        key = id(value)
        if key in made:
            return made[key]
        kind = type(value)
        inner = getattr(value, "_orig_mod", None)
        if inner is not None and hasattr(value, "dynamo_ctx"):  # torch.compile of a module
            made[key] = kind(self._rebuild(inner, made, touched), value.dynamo_ctx)
            return made[key]
        if getattr(value, "_torchdynamo_orig_callable", None) is not None:
            raise TypeError(
                "torch.compile of a function or method holding this code (module.compile() compiles "
                "in place): give kernel_bench torch.compile(module) instead"
            )
        if isinstance(value, ModuleType):
            loaded = self._load(value.__name__)
            if isinstance(loaded, str):
                raise TypeError(loaded)
            return loaded
        if inspect.isfunction(value) or isinstance(value, type):
            return self._revision_code(value)
        if isinstance(value, enum.Enum):
            other = self._revision_code(kind)
            if value.name not in other.__members__:
                raise TypeError(f"{kind.__qualname__}.{value.name} is not a member at {self.name}")
            return other.__members__[value.name]
        if isinstance(value, MethodType):
            owner = self._rebuild(value.__self__, made, touched)
            name = value.__func__.__name__
            if owner is value.__self__:  # the repository's function bound to another object
                function = self._revision_code(value.__func__)
            else:
                function = getattr(type(owner), name, None)
            if not inspect.isfunction(function):
                raise TypeError(f"{type(owner).__qualname__}.{name} is no method at {self.name}")
            return MethodType(function, owner)
        if isinstance(value, functools.partial):
            func = self._rebuild(value.func, made, touched)
            args = [self._rebuild(item, made, touched) for item in value.args]
            keywords = {k: self._rebuild(item, made, touched) for k, item in value.keywords.items()}
            made[key] = functools.partial(func, *args, **keywords)
            return made[key]
        if kind is list:
            items: list[Any] = []
            made[key] = items  # before its items: a list that holds itself
            items.extend(self._rebuild(item, made, touched) for item in value)
            return items
        if kind in (set, frozenset):
            made[key] = kind(self._rebuild(item, made, touched) for item in value)
            return made[key]
        if isinstance(value, tuple):
            parts = [self._rebuild(item, made, touched) for item in value]
            other = self._revision_code(kind) if self._from_repository(kind) else kind
            made[key] = other(*parts) if hasattr(kind, "_fields") else other(parts)
            return made[key]
        if kind in (dict, OrderedDict, defaultdict):
            table: Any = defaultdict(value.default_factory) if kind is defaultdict else kind()
            made[key] = table
            table.update({k: self._rebuild(item, made, touched) for k, item in value.items()})
            return table
        state = getattr(value, "__dict__", None)
        if not isinstance(state, dict) or _slotted(kind):
            raise TypeError(f"{kind.__qualname__} keeps its state in __slots__, which cannot be copied")
        other = self._revision_code(kind) if self._from_repository(kind) else kind
        twin: Any = object.__new__(other)
        made[key] = twin
        twin.__dict__.update({name: self._rebuild(item, made, touched) for name, item in state.items()})
        return twin

    def _touches(self, value: Any, touched: dict[int, bool]) -> bool:
        """Whether the repository's code (its functions, classes, modules, objects) is in `value`,
        as far as lists, tuples, sets, dicts, partials, bound methods and attributes show."""
        key = id(value)
        if key in touched:
            return touched[key]
        touched[key] = False  # a cycle adds nothing
        kind = type(value)
        if value is None or kind in (bool, int, float, complex, str, bytes) or hasattr(value, "data_ptr"):
            found = False  # numbers, text, tensors and parameters
        elif getattr(value, "_torchdynamo_orig_callable", None) is not None:  # torch.compile of a function
            found = self._touches(value._torchdynamo_orig_callable, touched)
        elif isinstance(value, ModuleType):
            found = self._repo_file(value) is not None
        elif inspect.isfunction(value) or isinstance(value, type):
            found = self._from_repository(value)
        elif self._from_repository(kind):
            found = True
        elif isinstance(value, MethodType):
            found = self._touches(value.__self__, touched) or self._from_repository(value.__func__)
        elif isinstance(value, functools.partial):
            found = any(
                self._touches(v, touched) for v in (value.func, *value.args, *value.keywords.values())
            )
        elif isinstance(value, (list, tuple, set, frozenset)):
            found = any(self._touches(item, touched) for item in value)
        elif isinstance(value, dict):
            found = any(self._touches(item, touched) for item in value.values())
        else:
            state = getattr(value, "__dict__", None)
            found = isinstance(state, dict) and any(self._touches(item, touched) for item in state.values())
        touched[key] = found
        return found

    def _from_repository(self, code: Any) -> bool:
        """Whether a class or function is the repository's: its module is one of the repository's."""
        home = sys.modules.get(getattr(code, "__module__", None) or "")
        return home is not None and self._repo_file(home) is not None

    def _revision_code(self, code: Any) -> Any:
        """The revision's function or class of the same module and name as the repository's `code`;
        TypeError where it has none."""
        home = sys.modules[code.__module__]
        if "<locals>" in code.__qualname__:
            raise TypeError(f"{code.__qualname__} is made inside a function: no name finds it at {self.name}")
        lookup = self._counterpart(home, code.__qualname__)
        if lookup.found is not Found.SAME_NAME or lookup.fn is None:
            raise TypeError(lookup.reason)
        return lookup.fn

    def _revision_class(self, kind: type) -> type | None:
        """The revision's class of the same module and name as the repository's class `kind`;
        None for other classes. Looked up once per class: arguments are translated every round."""
        if kind not in self._classes:
            other = None
            if self._from_repository(kind):
                other = self._counterpart(sys.modules[kind.__module__], kind.__qualname__).fn
            self._classes[kind] = other if isinstance(other, type) and other is not kind else None
        return self._classes[kind]

    def _homes(self, target: object, test_module: Path | None) -> list[ModuleType]:
        """The repository's loaded modules, the likeliest holders of `target` first."""
        modules = [m for m in list(sys.modules.values()) if isinstance(m, ModuleType)]
        self._classify(modules)
        own = [m for m in modules if self._repo_file(m) is not None]
        claimed = getattr(target, "__module__", None)
        tested = test_module.resolve() if test_module is not None else None

        def rank(module: ModuleType) -> int:
            return 0 if module.__name__ == claimed else 1 if _file(module) == tested else 2

        return sorted(own, key=rank)

    def _counterpart(self, module: ModuleType, name: str, borrowed: bool = False) -> Lookup:
        where = f"{module.__name__}:{name}"
        relative = self._repo_file(module)
        assert relative is not None
        if not (self.base_top / relative).is_file():
            return Lookup(Found.ABSENT, where=where, reason=f"{self.name} has no {relative.as_posix()}")
        loaded = self._load(module.__name__)
        if isinstance(loaded, str):
            return Lookup(Found.UNLOADABLE, where=where, reason=loaded)
        value: Any = loaded
        for part in name.split("."):
            if not hasattr(value, part):
                return Lookup(
                    Found.ABSENT,
                    where=where,
                    reason=f"{module.__name__} at {self.name} has no {name}",
                )
            value = getattr(value, part)
        if borrowed and getattr(value, "__module__", None) == module.__name__:
            return Lookup(
                Found.ABSENT,
                where=where,
                reason=f"at {self.name}, {name} in {module.__name__} is a function of that module, "
                "not the one timed here",
            )
        if not callable(value):
            return Lookup(
                Found.UNLOADABLE,
                where=where,
                reason=f"{name} in {module.__name__} at {self.name} is a {type(value).__name__}, "
                "not a callable",
            )
        return self._found(value, where)

    @contextlib.contextmanager
    def _first_call(self, what: str) -> Iterator[None]:
        """A counterpart's first call: bounded in time, unable to end the process, and leaving
        nothing armed (armed.py)."""
        limit = TimeLimit(what, self.limit_s, self._say)
        # Objects the call makes may carry exit finalizers of their own (torch.compile's do).
        armed = nothing_left_armed("its first call", limit.threads, finalizers=False, run=self._run())
        with limit, no_process_exit(what, self.base_top), armed:
            yield

    def _renamed(self, fn: Callable[..., Any], modules: list[ModuleType]) -> Lookup | None:
        """fn renamed with no alias left: the one function of the same module at the revision (or
        of the test's module) whose code is fn's, under a name this code no longer has."""
        if not inspect.isfunction(fn):
            return None
        key = _code_key(fn.__code__)
        for module in modules:
            relative = self._repo_file(module)
            if relative is None or not (self.base_top / relative).is_file():
                continue
            loaded = self._load(module.__name__)
            if isinstance(loaded, str):
                continue
            same = {
                name: value
                for name, value in list(vars(loaded).items())
                if inspect.isfunction(value)
                and value.__module__ == loaded.__name__
                and not hasattr(module, name)  # a name this code still has is that function's
                and _code_key(value.__code__) == key
            }
            if len(same) == 1:
                ((name, value),) = same.items()
                return self._found(value, f"{module.__name__}:{name} (renamed; the same code)")
        return None

    def _found(self, fn: Callable[..., Any], where: str) -> Lookup:
        """fn's counterpart found: called with arguments made the revision's, its imports counted,
        its first call bounded in time."""
        return Lookup(
            Found.SAME_NAME,
            fn=fn,
            where=where,
            adapt=self.translate,
            imports_when_called=lambda: self.imports_when_called,
            bounded=lambda: self._first_call(f"{where} at {self.name}"),
        )

    def _load(self, module_name: str) -> ModuleType | str:
        """The revision's module, imported once; or why it cannot be."""
        if module_name in self._loaded:
            return self._loaded[module_name]
        if module_name in self._failed:
            return self._failed[module_name]
        # Tried first in a forked copy: an import that ends the process or never returns is
        # refused before it runs here (containment.py says what guards what).
        if not self._importing and not self._probing:
            self._classify(list(sys.modules.values()))  # asked of git once, here, not in each copy
            what = f"{module_name} at {self.name}"
            ended = import_returns(what, lambda: self._probe(module_name), self.limit_s)
            if ended is not None:
                problem = f"{module_name} cannot be imported from {self.name}: {ended}"
                self._failed[module_name] = problem
                return problem
        leaked: list[str] = []
        refused = ""  # why every module this import loaded is refused
        what = f"{module_name} at {self.name}"
        with self._as_revision(leaked):
            try:
                with (
                    no_process_exit(what, self.base_top),
                    nothing_left_armed(f"importing {what}", run=self._run()),
                ):
                    module = importlib.import_module(module_name)
            except LeftArmed as exc:
                refused = str(exc)
            except BaseException as exc:  # its own code may raise anything, SystemExit included
                if isinstance(exc, KeyboardInterrupt):
                    raise
                problem = f"{module_name} cannot be imported from {self.name}: {type(exc).__name__}: {exc}"
                self._failed[module_name] = problem
                return problem
        if leaked:
            # Its code reached this checkout's (a symbolic link into the work tree): judging it
            # would judge this code against itself.
            refused = (
                f"{what} imported {', '.join(leaked)} from this checkout, not from "
                f"{self.name}'s files (a symbolic link into the work tree?): its code would be this code"
            )
        if refused:  # fail closed, for every module of the import
            for name in [module_name, *self._loaded_by_last_import]:
                self._loaded.pop(name, None)
                self._failed[name] = refused
            return refused
        where = _file(module)
        if where is None or not where.is_relative_to(self.base_top):
            problem = f"{module_name} at {self.name} was not found in its files (it resolved to {where})"
            self._failed[module_name] = problem
            return problem
        return module

    def _import(
        self,
        name: str,
        globals: dict[str, Any] | None = None,  # builtins.__import__'s own parameter names
        locals: Any = None,
        fromlist: Any = (),
        level: int = 0,
    ) -> ModuleType:
        """`__import__` for the revision's modules: a module of the repository is the revision's."""
        real = builtins.__import__
        if self._importing:  # sys.modules and sys.path are the revision's already
            return real(name, globals, locals, fromlist, level)
        self.imports_when_called += 1
        key = ((globals or {}).get("__package__"), name, level, tuple(fromlist or ()))
        known = self._imported.get(key)
        if known is not None:  # the same import statement again: as cheap as can be
            return known
        result = self._import_once(name, globals, locals, fromlist, level)
        self._imported[key] = result
        return result

    def _import_once(
        self, name: str, globals: dict[str, Any] | None, locals: Any, fromlist: Any, level: int
    ) -> ModuleType:
        real = builtins.__import__
        absolute = name
        if level:
            package = (globals or {}).get("__package__") or ""
            absolute = importlib.util.resolve_name("." * level + name, package)
        if not self._ours(absolute):
            return real(name, globals, locals, fromlist, level)
        module = self._load(absolute)
        if isinstance(module, str):
            raise ImportError(module, name=absolute)
        if fromlist:
            for item in fromlist:
                if item != "*" and not hasattr(module, item):
                    self._load(f"{absolute}.{item}")  # a submodule (a missing name fails as usual)
            return module
        top = self._load(absolute.partition(".")[0]) if level == 0 else module
        if isinstance(top, str):
            raise ImportError(top, name=absolute)
        return top

    def _ours(self, name: str) -> bool:
        """Whether `name` is a module of the repository, taken from the revision when imported."""
        if name in self._loaded:
            return True
        top = name.partition(".")[0]
        if top in SHARED_PACKAGES:
            return False
        module = sys.modules.get(name) or sys.modules.get(top)
        if module is not None:
            return self._repo_file(module) is not None
        if any(loaded.partition(".")[0] == top for loaded in self._loaded):
            return True
        # Imported by no one yet: the repository's if a root of either side holds it.
        return any(
            (folder / root / top).is_dir() or (folder / root / f"{top}.py").is_file()
            for root in self._roots_seen
            for folder in (self.base_top, self.top)
        )

    def _probe(self, module_name: str) -> None:
        """The import `_load` is about to run, in the forked copy of the process."""
        self._probing = True
        self._load(module_name)

    @contextlib.contextmanager
    def _as_revision(self, leaked: list[str] | None = None) -> Iterator[None]:
        """sys.modules and sys.path as the revision's code expects them, for one import; `leaked`
        gets the names of this checkout's modules that the import loaded (none should be)."""
        modules = list(sys.modules.items())
        self._classify([m for _, m in modules])
        own = {name: m for name, m in modules if self._swapped(name, m)}
        roots = self._roots(own)
        self._roots_seen = list(dict.fromkeys([*self._roots_seen, *roots]))
        for name in own:
            del sys.modules[name]
        sys.modules.update(self._loaded)
        path = list(sys.path)
        # The repository's folders on sys.path give way to the revision's: a module only this
        # process's checkout has is not found from the revision's code.
        sys.path[:] = [str(self.base_top / root) for root in roots] + [
            entry for entry in path if not self._own_folder(entry)
        ]
        finder = _RevisionFinder(self.base_top, self.builtins)
        sys.meta_path.insert(0, finder)
        importlib.invalidate_caches()
        present = set(sys.modules)
        self._importing += 1
        try:
            with _no_operator_registration(self.name):
                yield
        finally:
            self._importing -= 1
            sys.meta_path.remove(finder)
            self._loaded_by_last_import = []
            for name, module in list(sys.modules.items()):
                where = _file(module)
                if where is not None and where.is_relative_to(self.base_top):
                    if name not in self._loaded:
                        self._loaded_by_last_import.append(name)
                    self._loaded[name] = module
                    del sys.modules[name]
                elif name not in present and self._repo_file(module) is not None:
                    if leaked is not None:
                        leaked.append(name)
                    del sys.modules[name]  # this checkout's code, loaded under the revision's view
            sys.modules.update(own)
            sys.path[:] = path
            importlib.invalidate_caches()

    def _own_folder(self, entry: str) -> bool:
        """Whether a sys.path entry is a folder of the repository's own code."""
        folder = Path(entry or ".").resolve()
        return folder.is_relative_to(self.top) and not self._not_own.covers(folder.relative_to(self.top))

    def _swapped(self, name: str, module: ModuleType) -> bool:
        """Whether this module of the process gives way to the revision's during an import."""
        if name.partition(".")[0] in SHARED_PACKAGES:
            return False
        return self._repo_file(module) is not None

    def _roots(self, modules: dict[str, ModuleType]) -> list[Path]:
        """The repository's import roots, relative to its top: its folders on sys.path, in order,
        then those its loaded modules were imported from (an editable install's src/)."""
        roots: list[Path] = []
        for entry in sys.path:
            if self._own_folder(entry):
                roots.append(Path(entry or ".").resolve().relative_to(self.top))
        for name, module in modules.items():
            root = _import_root(name, _file(module))
            if root is not None and root.is_relative_to(self.top):
                roots.append(root.relative_to(self.top))
        return list(dict.fromkeys(roots))

    def _repo_file(self, module: ModuleType) -> Path | None:
        """The module's file relative to the repository's top, or None when it is not the
        repository's code (no file, another folder, or ignored by git: a venv inside the checkout)."""
        where = _file(module)
        if where is None:
            return None
        if str(where) not in self._inside:
            self._classify([module])
        return self._inside[str(where)]

    def _classify(self, modules: list[ModuleType]) -> None:
        """Says of each module's file, once, whether it is the repository's own code (git is asked
        once: a virtual environment inside the checkout holds thousands of modules)."""
        files = {str(where): where for where in map(_file, modules) if where is not None}
        inside = []
        for key, where in files.items():
            if key in self._inside:
                continue
            if where.is_relative_to(self.top) and not where.is_relative_to(self.base_top):
                inside.append(where)
            else:
                self._inside[key] = None
        for where in inside:
            relative = where.relative_to(self.top)
            self._inside[str(where)] = None if self._not_own.covers(relative) else relative

    @functools.cached_property
    def _not_own(self) -> NotOwn:
        return not_own(self.top)


# What registers operators in torch's one registry per process: the revision's version would
# replace the process's own (a custom_op of the same name) or fail on it.
_OPERATOR_REGISTRATION = (
    "custom_op",
    "triton_op",
    "define",
    "impl",
    "register_kernel",
    "register_fake",
    "register_autograd",
    "Library",
)


class OperatorRegistration(RuntimeError):
    """The revision's code registers torch operators: it cannot share the process's registry."""


@contextlib.contextmanager
def _no_operator_registration(revision: str) -> Iterator[None]:
    """torch.library's registration refused for the length of an import of the revision's code."""
    library = sys.modules.get("torch.library")
    if library is None:  # torch not imported: this process has registered no operator to collide with
        yield
        return

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OperatorRegistration(
            f"the code at {revision} registers torch operators (torch.library), which would replace "
            "this process's own of the same name: two versions cannot share one process; compare "
            "them in two runs (docs/ci.md)"
        )

    saved = {name: getattr(library, name) for name in _OPERATOR_REGISTRATION if hasattr(library, name)}
    for name in saved:
        setattr(library, name, refuse)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(library, name, value)


class _RevisionFinder(importlib.abc.MetaPathFinder):
    """Finds the revision's modules (in its folders, by the ordinary path finder) and has each
    Python module run with the revision's builtins, whose import is the revision's."""

    def __init__(self, base_top: Path, revision_builtins: dict[str, Any]) -> None:
        self._base_top = base_top
        self._builtins = revision_builtins

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.origin is None:
            return None
        if not Path(spec.origin).resolve().is_relative_to(self._base_top):
            return None
        if isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            spec.loader = _RevisionLoader(spec.loader, self._builtins)
        return spec


class _RevisionLoader(importlib.abc.InspectLoader):
    """A source loader whose modules run with the revision's builtins (set before their code runs:
    a function keeps the builtins its module had when it was made)."""

    def __init__(
        self, loader: importlib.machinery.SourceFileLoader, revision_builtins: dict[str, Any]
    ) -> None:
        self._loader = loader
        self._builtins = revision_builtins

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__dict__["__builtins__"] = self._builtins
        self._loader.exec_module(module)

    def get_code(self, fullname: str) -> CodeType | None:
        return self._loader.get_code(fullname)

    def get_source(self, fullname: str) -> str | None:
        return self._loader.get_source(fullname)

    def is_package(self, fullname: str) -> bool:
        return self._loader.is_package(fullname)

    def get_filename(self, fullname: str) -> str:
        return self._loader.get_filename(fullname)


def _file(module: ModuleType | None) -> Path | None:
    where = getattr(module, "__file__", None)
    if not isinstance(where, str):
        return None
    return _resolved(where)


@functools.cache
def _resolved(path: str) -> Path:
    """A module file's real path, found once (a process with torch holds thousands of modules)."""
    return Path(path).resolve()


# Said where fn's name is absent at the revision.
RENAME_HINT = (
    "; if it was renamed (and its code changed), keep the old name as an alias (old_name = new_name) "
    "for as long as the revision compared with has only the old one"
)


def _code_key(code: CodeType) -> tuple[Any, ...]:
    """What a function's code does, without its name or lines: equal for a function renamed."""
    consts = tuple(_code_key(c) if isinstance(c, CodeType) else (type(c), c) for c in code.co_consts)
    return (
        code.co_code,
        consts,
        code.co_names,
        code.co_varnames,
        code.co_freevars,
        code.co_argcount,
        code.co_kwonlyargcount,
        code.co_flags,
    )


def _names_in(module: ModuleType, target: object) -> list[str]:
    """The names under which `module` holds `target`: at module level, the target's own name first,
    else as an attribute of a class the module defines ("Kernels.gelu", a static function or a
    callable object held by the class)."""
    namespace = list(vars(module).items())
    names = [name for name, held in namespace if held is target and not name.startswith("__")]
    own = getattr(target, "__name__", None)
    names.sort(key=lambda name: name != own)
    if names:
        return names
    for name, held in namespace:
        if isinstance(held, type) and held.__module__ == module.__name__:
            names += [
                f"{name}.{attr}" for attr, value in list(vars(held).items()) if _unwrapped(value) is target
            ]
    return names


def _slotted(kind: type) -> bool:
    """Whether some class of `kind`'s keeps attributes in __slots__ (beyond __dict__ itself)."""
    for base in kind.__mro__:
        slots = vars(base).get("__slots__", ())
        if any(
            name not in ("__dict__", "__weakref__")
            for name in ((slots,) if isinstance(slots, str) else slots)
        ):
            return True
    return False


def _unwrapped(value: object) -> object:
    """A class attribute as reading it gives it: a staticmethod's function."""
    return value.__func__ if isinstance(value, staticmethod) else value


def _bound(fn: object) -> bool:
    """A method bound to an object or class (not a module: a builtin function's __self__ is one)."""
    owner = getattr(fn, "__self__", None)
    return owner is not None and not isinstance(owner, ModuleType) and hasattr(fn, "__func__")


def _import_root(name: str, where: Path | None) -> Path | None:
    """The folder from which module `name` at `where` was imported ("/repo/src" for pkg.mod at
    /repo/src/pkg/mod.py); None when the file does not sit where the name says."""
    if where is None:
        return None
    parts = name.split(".")
    folder = where.parent
    if where.name == "__init__.py":
        names = parts
    elif where.stem == parts[-1]:
        names = parts[:-1]
    else:
        return None
    for part in reversed(names):
        if folder.name != part:
            return None
        folder = folder.parent
    return folder


def _describe(fn: object) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__
