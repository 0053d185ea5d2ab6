"""Fresh memory placements per round: copies that keep sharing, random aligned offsets, the round's
call and restore step bound to the copies, and timers that draw one placement per round.

torch.cuda's pools need a GPU; here they are replaced by stand-ins and the copies live on the CPU,
which exercises everything but the allocator itself (tests/test_gpu.py covers that on an H200)."""

from __future__ import annotations

import contextlib
import random
from typing import Any

import pytest
import torch

from pytest_kernelperf.correctness import restore, snapshot
from pytest_kernelperf.measure import health, placement, timing
from pytest_kernelperf.measure.placement import ALIGNMENT, Placements
from pytest_kernelperf.measure.timing import Target
from pytest_kernelperf.model.device import DeviceInfo
from pytest_kernelperf.tensors import copy_arguments, tensor_bytes_of
from pytest_kernelperf.testing import sampling_plan

CPU = DeviceInfo(kind="cpu", name="test CPU")


@pytest.fixture
def cpu_pools(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """torch.cuda's pool calls as stand-ins that record what was asked for."""
    asked: list[str] = []

    def pool() -> object:
        asked.append("pool")
        return object()

    def use(pool: object, device: object = None) -> contextlib.AbstractContextManager[None]:
        asked.append("use")
        return contextlib.nullcontext()

    monkeypatch.setattr(torch.cuda, "MemPool", pool)
    monkeypatch.setattr(torch.cuda, "use_mem_pool", use)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (1 << 30, 1 << 31))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: asked.append("empty_cache"))
    return asked


def test_a_copy_keeps_tensors_that_share_memory_sharing_it() -> None:
    base = torch.arange(16.0)
    args = (base, base, base[4:8], {"as_int": base.view(torch.int32)}, [base.t()], 3)
    copy = copy_arguments(args)
    assert copy[0].data_ptr() == copy[1].data_ptr() != base.data_ptr()
    assert copy[2].data_ptr() - copy[0].data_ptr() == 4 * base.element_size()
    assert copy[3]["as_int"].dtype == torch.int32 and copy[3]["as_int"].data_ptr() == copy[0].data_ptr()
    assert copy[5] == 3 and torch.equal(copy[2], base[4:8])
    copy[0][5] = -1.0  # one storage: the view sees it
    assert copy[2][1] == -1.0 and base[5] == 5.0
    assert tensor_bytes_of(args) == base.numel() * base.element_size()


def test_a_stand_in_keeps_parameters_and_gradients_a_snapshot_does_not() -> None:
    weight = torch.nn.Parameter(torch.ones(3))
    x = torch.ones(2, requires_grad=True)
    stand_in = copy_arguments((weight, x), detach=False)
    assert isinstance(stand_in[0], torch.nn.Parameter) and stand_in[1].requires_grad
    frozen = snapshot((weight, x))
    assert not isinstance(frozen[0], torch.nn.Parameter) and not frozen[1].requires_grad


def test_each_round_gets_copies_at_aligned_offsets_bound_to_its_call(cpu_pools: list[str]) -> None:
    x = torch.arange(1000.0)
    args = ((x, x[10:20]), {"scale": 2.0})
    seen: list[Any] = []

    def bind(moved: Any) -> tuple[Any, Any]:
        seen.append(moved)
        return (lambda: moved[0][0] * moved[1]["scale"]), None

    places = Placements(args, bind, "cpu", rng=random.Random(1))
    assert cpu_pools == ["empty_cache"]  # what earlier tests cached goes back before the first round
    offsets = set()
    for _ in range(6):
        with places.draw() as here:
            assert here.moved_arguments
            assert torch.equal(here.call(), x * 2)  # type: ignore[arg-type]
            moved = seen[-1][0]
            assert moved[0].data_ptr() != x.data_ptr()
            assert moved[1].data_ptr() - moved[0].data_ptr() == 10 * x.element_size()
            offsets.add(moved[0].data_ptr() % (1 << 21))
    assert cpu_pools.count("pool") == 6 and cpu_pools.count("use") == 6
    assert len(offsets) > 1  # different placements, not one frozen
    with places.draw(own_pool=False):
        pass
    assert cpu_pools.count("pool") == 6  # a graph capture brings its own pool


