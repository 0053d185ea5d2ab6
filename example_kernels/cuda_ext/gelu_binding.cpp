// Python binding of ../gelu.cu for the ahead-of-time build in setup.py.
#include <torch/extension.h>

torch::Tensor gelu(torch::Tensor x);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("gelu", &gelu, "GELU, tanh approximation (CUDA)");
}
