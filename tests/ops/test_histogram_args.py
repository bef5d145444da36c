"""histogram/histc defaults, signatures and argument errors against torch."""
import inspect

import numpy as np
import pytest
import torch

import ember

_X = np.array([0.5, 1.0, 2.0, 3.0, -1.0, 7.0], dtype=np.float32)


def _t(lib, dtype=None):
    x = lib.tensor(_X)
    return x if dtype is None else x.to(getattr(lib, dtype))


CASES = {
    "histogram_default_bins": lambda l: l.histogram(_t(l)),
    "method_default_bins": lambda l: _t(l).histogram(),
    "histogram_range": lambda l: l.histogram(_t(l), bins=3, range=(0.0, 2.0)),
    "histogram_float64": lambda l: l.histogram(_t(l, "float64"), 5),
    "histogram_density_weight": lambda l: l.histogram(_t(l), 4, weight=_t(l), density=True),
    "histogram_edges": lambda l: l.histogram(_t(l), l.tensor([0.0, 1.0, 2.5])),
    "histogram_2d_input": lambda l: l.histogram(_t(l).reshape(2, 3), 3),
    "histogram_weight_other_shape": lambda l: l.histogram(_t(l), 3, weight=_t(l).reshape(2, 3)),
    "histogram_float_bins": lambda l: l.histogram(_t(l), 3.0),
    "histogram_bool_bins": lambda l: l.histogram(_t(l), True),
    "histogram_none_bins": lambda l: l.histogram(_t(l), bins=None),
    "histogram_half": lambda l: l.histogram(_t(l, "float16"), 3),
    "histogram_bfloat16": lambda l: l.histogram(_t(l, "bfloat16"), 3),
    "histogram_long": lambda l: l.histogram(_t(l, "int64"), 3),
    "histogram_weight_size": lambda l: l.histogram(_t(l), 3, weight=_t(l)[:3]),
    "histogram_weight_size_2d": lambda l: l.histogram(_t(l).reshape(2, 3), 3,
                                                      weight=_t(l)[:3]),
    "histogram_empty_edges": lambda l: l.histogram(_t(l), l.tensor([])),
    "histogram_2d_edges": lambda l: l.histogram(_t(l), l.tensor([[0.0, 1.0, 2.0]])),
    "histogram_edges_and_range": lambda l: l.histogram(_t(l), l.tensor([0.0, 1.0]),
                                                       range=(0.0, 1.0)),
    "histogram_zero_bins": lambda l: l.histogram(_t(l), 0),
    "histc_defaults": lambda l: l.histc(_t(l)),
    "histc_method_defaults": lambda l: _t(l).histc(),
    "histc_range": lambda l: l.histc(_t(l), bins=4, min=1.5, max=2.5),
    "histc_float_bins": lambda l: l.histc(_t(l), 4.5),
    "histc_bool_bins": lambda l: l.histc(_t(l), True),
    "histc_long": lambda l: l.histc(_t(l, "int64"), 4),
    "histogramdd_half": lambda l: l.histogramdd(_t(l, "float16").reshape(3, 2), 2),
    "histogramdd_bins_list": lambda l: l.histogramdd(_t(l).reshape(3, 2), [2, 3]),
}


def _outcome(lib, name):
    try:
        r = CASES[name](lib)
    except (TypeError, RuntimeError, NotImplementedError) as e:
        msg = str(e).replace("torch.histc", "").replace("torch.", "").split("\n")[0]
        return type(e).__name__, msg
    parts = list(r) if isinstance(r, tuple) else [r]
    flat = []
    for p in parts:
        flat.extend(p if isinstance(p, tuple) else [p])
    return [(str(t.dtype).split(".")[1], t.tolist()) for t in flat]


@pytest.mark.parametrize("name", sorted(CASES))
def test_histogram_like_torch(name):
    e, t = _outcome(ember, name), _outcome(torch, name)
    if isinstance(t, list):
        assert len(e) == len(t)
        for (ed, ev), (td, tv) in zip(e, t):
            assert ed == td
            np.testing.assert_allclose(ev, tv, rtol=1e-6, atol=1e-6)
    else:
        assert e == t


def test_signatures():
    assert inspect.signature(ember.histogram).parameters["bins"].default == 100
    assert inspect.signature(ember.histc).parameters["bins"].default == 100
    p = inspect.signature(ember.Tensor.histogram).parameters
    assert p["bins"].default == 100


def test_histogram_bin_edges_and_counts_bitwise_equal_torch():
    # the edges are torch's linspace (from both ends toward the middle), not np.linspace,
    # which differs in the last bits for most ranges
    rng = np.random.default_rng(0)
    for i in range(200):
        dt = (np.float32, np.float64)[i % 2]
        a = (rng.standard_normal(int(rng.integers(1, 200))) * rng.uniform(0.01, 100)
             + rng.uniform(-50, 50)).astype(dt)
        bins = int(rng.integers(1, 50))
        kw = {} if i % 3 else {"range": (float(a.min()) - rng.uniform(0, 3),
                                         float(a.max()) + rng.uniform(0, 3))}
        th, te = torch.histogram(torch.from_numpy(a), bins=bins, **kw)
        eh, ee = ember.histogram(ember.from_numpy(a), bins=bins, **kw)
        np.testing.assert_array_equal(ee.numpy(), te.numpy())
        np.testing.assert_array_equal(eh.numpy(), th.numpy())
