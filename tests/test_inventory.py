"""Kernel inventories: summarizing device events, and the diff a regression message shows."""

from __future__ import annotations

from pytest_kernelperf.model.call import KernelRecord
from pytest_kernelperf.profiling import inventory
from pytest_kernelperf.profiling.inventory import DeviceEvent


def k(
    name: str, launches: int = 1, ms: float = 0.5, share: float = 1.0, code: str | None = None
) -> KernelRecord:
    return KernelRecord(name=name, launches=launches, share=share, ms=ms, code=code)


def test_summarize_counts_launches_per_call_and_shares() -> None:
    events = [DeviceEvent("gemm", 300.0), DeviceEvent("add", 100.0)] * 3 + [DeviceEvent("add", 100.0)] * 3
    records = inventory.summarize(events, calls=3)
    assert records == (
        KernelRecord("add", launches=2, share=0.4, ms=0.1),
        KernelRecord("gemm", launches=1, share=0.6, ms=0.3),
    )


def test_summarize_is_sorted_by_name_rounded_and_capped() -> None:
    events = [DeviceEvent(f"k{i:02d}", 1.0 + i / 7) for i in range(40)]
    records = inventory.summarize(events, calls=1)
    assert len(records) == inventory.MAX_KERNELS
    assert [r.name for r in records] == sorted(r.name for r in records)
    assert "k39" in {r.name for r in records} and "k00" not in {r.name for r in records}  # largest kept
    assert all(len(f"{r.ms:g}".replace("0.", "").lstrip("0")) <= 4 for r in records)  # 3 significant digits


def test_one_kernel_becoming_two_names_the_added_kernel() -> None:
    before = (k("triton_poi_fused_add_0", ms=0.5),)
    after = (k("triton_poi_fused_add_0", ms=0.5, share=0.7), k("triton_poi_fused_mul_1", ms=0.21, share=0.3))
    d = inventory.diff(before, after)
    assert [r.name for r in d.added] == ["triton_poi_fused_mul_1"] and not d.removed and not d.renamed
    lines = inventory.describe(d)
    assert lines[0] == "now launches 2 kernels per call instead of 1 (+triton_poi_fused_mul_1: 210 us)"
    assert any(line.startswith("+ triton_poi_fused_mul_1: new, 1 launch, 210 us per call") for line in lines)


def test_similar_names_pair_as_renamed_and_unrelated_ones_do_not() -> None:
    before = (k("cutlass_80_simt_sgemm_128x64_8x5_nn_align1", ms=0.3), k("memset_zero", ms=0.01))
    after = (k("cutlass_80_simt_sgemm_256x128_8x4_nn_align1", ms=0.45), k("softmax_warp_forward", ms=0.02))
    d = inventory.diff(before, after)
    assert [(a.name, b.name) for a, b in d.renamed] == [
        ("cutlass_80_simt_sgemm_128x64_8x5_nn_align1", "cutlass_80_simt_sgemm_256x128_8x4_nn_align1")
    ]
    assert [r.name for r in d.removed] == ["memset_zero"]
    assert [r.name for r in d.added] == ["softmax_warp_forward"]
    text = "\n".join(inventory.describe(d))
    assert (
        "~ cutlass_80_simt_sgemm_128x64_8x5_nn_align1 -> cutlass_80_simt_sgemm_256x128_8x4_nn_align1" in text
    )
    assert "300 us -> 450 us per call (+50%)" in text
    assert "now launches" not in text  # two before, two after


def test_launch_count_and_time_changes_of_the_same_kernel() -> None:
    before = (k("gelu_kernel", launches=1, ms=0.5), k("copy", launches=1, ms=0.1, share=0.2))
    after = (k("gelu_kernel", launches=1, ms=1.5), k("copy", launches=2, ms=0.1, share=0.1))
    d = inventory.diff(before, after)
    lines = inventory.describe(d)
    assert lines[0] == "now launches 3 kernels per call instead of 2"
    assert "# copy: 1 -> 2 launches per call" in lines
    assert any(line.startswith("* gelu_kernel: 500 us -> 1.5 ms per call (+200%)") for line in lines)


def test_noise_sized_time_changes_are_not_reported() -> None:
    d = inventory.diff((k("a", ms=1.0),), (k("a", ms=1.05),))
    assert d.unchanged
    assert "the slowdown is outside the kernels" in inventory.describe(d)[0]


def test_code_hash_change_is_described_and_unchanged_code_too() -> None:
    d = inventory.diff(
        (k("triton_gelu_kernel", code="aaaaaaaaaaaa"), k("other", code="cccccccccccc")),
        (k("triton_gelu_kernel", code="bbbbbbbbbbbb"), k("other", code="cccccccccccc")),
    )
    assert inventory.describe_code(d) == (
        "generated code changed since the baseline: triton_gelu_kernel (aaaaaaaaaaaa -> bbbbbbbbbbbb); "
        "unchanged: other"
    )
    same = inventory.diff((k("x", code="aaaaaaaaaaaa"),), (k("x", code="aaaaaaaaaaaa"),))
    assert inventory.describe_code(same) == "generated code unchanged since the baseline (x)"
    assert inventory.describe_code(inventory.diff((k("x"),), (k("x", code="aaaaaaaaaaaa"),))) is None


def test_many_changes_are_cut_short() -> None:
    before = tuple(k(f"old_kernel_{i}") for i in range(12))
    after = tuple(k(f"brand_new_{i}") for i in range(12))
    lines = inventory.describe(inventory.diff(before, after))
    assert lines[-1] == "... and 16 more (see the profile artefacts)"
    assert len(lines) == inventory.MAX_LINES + 1  # as many kernels before as after: no headline


def test_with_codes_and_table() -> None:
    records = inventory.with_codes(
        (k("a", ms=0.1, share=0.2), k("b", ms=0.4, share=0.8)), {"b": "0123456789ab"}
    )
    assert records[1].code == "0123456789ab" and records[0].code is None
    lines = inventory.table(records)
    assert lines[0].split() == ["launches", "ms/launch", "share", "code", "kernel"]
    assert lines[1].endswith("  b") and "0123456789ab" in lines[1]  # most time first
