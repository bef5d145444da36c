"""Benchmark workloads: each builds, for a library module (ember or torch), a
zero-argument callable that runs one step of the workload.  The same code runs
on both libraries, so the ratio compares like with like.
"""
import numpy as np

WORKLOADS = {}


def workload(name, group):
    def deco(fn):
        WORKLOADS[name] = (group, fn)
        return fn
    return deco


def _arr(lib, shape, seed=0, requires_grad=False, dtype=np.float32):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    t = lib.from_numpy(a)
    if requires_grad:
        t.requires_grad_(True)
    return t


@workload("add_small", "overhead")
def add_small(lib):
    a, b = _arr(lib, (4, 4)), _arr(lib, (4, 4), 1)
    return lambda: a + b


@workload("mul_small_grad", "overhead")
def mul_small_grad(lib):
    a, b = _arr(lib, (4, 4), requires_grad=True), _arr(lib, (4, 4), 1)
    return lambda: a * b


@workload("chain10_backward", "overhead")
def chain10_backward(lib):
    x = _arr(lib, (16,), requires_grad=True)

    def step():
        y = x
        for _ in range(5):
            y = (y * 1.01).tanh()
        y.sum().backward()
    return step


@workload("matmul_512", "blas")
def matmul_512(lib):
    a, b = _arr(lib, (512, 512)), _arr(lib, (512, 512), 1)
    return lambda: a @ b


@workload("pointwise_chain_4M", "pointwise")
def pointwise_chain_4m(lib):
    x = _arr(lib, (4 * 1024 * 1024,))
    return lambda: ((x * 1.5 + 0.5).tanh() * x).sigmoid()


@workload("softmax_256x1024", "pointwise")
def softmax_256x1024(lib):
    x = _arr(lib, (256, 1024))
    return lambda: lib.softmax(x, dim=-1)
