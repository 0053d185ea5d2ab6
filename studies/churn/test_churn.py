"""Tests that allocate and free device memory of many sizes and time nothing: run before a suite,
they leave the caching allocator in another state, which must not change any verdict."""

from __future__ import annotations

import random

import pytest
import torch


@pytest.mark.parametrize("seed", range(4))
def test_allocate_and_free(seed: int) -> None:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    rng = random.Random(seed)
    kept = []
    for _ in range(200):
        size = rng.choice(
            (rng.randrange(1, 1 << 12), rng.randrange(1 << 12, 1 << 20), rng.randrange(1 << 20, 1 << 26))
        )
        block = torch.empty(
            size if device == "cuda" else min(size, 1 << 16), dtype=torch.uint8, device=device
        )
        if rng.random() < 0.3:
            kept.append(block)  # some survive the test, as module-level caches do
    _LEFT_BEHIND.extend(kept[: len(kept) // 4])


_LEFT_BEHIND: list[torch.Tensor] = []
