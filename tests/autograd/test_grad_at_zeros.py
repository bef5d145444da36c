"""prod and cumprod gradients at zeros (issue 10): torch's values, gradcheck to second order,
and the same operators run whatever the values, so a traced backward equals eager."""
import numpy as np
import pytest
import torch

import ember
from ember import DispatchMode
from ember.autograd import gradcheck, gradgradcheck

CASES = [
    [2.0, 3.0, 4.0, 5.0],
    [2.0, 0.0, 4.0, 5.0],
    [0.0, 3.0, 0.0, 5.0],
    [0.0, 0.0, 0.0, 1.5],
    [[1.5, 0.0, 2.0], [0.0, -1.0, 3.0]],
]


def _pair(data):
    return (ember.tensor(data, dtype=ember.float64, requires_grad=True),
            torch.tensor(data, dtype=torch.float64, requires_grad=True))


@pytest.mark.parametrize("data", CASES)
@pytest.mark.parametrize("fn", ["prod_all", "prod_dim", "cumprod", "cumprod_rev_dim0"])
def test_first_and_second_order_gradients_equal_torch(data, fn):
    e, t = _pair(data)

    def f(lib, x):
        if fn == "prod_all":
            return x.prod()
        if fn == "prod_dim":
            return x.prod(-1)
        if fn == "cumprod":
            return x.cumprod(-1)
        return lib.flip(lib.cumprod(lib.flip(x, [0]), 0), [0])
    ye, yt = f(ember, e), f(torch, t)
    w = np.linspace(0.5, 1.5, yt.numel()).reshape(tuple(yt.shape))
    (ge,) = ember.autograd.grad((ye * ember.tensor(w)).sum(), e, create_graph=True)
    (gt,) = torch.autograd.grad((yt * torch.tensor(w)).sum(), t, create_graph=True)
    np.testing.assert_allclose(ge.detach().numpy(), gt.detach().numpy(), rtol=1e-12, atol=1e-12)
    (hess_e,) = ember.autograd.grad((ge * ge).sum(), e)
    (hess_t,) = torch.autograd.grad((gt * gt).sum(), t)
    np.testing.assert_allclose(hess_e.numpy(), hess_t.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("data", CASES)
def test_gradcheck_and_gradgradcheck_at_zeros(data):
    x = ember.tensor(data, dtype=ember.float64, requires_grad=True)
    for fn in (lambda v: v.prod(), lambda v: v.prod(0), lambda v: v.cumprod(-1),
               lambda v: v.cumprod(0)):
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))


def test_reverse_cumprod_op_gradient():
    from ember.ops import REGISTRY
    x = ember.tensor([1.5, 0.0, 2.0, 0.0, 3.0], dtype=ember.float64, requires_grad=True)
    f = lambda v: REGISTRY["cumprod"](v, dim=0, reverse=True)  # noqa: E731
    np.testing.assert_allclose(f(x).detach().numpy(), [0.0, 0.0, 0.0, 0.0, 3.0])
    assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))


class OpNames(DispatchMode):
    def __init__(self):
        self.names = []

    def __ember_dispatch__(self, op, args, kwargs):
        self.names.append(op.name)
        return op(*args, **kwargs)


@pytest.mark.parametrize("fn", [lambda v: v.prod(), lambda v: v.prod(0),
                                lambda v: v.cumprod(0)])
