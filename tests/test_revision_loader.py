"""revision/: a revision resolved and exported without touching the repository, and the loader
that finds a function's counterpart there, with the revision's own modules."""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import git_run

from pytest_kernelperf.model.result import Found
from pytest_kernelperf.revision.loader import RevisionCode, _import_root
from pytest_kernelperf.revision.source import RevisionError, export, resolve


@pytest.fixture
def src_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A src/ layout (src/pkg with a relative import and a class of static kernels) committed with
    FACTOR 2, then FACTOR 3 in the work tree; src/ on sys.path, as an editable install puts it."""
    repo = tmp_path / "repo"
    package = repo / "src" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text("FACTOR = 2\n")
    (package / "kern.py").write_text(
        "from .helpers import FACTOR\n\n"
        "def scale(x):\n    return x * FACTOR\n\n"
        "class Kernels:\n    @staticmethod\n    def shift(x):\n        return x + FACTOR\n\n"
        "unnamed = [lambda x: x]\n\n"
        "class _Scale:\n    def __call__(self, x):\n        return x * FACTOR\n\n"
        "class Ops:\n    scale = _Scale()\n\n"
        # Imports made when called, as example_kernels' Triton GELU makes one.
        "def lazy_relative(x):\n    from .helpers import FACTOR as factor\n\n    return x * factor\n\n"
        "def lazy_absolute(x):\n    import pkg.helpers\n\n    return x * pkg.helpers.FACTOR\n"
    )
    git_run(repo, "init", "-q")
    git_run(repo, "add", "-A")
    git_run(repo, "commit", "-qm", "base")
    (package / "helpers.py").write_text("FACTOR = 3\n")
    (package / "kern.py").write_text((package / "kern.py").read_text() + "\ndef added(x):\n    return x\n")
    monkeypatch.syspath_prepend(str(repo / "src"))
    yield repo
    for name in [n for n in sys.modules if n == "pkg" or n.startswith("pkg.")]:
        del sys.modules[name]


def code_at_head(repo: Path, tmp_path: Path) -> RevisionCode:
    revision = resolve(repo / "src", "HEAD")
    return RevisionCode(revision.top, export(revision, tmp_path / "head"), revision.describe())


def test_the_counterpart_uses_the_revisions_modules_and_the_process_keeps_its_own(
    src_layout: Path, tmp_path: Path
) -> None:
    from pkg import kern  # type: ignore[import-not-found]  # the work tree's

    code = code_at_head(src_layout, tmp_path)
    scale = code.find(kern.scale)
    shift = code.find(kern.Kernels.shift)
    assert scale.found is Found.SAME_NAME and scale.where == "pkg.kern:scale"
    assert scale.fn is not None and scale.fn(1) == 2 and kern.scale(1) == 3
    assert shift.fn is not None and shift.fn(1) == 3 and shift.where == "pkg.kern:Kernels.shift"
    held = code.find(kern.Ops.scale)  # a callable object held by a class
    assert held.fn is not None and held.fn(1) == 2 and held.where == "pkg.kern:Ops.scale"
    assert sys.modules["pkg.kern"] is kern and sys.modules["pkg.helpers"].FACTOR == 3
    assert code.find(kern.scale).fn is scale.fn  # the revision's module is loaded once


def test_imports_made_inside_the_revisions_functions_get_the_revisions_modules(
    src_layout: Path, tmp_path: Path
) -> None:
    from pkg import kern  # type: ignore[import-not-found]

    code = code_at_head(src_layout, tmp_path)
    relative, absolute = code.find(kern.lazy_relative).fn, code.find(kern.lazy_absolute).fn
    assert relative is not None and absolute is not None
    assert (relative(1), absolute(1)) == (2, 2)  # HEAD's FACTOR, called after the lookup
    assert (kern.lazy_relative(1), kern.lazy_absolute(1)) == (3, 3)  # the work tree's
    assert sys.modules["pkg.helpers"].FACTOR == 3


def test_what_cannot_be_compared_says_why(src_layout: Path, tmp_path: Path) -> None:
    from pkg import kern  # type: ignore[import-not-found]

    code = code_at_head(src_layout, tmp_path)
    added = code.find(kern.added)
    assert added.found is Found.ABSENT and "has no added" in added.reason
    unnamed = code.find(kern.unnamed[0])
    assert unnamed.found is Found.UNLOADABLE and "held under no name at module level" in unnamed.reason
    outside = code.find(functools.reduce)
    assert outside.found is Found.OUTSIDE and "outside the repository" in outside.reason


def test_a_function_made_in_the_test_module_is_found_there(src_layout: Path, tmp_path: Path) -> None:
    """A wrapper made in the test module (as torch.compile makes one) carries its target's module
    and name; it is found by the name the test module gives it."""
    tests = src_layout / "tests"
    tests.mkdir()
    (tests / "test_k.py").write_text(
        "import functools\nfrom pkg.kern import scale\n\n"
        "@functools.wraps(scale)\ndef wrapped(x):\n    return scale(x) + 100\n"
    )
    git_run(src_layout, "add", "tests")
    git_run(src_layout, "commit", "-qm", "tests")
    sys.path.insert(0, str(tests))
    try:
        import test_k  # type: ignore[import-not-found]

        code = code_at_head(src_layout, tmp_path)
        found = code.find(test_k.wrapped, tests / "test_k.py")
        assert found.found is Found.SAME_NAME and found.where == "test_k:wrapped"
        assert found.fn is not None and found.fn(1) == 102  # HEAD's wrapper around HEAD's scale (x2)
        assert test_k.wrapped(1) == 103
    finally:
        sys.path.remove(str(tests))
        sys.modules.pop("test_k", None)


def test_resolve_names_the_revision_and_refuses_what_is_not_one(src_layout: Path, tmp_path: Path) -> None:
    head = git_run(src_layout, "rev-parse", "HEAD").strip()
    revision = resolve(src_layout / "src" / "pkg", "HEAD")
    assert revision.commit == head and revision.top == src_layout.resolve()
    assert revision.describe() == f"HEAD ({head[:10]})"
    assert resolve(src_layout, head[:12]).describe() == head[:10]
    with pytest.raises(RevisionError, match="'nope' is not a commit"):
        resolve(src_layout, "nope")
    with pytest.raises(RevisionError, match="not inside a git repository"):
        resolve(tmp_path, "HEAD")


@pytest.mark.parametrize(
    ("name", "where", "root"),
    [
        ("pkg.kern", "/r/src/pkg/kern.py", "/r/src"),
        ("pkg", "/r/src/pkg/__init__.py", "/r/src"),
        ("test_k", "/r/tests/test_k.py", "/r/tests"),
        ("pkg.kern", "/r/elsewhere/kern.py", None),
    ],
)
def test_import_root(name: str, where: str, root: str | None) -> None:
    assert _import_root(name, Path(where)) == (Path(root) if root else None)


def test_arguments_of_the_repositorys_classes_become_the_revisions(src_layout: Path, tmp_path: Path) -> None:
    """An enum member, a dataclass and a named tuple of the repository's classes, given to the
    revision's function, are its own classes' (so `is Mode.FAST` and isinstance hold there)."""
    package = src_layout / "src" / "pkg"
    (package / "kinds.py").write_text(
        "import dataclasses, enum, typing\n\n"
        "class Mode(enum.Enum):\n    FAST = 1\n    SLOW = 2\n\n"
        "@dataclasses.dataclass(frozen=True)\nclass Config:\n"
        "    block: int = 128\n    mode: Mode = Mode.FAST\n\n"
        "class Pair(typing.NamedTuple):\n    a: int\n    b: int\n\n"
        "def run(mode, config, pair):\n"
        "    return (mode is Mode.FAST, isinstance(config, Config) and config.mode is Mode.SLOW, "
        "isinstance(pair, Pair))\n"
    )
    git_run(src_layout, "add", "-A")
    git_run(src_layout, "commit", "-qm", "kinds")
    from pkg import kinds  # type: ignore[import-not-found]

    code = code_at_head(src_layout, tmp_path)
    found = code.find(kinds.run)
    assert found.fn is not None
    arguments: tuple[tuple[object, ...], dict[str, object]] = (
        (kinds.Mode.FAST, kinds.Config(64, kinds.Mode.SLOW), kinds.Pair(1, 2)),
        {},
    )
    adapted = found.adapt(arguments)
    assert found.fn(*adapted[0], **adapted[1]) == (True, True, True)
    assert found.fn(*arguments[0]) == (False, False, False)  # what it would see untranslated
    assert adapted[0][1].block == 64
