"""The package's floors, as docs/architecture.md draws them: every import points down.

A part is a folder under pytest_kernelperf/ or a module at its top. Each part stands on one floor
(FLOORS, bottom first), and a module imports only modules of its own part or of parts on lower
floors: never a part on a higher floor, never another part of its own floor. Every import counts,
at module level, inside functions and under TYPE_CHECKING alike. Beside that: model/ imports only
the standard library and model/; only the plugin side imports pytest; torch and triton are
imported only inside functions (or for type checking), and only by the parts that run kernels.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import pytest_kernelperf

PACKAGE = Path(pytest_kernelperf.__file__).resolve().parent
DOC = PACKAGE.parent / "docs" / "architecture.md"

FLOORS: tuple[tuple[str, ...], ...] = (
    ("model/",),
    ("__init__.py", "formatting.py", "ids.py", "atomic.py", "tensors.py", "revision/"),
    ("verdict/", "correctness.py"),
    ("measure/",),
    ("profiling/",),
    ("baselines/", "settings.py"),
    ("results/",),
    ("call/",),
    ("kernel_bench.py", "hookspec.py", "testing.py", "history/", "github/"),
    ("plugins/",),
    ("plugin.py",),
    ("cli.py",),
    ("__main__.py",),
)
PYTEST_PARTS = ("plugin.py", "plugins/", "hookspec.py")
TORCH_PARTS = ("measure/", "profiling/", "correctness.py", "tensors.py")
GPU_STACK = ("torch", "triton")


def _part(root: Path, dotted: str) -> str:
    """The part of the package that module `dotted` belongs to: `measure/`, `ids.py`, `__init__.py`."""
    names = dotted.split(".")[1:]
    if not names:
        return "__init__.py"
    return f"{names[0]}/" if (root / names[0]).is_dir() else f"{names[0]}.py"


def _module(root: Path, path: Path) -> tuple[str, bool]:
    """(dotted name, is a package's __init__) of a file under `root`."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _exists(root: Path, dotted: str) -> bool:
    where = root.joinpath(*dotted.split(".")[1:])
    return where.is_dir() or where.with_suffix(".py").is_file()


def _deferred(tree: ast.Module) -> set[int]:
    """The nodes that do not run when the module is imported: inside functions or TYPE_CHECKING."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) or (
            isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        ):
            inside.update(id(child) for child in ast.walk(node) if child is not node)
    return inside


def imports(root: Path, path: Path) -> Iterator[tuple[int, str, bool]]:
    """(line, imported module, whether importing `path` runs it) for every import in `path`;
    `from package import name` counts as an import of the submodule where `name` is one."""
    dotted, is_init = _module(root, path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    deferred = _deferred(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, id(node) not in deferred
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = dotted.split(".") if is_init else dotted.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, *([node.module] if node.module else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                inside = submodule.startswith(f"{root.name}.") and _exists(root, submodule)
                yield node.lineno, submodule if inside else base, id(node) not in deferred


def violations(root: Path, floors: Sequence[Sequence[str]]) -> list[str]:
    """Every import in the package under `root` that breaks the rules of this module's docstring."""
    floor_of = {part: level for level, parts in enumerate(floors) for part in parts}
    found = []
    for path in sorted(root.rglob("*.py")):
        dotted, _ = _module(root, path)
        part = _part(root, dotted)
        where = f"{path.relative_to(root.parent)}"
        if part not in floor_of:
            found.append(f"{where}: {part} stands on no floor")
            continue
        for line, target, eager in imports(root, path):
            first = target.split(".")[0]
            if first == root.name:
                other = _part(root, target)
                if other == part:
                    continue
                if other not in floor_of:
                    found.append(f"{where}:{line} imports {target}: {other} stands on no floor")
                elif floor_of[other] >= floor_of[part]:
                    way = "up" if floor_of[other] > floor_of[part] else "sideways"
                    found.append(
                        f"{where}:{line} imports {target} {way}: {part} stands on floor "
                        f"{floor_of[part]}, {other} on floor {floor_of[other]}"
                    )
            elif part == "model/" and first not in sys.stdlib_module_names:
                found.append(f"{where}:{line} imports {target}: model/ imports only the standard library")
            elif first in ("pytest", "_pytest") and part not in PYTEST_PARTS:
                found.append(f"{where}:{line} imports {target}: only {', '.join(PYTEST_PARTS)} import pytest")
            elif first in GPU_STACK and part not in TORCH_PARTS:
                found.append(f"{where}:{line} imports {target}: only {', '.join(TORCH_PARTS)} import it")
            elif first in GPU_STACK and eager:
                found.append(f"{where}:{line} imports {target} at module level: import it inside functions")
    return found


def test_every_import_of_the_package_points_down() -> None:
    assert violations(PACKAGE, FLOORS) == []


def test_the_architecture_doc_draws_the_floors_the_test_enforces() -> None:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("## Floors", 1)[1].split("```", 2)[1]
    drawn = {}
    for line in block.strip().splitlines():
        level, *parts = line.split()
        drawn[int(level)] = tuple(parts)
    assert drawn == dict(enumerate(FLOORS))


def test_loading_the_verdict_statistics_loads_no_other_layer() -> None:
    code = "import sys, pytest_kernelperf.verdict.noise; print(' '.join(sorted(sys.modules)))"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(PACKAGE.parent), os.environ.get("PYTHONPATH", "")]),
    }
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    ours = {name for name in loaded.stdout.split() if name.startswith("pytest_kernelperf.")}
    assert ours and all(
        name.startswith(("pytest_kernelperf.model", "pytest_kernelperf.verdict")) for name in ours
    )


