"""Non-operator APIs side by side with torch: ember.testing (assert_close, make_tensor),
ember.utils.checkpoint, and the behaviours of the new functions the op database cannot
express (namedtuples, warnings, backward errors)."""
import warnings

import numpy as np
import pytest
import torch

import ember
from ember.utils.checkpoint import checkpoint, checkpoint_sequential


def _both(fn):
    """fn(lib) for torch and ember: (exception type, message) or ('ok', None)."""
    out = []
    for lib in (torch, ember):
        try:
            fn(lib)
            out.append(("ok", None))
        except Exception as e:  # noqa: BLE001 - compared below
            # (ember's Tensor class lives in ember._core.tensor)
            out.append((type(e), str(e).replace("torch.", "ember.").replace(
                "ember._core.tensor.Tensor", "ember.Tensor")))
    return out


# ---- assert_close -------------------------------------------------------------------------
def _t(lib, x, dtype="float32"):
    return lib.tensor(x, dtype=getattr(lib, dtype))


ASSERT_CASES = [
    lambda L: L.testing.assert_close(_t(L, [1., 2, 3]), _t(L, [1., 2.5, 3])),
    lambda L: L.testing.assert_close(_t(L, [1, 2, 3], "int64"), _t(L, [1, 4, 3], "int64")),
    lambda L: L.testing.assert_close(_t(L, [True, False], "bool"), _t(L, [True, True], "bool")),
    lambda L: L.testing.assert_close(_t(L, [1., 2]), _t(L, [1., 2, 3])),
    lambda L: L.testing.assert_close(_t(L, [1., 2]), _t(L, [1., 2], "float64")),
    lambda L: L.testing.assert_close(_t(L, [1., 2]), _t(L, [1., 2.00001], "float64"),
                                     check_dtype=False),
    lambda L: L.testing.assert_close(1.0, 1.5),
    lambda L: L.testing.assert_close(1, 2),
    lambda L: L.testing.assert_close(1.0, 1),
    lambda L: L.testing.assert_close(True, False),
    lambda L: L.testing.assert_close([_t(L, 1.), _t(L, 2.)], [_t(L, 1.), _t(L, 3.)]),
    lambda L: L.testing.assert_close([_t(L, 1.)], [_t(L, 1.), _t(L, 3.)]),
    lambda L: L.testing.assert_close({"a": _t(L, 1.)}, {"a": _t(L, 2.)}),
    lambda L: L.testing.assert_close({"a": _t(L, 1.)}, {"b": _t(L, 1.)}),
    lambda L: L.testing.assert_close([[_t(L, 1.)], (_t(L, 1.), _t(L, 2.))],
                                     [[_t(L, 1.)], (_t(L, 1.), _t(L, 3.))]),
    lambda L: L.testing.assert_close(_t(L, [1., float("nan")]), _t(L, [1., float("nan")])),
    lambda L: L.testing.assert_close(_t(L, [1., float("nan")]), _t(L, [1., float("nan")]),
                                     equal_nan=True),
    lambda L: L.testing.assert_close(_t(L, [1.]), _t(L, [2.]), rtol=1),
    lambda L: L.testing.assert_close(_t(L, [1.]), _t(L, [2.]), atol=1),
    lambda L: L.testing.assert_close(_t(L, [1.]), _t(L, [2.]), rtol=0.6, atol=0),
    lambda L: L.testing.assert_close(_t(L, [1.]), _t(L, [2.]), msg="custom"),
    lambda L: L.testing.assert_close(_t(L, [1.]), _t(L, [2.]), msg=lambda m: "X" + m),
    lambda L: L.testing.assert_close(_t(L, [[1., 2], [3, 4]]), _t(L, [[1., 2], [3, 5]])),
    lambda L: L.testing.assert_close(np.array([1.]), np.array([1.5])),
    lambda L: L.testing.assert_close(_t(L, [1.]), np.array([1.])),
    lambda L: L.testing.assert_close(_t(L, 1.), 1.),
    lambda L: L.testing.assert_close("a", "a"),
    lambda L: L.testing.assert_close(None, None),
    lambda L: L.testing.assert_close(_t(L, [1 + 1j], "complex64"), _t(L, [1 + 2j], "complex64")),
    lambda L: L.testing.assert_close(_t(L, [0.]), _t(L, [1e-6])),
    lambda L: L.testing.assert_close(_t(L, [1., 2, 3]), _t(L, [1., float("inf"), 3])),
    lambda L: L.testing.assert_close(_t(L, [1., float("inf")]), _t(L, [1., float("inf")])),
    lambda L: L.testing.assert_close(_t(L, [1., 2, 3]).requires_grad_(), _t(L, [1., 2, 3])),
    lambda L: L.testing.assert_close(_t(L, 1.), _t(L, 2.)),
    lambda L: L.testing.assert_close(_t(L, [1.], "float16"), _t(L, [1.01], "float16")),
    lambda L: L.testing.assert_close(_t(L, [1., 2], "bfloat16"), _t(L, [1., 2.5], "bfloat16")),
    lambda L: L.testing.assert_close(_t(L, [1, 200], "uint8"), _t(L, [1, 3], "uint8")),
    lambda L: L.testing.assert_close(_t(L, [1., 2]), _t(L, [1., 3]), rtol=0, atol=0),
    lambda L: L.testing.assert_close(_t(L, [[1., 2], [3, 4]], "float64"),
                                     _t(L, [[1., 2], [3, 4 + 1e-6]], "float64")),
    lambda L: L.testing.assert_close(L.ones(2, 3), L.ones(2, 3).t().contiguous().t(),
                                     check_stride=True),
    lambda L: L.testing.assert_close(_t(L, [1., 2, 3, 4]), _t(L, [1.1, 2, 3.3, 4])),
    lambda L: L.testing.assert_close(1.0, 1.0 + 1e-9),
]


