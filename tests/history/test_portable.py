"""Portable figures: % of copy bandwidth and ratio to the reference, set beside other GPUs'."""

from __future__ import annotations

from pytest_kernelperf.history import synthetic_runs as rf
from pytest_kernelperf.history.portable import portable_note
from pytest_kernelperf.history.store import HistoryStore

TEST = "tests/test_copy.py::test_copy"
NEW_GPU = "NVIDIA RTX 6000"


def add(store: HistoryStore, device: str, ms: float, peak: float, ratio: float | None, i: int) -> None:
    result = rf.result(TEST, ms, name="copy", device=device, nbytes=2_000_000_000, reference_ratio=ratio)
    store.append_run(rf.run([result], created=rf.created(i), peaks={device: peak}, devices=[device]))


def test_a_new_gpu_is_set_beside_the_known_ones(store: HistoryStore) -> None:
    add(store, rf.H200, 0.5, 4000.0 / 0.97, 1.10, 0)  # 4000 GB/s of a 4124 GB/s copy: 97%
    add(store, NEW_GPU, 2.0, 1000.0 / 0.62, 1.35, 1)  # 1000 GB/s of 1613: 62%
    assert portable_note(store, TEST, "copy", NEW_GPU) == (
        "62% of copy bandwidth here; 97% on NVIDIA H200; 1.35x the reference here; 1.10x on NVIDIA H200"
    )


def test_the_newest_run_counts_and_nothing_to_compare_gives_none(store: HistoryStore) -> None:
    add(store, NEW_GPU, 2.0, 1000.0 / 0.62, None, 0)
    assert portable_note(store, TEST, "copy", NEW_GPU) is None  # no other device
    add(store, rf.H200, 1.0, 4000.0, None, 1)  # 2000 GB/s of 4000: 50%
    add(store, rf.H200, 0.5, 4000.0, None, 2)  # then 100%
    assert portable_note(store, TEST, "copy", NEW_GPU) == "62% of copy bandwidth here; 100% on NVIDIA H200"
    assert portable_note(store, TEST, "copy", "NVIDIA B200") is None
