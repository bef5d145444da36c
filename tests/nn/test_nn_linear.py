"""Linear layers, Flatten/Unflatten and the dropout family against torch."""
import warnings

import numpy as np
import pytest
import torch

import ember
from nnutil import check_fn, check_module, check_pair, make_pair, np_of, same_error

RNG = np.random.default_rng(1)


@pytest.mark.parametrize("shape", [(4,), (5, 4), (2, 5, 4), (0, 4)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(shape, bias):
    check_pair("Linear", 4, 3, inputs=[RNG.standard_normal(shape)], kwargs={"bias": bias})


def test_functional_linear_and_bilinear():
    for dt in (np.float32, np.float64):
        w = RNG.standard_normal((3, 4)).astype(dt)
        b = RNG.standard_normal(3).astype(dt)
        x = RNG.standard_normal((2, 4)).astype(dt)
        check_fn(lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), [x, w, b])
        check_fn(lambda lib, x, w: lib.nn.functional.linear(x, w), [x, w[0]])
        # non-contiguous input and weight
        check_fn(lambda lib, x, w: lib.nn.functional.linear(x.t(), w.t()), [x.T.copy(), w.T.copy()])
        W3 = RNG.standard_normal((3, 4, 5)).astype(dt)
        check_fn(lambda lib, x, y, w, b: lib.nn.functional.bilinear(x, y, w, b),
                 [x, RNG.standard_normal((2, 5)).astype(dt), W3, b])


def test_linear_double_backward():
    def f(lib, x, w, b):
        y = lib.nn.functional.linear(x, w, b).tanh().sum()
        gx, gw = lib.autograd.grad(y, (x, w), create_graph=True)
        return (gx * gx).sum() + (gw ** 3).sum()
    check_fn(f, [RNG.standard_normal((2, 4)), RNG.standard_normal((3, 4)), RNG.standard_normal(3)])


def test_bilinear_module():
    check_pair("Bilinear", 4, 5, 3, inputs=[RNG.standard_normal((2, 4)),
                                            RNG.standard_normal((2, 5))])
    check_pair("Bilinear", 4, 5, 3, inputs=[RNG.standard_normal((4,)), RNG.standard_normal((5,))],
               kwargs={"bias": False})


def test_module_structure_and_repr():
    for args, kw in [((4, 3), {}), ((4, 3), {"bias": False})]:
        tm, em = make_pair("Linear", *args, **kw)
        assert repr(em) == repr(tm)
        assert [(n, tuple(p.shape)) for n, p in em.named_parameters()] == \
            [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    tm, em = make_pair("Bilinear", 2, 3, 4)
    assert repr(em) == repr(tm)
    assert repr(ember.nn.Identity(3, x=1)) == repr(torch.nn.Identity(3, x=1))
    for m in ("Flatten", "Unflatten"):
        args = () if m == "Flatten" else (1, (2, 3))
        assert repr(getattr(ember.nn, m)(*args)) == repr(getattr(torch.nn, m)(*args))
    assert ember.nn.Linear(3, 2, dtype=ember.float64).weight.dtype == ember.float64


def test_default_init_bounds():
    ember.manual_seed(0)
    m = ember.nn.Linear(100, 400)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.abs(w).max() <= 0.1 and np.abs(w).max() > 0.099
    assert np.abs(b).max() <= 0.1 and abs(w.std() - 0.1 / np.sqrt(3)) < 2e-3
    bl = ember.nn.Bilinear(16, 3, 5).weight.detach().numpy()
    assert np.abs(bl).max() <= 0.25


def test_flatten_unflatten_identity():
    x = RNG.standard_normal((2, 3, 4, 5))
    check_pair("Flatten", inputs=[x])
    check_pair("Flatten", 0, 2, inputs=[x])
    check_pair("Unflatten", 1, (3, 1), inputs=[x])
    check_pair("Unflatten", -1, (5, 1), inputs=[x])
    check_pair("Identity", inputs=[x])
    with pytest.raises(TypeError):
        ember.nn.Unflatten(1, 3)


def test_lazy_linear():
    m = ember.nn.LazyLinear(3)
    assert repr(m) == repr(torch.nn.LazyLinear(3))
    y = m(ember.randn(2, 5))
    assert type(m) is ember.nn.Linear and m.in_features == 5
    assert tuple(m.weight.shape) == (3, 5) and tuple(y.shape) == (2, 3)
    assert type(m.weight) is ember.nn.Parameter
    y.sum().backward()
    assert m.weight.grad is not None
    nb = ember.nn.LazyLinear(2, bias=False)
    nb(ember.randn(4, 6))
    assert nb.bias is None and tuple(nb.weight.shape) == (2, 6)
    # load_state_dict into an uninitialised LazyLinear materialises it
    tm = torch.nn.Linear(7, 2)
    lz = ember.nn.LazyLinear(2)
    lz.load_state_dict({k: ember.from_numpy(np_of(v)) for k, v in tm.state_dict().items()})
    x = RNG.standard_normal((3, 7)).astype(np.float32)
    check_module(tm, lz, [x])


ERRORS = [
    (lambda lib, x, w: lib.nn.functional.linear(x, w), [np.ones((2, 5)), np.ones((3, 4))]),
    (lambda lib, x, w: lib.nn.functional.linear(x, w),
     [np.ones((2, 4)), np.ones((3, 4), np.float32)]),
    (lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), [np.ones((2, 4)), np.ones(4),
                                                               np.ones(())]),
    (lambda lib, x, w: lib.nn.functional.linear(x, w), [np.ones(()), np.ones((3, 4))]),
    (lambda lib, x, y, w: lib.nn.functional.bilinear(x, y, w),
     [np.ones((2, 4)), np.ones((3, 5)), np.ones((3, 4, 5))]),
    (lambda lib, x, y, w: lib.nn.functional.bilinear(x, y, w),
     [np.ones((2, 3)), np.ones((2, 5)), np.ones((3, 4, 5))]),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    fn, args = ERRORS[i]
    same_error(fn, *args)


def test_linear_error_message():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(6x5 and 4x3\)"):
        ember.nn.functional.linear(ember.ones(2, 3, 5), ember.ones(3, 4))


# ---- dropout --------------------------------------------------------------------------
DROPOUTS = [("Dropout", (8, 30, 5, 5)), ("Dropout1d", (8, 30, 25)), ("Dropout2d", (8, 30, 5, 5)),
            ("Dropout3d", (8, 30, 5, 5, 1)), ("AlphaDropout", (8, 30, 5, 5)),
            ("FeatureAlphaDropout", (8, 30, 5, 5))]


@pytest.mark.parametrize("name,shape", DROPOUTS)
def test_dropout_eval_is_identity(name, shape):
    x = RNG.standard_normal(shape)
    check_pair(name, 0.4, inputs=[x], modes=("eval",))
    em = getattr(ember.nn, name)(0.4)
    em.eval()
    t = ember.randn(*shape)
    assert em(t) is t
    assert repr(em) == repr(getattr(torch.nn, name)(0.4))
    assert repr(getattr(ember.nn, name)(0.1, True)) == repr(getattr(torch.nn, name)(0.1, True))


@pytest.mark.parametrize("name,shape", DROPOUTS)
def test_dropout_train_statistics_and_grad(name, shape):
    p = 0.3
    ember.manual_seed(1)
    x = ember.from_numpy(RNG.standard_normal(shape).astype(np.float32) + 3).requires_grad_()
    m = getattr(ember.nn, name)(p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = m(x)
    y.backward(ember.ones(*shape))
    xv, yv, g = x.detach().numpy(), y.detach().numpy(), x.grad.numpy()
    alpha = "Alpha" in name
    if alpha:
        a = 1 / np.sqrt((1.7580993408473766 ** 2 * p + 1) * (1 - p))
        keep = np.isclose(g, a)
        assert np.all(keep | (g == 0))
        np.testing.assert_allclose(yv[~keep], a * (-1.7580993408473766) + 1.7580993408473766 * a * p,
                                   rtol=1e-5)
    else:
        keep = yv != 0
        np.testing.assert_allclose(yv[keep], xv[keep] / (1 - p), rtol=1e-6)
        np.testing.assert_allclose(g, keep / (1 - p), rtol=1e-6)
    assert abs((~keep).mean() - p) < 0.05
    if name not in ("Dropout", "AlphaDropout"):  # whole channels are dropped together
        k = keep.reshape(shape[0], shape[1], -1)
        assert np.all(k.all(-1) | (~k).all(-1))


def test_dropout_functional_forms():
    x = ember.ones(1000)
    assert ember.nn.functional.dropout(x, 0.5, training=False) is x
    assert ember.nn.functional.dropout(x, 0.0) is x
    np.testing.assert_array_equal(ember.nn.functional.dropout(x, 1.0).numpy(), np.zeros(1000))
    y = ember.ones(1000)
    r = ember.nn.functional.dropout(y, 0.5, inplace=True)
    assert r is y and set(np.unique(y.numpy())) <= {0.0, 2.0}
    z = ember.ones(3, 1000)
    ember.nn.functional.dropout1d(z, 0.5, inplace=True)
    assert set(np.unique(z.numpy())) <= {0.0, 2.0}
    ember.manual_seed(3)
    a = ember.nn.functional.dropout(ember.ones(50), 0.5)
    ember.manual_seed(3)
    b = ember.nn.functional.dropout(ember.ones(50), 0.5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    s = ember.randn(200000)
    out = ember.nn.functional.alpha_dropout(s, 0.2, training=True)
    assert abs(float(out.mean())) < 0.02 and abs(float(out.std()) - 1) < 0.02


def test_dropout_errors():
    for lib in (torch, ember):
        with pytest.raises(ValueError):
            lib.nn.functional.dropout(lib.ones(3), 1.5)
        with pytest.raises(ValueError):
            lib.nn.Dropout(-0.1)
    same_error(lambda lib, x: lib.nn.functional.dropout1d(x, 0.5), np.ones((2, 3, 4, 5)))
    with pytest.warns(UserWarning):
        ember.nn.functional.dropout2d(ember.ones(2, 3, 4), 0.5)
