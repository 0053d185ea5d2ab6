"""The examples load what is costly at its first use: collecting them pays no torch.compile compiler,
CUDA extension or Triton."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import fresh_interpreter

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # a fresh interpreter, which imports torch
def test_importing_the_example_tests_loads_no_compiler_extension_or_triton() -> None:
    probe = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
import example_kernels.test_gelu
heavy = ("torch._dynamo", "torch._inductor", "torch.utils.cpp_extension", "triton")
print(*(name in sys.modules for name in heavy))
from example_kernels import gelu
compiled = gelu.implementation("compiled")
print("torch._dynamo" in sys.modules, gelu.compiled_gelu is compiled)
"""
    assert fresh_interpreter(probe) == ["False"] * 4 + ["True", "True"]
