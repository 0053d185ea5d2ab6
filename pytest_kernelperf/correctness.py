"""Output correctness: the kernel's result against the reference's, dtype-aware.

`torch.testing.assert_close` semantics (|actual - expected| <= atol + rtol * |expected|, NaN equal
to NaN, infinities equal only to themselves) with its default tolerances per dtype, but the report
is ours: how many elements differ, the largest absolute and relative errors and where, so that a
kernel author sees at once whether one tile or every element is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, MutableSequence, MutableSet, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_kernelperf.tensors import copy_arguments, value_parts

if TYPE_CHECKING:
    import torch

# torch.testing.assert_close's defaults (rtol, atol), by dtype name.
_DEFAULT_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex32": (1e-3, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}
# Eight-bit floats have 2-3 mantissa bits: one step is 12.5% to 25%.
_FP8_TOLERANCES = (0.25, 1e-2)


def default_tolerances(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing values of `dtype`; exact (0, 0) for integers and booleans."""
    name = str(dtype).removeprefix("torch.")
    if name in _DEFAULT_TOLERANCES:
        return _DEFAULT_TOLERANCES[name]
    if name.startswith("float8"):
        return _FP8_TOLERANCES
    return 0.0, 0.0


class Mismatch(AssertionError):
    """The kernel's output differs from the reference's."""


class Uncomparable(TypeError):
    """The reference's output is of a kind kernel_bench cannot compare (a user error, not a mismatch)."""


def assert_matches(
    actual: Any, expected: Any, *, rtol: float | None = None, atol: float | None = None
) -> None:
    """Raise Mismatch, with a message starting "mismatch", where `actual` differs from `expected`.

    Tensors, Python numbers (compared as 0-d tensors), and tuples, lists and dicts of them compare;
    anything else in the reference's output raises Uncomparable.
    """
    _compare(actual, expected, rtol, atol, path="output")


def _compare(actual: Any, expected: Any, rtol: float | None, atol: float | None, path: str) -> None:
    import torch

    if isinstance(expected, (bool, int, float, complex)) and not isinstance(actual, torch.Tensor):
        expected = torch.tensor(expected)
        if isinstance(actual, (bool, int, float, complex)):
            actual = torch.tensor(actual)
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            raise Mismatch(f"mismatch in {path}: expected a tensor, got {type(actual).__name__}")
        if not _compared_by_layout(actual, expected, rtol, atol, path):
            _compare_tensors(actual, expected, rtol, atol, path)
        return
    if isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)):
            raise Mismatch(f"mismatch in {path}: expected a sequence, got {type(actual).__name__}")
        if len(actual) != len(expected):
            raise Mismatch(f"mismatch in {path}: {len(actual)} outputs, reference has {len(expected)}")
        for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _compare(a, e, rtol, atol, f"{path}[{index}]")
        return
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            raise Mismatch(f"mismatch in {path}: expected a mapping, got {type(actual).__name__}")
        if set(actual) != set(expected):
            got, want = sorted(map(str, actual)), sorted(map(str, expected))
            raise Mismatch(f"mismatch in {path}: keys {got}, reference has {want}")
        for key in expected:
            _compare(actual[key], expected[key], rtol, atol, f"{path}[{key!r}]")
        return
    raise Uncomparable(
        f"the reference returned {type(expected).__name__} at {path}; kernel_bench compares tensors, "
        "numbers, and tuples, lists or dicts of them"
    )


# A sparse answer is compared in its dense form up to this many elements (a float64 copy of each
# side, 128 MiB apiece); a larger one by its parts: the same indices, values within tolerance.
DENSE_COMPARE_LIMIT = 1 << 24


