"""Function-transform workloads (issue 5): vectorised Hessians and per-sample gradients."""
import importlib

import numpy as np

from .workloads import _arr, workload


def _hessian(lib, vectorize):
    w = _arr(lib, (64, 64)) * 0.1
    x = _arr(lib, (64,), 1)

    def f(x):
        return (w @ x).tanh().sum()
    functional = importlib.import_module(lib.__name__ + ".autograd.functional")
    return lambda: functional.hessian(f, x, vectorize=vectorize)


@workload("hessian_tanh64_vectorized", "func")
def hessian_tanh64_vectorized(lib):
    return _hessian(lib, True)


@workload("hessian_tanh64_loop", "func")
def hessian_tanh64_loop(lib):
    return _hessian(lib, False)


def _mlp(lib):
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 10))
    x = _arr(lib, (64, 32), 2)
    y = lib.from_numpy(np.random.default_rng(3).integers(0, 10, 64))
    params = {k: v.detach() for k, v in model.named_parameters()}
    return model, params, x, y


@workload("per_sample_grad_mlp64_vmap", "func")
def per_sample_grad_mlp64_vmap(lib):
    model, params, x, y = _mlp(lib)
    F = lib.nn.functional

    def loss(p, xi, yi):
        out = lib.func.functional_call(model, p, (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))
    g = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))
    return lambda: g(params, x, y)


@workload("per_sample_grad_mlp64_loop", "func")
def per_sample_grad_mlp64_loop(lib):
    model, params, x, y = _mlp(lib)
    F = lib.nn.functional
    names = list(params)
    leaves = [params[k].requires_grad_(True) for k in names]

    def step():
        grads = []
        for i in range(x.shape[0]):
            out = lib.func.functional_call(model, dict(zip(names, leaves)), (x[i:i + 1],))
            grads.append(lib.autograd.grad(F.cross_entropy(out, y[i:i + 1]), leaves))
        return [lib.stack(gs) for gs in zip(*grads)]
    return step
