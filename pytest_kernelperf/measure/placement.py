"""A fresh memory placement for every round of a measurement.

A kernel's time can depend on where its buffers sit in device memory (L2 slices and partitions, DRAM
channels, TLB reach): on an H200 a Triton histogram with atomics into a 16 KiB output ran 0.48 ms at
most output addresses and 0.81-0.90 ms at others. Which address a test gets is decided by the
caching allocator's state, that is by whatever ran earlier in the process, so a process that freezes
one placement makes the verdict depend on test order and selection. Here each round draws its own:
the call's tensor arguments are copied to fresh memory at a random offset, and everything the call
allocates comes from a memory pool made for that round, behind a random-size pad. Rounds then sample
placements the way Stabilizer samples code and heap layouts on CPUs (Curtsinger and Berger, ASPLOS
2013), and their mean is a level that no test order can move.

Nothing the kernel author wrote changes: the kernel gets tensors of the same dtype, shape, strides,
storage offset and alignment (offsets are multiples of 512 bytes, as the allocator's own), sharing
memory where the originals did. Tensors that cannot be rebuilt (subclasses, sparse), and arguments
too large to copy next to the originals, stay where they are; the result says so.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_kernelperf.tensors import copy_arguments, tensor_bytes_of

if TYPE_CHECKING:
    import torch

# Offsets are whole allocator blocks, so a pointer's alignment (Triton specialises on 16 bytes) is
# what it was.
ALIGNMENT = 512
# Pads before the call's own allocations: the allocator serves requests under 1 MiB from 2 MiB
# segments and larger ones from 20 MiB segments, so one pad of each kind moves both.
SMALL_PAD_MAX = 1 << 20
LARGE_PAD_MAX = 8 << 20
# A copy of the arguments may take at most this share of the device's free memory.
ARGUMENT_SHARE = 0.25


@dataclass(frozen=True)
class Placed:
    """One round's placement: the call bound to the moved arguments, and its preparation."""

    call: Callable[[], object]
    prepare: Callable[[], object] | None
    moved_arguments: bool  # False: the arguments stayed at their own addresses


# Binds a call to arguments: (args, kwargs) -> (call, prepare).
Binder = Callable[[Any], tuple[Callable[[], object], Callable[[], object] | None]]


class Placements:
    """Draws a fresh placement per round for a call on one CUDA device.

    `arguments` is the call's (args, kwargs); `bind` turns a copy of them into the round's call (and
    the restore step of an in-place kernel). `own_pool=False` keeps the call's allocations in the
    process's allocator (a CUDA graph capture brings its own pool); the arguments still move.
    """

    def __init__(
        self,
        arguments: Any,
        bind: Binder,
        device: str,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self._arguments = arguments
        import torch

        self._bind = bind
        self._device = device  # "cuda:0"
        self._rng = rng or random.Random()
        self.notes: list[str] = []
        # Memory the allocator caches from earlier tests goes back to the driver first, so the rounds'
        # fresh memory comes from the driver as in a process that ran nothing before: where earlier
        # tests held gigabytes in the cache, an H200's transposing copy read 3% slower.
        torch.cuda.empty_cache()
        self._move_arguments = self._arguments_fit()
        # The last round's pool, kept until the next draw or `release()`. A pool destroyed while its
        # round's tensors still live (the caller's frame holds the round's call, and with it the moved
        # arguments, as the round ends) keeps their memory cached once they are freed, until something
        # empties the whole cache, which no round does: an H200 ran out of its 140 GiB after about 1500
        # rounds that way (studies/round_cost.py, 2026-12-02).
        self._last_pool: object | None = None

    def _arguments_fit(self) -> bool:
        import torch

        size = tensor_bytes_of(self._arguments)
        if size == 0:
            return False
        free, _ = torch.cuda.mem_get_info(self._device)
        if size > ARGUMENT_SHARE * free:
            self.notes.append(
                f"arguments ({size / 2**20:.0f} MiB) left at their own addresses: a copy per round would "
                f"take more than {ARGUMENT_SHARE:.0%} of the free device memory"
            )
            return False
        return True

    def _offset(self, limit: int) -> int:
        return self._rng.randrange(limit // ALIGNMENT) * ALIGNMENT

    @contextmanager
    def draw(self, own_pool: bool = True) -> Iterator[Placed]:
        """A placement for one round; its memory is given back when the round ends."""
        import torch

        self._last_pool = None  # nothing of the last round is alive now: its pool's memory goes back
        with ExitStack() as stack:
            if own_pool:
                pool = torch.cuda.MemPool()
                self._last_pool = pool
                stack.enter_context(torch.cuda.use_mem_pool(pool, device=self._device))
            device = torch.device(self._device)
            _pads = [  # held for the round: what it allocates lands behind them
                torch.empty(self._offset(SMALL_PAD_MAX) + ALIGNMENT, dtype=torch.uint8, device=device),
                torch.empty(SMALL_PAD_MAX + self._offset(LARGE_PAD_MAX), dtype=torch.uint8, device=device),
            ]
            moved = self._arguments
            if self._move_arguments:
                moved = copy_arguments(self._arguments, self._fresh_storage, detach=False, keep_others=True)
            call, prepare = self._bind(moved)
            try:
                yield Placed(call, prepare, self._move_arguments)
            finally:
                torch.cuda.synchronize(self._device)

    def release(self) -> None:
        """Give the last round's memory back: the rounds are over and nothing of them is alive (a
        counterpart timed between this kernel's rounds can then use it)."""
        self._last_pool = None

    def _fresh_storage(self, storage: torch.UntypedStorage) -> tuple[torch.Tensor, int]:
        import torch

        offset = self._offset(SMALL_PAD_MAX if storage.nbytes() < SMALL_PAD_MAX else 2 << 20)
        buffer = torch.empty(offset + storage.nbytes(), dtype=torch.uint8, device=storage.device)
        return buffer, offset


def usable(device_index: int | None) -> bool:
    """Whether this process can give a round memory of its own: CUDA in use (the call's first run
    initialised it) and a torch with memory pools (torch.cuda.MemPool, torch >= 2.6)."""
    if device_index is None:
        return False
    import torch

    return (
        hasattr(torch.cuda, "MemPool") and hasattr(torch.cuda, "use_mem_pool") and torch.cuda.is_initialized()
    )
