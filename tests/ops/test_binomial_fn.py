"""torch.binomial: sample statistics, edge values and errors vs torch; reproducible seeds."""
import numpy as np
import pytest
import torch

import ember


def test_statistics_and_edges():
    ember.manual_seed(0)
    count = ember.full((20000,), 30.0)
    prob = ember.full((20000,), 0.3)
    s = ember.binomial(count, prob).numpy()
    assert abs(s.mean() - 9.0) < 0.1 and abs(s.var() - 6.3) < 0.3
    assert s.min() >= 0 and s.max() <= 30 and np.all(s == np.round(s))
    edge = ember.binomial(ember.tensor([10., 5, 4, 7]), ember.tensor([0., 1., 1.5, float("nan")]))
    ref = torch.binomial(torch.tensor([10., 5, 4, 7]), torch.tensor([0., 1., 1.5, float("nan")]))
    np.testing.assert_array_equal(edge.numpy(), ref.numpy())
    assert ember.binomial(ember.tensor([-1.]), ember.tensor([0.5])).item() == 0


def test_seeded_and_generator():
    g = ember.Generator().manual_seed(3)
    a = ember.binomial(ember.full((50,), 9.), ember.full((50,), 0.4), generator=g)
    g.manual_seed(3)
    b = ember.binomial(ember.full((50,), 9.), ember.full((50,), 0.4), generator=g)
    assert a.tolist() == b.tolist() and a.dtype == ember.float32


@pytest.mark.parametrize("call", [
    lambda L: L.binomial(L.tensor([10, 5]), L.tensor([0.5, 0.5])),
    lambda L: L.binomial(L.tensor([10., 5]), L.tensor([1, 0])),
    lambda L: L.binomial(L.tensor([10., 5]), L.tensor([0.5, 0.2]).double()),
    lambda L: L.binomial(L.tensor([10., 5]).half(), L.tensor([0.5, 1.]).half()),
])
def test_errors(call):
    with pytest.raises(Exception) as te:
        call(torch)
    with pytest.raises(type(te.value)):
        call(ember)
