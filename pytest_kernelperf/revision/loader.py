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
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from pytest_kernelperf.model.result import Found
from pytest_kernelperf.revision.source import ignored

# Never loaded twice: the plugin measuring both sides must be one.
SHARED_PACKAGES = ("pytest_kernelperf",)


@dataclass(frozen=True)
class Lookup:
    found: Found
    fn: Callable[..., Any] | None = None
    where: str = ""  # "example_kernels.gelu:triton_gelu"
    reason: str = ""  # why there is no counterpart


class RevisionCode:
    """The code of one revision (its files exported under `base_top`) beside this process's own,
    whose repository is at `top`."""

    def __init__(self, top: Path, base_top: Path, name: str) -> None:
        self.top = top.resolve()
        self.base_top = base_top.resolve()
        self.name = name  # how messages name the revision
        self._loaded: dict[str, ModuleType] = {}  # the revision's modules, by name
        self._failed: dict[str, str] = {}  # module name -> why the revision's cannot be imported
        self._inside: dict[str, Path | None] = {}  # module file -> its path in the repo (None: outside)
        self._importing = 0  # imports of the revision's code in progress (sys.modules is its view)
        # The builtins the revision's modules run with: an import made inside one of its functions,
        # when called (`from .triton_gelu import run`), gets the revision's module too.
        self.builtins = {**vars(builtins), "__import__": self._import}

    # -- public ------------------------------------------------------------------------------------

    def find(self, fn: Callable[..., Any], test_module: Path | None = None) -> Lookup:
        """fn's counterpart at the revision: looked up by the name fn has in its own module, else
        in the test's module (a function made there, e.g. torch.compile of an imported one)."""
        home = sys.modules.get(getattr(fn, "__module__", None) or "")
        name = _name_in(home, fn) if home is not None else None
        if home is not None and self._repo_file(home) is None:
            return Lookup(
                Found.OUTSIDE,
                reason=f"{_describe(fn)} comes from {home.__name__}, outside the repository: "
                f"{self.name} runs the same code",
            )
        if home is not None and name is not None:
            return self._counterpart(home, name)
        if test_module is not None:
            for module in list(sys.modules.values()):
                if _file(module) == test_module.resolve():
                    name = _name_in(module, fn)
                    if name is not None and self._repo_file(module) is not None:
                        return self._counterpart(module, name)
        return Lookup(
            Found.UNLOADABLE,
            reason=f"{_describe(fn)} is not a name at module level of its module or of the test "
            "module (a lambda, a closure, a partial or a bound method cannot be found at another "
            "revision); give it a name at module level",
        )

    # -- steps -------------------------------------------------------------------------------------

    def _counterpart(self, module: ModuleType, name: str) -> Lookup:
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
        if not callable(value):
            return Lookup(
                Found.UNLOADABLE,
                where=where,
                reason=f"{name} in {module.__name__} at {self.name} is a {type(value).__name__}, "
                "not a callable",
            )
        return Lookup(Found.SAME_NAME, fn=value, where=where)

    def _load(self, module_name: str) -> ModuleType | str:
        """The revision's module, imported once; or why it cannot be."""
        if module_name in self._loaded:
            return self._loaded[module_name]
        if module_name in self._failed:
            return self._failed[module_name]
        with self._as_revision():
            try:
                module = importlib.import_module(module_name)
            except BaseException as exc:  # its own code may raise anything, SystemExit included
                if isinstance(exc, KeyboardInterrupt):
                    raise
                problem = f"{module_name} cannot be imported from {self.name}: {type(exc).__name__}: {exc}"
                self._failed[module_name] = problem
                return problem
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
        return any(loaded.partition(".")[0] == top for loaded in self._loaded)

    @contextlib.contextmanager
    def _as_revision(self) -> Iterator[None]:
        """sys.modules and sys.path as the revision's code expects them, for one import."""
        modules = list(sys.modules.items())
        self._classify([m for _, m in modules])
        own = {name: m for name, m in modules if self._swapped(name, m)}
        roots = self._roots(own)
        for name in own:
            del sys.modules[name]
        sys.modules.update(self._loaded)
        path = list(sys.path)
        sys.path[:0] = [str(self.base_top / root) for root in roots]
        finder = _RevisionFinder(self.base_top, self.builtins)
        sys.meta_path.insert(0, finder)
        importlib.invalidate_caches()
        self._importing += 1
        try:
            yield
        finally:
            self._importing -= 1
            sys.meta_path.remove(finder)
            for name, module in list(sys.modules.items()):
                where = _file(module)
                if where is not None and where.is_relative_to(self.base_top):
                    self._loaded[name] = module
                    del sys.modules[name]
            sys.modules.update(own)
            sys.path[:] = path
            importlib.invalidate_caches()

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
            folder = Path(entry or ".").resolve()
            if folder.is_relative_to(self.top):
                roots.append(folder.relative_to(self.top))
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
        """Says of each module's file, once, whether it is the repository's: one call of git for
        all of them (a virtual environment inside the checkout holds thousands)."""
        files = {str(where): where for where in map(_file, modules) if where is not None}
        inside = []
        for key, where in files.items():
            if key in self._inside:
                continue
            if where.is_relative_to(self.top) and not where.is_relative_to(self.base_top):
                inside.append(where)
            else:
                self._inside[key] = None
        skipped = ignored(self.top, inside)
        for where in inside:
            self._inside[str(where)] = None if where in skipped else where.relative_to(self.top)


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
    return Path(where).resolve()


def _name_in(module: ModuleType, fn: object) -> str | None:
    """The name at module level under which `module` holds fn (or a class holding it, for a
    static or class function: "Kernels.gelu"); None when it holds it under no name."""
    namespace = vars(module)
    for name, held in list(namespace.items()):
        if held is fn and not name.startswith("__"):
            return name
    qualname = getattr(fn, "__qualname__", "")
    if "<" in qualname:
        return None
    value: Any = module
    for part in qualname.split("."):
        value = getattr(value, part, None)
    return qualname if value is fn else None


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
