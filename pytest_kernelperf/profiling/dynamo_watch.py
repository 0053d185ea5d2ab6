"""torch.compile's side of a measurement: a fresh compile context, and what was compiled.

Reads dynamo's and inductor's in-process state, much of it private: the compilation metrics
(`torch._dynamo.utils.get_compilation_metrics`: one record per frame compiled, with its graph's
shapes and dynamo's recompile reason), the automatic-dynamic memory per code object
(`torch._dynamo.pgo`), and the modules inductor generated (`torch._inductor.codecache.PyCodeCache`).
Every read is guarded: where an API is missing or changed, the context degrades to unknown (None)
and never fails the test. torch is only touched once the process has imported dynamo: a call
that never compiles anything costs nothing here.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import re
import sys
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from pytest_kernelperf.model.call import DYNAMIC, FRESH, STATIC, CompileContext, TensorInput

CodeKey = tuple[str, int, str]  # (file, first line, name): how dynamo's code state names a code object
_KERNEL = re.compile(r"^(\w+) = async_compile\.\w+\(", re.MULTILINE)
_COMMENT = re.compile(r"^\s*#.*$\n?", re.MULTILINE)
_REASON_PREFIX = re.compile(r"^\d+/\d+: ")
# Input shapes each compiled code object was given through kernel_bench in this process: names
# the shapes behind automatic dynamic beyond the one dynamo remembers.
_SEEN: dict[CodeKey, list[tuple[str, tuple[int, ...]]]] = {}


def _dynamo() -> Any:
    return sys.modules.get("torch._dynamo")


def _key(code: types.CodeType) -> CodeKey:
    return (code.co_filename, code.co_firstlineno, code.co_name)


def _code_of(obj: Any) -> types.CodeType | None:
    """The code object dynamo compiles for a torch.compile'd function or module, else None."""
    original = getattr(obj, "_torchdynamo_orig_callable", None)
    module = getattr(obj, "_orig_mod", None)  # OptimizedModule
    target = module if module is not None else original
    if target is None:
        return None
    forward = getattr(target, "forward", None) if not isinstance(target, types.FunctionType) else None
    function = forward if forward is not None else target
    code = getattr(getattr(function, "__func__", function), "__code__", None)
    return code if isinstance(code, types.CodeType) else None


def _names_used(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):  # nested functions and comprehensions
            yield from _names_used(const)


def compiled_codes(fn: Callable[..., Any]) -> list[types.CodeType]:
    """Code objects of the torch.compile'd callables `fn` is, or calls by a global or closure
    name (the usual module-level `compiled = torch.compile(f)` called from a plain function)."""
    own = _code_of(fn)
    if own is not None:
        return [own]
    function = getattr(fn, "__func__", fn)
    code = getattr(function, "__code__", None)
    if not isinstance(code, types.CodeType):
        return []
    found: list[types.CodeType] = []
    scope: Mapping[str, Any] = getattr(function, "__globals__", {}) or {}
    candidates = [scope.get(name) for name in dict.fromkeys(_names_used(code))]
    candidates += [
        cell.cell_contents for cell in getattr(function, "__closure__", None) or () if _filled(cell)
    ]
    for candidate in candidates:
        inner = _code_of(candidate) if candidate is not None else None
        if inner is not None and inner not in found:
            found.append(inner)
    return found


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def fresh_context() -> str | None:
    """Forget every compiled graph and dynamo's automatic-dynamic memory, as in a new process.

    `torch._dynamo.reset_code_caches()` clears the cache entries of every code object dynamo has
    seen and the code state (the shapes that turn later compiles dynamic); inductor's caches, in
    memory and on disk, stay, so a graph compiled before comes back from them. Every compiled
    function recompiles on its next call: about a second each on CPU with warm caches.
    Returns a note when it could not be done.
    """
    dynamo = _dynamo()
    if dynamo is None:
        return None  # nothing compiled in this process yet
    reset = getattr(dynamo, "reset_code_caches", None) or getattr(dynamo, "reset", None)
    if reset is None:
        return "torch._dynamo has no reset_code_caches: measured in the shared compile context"
    try:
        reset()
    except Exception as exc:  # never let a private API's change fail the test
        return f"could not reset torch.compile's caches ({type(exc).__name__}: {exc}): shared compile context"
    return None


