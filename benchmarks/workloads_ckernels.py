"""Workloads of the compiled eager kernels (ember._core.ckernels): layer_norm and gelu,
forward and forward+backward, at transformer-activation sizes."""
from .workloads import _arr, workload


@workload("layer_norm_64x512x256", "ckernels")
def layer_norm_64x512x256(lib):
    x = _arr(lib, (64, 512, 256))
    w, b = _arr(lib, (256,), 1), _arr(lib, (256,), 2)
    return lambda: lib.nn.functional.layer_norm(x, (256,), w, b)


@workload("layer_norm_64x512x256_backward", "ckernels")
def layer_norm_64x512x256_backward(lib):
    x = _arr(lib, (64, 512, 256), requires_grad=True)
    w, b = _arr(lib, (256,), 1, requires_grad=True), _arr(lib, (256,), 2, requires_grad=True)

    def step():
        lib.nn.functional.layer_norm(x, (256,), w, b).sum().backward()
    return step


@workload("gelu_4M", "ckernels")
def gelu_4m(lib):
    x = _arr(lib, (4 * 1024 * 1024,))
    return lambda: lib.nn.functional.gelu(x)


@workload("gelu_tanh_4M", "ckernels")
def gelu_tanh_4m(lib):
    x = _arr(lib, (4 * 1024 * 1024,))
    return lambda: lib.nn.functional.gelu(x, approximate="tanh")


@workload("gelu_4M_backward", "ckernels")
def gelu_4m_backward(lib):
    x = _arr(lib, (4 * 1024 * 1024,), requires_grad=True)

    def step():
        lib.nn.functional.gelu(x).sum().backward()
    return step


@workload("silu_4M", "ckernels")
def silu_4m(lib):
    x = _arr(lib, (4 * 1024 * 1024,))
    return lambda: lib.nn.functional.silu(x)