@pytest.mark.parametrize("case", range(len(ASSERT_CASES)))
def test_assert_close_matches_torch(case):
    t, e = _both(ASSERT_CASES[case])
    assert t == e


def test_assert_close_default_tolerances_by_dtype():
    # just inside / just outside each dtype's default (rtol, atol), as torch decides
    for dt in ("float16", "bfloat16", "float32", "float64", "complex64", "complex128"):
        for delta in (5e-8, 3e-6, 2e-5, 2e-3, 3e-2):
            r = _both(lambda L: L.testing.assert_close(
                L.ones(3, dtype=getattr(L, dt)), L.ones(3, dtype=getattr(L, dt)) + delta))
            assert r[0][0] == r[1][0], (dt, delta, r)


# ---- make_tensor --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,kw,lo,hi", [
    ("float32", {}, -9, 9), ("float64", {"low": -2, "high": 3}, -2, 3), ("int64", {}, -9, 9),
    ("uint8", {}, 0, 9), ("int8", {"low": -1000, "high": 1000}, -128, 127),
    ("bool", {}, 0, 1), ("complex64", {}, -9, 9),
    ("float32", {"exclude_zero": True, "low": 0, "high": 1}, 0, 1),
    ("int32", {"exclude_zero": True}, -9, 9),
])
def test_make_tensor_ranges(dtype, kw, lo, hi):
    """Values fill torch's default (or given, clamped) range [low, high)."""
    ember.manual_seed(0)
    t = ember.testing.make_tensor(400, 3, dtype=getattr(ember, dtype), device="cpu", **kw)
    ref = torch.testing.make_tensor(400, 3, dtype=getattr(torch, dtype), device="cpu", **kw)
    assert t.dtype == getattr(ember, dtype) and tuple(t.shape) == (400, 3)
    for a in (t.numpy(), ref.numpy()):
        if dtype.startswith("complex"):
            a = np.concatenate([a.real, a.imag])
        a = a.astype(np.float64)
        span = hi - lo
        assert lo <= a.min() <= lo + 0.1 * span and hi - 0.1 * span <= a.max() <= hi
        if kw.get("exclude_zero"):
            assert (a != 0).all()


def test_make_tensor_options():
    t = ember.testing.make_tensor((2, 3), dtype=ember.float64, device="cpu", requires_grad=True,
                                  noncontiguous=True)
    assert t.requires_grad and not t.is_contiguous() and tuple(t.shape) == (2, 3)
    assert ember.testing.make_tensor(dtype=ember.float32, device="cpu").shape == ()
    with pytest.warns(FutureWarning):
        t = ember.testing.make_tensor(3, dtype=ember.float32, device="cpu", low=2, high=2)
    assert (t.numpy() == 2).all()


@pytest.mark.parametrize("kw", [
    dict(dtype="float32", low=5, high=3), dict(dtype="int64", low=2, high=2),
    dict(dtype="int64", requires_grad=True), dict(dtype="float32", low=float("nan")),
    dict(dtype="uint8", low=-5, high=-1), dict(dtype="int8", low=200, high=300),
])
def test_make_tensor_errors(kw):
    def f(L):
        k = dict(kw, dtype=getattr(L, kw["dtype"]))
        L.testing.make_tensor(3, device="cpu", **k)
    t, e = _both(f)
    assert t == e


# ---- checkpoint ---------------------------------------------------------------------------
def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Dropout(0.3),
                             lib.nn.Linear(8, 3))


def _copy_params(src, dst):
    with ember.no_grad():
        for p, q in zip(src.parameters(), dst.parameters()):
            p.copy_(ember.from_numpy(q.detach().numpy().copy()))