def test_backward_runs_the_same_ops_with_and_without_zeros(fn):
    seqs = []
    for data in ([2.0, 3.0, 4.0], [2.0, 0.0, 4.0], [0.0, 0.0, 4.0]):
        x = ember.tensor(data, dtype=ember.float64, requires_grad=True)
        y = fn(x).sum()
        with OpNames() as m:
            (g,) = ember.autograd.grad(y, x, create_graph=True)
            ember.autograd.grad(g.sum(), x)
        seqs.append(m.names)
        # under the mode the values are eager's
        xt = torch.tensor(data, dtype=torch.float64, requires_grad=True)
        (gt,) = torch.autograd.grad(fn(xt).sum(), xt)
        np.testing.assert_allclose(g.detach().numpy(), gt.numpy(), rtol=1e-12)
    assert seqs[0] == seqs[1] == seqs[2]


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("data", CASES[1:])
def test_first_order_fused_kernels_equal_torch(data, dtype):
    # without create_graph, prod and cumprod take their fused backward operators
    base = np.array(data)
    if dtype == "complex128":
        base = base + 1j * np.roll(base, 1)
    for fn in (lambda v: v.prod(-1), lambda v: v.cumprod(-1), lambda v: v.cumprod(0)):
        e = ember.tensor(base, dtype=getattr(ember, dtype), requires_grad=True)
        t = torch.tensor(base, dtype=getattr(torch, dtype), requires_grad=True)
        w = np.linspace(0.5, 1.5, fn(t).numel()).reshape(tuple(fn(t).shape))
        (ge,) = ember.autograd.grad((fn(e) * ember.tensor(w)).abs().sum(), e)
        (gt,) = torch.autograd.grad((fn(t) * torch.tensor(w)).abs().sum(), t)
        np.testing.assert_allclose(ge.numpy(), gt.numpy(), rtol=1e-5, atol=1e-6)


def test_cumprod_with_dtype_and_halves():
    x = ember.tensor([1.5, 0.0, 2.0, 3.0], requires_grad=True)
    xt = torch.tensor([1.5, 0.0, 2.0, 3.0], requires_grad=True)
    (ge,) = ember.autograd.grad(ember.cumprod(x, 0, dtype=ember.float64).sum(), x)
    (gt,) = torch.autograd.grad(torch.cumprod(xt, 0, dtype=torch.float64).sum(), xt)
    np.testing.assert_allclose(ge.numpy(), gt.numpy(), rtol=1e-6)
    h = ember.tensor([1.5, 0.0, 2.0, 3.0], dtype=ember.float16, requires_grad=True)
    ht = torch.tensor([1.5, 0.0, 2.0, 3.0], dtype=torch.float16, requires_grad=True)
    for fe, ft in ((lambda v: v.cumprod(0), lambda v: v.cumprod(0)),
                   (lambda v: v.prod(), lambda v: v.prod())):
        (ge,) = ember.autograd.grad(fe(h).sum(), h)
        (gt,) = torch.autograd.grad(ft(ht).sum(), ht)
        assert ge.dtype == ember.float16
        np.testing.assert_allclose(ge.numpy().astype(np.float32), gt.numpy().astype(np.float32),
                                   rtol=1e-3)


FNS = {"prod_all": lambda v: v.prod(), "prod_dim": lambda v: v.prod(-1),
       "cumprod": lambda v: v.cumprod(-1), "cumprod_weighted": lambda v: (
           v.cumprod(-1) * (v * 0 + 1).cumsum(-1)).sum()}


@pytest.mark.parametrize("data", CASES)
@pytest.mark.parametrize("fn", sorted(FNS))
def test_forward_over_reverse_hessian_equals_torch(data, fn):
    # jacfwd(jacrev): forward AD through the backward operators (the fused ones included)
    f = FNS[fn]
    he = ember.func.jacfwd(ember.func.jacrev(lambda v: f(v).sum()))(
        ember.tensor(data, dtype=ember.float64))
    ht = torch.autograd.functional.hessian(lambda v: f(v).sum(),
                                           torch.tensor(data, dtype=torch.float64))
    np.testing.assert_allclose(he.numpy(), ht.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("fn", [lambda v: v.prod(0), lambda v: v.cumprod(0)])
def test_backward_runs_the_same_ops_with_and_without_a_graph(fn):
    seqs = []
    for create_graph in (False, True):
        x = ember.tensor([2.0, 0.0, 4.0], dtype=ember.float64, requires_grad=True)
        y = fn(x).sum()
        with OpNames() as m:
            ember.autograd.grad(y, x, create_graph=create_graph)
        seqs.append(m.names)
    assert seqs[0] == seqs[1]
