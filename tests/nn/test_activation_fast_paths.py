"""The fast eager paths of leaky_relu (max/min forms, bit-blend select) and softplus
(torch's log1p(exp) formula) against torch: bit-exact values and gradients at every slope
sign, signed zeros, infinities and NaN; halves; double backward."""
import numpy as np
import pytest
import torch

import ember
from ember.ops._helpers import select

RNG = np.random.default_rng(0)
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 3e38, -3e38]


def _x(dt, n=4000):
    x = (RNG.standard_normal(n) * 3).astype(dt)
    x[:len(SPECIAL)] = SPECIAL
    return x


def _same_bits(e, t):
    e, t = np.asarray(e), np.asarray(t)
    assert e.dtype == t.dtype and e.shape == t.shape
    assert np.array_equal(e, t, equal_nan=True)
    keep = ~np.isnan(t) if t.dtype.kind == "f" else slice(None)  # signed zeros; NaN's sign is free
    assert np.array_equal(np.signbit(e[keep]), np.signbit(t[keep]))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("slope", [0.01, 1.0, 0.0, -0.5, 2.5, 1, float("inf"), float("nan")])
def test_leaky_relu_bitexact(dt, slope):
    x, g = _x(dt), _x(dt)[::-1].copy()
    tx = torch.from_numpy(x).requires_grad_()
    ex = ember.from_numpy(x).requires_grad_()
    ty = torch.nn.functional.leaky_relu(tx, slope)
    ey = ember.nn.functional.leaky_relu(ex, slope)
    _same_bits(ey.detach().numpy(), ty.detach().numpy())
    ty.backward(torch.from_numpy(g))
    ey.backward(ember.from_numpy(g))
    _same_bits(ex.grad.numpy(), tx.grad.numpy())


def test_leaky_relu_sum_gradient_and_double_backward():
    x = _x(np.float64, 50)[len(SPECIAL):]
    tx = torch.from_numpy(x).requires_grad_()
    ex = ember.from_numpy(x).requires_grad_()
    (tg,) = torch.autograd.grad(torch.nn.functional.leaky_relu(tx, 0.3).sum(), tx,
                                create_graph=True)
    (eg,) = ember.autograd.grad(ember.nn.functional.leaky_relu(ex, 0.3).sum(), ex,
                                create_graph=True)
    _same_bits(eg.detach().numpy(), tg.detach().numpy())
    w = RNG.standard_normal(x.shape)
    (tgg,) = torch.autograd.grad((tg * torch.from_numpy(w)).sum(), tx, allow_unused=True)
    assert eg.requires_grad
    (egg,) = ember.autograd.grad((eg * ember.from_numpy(w)).sum(), ex, allow_unused=True)
    assert (tgg is None or not tgg.any()) and (egg is None or not egg.numpy().any())
    # the backward is linear in the incoming gradient: its own vjp is itself
    ggt = torch.from_numpy(w).requires_grad_()
    gge = ember.from_numpy(w).requires_grad_()
    (a,) = torch.autograd.grad(torch.nn.functional.leaky_relu(tx, 0.3), tx, ggt,
                               create_graph=True)
    (b,) = ember.autograd.grad(ember.nn.functional.leaky_relu(ex, 0.3), ex, gge,
                               create_graph=True)
    (ta,) = torch.autograd.grad(a.sum(), ggt)
    (eb,) = ember.autograd.grad(b.sum(), gge)
    _same_bits(eb.numpy(), ta.numpy())


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_leaky_relu_halves(dt):
    x = _x(np.float32, 500)
    tx = torch.from_numpy(x).to(getattr(torch, dt)).requires_grad_()
    ex = ember.from_numpy(x).to(getattr(ember, dt)).requires_grad_()
    ty = torch.nn.functional.leaky_relu(tx, 0.37)
    ey = ember.nn.functional.leaky_relu(ex, 0.37)
    _same_bits(ey.detach().float().numpy(), ty.detach().float().numpy())
    g = RNG.standard_normal(500).astype(np.float32)
    ty.backward(torch.from_numpy(g).to(tx.dtype))
    ey.backward(ember.from_numpy(g).to(ex.dtype))
    _same_bits(ex.grad.float().numpy(), tx.grad.float().numpy())


