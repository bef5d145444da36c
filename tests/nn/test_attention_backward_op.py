"""sdpa's fused backward operator (_flash_attention_backward): the same operator whatever
mode is active, and its own derivative (written in ember ops) against torch's double
backward and gradgradcheck."""
import numpy as np
import pytest
import torch

import ember
from ember._core.dispatch import DispatchMode
from ember.autograd import gradcheck, gradgradcheck

rng = np.random.default_rng(11)


class Recorder(DispatchMode):
    """A pass-through mode (as tracing is): records the operators it sees."""

    def __init__(self):
        self.names = []

    def __ember_dispatch__(self, op, args, kwargs):
        self.names.append(op.name)
        return op(*args, **kwargs)


def _inputs(mask_kind):
    q, k, v = (rng.standard_normal(s) for s in ((2, 3, 4, 3), (2, 3, 5, 3), (2, 3, 5, 2)))
    m = None
    if mask_kind == "float":
        m = rng.standard_normal((4, 5))
    elif mask_kind == "bool":
        m = rng.random((4, 5)) > 0.3
        m[:, 0] = True  # no row fully masked
    return q, k, v, m


def _sdpa(L, q, k, v, m, causal):
    return L.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal)


CASES = [(None, False), (None, True), ("float", False), ("bool", False)]


@pytest.mark.parametrize("mask_kind,causal", CASES)
def test_backward_is_one_op_whatever_the_mode(mask_kind, causal):
    q, k, v, m = _inputs(mask_kind)
    xs = [ember.tensor(a, requires_grad=True) for a in (q, k, v)]
    mask = None if m is None else ember.tensor(m)
    g = ember.tensor(rng.standard_normal((2, 3, 4, 2)))
    eager = ember.autograd.grad(_sdpa(ember, *xs, mask, causal), xs, g)
    y = _sdpa(ember, *xs, mask, causal)
    with Recorder() as rec:
        seen = ember.autograd.grad(y, xs, g)
    # the fused operator, not a recomputation of the scores in ember ops
    assert rec.names.count("_flash_attention_backward") == 1 and "exp" not in rec.names
    for a, b in zip(seen, eager):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("mask_kind,causal", CASES)
def test_double_backward_matches_torch(mask_kind, causal):
    q, k, v, m = _inputs(mask_kind)
    xe = [ember.tensor(a, requires_grad=True) for a in (q, k, v)]
    xt = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    float_mask = mask_kind == "float"
    me = None if m is None else ember.tensor(m, requires_grad=float_mask)
    mt = None if m is None else torch.tensor(m, requires_grad=float_mask)
    we = ember.tensor(rng.standard_normal((2, 3, 4, 2)))
    wt = torch.tensor(we.numpy())

    def second(L, xs, mk, w):
        o = _sdpa(L, *xs, mk, causal)
        wrt = list(xs) + ([mk] if float_mask else [])
        gs = L.autograd.grad((o * w).sum(), wrt, create_graph=True)
        return L.autograd.grad(sum((gi ** 3).sum() for gi in gs), wrt)
    for a, b in zip(second(ember, xe, me, we), second(torch, xt, mt, wt)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("mask_kind,causal", CASES)
def test_gradgradcheck(mask_kind, causal):
    q, k, v, m = _inputs(mask_kind)
    args = [ember.tensor(a, requires_grad=True) for a in (q, k, v)]
    if m is not None:
        args.append(ember.tensor(m, requires_grad=mask_kind == "float"))

    def f(*a):
        return _sdpa(ember, *a[:3], a[3] if len(a) > 3 else None, causal)
    assert gradcheck(f, tuple(args))
    assert gradgradcheck(f, tuple(args))


def test_forward_over_reverse_matches_torch():
    # jvp of the gradient (forward AD through the backward operator, derived from its vjp) is
    # the Hessian-vector product: torch's reverse-over-reverse gives it
    from ember.func import grad, jvp
    q, k, v, _ = _inputs(None)
    t = rng.standard_normal(q.shape)

    def fe(x):
        return (_sdpa(ember, x, ember.tensor(k), ember.tensor(v), None, False) ** 2).sum()
    _, te = jvp(grad(fe), (ember.tensor(q),), (ember.tensor(t),))
    xt = torch.tensor(q, requires_grad=True)
    out = _sdpa(torch, xt, torch.tensor(k), torch.tensor(v), None, False)
    (g,) = torch.autograd.grad((out ** 2).sum(), xt, create_graph=True)
    (tt,) = torch.autograd.grad((g * torch.tensor(t)).sum(), xt)
    np.testing.assert_allclose(te.numpy(), tt.numpy(), rtol=1e-9, atol=1e-11)