def _metrics() -> list[Any]:
    utils = sys.modules.get("torch._dynamo.utils")
    getter = getattr(utils, "get_compilation_metrics", None)
    if getter is None:
        return []
    with contextlib.suppress(Exception):
        return list(getter())
    return []


def _generated_modules() -> list[Any]:
    codecache = sys.modules.get("torch._inductor.codecache")
    modules = getattr(getattr(codecache, "PyCodeCache", None), "modules", None)
    return list(modules) if isinstance(modules, list) else []


def _code_state() -> dict[CodeKey, dict[str, Any]]:
    """{code: {source ("L['x']"): size}} of dynamo's automatic-dynamic memory, without loading
    any profile from disk (the private `_CODE_STATE`, read only where it exists)."""
    pgo = sys.modules.get("torch._dynamo.pgo")
    state = getattr(pgo, "_CODE_STATE", None)
    out: dict[CodeKey, dict[str, Any]] = {}
    if not isinstance(state, Mapping):
        return out
    with contextlib.suppress(Exception):
        for code_id, code_state in state.items():
            key = (str(code_id.filename), int(code_id.firstlineno), str(code_id.name))
            sizes = {str(name): entry.size for name, entry in code_state.automatic_dynamic.items()}
            out.setdefault(key, {}).update(sizes)
    return out


def _source_name(source: str) -> str:
    """`L['x']` -> `x`, as the call's parameters are named."""
    match = re.fullmatch(r"L\['([^']+)'\]", source)
    return match.group(1) if match else source


def _static(size: Any) -> tuple[int, ...] | None:
    if isinstance(size, tuple) and all(isinstance(d, int) and not isinstance(d, bool) for d in size):
        return size
    return None


def _dynamic_dims(metric: Any) -> list[str] | None:
    """Symbolic dims of the graph's inputs ("x: dim 0") from its node shapes; None if unreadable."""
    text = getattr(metric, "graph_node_shapes", None)
    if not isinstance(text, str):
        return None
    try:
        shapes = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(shapes, dict):
        return None
    dims: list[str] = []
    for node, shape in shapes.items():
        # Dynamo names a graph input from local `x` `l_x_`; parameters and buffers of a module
        # (`l_self_...`) are never symbolic by default.
        if not (isinstance(node, str) and node.startswith("l_") and node.endswith("_")) or node.startswith(
            "l_self_"
        ):
            continue
        if isinstance(shape, (list, tuple)):
            name = node[2:-1]
            dims += [f"{name}: dim {i}" for i, d in enumerate(shape) if isinstance(d, str)]
    return dims


def _shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _source_hash(modules: Sequence[Any]) -> tuple[tuple[str, ...], str | None]:
    """Kernel names and a hash of the generated source (comments out: they hold cache paths)."""
    kernels: list[str] = []
    digest = hashlib.sha256()
    read = False
    for module in modules:
        path = getattr(module, "__file__", None)
        if not isinstance(path, str):
            continue
        try:
            with open(path, encoding="utf-8") as handle:
                source = handle.read()
        except OSError:
            continue
        read = True
        kernels += _KERNEL.findall(source)
        digest.update(_COMMENT.sub("", source).encode("utf-8"))
    return tuple(dict.fromkeys(kernels)), digest.hexdigest()[:12] if read else None


