"""nn.init: gains, fans, distributions, generator reproducibility, errors."""
import math

import numpy as np
import pytest
import torch

import ember
from ember.nn import init
from nnutil import np_of


@pytest.mark.parametrize("nl,param", [("linear", None), ("conv2d", None), ("sigmoid", None),
                                      ("tanh", None), ("relu", None), ("leaky_relu", None),
                                      ("leaky_relu", 0.2), ("selu", None)])
def test_calculate_gain(nl, param):
    assert init.calculate_gain(nl, param) == pytest.approx(torch.nn.init.calculate_gain(nl, param))


def test_errors_like_torch():
    for fn in [lambda m, t: m.calculate_gain("foo"),
               lambda m, t: m.calculate_gain("leaky_relu", "x"),
               lambda m, t: m.xavier_uniform_(t.empty(3)),
               lambda m, t: m.kaiming_normal_(t.empty(3, 4), mode="fan_avg"),
               lambda m, t: m.eye_(t.empty(2, 3, 4)),
               lambda m, t: m.dirac_(t.empty(2, 3)),
               lambda m, t: m.dirac_(t.empty(3, 2, 3), groups=2),
               lambda m, t: m.orthogonal_(t.empty(3)),
               lambda m, t: m.sparse_(t.empty(2, 3, 4), 0.5)]:
        with pytest.raises(ValueError) as te:
            fn(torch.nn.init, torch)
        with pytest.raises(ValueError) as ee:
            fn(init, ember)
        assert str(ee.value) == str(te.value)


def test_deterministic_fills():
    for fn in [lambda m, t: m.eye_(t), lambda m, t: m.ones_(t), lambda m, t: m.zeros_(t),
               lambda m, t: m.constant_(t, 0.3)]:
        a, b = ember.empty(3, 5), torch.empty(3, 5)
        fn(init, a), fn(torch.nn.init, b)
        np.testing.assert_array_equal(np_of(a), np_of(b))
    for groups in (1, 2):
        a, b = ember.empty(4, 2, 3, 3), torch.empty(4, 2, 3, 3)
        init.dirac_(a, groups), torch.nn.init.dirac_(b, groups)
        np.testing.assert_array_equal(np_of(a), np_of(b))


def test_distributions_and_generator():
    w = ember.empty(200, 300, requires_grad=True)
    fan_in, fan_out = 300, 200
    cases = [
        (lambda g: init.kaiming_uniform_(w, a=math.sqrt(5), generator=g), "u",
         math.sqrt(6 / ((1 + 5) * fan_in))),
        (lambda g: init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu", generator=g),
         "n", math.sqrt(2 / fan_out)),
        (lambda g: init.xavier_uniform_(w, gain=2.0, generator=g), "u",
         2 * math.sqrt(6 / (fan_in + fan_out))),
        (lambda g: init.xavier_normal_(w, generator=g), "n", math.sqrt(2 / (fan_in + fan_out))),
        (lambda g: init.normal_(w, 1.0, 0.5, generator=g), "n", 0.5),
        (lambda g: init.uniform_(w, -0.3, 0.3, generator=g), "u", 0.3),
    ]
    for fill, kind, scale in cases:
        out = fill(ember.Generator().manual_seed(5))
        assert out is w and w.grad_fn is None and w.requires_grad
        a = np_of(w)
        if kind == "u":
            assert np.abs(a).max() <= scale and np.abs(a).max() > 0.98 * scale
        else:
            assert abs(a.std() - scale) < 0.03 * scale
        fill(ember.Generator().manual_seed(5))
        np.testing.assert_array_equal(np_of(w), a)


def test_trunc_normal_orthogonal_sparse():
    w = ember.empty(100, 100)
    init.trunc_normal_(w, mean=0.5, std=1.0, a=-1.0, b=1.5)
    a = np_of(w)
    assert a.min() >= -1.0 and a.max() <= 1.5 and abs(a.mean() - 0.355) < 0.03
    for shape in [(4, 6), (6, 4), (3, 2, 2)]:
        q = ember.empty(*shape)
        init.orthogonal_(q, gain=2.0)
        m = np_of(q).reshape(shape[0], -1)
        small = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
        np.testing.assert_allclose(small, 4 * np.eye(small.shape[0]), atol=1e-5)
    s = ember.empty(10, 7)
    init.sparse_(s, 0.3)
    assert ((np_of(s) == 0).sum(0) >= 3).all()


def test_zero_element_warning_and_deprecated():
    with pytest.warns(UserWarning, match="no-op"):
        init.kaiming_uniform_(ember.empty(0, 3))
    with pytest.warns(FutureWarning):
        init.normal(ember.empty(2, 2))