def _compared_by_layout(
    actual: torch.Tensor, expected: torch.Tensor, rtol: float | None, atol: float | None, path: str
) -> bool:
    """Answers that are not both plain strided tensors, compared (True); False for two plain ones.
    A meta tensor has no values: its shape and dtype are compared. Nested tensors compare component
    by component, sparse ones densely or by their parts."""
    import torch

    if actual.device.type == "meta" or expected.device.type == "meta":
        if (actual.shape, actual.dtype) != (expected.shape, expected.dtype):
            raise Mismatch(
                f"mismatch in {path}: {tuple(actual.shape)} {actual.dtype}, reference "
                f"{tuple(expected.shape)} {expected.dtype}"
            )
        return True
    if actual.is_nested or expected.is_nested:
        if not (actual.is_nested and expected.is_nested):
            raise Mismatch(
                f"mismatch in {path}: nested {actual.is_nested}, reference nested {expected.is_nested}"
            )
        _compare(list(actual.unbind()), list(expected.unbind()), rtol, atol, f"{path}.unbind()")
        return True
    sparse = [t for t in (actual, expected) if t.layout != torch.strided]
    if not sparse:
        return False
    if all(t.numel() <= DENSE_COMPARE_LIMIT for t in sparse):
        dense = [t.to_dense() if t.layout != torch.strided else t for t in (actual, expected)]
        _compare_tensors(dense[0], dense[1], rtol, atol, path)
        return True
    _compare_sparse_parts(actual, expected, rtol, atol, path)
    return True


def _compare_sparse_parts(
    actual: torch.Tensor, expected: torch.Tensor, rtol: float | None, atol: float | None, path: str
) -> None:
    """Two large sparse tensors of one layout: the same shape and indices, values within tolerance."""
    import torch

    if actual.layout != expected.layout:
        raise Uncomparable(
            f"{path}: a {actual.layout} answer against a {expected.layout} reference of more than "
            f"{DENSE_COMPARE_LIMIT} elements; kernel_bench compares large sparse tensors of one layout"
        )
    if actual.shape != expected.shape:
        raise Mismatch(f"mismatch in {path}: shape {tuple(actual.shape)}, reference {tuple(expected.shape)}")
    *indices, values = value_parts(actual.detach()) or []
    *reference_indices, reference_values = value_parts(expected.detach().to(actual.device)) or []
    for mine, theirs in zip(indices, reference_indices, strict=True):
        if mine.shape != theirs.shape or not torch.equal(mine, theirs):
            raise Mismatch(
                f"mismatch in {path}: the sparse tensors' indices differ (another sparsity pattern)"
            )
    _compare_tensors(values, reference_values, rtol, atol, f"{path}.values()")


def _compare_tensors(
    actual: torch.Tensor, expected: torch.Tensor, rtol: float | None, atol: float | None, path: str
) -> None:
    import torch

    if actual.shape != expected.shape:
        raise Mismatch(f"mismatch in {path}: shape {tuple(actual.shape)}, reference {tuple(expected.shape)}")
    if actual.dtype != expected.dtype:
        raise Mismatch(f"mismatch in {path}: dtype {actual.dtype}, reference {expected.dtype}")
    default_rtol, default_atol = default_tolerances(expected.dtype)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    a = actual.detach()
    e = expected.detach().to(a.device)
    if not (a.is_floating_point() or a.is_complex()):
        bad = a != e
        diff = (a.to(torch.float64) - e.to(torch.float64)).abs()
        magnitude = e.to(torch.float64).abs()
    else:
        wide = torch.complex128 if a.is_complex() else torch.float64
        a64, e64 = a.to(wide), e.to(wide)
        diff = (a64 - e64).abs()  # real even for complex values: the modulus of the difference
        magnitude = e64.abs()
        both_nan = a64.isnan() & e64.isnan()
        same_inf = a64.isinf() & e64.isinf() & (a64 == e64)
        # Infinities compare by equality alone: |inf - (-inf)| <= rtol * inf would pass.
        finite = a64.isfinite() & e64.isfinite()
        close = (finite & (diff <= atol + rtol * magnitude)) | both_nan | same_inf
        bad = ~close
    count = int(bad.sum())
    if count == 0:
        return
    total = bad.numel()
    measurable = bad & diff.isfinite()
    message = (
        f"mismatch in {path}: {count} of {total} elements ({100 * count / total:.3g}%) differ beyond "
        f"rtol={rtol:g}, atol={atol:g}; "
    )
    if bool(measurable.any()):
        finite_diff = torch.where(measurable, diff, torch.zeros_like(diff))
        flat = int(finite_diff.argmax())
        rel = torch.where(measurable, diff / magnitude, torch.zeros_like(diff))
        max_rel = float(rel.nan_to_num(nan=float("inf")).max())
        message += (
            f"max abs error {float(finite_diff.max()):.3g} at index {_unravel(flat, tuple(a.shape))} "
            f"(got {_item(a, flat)}, expected {_item(e, flat)}); max rel error {max_rel:.3g}"
        )
        unmeasurable = count - int(measurable.sum())
        if unmeasurable:
            message += f"; {unmeasurable} more where a NaN or infinity differs"
    else:  # every differing element is a NaN or an infinity: no finite error to report
        flat = int(bad.flatten().nonzero()[0])
        message += (
            f"each is a NaN or infinity, first at index {_unravel(flat, tuple(a.shape))} "
            f"(got {_item(a, flat)}, expected {_item(e, flat)})"
        )
    nan_count = int((a.isnan() & ~e.isnan()).sum()) if (a.is_floating_point() or a.is_complex()) else 0
    if nan_count:
        message += f"; {nan_count} NaN where the reference has none"
    raise Mismatch(message)


