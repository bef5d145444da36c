"""torch.gradient: values, dtypes and errors vs torch; gradients through it vs torch."""
import numpy as np
import pytest
import torch

import ember

_X = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)
_CX = ([0., 1, 3, 4.5, 7], [0., .5, 1., 3, 4, 6])

CASES = [
    lambda L, x: L.gradient(x),
    lambda L, x: L.gradient(x, spacing=2.),
    lambda L, x: L.gradient(x, spacing=[2., 3.]),
    lambda L, x: L.gradient(x, edge_order=2),
    lambda L, x: L.gradient(x, dim=1, spacing=0.5, edge_order=2),
    lambda L, x: L.gradient(x, dim=[0, 1], spacing=[1., 2.]),
    lambda L, x: L.gradient(x, spacing=[L.tensor(c) for c in _CX]),
    lambda L, x: L.gradient(x, spacing=[L.tensor(c) for c in _CX], edge_order=2),
    lambda L, x: L.gradient(x, spacing=[L.tensor(_CX[0], dtype=L.float64), L.tensor(_CX[1])]),
    lambda L, x: L.gradient(x.long()),
    lambda L, x: L.gradient(x.long(), spacing=2),
    lambda L, x: L.gradient(x, spacing=L.tensor(2.)),
    lambda L, x: L.gradient(x.to(L.complex64), dim=-1),
]

ERRORS = [
    lambda L, x: L.gradient(x, spacing=[1., 2., 3.]),
    lambda L, x: L.gradient(x, dim=2),
    lambda L, x: L.gradient(x, dim=(0, 0)),
    lambda L, x: L.gradient(x, edge_order=3),
    lambda L, x: L.gradient(x[:, :2], edge_order=2),
    lambda L, x: L.gradient(x.to(L.uint8)),
    lambda L, x: L.gradient(x, dim=[0], spacing=[1., 2.]),
    lambda L, x: L.gradient(x, spacing=[L.ones(5, 1), L.ones(6)]),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_values(i):
    t = CASES[i](torch, torch.tensor(_X))
    e = CASES[i](ember, ember.tensor(_X))
    assert len(t) == len(e)
    for a, b in zip(t, e):
        assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1]
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    with pytest.raises(Exception) as te:
        ERRORS[i](torch, torch.tensor(_X))
    with pytest.raises(type(te.value)):
        ERRORS[i](ember, ember.tensor(_X))


@pytest.mark.parametrize("edge_order", [1, 2])
def test_backward(edge_order):
    grads = []
    for L in (torch, ember):
        x = L.tensor(_X.astype(np.float64), requires_grad=True)
        gs = L.gradient(x, spacing=[L.tensor(c, dtype=L.float64) for c in _CX],
                        edge_order=edge_order)
        (gs[0] * 2 + gs[1] ** 2).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10)