class CompileWatch:
    """Watches one measured call, from before its first call to the end of its warm-up."""

    def __init__(
        self,
        fn: Callable[..., Any],
        inputs: Sequence[TensorInput],
        mode: str = FRESH,
        exclude: Callable[..., Any] | None = None,
    ) -> None:
        self.mode = mode
        self.inputs = tuple(inputs)
        self.codes = [_key(c) for c in compiled_codes(fn)]
        self.exclude = {_key(c) for c in compiled_codes(exclude)} if exclude is not None else set()
        self.notes: list[str] = []
        if mode == FRESH:
            note = fresh_context()
            if note:
                self.notes.append(note)
        # References held, not ids: a dropped record's id could be reused by a new one.
        self._metrics_before = _metrics()
        self._modules_before = _generated_modules()
        self._state_before = _code_state()

    def finish(self) -> CompileContext | None:
        """The context of the call; None when it compiled nothing and is not a compiled function."""
        if _dynamo() is None:
            return None
        try:
            return self._finish()
        except Exception as exc:  # private APIs: unknown rather than an error
            self.notes.append(f"compile context unknown ({type(exc).__name__}: {exc})")
            return None

    def _finish(self) -> CompileContext | None:
        old = {id(m) for m in self._metrics_before}
        new = [m for m in _metrics() if id(m) not in old and _metric_key(m) not in self.exclude]
        codes = list(dict.fromkeys([*self.codes, *(_metric_key(m) for m in new)]))
        latest: dict[CodeKey, Any] = {}
        # Shared: a call served from the warmed cache compiled nothing, and its graph is the last one
        # compiled for its code. Fresh: only this call's compiles count (older ones were reset).
        earlier = self._metrics_before if self.mode != FRESH else []
        for metric in (*earlier, *new):  # oldest first: the last one per code wins
            if _metric_key(metric) in codes:
                latest[_metric_key(metric)] = metric
        if not codes or not latest:
            return None
        dims: list[str] = []
        for metric in latest.values():
            dims += _dynamic_dims(metric) or []
        state_after = _code_state()
        if not dims:  # node shapes unreadable: dynamo's own memory of symbolic dims
            for key in codes:
                for source, size in state_after.get(key, {}).items():
                    if isinstance(size, tuple):
                        dims += [
                            f"{_source_name(source)}: dim {i}"
                            for i, d in enumerate(size)
                            if not isinstance(d, int)
                        ]
        dims = list(dict.fromkeys(dims))
        modules_before = {id(m) for m in self._modules_before}
        kernels, code = _source_hash([m for m in _generated_modules() if id(m) not in modules_before])
        reasons = [
            m.recompile_reason
            for m in latest.values()
            if isinstance(getattr(m, "recompile_reason", None), str)
        ]
        context = CompileContext(
            shapes=DYNAMIC if dims else STATIC,
            compiles=len(new),
            dynamic=tuple(dims),
            seen=self._seen(codes, dims) if dims else (),
            kernels=kernels,
            code=code,
            mode=self.mode,
            reason=_REASON_PREFIX.sub("", reasons[-1]).strip() if reasons and dims else None,
        )
        for key in codes:
            _SEEN.setdefault(key, []).extend((t.name, t.shape) for t in self.inputs)
        return context

    def _seen(self, codes: Sequence[CodeKey], dims: Sequence[str]) -> tuple[str, ...]:
        """Shapes of the symbolic tensors the same code was given earlier in this process."""
        names = {d.partition(":")[0] for d in dims}
        now = {t.name: t.shape for t in self.inputs}
        shapes: list[tuple[int, ...]] = []
        for key in codes:
            for name, shape in _SEEN.get(key, []):
                if name in names:
                    shapes.append(shape)
            for source, size in self._state_before.get(key, {}).items():
                static = _static(size)
                if _source_name(source) in names and static is not None:
                    shapes.append(static)
        current = [now[n] for n in names if n in now]
        return tuple(dict.fromkeys(_shape_text(s) for s in shapes if s not in current))


def _metric_key(metric: Any) -> CodeKey:
    return (
        str(getattr(metric, "co_filename", "")),
        int(getattr(metric, "co_firstlineno", 0) or 0),
        str(getattr(metric, "co_name", "")),
    )