def _grads(model, x):
    return [p.grad.numpy().copy() for p in model.parameters()] + \
        ([x.grad.numpy().copy()] if x.grad is not None else [])


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_gradients_equal_plain(reentrant):
    m = _model(ember)
    x = ember.randn(5, 4, requires_grad=True)
    ember.manual_seed(7)
    (m(x) ** 2).sum().backward()
    ref = _grads(m, x)
    m.zero_grad()
    x.grad = None
    ember.manual_seed(7)  # the same dropout mask in forward, and again in the recomputation
    y = checkpoint(m, x, use_reentrant=reent) if (reent := reentrant) else \
        checkpoint(m, x, use_reentrant=False)
    (y ** 2).sum().backward()
    for a, b in zip(ref, _grads(m, x)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_checkpoint_without_preserved_rng_changes_the_mask():
    m = _model(ember)
    x = ember.randn(64, 4, requires_grad=True)
    ember.manual_seed(7)
    (m(x) ** 2).sum().backward()
    ref = x.grad.numpy().copy()
    x.grad = None
    ember.manual_seed(7)
    (checkpoint(m, x, use_reentrant=False, preserve_rng_state=False) ** 2).sum().backward()
    assert not np.allclose(ref, x.grad.numpy())


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_matches_torch(reentrant):
    """Gradients of parameters and input, through both variants, equal torch's."""
    tm, em = _model(torch), _model(ember)
    tm.eval(), em.eval()
    _copy_params(em, tm)
    xn = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    tx, ex = torch.from_numpy(xn).requires_grad_(), ember.from_numpy(xn).requires_grad_()
    ty = torch.utils.checkpoint.checkpoint(tm, tx, use_reentrant=reentrant)
    ey = checkpoint(em, ex, use_reentrant=reentrant)
    (ty.sin().sum()).backward()
    (ey.sin().sum()).backward()
    for p, q in zip(em.parameters(), tm.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_inputs_without_grad_like_torch(reentrant):
    """Reentrant: no input requires grad -> warning, no gradients (torch's behaviour);
    non-reentrant: parameters still get gradients."""
    res = []
    for lib, ck in ((torch, torch.utils.checkpoint.checkpoint), (ember, checkpoint)):
        m = _model(lib)
        m.eval()
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            y = ck(m, lib.ones(2, 4), use_reentrant=reentrant)
        msgs = [str(w.message) for w in rec]
        res.append((y.requires_grad, "None of the inputs have requires_grad=True. Gradients "
                    "will be None" in msgs))
        if y.requires_grad:
            y.sum().backward()
            res[-1] += (m[0].weight.grad is not None,)
    assert res[0] == res[1]


def test_checkpoint_use_reentrant_warning_and_kwargs():
    for lib, ck in ((torch, torch.utils.checkpoint.checkpoint), (ember, checkpoint)):
        x = lib.ones(2, requires_grad=True)
        with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed "
                                             "explicitly"):
            ck(lambda a: a * 2, x)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ck(lambda a: a * 2, x, use_reentrant=False)
            y = ck(lambda a, *, k: a * k, x, use_reentrant=False, k=3)
        assert float(y.detach().sum()) == 6.0
        with pytest.raises(ValueError, match="Unexpected keyword arguments: k"):
            ck(lambda a, *, k: a * k, x, use_reentrant=True, k=3)
        with pytest.raises(ValueError, match="context_fn"):
            ck(lambda a: a, x, use_reentrant=True, debug=True)


def test_checkpoint_closed_over_tensor_and_autograd_grad():
    x = ember.randn(3, requires_grad=True)
    h = x.exp()  # an intermediate of the outer graph, read by the checkpointed function
    y = checkpoint(lambda a: (a * h).sin(), x, use_reentrant=False)
    g, = ember.autograd.grad(y.sum(), [x], retain_graph=True)
    hd = x.detach().exp()
    want = ((x.detach() * hd).cos() * (hd + x.detach() * hd)).numpy()
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-5)
    (h * 2).sum().backward()  # the outer graph is still intact
    np.testing.assert_allclose(x.grad.numpy(), 2 * hd.numpy(), rtol=1e-6)


def test_checkpoint_multiple_and_non_tensor_outputs():
    x = ember.randn(4, requires_grad=True)
    a, n, b = checkpoint(lambda t: (t.sin(), 3, t.cos() * 2), x, use_reentrant=False)
    assert n == 3
    (a + b).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (x.cos() - 2 * x.sin()).detach().numpy(),
                               rtol=1e-6)


def test_checkpoint_double_backward():
    x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    y = checkpoint(lambda t: t.pow(3).sum(), x, use_reentrant=False)
    g, = ember.autograd.grad(y, [x], create_graph=True)
    g2, = ember.autograd.grad(g.sum(), [x])
    np.testing.assert_allclose(g2.numpy(), 6 * x.detach().numpy())


