"""Ahead-of-time build of the CUDA GELU, the alternative to load_inline.

    cd example_kernels/cuda_ext && pip install --no-build-isolation .

installs a module `gelu_extension` with `gelu_extension.gelu(x)`; example_kernels.gelu uses it
when it is installed and otherwise builds the same source with load_inline on first use.
"""

from pathlib import Path

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

here = Path(__file__).parent
setup(
    name="gelu_extension",
    ext_modules=[
        CUDAExtension(
            name="gelu_extension",
            sources=[str(here / "gelu_binding.cpp"), str(here.parent / "gelu.cu")],
            extra_compile_args={"cxx": ["-O2"], "nvcc": ["-O2"]},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