def test_leaky_relu_inplace_and_int_error():
    x = _x(np.float32)
    t, e = torch.from_numpy(x.copy()), ember.from_numpy(x.copy())
    torch.nn.functional.leaky_relu_(t, 0.2)
    ember.nn.functional.leaky_relu_(e, 0.2)
    _same_bits(e.numpy(), t.numpy())
    with pytest.raises(NotImplementedError):
        torch.nn.functional.leaky_relu(torch.arange(3))
    with pytest.raises(NotImplementedError):
        ember.nn.functional.leaky_relu(ember.arange(3))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (2.0, 3.0), (0.5, 20.0), (-1.0, 5.0)])
def test_softplus_against_torch(dt, beta, threshold):
    x = _x(dt)
    tx = torch.from_numpy(x).requires_grad_()
    ex = ember.from_numpy(x).requires_grad_()
    ty = torch.nn.functional.softplus(tx, beta, threshold)
    ey = ember.nn.functional.softplus(ex, beta, threshold)
    rtol = 4e-7 if dt == np.float32 else 1e-15
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=rtol, atol=0)
    assert ey.dtype == ember.float32 if dt == np.float32 else ember.float64
    g = RNG.standard_normal(x.shape).astype(dt)
    ty.backward(torch.from_numpy(g))
    ey.backward(ember.from_numpy(g))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=rtol * 4, atol=0)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int64, np.int8, np.float16])
def test_select_is_where(dt):
    a, b = _x(np.float64, 300).astype(dt), _x(np.float64, 300)[::-1].astype(dt)
    m = RNG.random(300) > 0.5
    _same_bits(select(np, m, a, b), np.where(m, a, b))
    a2, b2, m2 = a.reshape(15, 20).T, b.reshape(15, 20).T, m.reshape(15, 20).T
    _same_bits(select(np, m2, a2, b2), np.where(m2, a2, b2))
    bb = np.broadcast_to(b[:1], b.shape)
    _same_bits(select(np, m, a, bb), np.where(m, a, bb))
    _same_bits(select(np, m, a, b.astype(np.float32)), np.where(m, a, b.astype(np.float32)))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_logsigmoid_and_bce_with_logits(dt):
    x = _x(dt)
    t = (RNG.random(x.shape) > 0.5).astype(dt)
    rtol = 4e-7 if dt == np.float32 else 1e-15
    ys = {lib: lib.nn.functional.logsigmoid(lib.from_numpy(x)).numpy() for lib in (torch, ember)}
    np.testing.assert_allclose(ys[ember], ys[torch], rtol=rtol)
    assert ys[ember][3] == -np.inf and ys[ember][2] == 0  # at -inf and inf
    keep = np.isfinite(x)
    xs, ts = x[keep], t[keep]
    res = {}
    for lib in (torch, ember):
        a = lib.from_numpy(xs).requires_grad_()
        loss = lib.nn.functional.binary_cross_entropy_with_logits(
            a, lib.from_numpy(ts), pos_weight=lib.from_numpy(np.array([1.7], dt)))
        loss.backward()
        res[lib] = (loss.detach().numpy(), a.grad.numpy())
    np.testing.assert_allclose(res[ember][0], res[torch][0],
                               rtol=1e-6 if dt == np.float32 else 1e-13)
    # the gradient cancels ((1 - t) * w - sigmoid terms): compare against its scale
    scale = np.abs(res[torch][1]).max() * (1e-6 if dt == np.float32 else 1e-14)
    np.testing.assert_allclose(res[ember][1], res[torch][1], rtol=0, atol=scale)
