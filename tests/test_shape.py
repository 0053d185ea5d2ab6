"""The package's shape, beside its floors (test_layering.py): functions take few parameters, and the
fixture stays a facade that sequences its stages (pytest_kernelperf/call/) rather than doing them."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest_kernelperf

PACKAGE = Path(pytest_kernelperf.__file__).resolve().parent
FACADE = PACKAGE / "kernel_bench.py"
FIXTURE_CLASS = "KernelBench"
MOST_PARAMETERS = 8
MOST_METHOD_LINES = 60
MOST_FACADE_LINES = 300
# The public call: its keywords are the user's interface (README, the fixture's docstring), and the
# stand-in an Nsight Compute child's fixture is takes the same.
EXEMPT = {"kernel_bench.py:KernelBench.__call__", "call/replay.py:Replay.__call__"}

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, Function]]:
    """(qualified name, node) of every function in `tree`, methods and nested functions included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield f"{prefix}{node.name}", node
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def parameters(function: Function) -> int:
    """Its named parameters, self or cls aside (*args and **kwargs are one bag each, not counted)."""
    arguments = function.args
    named = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    return len([a for a in named if a.arg not in ("self", "cls")])


def too_many_parameters(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        for name, function in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            count = parameters(function)
            if count > MOST_PARAMETERS and f"{where}:{name}" not in EXEMPT:
                found.append(f"{where}:{function.lineno} {name} takes {count} parameters")
    return found


def test_no_function_takes_more_than_eight_parameters() -> None:
    assert too_many_parameters(PACKAGE) == []


def test_the_parameter_count_catches_a_long_signature(tmp_path: Path) -> None:
    (tmp_path / "wide.py").write_text(
        "def wide(a, b, c, d, e, f, g, h, *args, i=1, **kwargs): ...\n"
        "class C:\n    def narrow(self, a, b, c, d, e, f, g, h): ...\n"
    )
    assert too_many_parameters(tmp_path) == ["wide.py:1 wide takes 9 parameters"]


def test_no_method_of_the_fixture_class_is_longer_than_sixty_lines() -> None:
    tree = ast.parse(FACADE.read_text(encoding="utf-8"))
    (fixture,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == FIXTURE_CLASS]
    long = {
        n.name: n.end_lineno - n.lineno + 1
        for n in fixture.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno is not None
        if n.end_lineno - n.lineno + 1 > MOST_METHOD_LINES
    }
    assert long == {}


def test_the_fixture_module_is_a_facade_of_at_most_three_hundred_lines() -> None:
    lines = len(FACADE.read_text(encoding="utf-8").splitlines())
    assert lines <= MOST_FACADE_LINES, f"{FACADE.name} has {lines} lines"
