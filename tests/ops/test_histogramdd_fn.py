"""torch.histogramdd: histograms, bin edges, weights, density and errors vs torch."""
import numpy as np
import pytest
import torch

import ember

rng = np.random.default_rng(2)
P = rng.standard_normal((200, 3)).astype(np.float32)
P[0] = P[1]  # a repeated point
Q = np.array([[0., 1], [1, 0], [2, 0], [2, 2]], np.float32)

CASES = [
    lambda L, x, q: L.histogramdd(x, bins=4),
    lambda L, x, q: L.histogramdd(x, bins=[2, 3, 5], density=True),
    lambda L, x, q: L.histogramdd(x, bins=3, range=[-1., 1., -2., 2., 0., 1.],
                                  weight=L.ones(200) * 0.5),
    lambda L, x, q: L.histogramdd(q, bins=[3, 3]),
    lambda L, x, q: L.histogramdd(q, bins=2, range=[0., 1., 0., 1.],
                                  weight=L.tensor([1., 2., 4., 8.]), density=True),
    lambda L, x, q: L.histogramdd(q, bins=[L.tensor([0., 1, 2]), L.tensor([0., 2])]),
    lambda L, x, q: L.histogramdd(L.ones(3, 1), bins=2),
    lambda L, x, q: L.histogramdd(q.double().reshape(2, 2, 2), bins=2),
]

ERRORS = [
    lambda L, x, q: L.histogramdd(q, bins=[0, 3]),
    lambda L, x, q: L.histogramdd(q, bins=[2, 3, 4]),
    lambda L, x, q: L.histogramdd(q, bins=2, range=[0., 1.]),
    lambda L, x, q: L.histogramdd(q.long(), bins=2),
    lambda L, x, q: L.histogramdd(q, bins=2, range=[1., 0., 0, 1]),
    lambda L, x, q: L.histogramdd(q, bins=2, weight=L.ones(3)),
    lambda L, x, q: L.histogramdd(q, bins=2, weight=L.ones(4).double()),
    lambda L, x, q: L.histogramdd(L.tensor([1., 2, 3]), bins=2),
    lambda L, x, q: L.histogramdd(q, bins=2, out=(L.empty(0), [L.empty(0)] * 2)),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_values(i):
    t = CASES[i](torch, torch.tensor(P), torch.tensor(Q))
    e = CASES[i](ember, ember.tensor(P), ember.tensor(Q))
    assert type(e).__name__ == "histogramdd" and isinstance(e.bin_edges, tuple)
    np.testing.assert_allclose(e.hist.numpy(), t.hist.numpy(), rtol=1e-6)
    assert e.hist.dtype.itemsize == t.hist.dtype.itemsize
    assert len(e.bin_edges) == len(t.bin_edges)
    for a, b in zip(e.bin_edges, t.bin_edges):  # torch's linspace, bit for bit
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    with pytest.raises(Exception) as te:
        ERRORS[i](torch, torch.tensor(P), torch.tensor(Q))
    with pytest.raises(type(te.value)):
        ERRORS[i](ember, ember.tensor(P), ember.tensor(Q))


def _grad_behaviour(L):
    """requires_grad / grad_fn of hist and edges, and what backward through each says, for
    every combination of input, weight and bin tensors that require grad."""
    res = []
    x = L.tensor(P[:10, :2].astype(np.float64))
    for xrg in (False, True):
        for wrg in (None, False, True):
            for brg in (None, False, True):  # None: bins given as counts
                xx = x.clone().requires_grad_(xrg)
                w = None if wrg is None else L.linspace(0, 1, 10, dtype=L.float64)
                w = None if w is None else w.requires_grad_(wrg)
                bins = [3, 4] if brg is None else [
                    L.linspace(-3, 3, 4, dtype=L.float64).requires_grad_(brg),
                    L.linspace(-3, 3, 5, dtype=L.float64)]
                h, e = L.histogramdd(xx, bins, weight=w)
                r = [h.requires_grad, h.grad_fn is not None, [t.requires_grad for t in e],
                     [t.grad_fn is not None for t in e], brg is None or e[0] is bins[0]]
                for t in (h, e[0]):
                    try:
                        t.sum().backward()
                        r.append("ok")
                    except RuntimeError as ex:
                        r.append(str(ex))
                res.append(r)
    with L.no_grad():
        h, e = L.histogramdd(x.clone().requires_grad_(), 3)
        res.append((h.requires_grad, e[0].requires_grad))
    return res


def test_outputs_require_grad_and_backward_raises_like_torch():
    """torch's three operators have no derivative: outputs require grad when an input does,
    backward names the operator (_histogramdd_bin_edges/_from_bin_cts/_from_bin_tensors);
    bin tensors come back as the same objects."""
    assert _grad_behaviour(ember) == _grad_behaviour(torch)


def test_bins_tensors_dtype_must_match_input():
    msgs = []
    for L in (torch, ember):
        with pytest.raises(RuntimeError) as e:
            L.histogramdd(L.zeros(4, 2), [L.tensor([0., 1.], dtype=L.float64),
                                          L.tensor([0., 1.])])
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