def snapshot(values: Any) -> Any:
    """A copy of every tensor in `values` (nested tuples, lists and dicts), others as they are: the
    reference gets the inputs as they were before `fn` ran, even when `fn` works in place. Tensors
    that share memory (`fn(x, x)`, a view and its base) share it in the copy too."""
    return copy_arguments(values)


class NotRestorable(TypeError):
    """An input that `restore` cannot put back; `path` locates it in (args, kwargs), e.g. "[0][1]"."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def restore(into: Any, saved: Any, path: str = "") -> None:
    """Put `into` back as it was when `saved` was snapshot from it: an in-place kernel then starts
    each timed call from the same inputs. Tensors get their values back; lists and dicts also their
    length, keys and items (what fn appended goes, what it removed or rebound comes back as a copy).
    Raises NotRestorable where that cannot be done: a tensor fn resized in place, or a mutable
    object the snapshot could only keep by reference (a set, a bytearray)."""
    import torch

    if isinstance(saved, torch.Tensor):
        if not _fits(into, saved):
            now = (
                f"{tuple(into.shape)} {into.dtype}" if isinstance(into, torch.Tensor) else type(into).__name__
            )
            raise NotRestorable(
                path, f"fn changed it in place from {tuple(saved.shape)} {saved.dtype} to {now}"
            )
        with torch.no_grad():
            into.copy_(saved)
    elif isinstance(saved, list):
        del into[len(saved) :]  # appended by fn
        for index, item in enumerate(saved):
            if index < len(into):
                _restore_item(into, index, item, f"{path}[{index}]")
            else:
                into.append(snapshot(item))  # removed by fn
    elif isinstance(saved, dict):
        for key in into.keys() - saved.keys():
            del into[key]
        for key, item in saved.items():
            if key in into:
                _restore_item(into, key, item, f"{path}[{key!r}]")
            else:
                into[key] = snapshot(item)
    elif isinstance(saved, tuple):
        for index, (now_item, item) in enumerate(zip(into, saved, strict=True)):
            restore(now_item, item, f"{path}[{index}]")
    elif isinstance(saved, (MutableSequence, MutableMapping, MutableSet)):
        raise NotRestorable(
            path,
            f"a {type(saved).__name__} cannot be put back (restore_inputs copies tensors, and lists, "
            "tuples and dicts of them)",
        )


def _restore_item(container: Any, key: Any, saved: Any, path: str) -> None:
    """An item of a list or dict: put back in place while it is still the same kind of thing, else
    (fn rebound it) replaced by a copy of what it was."""
    if _fits(container[key], saved):
        restore(container[key], saved, path)
    else:
        container[key] = snapshot(saved)


def _fits(now: Any, saved: Any) -> bool:
    """Whether `now` can take `saved`'s contents in place; for anything else, only itself fits."""
    import torch

    if isinstance(saved, torch.Tensor):
        return isinstance(now, torch.Tensor) and now.shape == saved.shape and now.dtype == saved.dtype
    if isinstance(saved, list):
        return isinstance(now, list)
    if isinstance(saved, dict):  # the snapshot of an OrderedDict is a dict
        return isinstance(now, dict)
    if isinstance(saved, tuple):
        return isinstance(now, tuple) and len(now) == len(saved)
    return now is saved