def test_a_copy_keeps_nothing_of_its_own_alive_without_the_cyclic_collector() -> None:
    """Only the copies hold their memory: the copying's own bookkeeping (its buffers by storage, the
    factory) goes when it returns, not at the cyclic collector's next full pass."""
    import gc
    import weakref

    made: list[weakref.ref[torch.Tensor]] = []

    def factory(storage: torch.UntypedStorage) -> tuple[torch.Tensor, int]:
        buffer = torch.empty(storage.nbytes(), dtype=torch.uint8)
        made.append(weakref.ref(buffer))
        return buffer, 0

    gc.disable()
    try:
        x = torch.ones(8)
        copied = copy_arguments(((x, [x[2:]]), {"y": x}), factory, detach=False)
        assert len(made) == 1 and made[0]() is None
        assert torch.equal(copied[1]["y"], x) and copied[0][1][0].data_ptr() == copied[1]["y"].data_ptr() + 8
    finally:
        gc.enable()


def test_a_rounds_pool_lives_until_the_next_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pool dropped while its round's tensors live (the caller still holds the round's call as the
    round ends) never gives their memory back; it is dropped at the next draw instead."""
    import weakref

    class Pool:
        pass

    pools: list[weakref.ref[Pool]] = []

    def make_pool() -> Pool:
        pool = Pool()
        pools.append(weakref.ref(pool))
        return pool

    monkeypatch.setattr(torch.cuda, "MemPool", make_pool)
    monkeypatch.setattr(torch.cuda, "use_mem_pool", lambda pool, device=None: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (1 << 30, 1 << 31))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    places = Placements(((torch.ones(8),), {}), lambda moved: ((lambda: moved[0][0]), None), "cpu")
    with places.draw() as first:
        held = first.call  # the caller's frame keeps the round's call after the round
    assert pools[0]() is not None
    with places.draw():
        assert pools[0]() is None and pools[1]() is not None
    del held
    places.release()  # the rounds are over
    assert pools[1]() is None
    with places.draw():
        pass
    del places
    assert pools[2]() is None  # the last round's pool goes with the placements too


def test_offsets_are_whole_allocator_blocks(cpu_pools: list[str]) -> None:
    places = Placements(((torch.ones(8),), {}), lambda moved: (lambda: None, None), "cpu")
    storage = torch.ones(300).untyped_storage()
    for _ in range(50):
        buffer, offset = places._fresh_storage(storage)
        assert offset % ALIGNMENT == 0 and buffer.numel() == offset + storage.nbytes()


def test_an_in_place_kernel_is_restored_on_its_own_copy(cpu_pools: list[str]) -> None:
    x = torch.zeros(4)
    saved = snapshot(((x,), {}))

    def bind(moved: Any) -> tuple[Any, Any]:
        return (lambda: moved[0][0].add_(1)), (lambda: restore(moved, saved))

    with Placements(((x,), {}), bind, "cpu").draw() as here:
        for _ in range(3):
            assert here.prepare is not None
            here.prepare()
            here.call()
        assert x.sum() == 0  # the user's tensor is untouched; the copy was restored before each call


def test_arguments_too_large_to_copy_stay_where_they_are(
    cpu_pools: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (1000, 1 << 31))
    x = torch.ones(1000)
    places = Placements(((x,), {}), lambda moved: ((lambda: moved[0][0]), None), "cpu")
    assert places.notes and "left at their own addresses" in places.notes[0]
    with places.draw() as here:
        assert not here.moved_arguments and here.call() is x


def test_a_timer_draws_one_placement_per_round(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[int] = []

    class Counting:
        @contextlib.contextmanager
        def draw(self, own_pool: bool = True) -> Any:
            drawn.append(len(drawn))
            index = len(drawn)
            yield placement.Placed(call=lambda: index, prepare=None, moved_arguments=True)

    monkeypatch.setattr(health, "read", lambda index: None)
    target = Target(lambda: None, CPU, placements=Counting())  # type: ignore[arg-type]
    plan = sampling_plan(rounds=4, min_samples=3, min_time_s=0.0, max_time_s=0.01, warmup_s=0.0)
    result = timing.WallClockTimer().measure(target, plan)
    assert len(drawn) == 4 and len(result.device_time.round_locations_ms) == 4


def test_placement_is_off_without_cuda_in_use() -> None:
    assert not placement.usable(None)
    assert not placement.usable(0) or torch.cuda.is_initialized()