# --- the check catches what it should ----------------------------------------------------------------


def planted(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, source in {"__init__.py": "", "low/__init__.py": "", "high/__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(source))
    return root


PLANTED_FLOORS = (("__init__.py", "low/"), ("high/", "side.py"))


@pytest.mark.parametrize(
    "source",
    [
        "from pkg.high.b import thing\n",
        "from pkg.high import b\n",
        "import pkg.high.b\n",
        "from ..high.b import thing\n",
        "def f():\n    from pkg.high import b\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high.b import Thing\n",
    ],
)
def test_an_upward_import_is_caught_wherever_it_stands(tmp_path: Path, source: str) -> None:
    root = planted(tmp_path, {"low/a.py": source, "high/b.py": "from pkg.low import a\n"})
    (found,) = violations(root, PLANTED_FLOORS)
    assert (
        found.startswith("pkg/low/a.py:")
        and "pkg.high.b up: low/ stands on floor 0, high/ on floor 1" in found
    )


def test_imports_sideways_and_from_unplaced_parts_are_caught(tmp_path: Path) -> None:
    root = planted(
        tmp_path,
        {
            "high/b.py": "from pkg import side\n",
            "side.py": "from pkg.low import a\n",
            "low/a.py": "",
            "new.py": "",
        },
    )
    assert violations(root, PLANTED_FLOORS) == [
        "pkg/high/b.py:1 imports pkg.side sideways: high/ stands on floor 1, side.py on floor 1",
        "pkg/new.py: new.py stands on no floor",
    ]


def test_imports_within_a_part_and_downward_pass(tmp_path: Path) -> None:
    root = planted(
        tmp_path,
        {
            "low/a.py": "from . import c\nfrom pkg.low.c import x\n",
            "low/c.py": "x = 1\n",
            "high/b.py": "import pkg\n",
        },
    )
    assert violations(root, PLANTED_FLOORS) == []


def test_the_rules_on_pytest_torch_and_the_model_are_caught(tmp_path: Path) -> None:
    files = {
        "model/m.py": "from __future__ import annotations\nimport yaml\n",
        "measure/t.py": "import torch\n\ndef f():\n    import triton\n",
        "x.py": "def f():\n    import torch\n    import pytest\n",
        "plugin.py": "import pytest\n",
    }
    root = planted(tmp_path, files)
    floors = (("__init__.py", "model/"), ("low/", "measure/", "x.py"), ("high/", "plugin.py"))
    assert violations(root, floors) == [
        "pkg/measure/t.py:1 imports torch at module level: import it inside functions",
        "pkg/model/m.py:2 imports yaml: model/ imports only the standard library",
        f"pkg/x.py:2 imports torch: only {', '.join(TORCH_PARTS)} import it",
        f"pkg/x.py:3 imports pytest: only {', '.join(PYTEST_PARTS)} import pytest",
    ]