@dataclass(frozen=True)
class Mutations:
    """What fn did to its inputs: where it changed a tensor in place (a path into (args, kwargs),
    e.g. "[0][1]"), and where that cannot be told (the path and why)."""

    changed: tuple[str, ...] = ()
    unchecked: tuple[tuple[str, str], ...] = ()


def mutated(before: Any, after: Any) -> Mutations:
    """Where the tensors of `after` differ from their snapshot `before`, or cannot be compared."""
    changed: list[str] = []
    unchecked: list[tuple[str, str]] = []
    _walk_mutations(before, after, "", changed, unchecked)
    return Mutations(tuple(changed), tuple(unchecked))


def _walk_mutations(
    before: Any, after: Any, path: str, changed: list[str], unchecked: list[tuple[str, str]]
) -> None:
    import torch

    if isinstance(after, torch.Tensor) and isinstance(before, torch.Tensor):
        same = _unchanged(before, after.detach())
        if isinstance(same, str):
            unchecked.append((path, same))
        elif not same:
            changed.append(path)
    elif isinstance(after, (tuple, list)) and isinstance(before, (tuple, list)):
        for index, (b, a) in enumerate(zip(before, after, strict=False)):
            _walk_mutations(b, a, f"{path}[{index}]", changed, unchecked)
    elif isinstance(after, dict) and isinstance(before, dict):
        for key in after:
            if key in before:
                _walk_mutations(before[key], after[key], f"{path}[{key!r}]", changed, unchecked)


def _unchanged(before: torch.Tensor, after: torch.Tensor) -> bool | str:
    """Whether `after` holds what its snapshot `before` held (NaN equal to NaN), sparse and nested
    tensors by their parts (tensors.value_parts); why not, where that cannot be told."""
    if after.layout != before.layout or after.dtype != before.dtype or after.is_nested != before.is_nested:
        return False
    try:
        if not after.is_nested and after.shape != before.shape:
            return False
        if after.device.type == "meta":
            return True  # no values that fn could have changed
        parts, saved = value_parts(after), value_parts(before)
        if parts is None or saved is None:
            return f"a tensor of layout {after.layout}"
        return len(parts) == len(saved) and all(_equal(a, b) for a, b in zip(parts, saved, strict=True))
    except (RuntimeError, NotImplementedError, TypeError, AttributeError) as exc:  # what torch lacks
        said = str(exc).strip().splitlines()
        return f"{type(exc).__name__}: {said[0][:200] if said else 'no message'}"


def _equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    import torch

    return a.shape == b.shape and bool(torch.equal(a, b) or _same_with_nans(a, b))


def _same_with_nans(a: torch.Tensor, b: torch.Tensor) -> bool:
    if not (a.is_floating_point() or a.is_complex()):
        return False
    return bool(((a == b) | (a.isnan() & b.isnan())).all())


def _unravel(flat: int, shape: Sequence[int]) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        index.append(flat % size)
        flat //= size
    return tuple(reversed(index))


def _item(tensor: torch.Tensor, flat: int) -> str:
    value = tensor.flatten()[flat].item()
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def compare_answers(actual: Any, expected: Any, *, rtol: float | None, atol: float | None) -> str:
    """How `actual` compares with another version's answer: "identical", "within tolerance" (of
    `rtol`/`atol`, the dtype's defaults where None), "differs: <where and by how much>", or "not
    compared: <why>"."""
    try:
        assert_matches(actual, expected, rtol=0.0, atol=0.0)
    except Uncomparable as exc:
        return f"not compared: {exc}"
    except Mismatch:
        pass
    else:
        return "identical"
    try:
        assert_matches(actual, expected, rtol=rtol, atol=atol)
    except Mismatch as exc:
        return f"differs: {exc}"
    return "within tolerance"
