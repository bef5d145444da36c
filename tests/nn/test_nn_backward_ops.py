"""The nn backward operators (gelu_backward, silu_backward, _normalize_backward,
_cross_entropy_backward): the same kernel whatever mode is active, and their own
derivatives (double backward, hessians, vmap of gradients) against torch and gradgradcheck."""
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember._core.dispatch import DispatchMode
from ember.autograd import gradcheck, gradgradcheck

rng = np.random.default_rng(7)


def pair(shape, scale=1.0, dtype=np.float64):
    a = (rng.standard_normal(shape) * scale).astype(dtype)
    return ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


class Recorder(DispatchMode):
    """A pass-through mode (as tracing is): records the operators it sees."""

    def __init__(self):
        self.names = []

    def __ember_dispatch__(self, op, args, kwargs):
        self.names.append(op.name)
        return op(*args, **kwargs)


ACTS = {"gelu": lambda L, x: L.nn.functional.gelu(x),
        "gelu_tanh": lambda L, x: L.nn.functional.gelu(x, approximate="tanh"),
        "silu": lambda L, x: L.nn.functional.silu(x)}


@pytest.mark.parametrize("name", list(ACTS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activation_backward_is_one_op_whatever_the_mode(name, dtype):
    """Eager and mode-observed backward passes run the same operator (the C kernel where it
    fits): identical bits."""
    fn = ACTS[name]
    xe, _ = pair((64, 128), 3.0, dtype)
    g = ember.tensor(rng.standard_normal((64, 128)).astype(dtype))
    (eager,) = ember.autograd.grad(fn(ember, xe), xe, g)
    y = fn(ember, xe)
    with Recorder() as rec:
        (seen,) = ember.autograd.grad(y, xe, g)
    assert f"{name.split('_')[0]}_backward" in rec.names
    np.testing.assert_array_equal(seen.numpy(), eager.numpy())


@pytest.mark.parametrize("name", list(ACTS))
def test_activation_double_backward_matches_torch(name):
    fn = ACTS[name]
    xe, xt = pair((6, 7), 2.0)
    ge, gt = pair((6, 7))
    (de,) = ember.autograd.grad(fn(ember, xe), xe, ge, create_graph=True)
    (dt,) = torch.autograd.grad(fn(torch, xt), xt, gt, create_graph=True)
    np.testing.assert_allclose(de.detach().numpy(), dt.detach().numpy(), rtol=1e-12, atol=1e-14)
    w = rng.standard_normal((6, 7))
    ae = ember.autograd.grad((de * ember.tensor(w)).sum(), (xe, ge))
    at = torch.autograd.grad((dt * torch.tensor(w)).sum(), (xt, gt))
    for a, b in zip(ae, at):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)
    x = ember.tensor(rng.standard_normal((3, 4)) * 2, requires_grad=True)
    assert gradgradcheck(lambda t: fn(ember, t), (x,))


NORMS = {
    "layer_norm": lambda L, x, w, b: L.nn.functional.layer_norm(x, (4,), w, b),
    "group_norm": lambda L, x, w, b: L.nn.functional.group_norm(
        x.reshape(3, 2, 2, 2).transpose(0, 1).reshape(2, 4, 3), 2, w, b),
    "batch_norm": lambda L, x, w, b: L.nn.functional.batch_norm(
        x.transpose(1, 2), None, None, w, b, training=True),
}


@pytest.mark.parametrize("name", list(NORMS))
def test_normalize_second_derivatives_match_torch(name):
    fn = NORMS[name]
    xe, xt = pair((2, 3, 4))
    we, wt = pair((4,))
    be, bt = pair((4,))
    cube = lambda L: lambda x: (fn(L, x, we if L is ember else wt,  # noqa: E731
                                   be if L is ember else bt) ** 3).sum()
    he = ember.autograd.functional.hessian(cube(ember), xe.detach())
    ht = torch.autograd.functional.hessian(cube(torch), xt.detach())
    np.testing.assert_allclose(he.numpy(), ht.numpy(), rtol=1e-9, atol=1e-10)
    assert gradgradcheck(lambda x, w, b: fn(ember, x, w, b), (xe, we, be))


def test_normalize_hessian_under_vmap_matches_torch_func():
    """jacrev(jacrev) runs the second backward under vmap: the rstd gradient the first
    backward produces must not be dropped there (it is all zeros only in the first pass)."""
    xe, xt = pair((3, 5))
    fe = lambda x: (F.layer_norm(x, (5,)) ** 3).sum()  # noqa: E731
    ft = lambda x: (torch.nn.functional.layer_norm(x, (5,)) ** 3).sum()  # noqa: E731
    he = ember.func.jacrev(ember.func.jacrev(fe))(xe.detach())
    ht = torch.func.jacrev(torch.func.jacrev(ft))(xt.detach())
    np.testing.assert_allclose(he.numpy(), ht.numpy(), rtol=1e-9, atol=1e-10)
    ge = ember.func.vmap(ember.func.grad(fe))(xe.detach().reshape(3, 1, 5))
    gt = torch.func.vmap(torch.func.grad(ft))(xt.detach().reshape(3, 1, 5))
    np.testing.assert_allclose(ge.numpy(), gt.numpy(), rtol=1e-10, atol=1e-12)


CE_CASES = {
    "mean": dict(),
    "sum-weight": dict(reduction="sum", weight=np.array([0.5, 1.0, 2.0, 1.5])),
    "none-smooth-ignore": dict(reduction="none", label_smoothing=0.3, ignore_index=2),
    "mean-weight-smooth": dict(weight=np.array([0.5, 1.0, 2.0, 1.5]), label_smoothing=0.1),
}


@pytest.mark.parametrize("case", list(CE_CASES))
def test_cross_entropy_double_backward_matches_torch(case):
    kw = dict(CE_CASES[case])
    xe, xt = pair((5, 4))
    t = rng.integers(0, 4, size=5)
    w = kw.pop("weight", None)
    ke = dict(kw, weight=None if w is None else ember.tensor(w))
    kt = dict(kw, weight=None if w is None else torch.tensor(w))
    le = F.cross_entropy(xe, ember.tensor(t), **ke)
    lt = torch.nn.functional.cross_entropy(xt, torch.tensor(t), **kt)
    ce = ember.ones_like(le, requires_grad=True) * 1.3
    ct = torch.ones_like(lt, requires_grad=True) * 1.3
    (ge,) = ember.autograd.grad(le, xe, ce, create_graph=True)
    (gt,) = torch.autograd.grad(lt, xt, ct, create_graph=True)
    np.testing.assert_allclose(ge.detach().numpy(), gt.detach().numpy(), rtol=1e-12, atol=1e-14)
    v = rng.standard_normal((5, 4))
    he = ember.autograd.grad((ge * ember.tensor(v)).sum(), xe)[0]
    ht = torch.autograd.grad((gt * torch.tensor(v)).sum(), xt)[0]
    np.testing.assert_allclose(he.numpy(), ht.numpy(), rtol=1e-10, atol=1e-12)
    assert gradgradcheck(lambda x: F.cross_entropy(x, ember.tensor(t), **ke), (xe,))


def test_cross_entropy_backward_op_gradient_in_its_upstream_gradient():
    """d(grad)/d(upstream g): gradcheck of the backward operator in both arguments."""
    from ember.ops.nn.loss import CE_GRAD
    x = ember.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    t = ember.tensor(rng.integers(0, 3, size=4))
    for red, g in (("none", rng.standard_normal(4)), ("mean", rng.standard_normal(()))):
        gt = ember.tensor(g, requires_grad=True)
        assert gradcheck(lambda a, b: CE_GRAD(a, b, t, ignore_index=-100, reduction=red,
                                              smoothing=0.2), (gt, x))
