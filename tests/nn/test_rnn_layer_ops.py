"""LSTM/GRU layers run the same operators in eager mode, under dispatch modes and in a
create_graph backward: the fused layer op forward, its fused backward op always, and the
backward op's own derivative (double backward, forward AD) from its decomposition."""
import warnings

import numpy as np
import pytest

import ember
from ember._core.dispatch import DispatchMode


class _Names(DispatchMode):
    def __init__(self):
        self.names = []

    def __ember_dispatch__(self, op, args, kwargs):
        self.names.append(getattr(op, "base", op).name)
        return op(*args, **kwargs)


def _module(kind, **kw):
    ember.manual_seed(0)
    return getattr(ember.nn, kind)(3, 4, **kw).double()


def _torch_twin(torch, m, kind, **kw):
    tm = getattr(torch.nn, kind)(3, 4, **kw).double()
    with torch.no_grad():
        for (_, p), (_, q) in zip(m.named_parameters(), tm.named_parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy()))
    return tm


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_modes_see_the_layer_ops(kind, create_graph):
    m = _module(kind, num_layers=2, bidirectional=True)
    x = ember.randn(5, 2, 3, dtype=ember.float64, requires_grad=True)
    layer = f"_{kind.lower()}_layer"
    with _Names() as mode:
        out = m(x)[0]
        g, = ember.autograd.grad(out.sum(), x, create_graph=create_graph)
    assert mode.names.count(layer) == 4  # 2 layers x 2 directions
    assert mode.names.count(layer + "_backward") == 4
    assert f"_{kind.lower()}_cell" not in mode.names
    eager, = ember.autograd.grad(m(x)[0].sum(), x)
    np.testing.assert_array_equal(g.detach().numpy(), eager.numpy())


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_forward_ad_equals_central_differences(kind):
    m = _module(kind)
    x, v = ember.randn(5, 2, 3, dtype=ember.float64), ember.randn(5, 2, 3, dtype=ember.float64)
    f = lambda x: m(x)[0]  # noqa: E731
    _, tangent = ember.func.jvp(f, (x,), (v,))
    eps = 1e-6
    fd = (f(x + eps * v) - f(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(tangent.detach().numpy(), fd.detach().numpy(), rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_hessian_vector_product_matches_torch(kind):
    # second order through both directions and a layer's input from the layer below
    # (gradgradcheck of the modules: tests/ops/test_opdb_generic.py)
    import torch
    m = _module(kind, num_layers=2, bidirectional=True)
    tm = _torch_twin(torch, m, kind, num_layers=2, bidirectional=True)
    xn = np.random.default_rng(0).standard_normal((5, 2, 3))
    vn = np.random.default_rng(1).standard_normal((5, 2, 3))

    def hvp(lib, module):
        x = lib.tensor(xn, requires_grad=True)
        w = module.weight_hh_l0_reverse
        g = lib.autograd.grad((module(x)[0] ** 2).sum(), (x, w), create_graph=True)
        return [h.detach().numpy() for h in lib.autograd.grad(
            (g[0] * lib.tensor(vn)).sum() + g[1].sum(), (x, w))]
    for got, want in zip(hvp(ember, m), hvp(torch, tm)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_hessian_under_func_transforms_matches_torch(kind):
    # forward over reverse: jacrev runs the backward op under vmap, jacfwd differentiates it
    # (its vjp, from the decomposition, makes its stand-in leaves inside vmap)
    import torch
    m = _module(kind)
    tm = _torch_twin(torch, m, kind)
    xn = np.random.default_rng(2).standard_normal((3, 1, 3))

    def hess(lib, module):
        f = lambda x: (module(x)[0] ** 2).sum()  # noqa: E731
        with warnings.catch_warnings():  # torch.func's import of torch.jit.script warns
            warnings.simplefilter("ignore", DeprecationWarning)
            return lib.func.jacfwd(lib.func.jacrev(f))(lib.tensor(xn)).detach().numpy()
    np.testing.assert_allclose(hess(ember, m), hess(torch, tm), rtol=1e-8, atol=1e-10)
