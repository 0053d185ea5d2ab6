"""Copies of a call's arguments that keep the sharing between tensors.

Arguments often share memory: `fn(x, x)`, a view and its base, two halves of one buffer. A copy made
tensor by tensor would give each its own memory, so a kernel that reads and writes one buffer
through two arguments would compute something else on the copy. Here every distinct storage is
copied once, and each tensor is rebuilt on the copy with its own dtype, offset, shape and strides.
torch is imported inside functions: loading the plugin never imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

# Makes the copy of one storage: (a 1-D uint8 buffer, the byte offset where the storage's bytes
# start in it). The bytes are copied in by copy_arguments.
StorageFactory = Callable[["torch.UntypedStorage"], tuple["torch.Tensor", int]]


def rebuildable(tensor: torch.Tensor) -> bool:
    """A plain strided tensor with storage of its own kind: one that can be rebuilt on other memory."""
    import torch

    return (
        type(tensor) in (torch.Tensor, torch.nn.Parameter)
        and tensor.layout == torch.strided
        and not tensor.is_nested  # a nested tensor of the strided layout has no sizes or strides
        and not tensor.is_quantized
        and tensor.device.type != "meta"
    )


def value_parts(tensor: torch.Tensor) -> list[torch.Tensor] | None:
    """The strided tensors that hold `tensor`'s values, for comparing and counting what sparse and
    nested tensors hold: itself when it is strided; a sparse tensor's indices and values (COO ones
    coalesced, so that equal tensors give equal parts); a nested tensor's components. None for a
    tensor without values (on the meta device) or of a layout not known here."""
    import torch

    if tensor.device.type == "meta":
        return None
    if tensor.is_nested:
        return list(tensor.unbind())
    layout = tensor.layout
    if layout == torch.strided:
        return [tensor]
    if layout == torch.sparse_coo:
        coalesced = tensor.coalesce()
        return [coalesced.indices(), coalesced.values()]
    if layout in (torch.sparse_csr, torch.sparse_bsr):
        return [tensor.crow_indices(), tensor.col_indices(), tensor.values()]
    if layout in (torch.sparse_csc, torch.sparse_bsc):
        return [tensor.ccol_indices(), tensor.row_indices(), tensor.values()]
    return None


def copy_arguments(
    values: Any, factory: StorageFactory | None = None, *, detach: bool = True, keep_others: bool = False
) -> Any:
    """`values` (tensors in nested tuples, lists and dicts) with every tensor copied, tensors that
    shared a storage sharing its copy. `factory` makes each storage's new memory (default: a plain
    allocation on the same device). `detach`: plain tensors outside autograd (a snapshot); else each
    copy keeps its original's kind (Parameter) and requires_grad (a stand-in for the original).
    Tensors that cannot be rebuilt (subclasses, sparse, quantized) are cloned one by one, or with
    `keep_others` left as they are. Other values are kept as they are."""
    return _Copier(factory, detach, keep_others).copy(values)


class _Copier:
    """One copy_arguments call. A class, not nested closures: a closure that calls itself is a
    reference cycle, which would keep the buffers alive until the cyclic collector runs, and a round's
    placement (measure/placement.py) must give its memory back when the round ends."""

    def __init__(self, factory: StorageFactory | None, detach: bool, keep_others: bool) -> None:
        self._factory, self._detach, self._keep_others = factory, detach, keep_others
        self._copies: dict[tuple[str, int, int], tuple[torch.Tensor, int]] = {}

    def copy(self, value: Any) -> Any:
        import torch

        if isinstance(value, torch.Tensor):
            if not rebuildable(value) or value.untyped_storage().nbytes() == 0:
                return value if self._keep_others else value.detach().clone()
            buffer, offset = self._storage_copy(value.untyped_storage())
            return _rebuilt(value, buffer, offset, self._detach)
        if isinstance(value, (tuple, list)):
            return type(value)(self.copy(v) for v in value)
        if isinstance(value, dict):
            return {k: self.copy(v) for k, v in value.items()}
        return value

    def _storage_copy(self, storage: torch.UntypedStorage) -> tuple[torch.Tensor, int]:
        import torch

        key = (str(storage.device), storage.data_ptr(), storage.nbytes())
        if key not in self._copies:
            factory = self._factory
            buffer, offset = factory(storage) if factory else (_plain_buffer(storage), 0)
            source = torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)
            with torch.no_grad():
                buffer[offset : offset + storage.nbytes()].copy_(source)
            self._copies[key] = (buffer, offset)
        return self._copies[key]


def _plain_buffer(storage: torch.UntypedStorage) -> torch.Tensor:
    import torch

    return torch.empty(storage.nbytes(), dtype=torch.uint8, device=storage.device)


def _rebuilt(tensor: torch.Tensor, buffer: torch.Tensor, offset: int, detach: bool) -> torch.Tensor:
    """`tensor` as a view of `buffer`, whose bytes from `offset` on hold a copy of its storage."""
    import torch

    item = tensor.element_size()
    start, rest = divmod(offset, item)
    if rest:
        raise ValueError(f"a storage copy at byte {offset} cannot hold {tensor.dtype} elements")
    copy = torch.empty(0, dtype=tensor.dtype, device=buffer.device)
    copy.set_(buffer.untyped_storage(), start + tensor.storage_offset(), tensor.size(), tensor.stride())
    if detach:
        return copy
    if isinstance(tensor, torch.nn.Parameter):
        return torch.nn.Parameter(copy, requires_grad=tensor.requires_grad)
    if tensor.requires_grad and (copy.is_floating_point() or copy.is_complex()):
        copy.requires_grad_(True)
    return copy


def tensor_bytes_of(values: Any) -> int:
    """Bytes of the distinct storages behind the tensors in `values`: what a copy of them takes."""
    import torch

    seen: dict[tuple[str, int], int] = {}

    def walk(value: Any) -> None:
        if isinstance(value, torch.Tensor) and rebuildable(value):
            storage = value.untyped_storage()
            seen[(str(storage.device), storage.data_ptr())] = storage.nbytes()
        elif isinstance(value, (tuple, list)):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)

    walk(values)
    return sum(seen.values())
