"""Triton autotuners of a call: found through the function, their choice recorded, pinned on request."""

from __future__ import annotations

import pytest

from pytest_kernelperf.profiling.autotune import AutotuneWatch, autotune_line, describe_config


def test_config_text_lists_meta_parameters_then_launch_options_set() -> None:
    class Config:
        def __init__(self) -> None:
            self.kwargs = {"BLOCK_M": 64, "BLOCK_N": 32}
            self.num_warps, self.num_stages, self.num_ctas, self.maxnreg = 4, 3, 1, None

    assert describe_config(Config()) == "BLOCK_M=64, BLOCK_N=32, num_warps=4, num_stages=3"


def test_no_line_when_the_choices_agree_or_one_side_is_unknown() -> None:
    assert autotune_line({"k": "BLOCK=16"}, {"k": "BLOCK=16"}) is None
    assert autotune_line(None, {"k": "BLOCK=16"}) is None
    assert autotune_line({"k": "BLOCK=16"}, {"other": "BLOCK=32"}) is None


def test_triton_interpreter_records_the_choice_and_pins_the_baselines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # read when the kernel is decorated
    torch = pytest.importorskip("torch")
    triton = pytest.importorskip("triton")
    tl = pytest.importorskip("triton.language")
    timings = iter([2.0, 1.0])  # BLOCK=32 wins the (fake) benchmark

    def fake_bench(call: object, quantiles: object = None) -> list[float]:
        call()  # type: ignore[operator]
        value = next(timings)
        return [value, value, value]

    @triton.autotune(
        configs=[triton.Config({"BLOCK": 16}, num_warps=1), triton.Config({"BLOCK": 32}, num_warps=2)],
        key=["n"],
        do_bench=fake_bench,
    )
    @triton.jit
    def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def, name-defined]
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)

    def run(x: object) -> object:
        y = torch.empty_like(x)
        double[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, x.numel())  # type: ignore[attr-defined]
        return y

    x = torch.arange(40, dtype=torch.float32)
    with AutotuneWatch(run) as watch:
        assert watch.tuners == [double]
        torch.testing.assert_close(run(x), x * 2)
    assert watch.chosen == {"double": "BLOCK=32, num_warps=2, num_stages=3"}
    assert "run" not in vars(double)  # unwrapped again

    own = double.configs
    with AutotuneWatch(run) as watch:
        watch.pin({"double": "BLOCK=16, num_warps=1, num_stages=3"})
        torch.testing.assert_close(run(x), x * 2)  # key cached with BLOCK=32, yet the pin runs
    assert watch.chosen == {"double": "BLOCK=16, num_warps=1, num_stages=3"}
    assert double.configs is own  # restored

    with AutotuneWatch(run) as watch:
        watch.pin({"double": "BLOCK=64, num_warps=4, num_stages=3"})
        run(x)
    assert watch.notes == [
        "autotune=baseline: double's recorded config (BLOCK=64, num_warps=4, num_stages=3) is not among "
        "its configs now; it was autotuned freely"
    ]
    assert watch.chosen == {"double": "BLOCK=32, num_warps=2, num_stages=3"}
