"""ember.cond: values equal torch.cond (the test oracle) eagerly and compiled; compiled with
fullgraph=True it is one graph whichever branch the data takes."""
import numpy as np
import pytest
import torch

import ember
from ember._dynamo.testing import CompileCounter


def _branches(lib):
    def true_fn(y):
        return y * -1

    def false_fn(y):
        return y.clone()
    return true_fn, false_fn


def _bar(lib):
    t, f = _branches(lib)

    def bar(a, b):
        x = a / (lib.abs(a) + 1)
        b = lib.cond(b.sum() < 0, t, f, (b,))
        return x * b
    return bar


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_eager_and_compiled_equal_torch(sign):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(10).astype(np.float32), sign * np.abs(
        rng.standard_normal(10).astype(np.float32))
    want = _bar(torch)(torch.tensor(a), torch.tensor(b)).numpy()
    got_eager = _bar(ember)(ember.tensor(a), ember.tensor(b)).numpy()
    cnt = CompileCounter()
    compiled = ember.compile(_bar(ember), backend=cnt, fullgraph=True)
    got = compiled(ember.tensor(a), ember.tensor(b)).numpy()
    np.testing.assert_allclose(got_eager, want, rtol=1e-6)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert cnt.frame_count == 1


def test_cond_one_graph_serves_both_branches():
    cnt = CompileCounter()
    compiled = ember.compile(_bar(ember), backend=cnt, fullgraph=True)
    a = ember.randn(6)
    b = ember.rand(6)
    compiled(a, b)
    out = compiled(a, -b)
    np.testing.assert_allclose(out.numpy(), _bar(ember)(a, -b).numpy(), rtol=1e-6)
    assert cnt.frame_count == 1


def test_cond_python_bool_and_tuple_outputs():
    f = lambda x: (x + 1, x * 2)  # noqa: E731
    g = lambda x: (x - 1, x * 3)  # noqa: E731
    x = ember.ones(2)
    assert ember.cond(True, f, g, (x,))[1].tolist() == [2.0, 2.0]
    out = ember.compile(lambda x: ember.cond(x.sum() > 5, f, g, (x,)), backend="eager",
                        fullgraph=True)(x)
    assert [o.tolist() for o in out] == [[0.0, 0.0], [3.0, 3.0]]


def test_cond_rejects_mismatched_branches():
    x = ember.ones(2)
    with pytest.raises(RuntimeError, match="differs"):
        ember.compile(lambda x: ember.cond(x.sum() > 0, lambda y: y, lambda y: y.sum(), (x,)),
                      backend="eager")(x)
    with pytest.raises(RuntimeError, match="single"):
        ember.cond(ember.ones(2) > 0, lambda y: y, lambda y: y, (x,))