def test_checkpoint_sequential_matches_torch():
    res = []
    for lib, cs in ((torch, torch.utils.checkpoint.checkpoint_sequential),
                    (ember, checkpoint_sequential)):
        lib.manual_seed(0)
        layers = [lib.nn.Linear(3, 3) for _ in range(4)]
        seq = lib.nn.Sequential(*layers)
        with lib.no_grad():
            for i, lay in enumerate(layers):
                lay.weight.copy_(lib.eye(3) * (i + 1) + 0.1)
                lay.bias.fill_(0.5)
        x = lib.ones(2, 3, requires_grad=True)
        with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant"):
            out = cs(seq, 2, x)
        out.pow(2).sum().backward()
        res.append((out.detach().numpy(), x.grad.numpy(), layers[0].weight.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-5)
    with pytest.raises(ValueError, match="Unexpected keyword arguments"):
        checkpoint_sequential([lambda t: t], 1, ember.ones(1), use_reentrant=False, foo=1)


# ---- behaviours of the new functions ------------------------------------------------------
def test_histogram_namedtuple():
    x = ember.tensor([1., 2, 1, 4, 2.5])
    r = ember.histogram(x, 3)
    assert type(r).__name__ == "histogram" and r._fields == ("hist", "bin_edges")
    assert r.hist.tolist() == [2.0, 2.0, 1.0] and r.bin_edges.tolist() == [1.0, 2.0, 3.0, 4.0]
    hist, edges = x.histogram(ember.tensor([0., 1, 2, 5]))
    assert hist.tolist() == [0.0, 2.0, 3.0]
    assert "histogram(\nhist=" in repr(r)


def test_heaviside_backward_raises_like_torch():
    for lib in (torch, ember):
        x = lib.tensor([1., 0., -1.], requires_grad=True)
        y = lib.heaviside(x, lib.tensor(0.5))
        assert y.requires_grad
        with pytest.raises(RuntimeError, match="heaviside is not implemented"):
            y.sum().backward()


def test_square_dtypes_and_inplace_errors():
    t, e = _both(lambda L: L.tensor([True, False]).square_())
    assert t[0] is e[0] and t[0] is not None
    assert ember.square(ember.tensor([True])).dtype == ember.int64
    t, e = _both(lambda L: L.rad2deg_(L.tensor([1, 2])))
    assert t == e


def test_stft_return_complex_and_window_warnings():
    x = np.random.default_rng(0).standard_normal(32).astype(np.float32)
    for lib in (torch, ember):
        xt = lib.from_numpy(x.copy())
        with pytest.raises(RuntimeError, match="return_complex"):
            lib.stft(xt, 8, window=lib.hann_window(8))
        with pytest.warns(UserWarning, match="A window was not provided"):
            lib.stft(xt, 8, return_complex=True)
        with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
            r = lib.stft(xt, 8, window=lib.hann_window(8), return_complex=False)
        assert tuple(r.shape) == (5, 17, 2)
    e = ember.stft(ember.from_numpy(x), 8, window=ember.hann_window(8), return_complex=True)
    back = ember.istft(e, 8, window=ember.hann_window(8), length=32)
    np.testing.assert_allclose(back.numpy(), x, atol=1e-5)
    assert ember.Tensor.stft is not None and ember.from_numpy(x).stft(
        8, window=ember.hann_window(8), return_complex=True).shape == e.shape


def test_window_requires_grad_and_float64():
    w = ember.hann_window(5, requires_grad=True)
    assert w.requires_grad and w.is_leaf
    np.testing.assert_allclose(ember.kaiser_window(6, False, 3.0, dtype=ember.float64).numpy(),
                               torch.kaiser_window(6, False, 3.0, dtype=torch.float64).numpy(),
                               rtol=1e-12)


def test_top_level_names_exist_like_torch():
    for name in ("sinc", "sinc_", "i0", "i0_", "igamma", "igammac", "xlogy_", "square_",
                 "rad2deg_", "deg2rad_", "gcd_", "lcm_", "trapz", "ravel"):
        assert hasattr(torch, name) and callable(getattr(ember, name)), name
    for name in ("square", "square_", "logaddexp", "logaddexp2", "rad2deg", "deg2rad",
                 "heaviside", "heaviside_", "gcd", "gcd_", "lcm", "lcm_", "renorm", "renorm_",
                 "dist", "cov", "corrcoef", "histogram", "stft", "istft", "ravel"):
        assert hasattr(torch.Tensor, name) and callable(getattr(ember.Tensor, name)), name


def test_cov_degrees_of_freedom_warning():
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
            r = lib.cov(lib.tensor([[1.0]]))
        assert np.isnan(float(r))
