"""The pooling C kernels (ember._core.ckernels.pooling): max pooling's values, indices and
gradients against torch (ties, NaN, -inf, padding, dilation, ceil mode, 1-3 dims, half
dtypes), gradcheck, average pooling and its gradient against torch, and the C kernels
against the NumPy kernels they replace."""
import os

import numpy as np
import pytest
import torch

import ember
from ember._core import ckernels as ck
from ember._core.ckernels import pooling as ckpool
from ember.ops.nn import pooling as P

needs_c = pytest.mark.skipif(not ck.status()["available"] and not os.environ.get("CI"),
                             reason=f"no compiled kernels here: {ck.status()['reason']}")

rng = np.random.default_rng(7)

# (dims, input shape, kwargs): padding, dilation, ceil mode, overlapping and odd windows
CASES = [
    (1, (2, 3, 17), dict(kernel_size=3, stride=2, padding=1)),
    (1, (4, 20), dict(kernel_size=4, stride=3, dilation=2, ceil_mode=True)),
    (2, (2, 3, 9, 8), dict(kernel_size=2)),
    (2, (2, 3, 9, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (2, (3, 10, 7), dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1), padding=(1, 0))),
    (2, (1, 2, 11, 13), dict(kernel_size=3, stride=1, padding=1)),
    (3, (2, 2, 5, 6, 7), dict(kernel_size=2, stride=(1, 2, 2), padding=(1, 0, 1))),
    (3, (1, 6, 7, 5), dict(kernel_size=3, stride=2, dilation=(1, 2, 1), ceil_mode=True)),
]


def _fn(lib, n):
    return getattr(lib.nn.functional, f"max_pool{n}d")


def _special(shape, dtype, kind):
    """Random values, or ones with ties (few distinct values), NaNs, or -inf stretches."""
    if kind == "ties":
        return rng.integers(0, 3, shape).astype(dtype)
    x = rng.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    if kind == "nan":
        flat[rng.random(flat.size) < 0.15] = np.nan
    if kind == "-inf":
        flat[rng.random(flat.size) < 0.6] = -np.inf
    return x


def _both(n, x, kw):
    t = _fn(torch, n)(torch.from_numpy(x), return_indices=True, **kw)
    e = _fn(ember, n)(ember.from_numpy(x), return_indices=True, **kw)
    return t, e


@pytest.mark.parametrize("kind", ["random", "ties", "nan", "-inf"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,shape,kw", CASES)
def test_values_and_indices_match_torch(n, shape, kw, dtype, kind):
    x = _special(shape, dtype, kind)
    (tv, ti), (ev, ei) = _both(n, x, kw)
    np.testing.assert_array_equal(ev.numpy(), tv.numpy())  # NaNs compare equal here
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())
    assert ev.dtype == getattr(ember, str(tv.dtype).split(".")[1])
    ov = _fn(ember, n)(ember.from_numpy(x), **kw)  # without indices: the values only
    np.testing.assert_array_equal(ov.numpy(), tv.numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_dtypes_pool_through_float32(dtype):
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    kw = dict(kernel_size=3, stride=2, padding=1)
    t = torch.from_numpy(x).to(getattr(torch, dtype))
    e = ember.from_numpy(x).to(getattr(ember, dtype))
    tv, ti = torch.nn.functional.max_pool2d(t, return_indices=True, **kw)
    ev, ei = ember.nn.functional.max_pool2d(e, return_indices=True, **kw)
    assert ev.dtype == getattr(ember, dtype)
    np.testing.assert_array_equal(ev.float().numpy(), tv.float().numpy())
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())


@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=2, stride=1, padding=1, dilation=2),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_all_lowest_border_window_points_inside(kw, dtype):
    # a window that is all -inf (or the integer minimum) at a padded border: torch picks
    # its first element inside the input, never the padding
    low = -np.inf if dtype != np.int64 else np.iinfo(np.int64).min
    x = np.full((1, 1, 4, 4), low, dtype)
    x[0, 0, 2, 2] = 1
    for fallback in (False, True):
        (tv, ti), (ev, ei) = _both(2, x, kw) if not fallback else _numpy_path(
            lambda: _both(2, x, kw))
        np.testing.assert_array_equal(ei.numpy(), ti.numpy())
        np.testing.assert_array_equal(ev.numpy(), tv.numpy())


def _numpy_path(f):
    saved = ckpool.max_pool, ckpool.max_pool_backward
    ckpool.max_pool = ckpool.max_pool_backward = lambda *a: None
    try:
        return f()
    finally:
        ckpool.max_pool, ckpool.max_pool_backward = saved


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,shape,kw", CASES)
def test_gradient_matches_torch(n, shape, kw, dtype):
    x = _special(shape, dtype, "ties")  # ties: the gradient goes to the first maximum
    g = rng.standard_normal(_fn(torch, n)(torch.from_numpy(x), **kw).shape).astype(dtype)
    tx = torch.from_numpy(x).requires_grad_()
    _fn(torch, n)(tx, **kw).backward(torch.from_numpy(g))
    ex = ember.from_numpy(x).requires_grad_()
    _fn(ember, n)(ex, **kw).backward(ember.from_numpy(g))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n,shape,kw", CASES[::2])
def test_gradcheck_float64(n, shape, kw):
    # distinct values, so no window maximum is a tie that finite differences would split
    x = rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float64) / 7
    ex = ember.from_numpy(x).requires_grad_()
    assert ember.autograd.gradcheck(lambda t: _fn(ember, n)(t, **kw), (ex,), eps=1e-6)
    assert ember.autograd.gradgradcheck(lambda t: _fn(ember, n)(t, **kw), (ex,), eps=1e-6)


@needs_c
@pytest.mark.parametrize("kind", ["random", "ties", "nan", "-inf"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,shape,kw", CASES)
def test_c_kernels_equal_numpy_kernels(n, shape, kw, dtype, kind):
    x = _special(shape, dtype, kind)
    ks, st, pd, dl = (tuple(np.broadcast_to(kw.get(k, d), (n,)).tolist()) for k, d in
                      (("kernel_size", 1), ("stride", 0), ("padding", 0), ("dilation", 1)))
    st = tuple(s or k for s, k in zip(st, ks))
    outs, pads = P._geometry(x.shape, ks, st, pd, dl, kw.get("ceil_mode", False))
    for need in (True, False):
        c = ckpool.max_pool(x, ks, st, pd, dl, outs, need)
        assert c is not None  # the C kernel ran
        ref = P._max_pool_numpy(np, x, ks, st, pd, dl, outs, pads, need)
        np.testing.assert_array_equal(c[0], ref[0])
        np.testing.assert_array_equal(c[1], ref[1])
    vals, idx = c = ckpool.max_pool(x, ks, st, pd, dl, outs, True)
    g = rng.standard_normal(vals.shape).astype(dtype)
    got = ckpool.max_pool_backward(g, idx, x.shape, n)
    assert got is not None and got.dtype == dtype
    want = P._max_pool_backward_numpy(np, g, idx, x.shape, n).astype(dtype)
    # overlapping windows sum their gradients in another order: rounding of the sum
    tol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 4 * float(np.abs(g).max()))


@needs_c
def test_c_kernels_on_strided_inputs_and_threads(monkeypatch):
    # a non-contiguous input is copied once; many planes go over threads: same result
    x = rng.standard_normal((8, 16, 30, 30)).astype(np.float32)[:, ::2, :, 1:]
    (tv, ti), (ev, ei) = _both(2, np.ascontiguousarray(x), dict(kernel_size=3, stride=2))
    monkeypatch.setattr(ckpool, "_threads", lambda work: 2)
    vals, idx = ckpool.max_pool(x, (3, 3), (2, 2), (0, 0), (1, 1), tuple(tv.shape[-2:]), True)
    np.testing.assert_array_equal(vals, tv.numpy())
    np.testing.assert_array_equal(idx, ti.numpy())
    g = np.ones(vals.shape, np.float32)
    tx = torch.from_numpy(np.ascontiguousarray(x)).requires_grad_()
    torch.nn.functional.max_pool2d(tx, 3, 2).backward(torch.from_numpy(g))
    np.testing.assert_array_equal(ckpool.max_pool_backward(g, idx, x.shape, 2), tx.grad.numpy())
    # average pooling's gradient, strided gradient in, over threads
    ga = rng.standard_normal((8, 8, 15, 29)).astype(np.float32)[..., ::2]
    ta = torch.from_numpy(np.ascontiguousarray(x)).requires_grad_()
    torch.nn.functional.avg_pool2d(ta, 3, 2, 1).backward(torch.from_numpy(ga.copy()))
    np.testing.assert_allclose(
        ckpool.avg_pool_backward(ga, x.shape[-2:], (3, 3), (2, 2), (1, 1), True, None),
        ta.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_integer_and_empty_inputs_take_the_numpy_kernel():
    x = rng.integers(-5, 5, (2, 3, 6, 6))
    (tv, ti), (ev, ei) = _both(2, x, dict(kernel_size=2, padding=1))
    np.testing.assert_array_equal(ev.numpy(), tv.numpy())
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())
    z = np.zeros((0, 3, 6, 6), np.float32)
    (tv, ti), (ev, ei) = _both(2, z, dict(kernel_size=2))
    assert tuple(ev.shape) == tuple(tv.shape) and tuple(ei.shape) == tuple(ti.shape)


# ---- average pooling ---------------------------------------------------------------------

AVG = [
    (1, (2, 3, 17), dict(kernel_size=3, stride=2, padding=1)),
    (1, (4, 20), dict(kernel_size=4, stride=3, ceil_mode=True)),
    (2, (2, 3, 9, 8), dict(kernel_size=2)),
    (2, (2, 3, 9, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (2, (3, 10, 7), dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 0))),
    (2, (1, 2, 11, 13), dict(kernel_size=3, stride=1, padding=1, divisor_override=5)),
    (3, (2, 2, 5, 6, 7), dict(kernel_size=2, stride=(1, 2, 2), padding=(1, 0, 1))),
    (3, (1, 6, 7, 5), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
]


def _avg(lib, n):
    return getattr(lib.nn.functional, f"avg_pool{n}d")


@pytest.mark.parametrize("kind", ["random", "nan"])
@pytest.mark.parametrize("include_pad", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,shape,kw", AVG)
def test_avg_pool_matches_torch_and_numpy_kernel(n, shape, kw, dtype, include_pad, kind):
    x = _special(shape, dtype, kind)
    kw = dict(kw, count_include_pad=include_pad)
    want = _avg(torch, n)(torch.from_numpy(x), **kw).numpy()
    got = _avg(ember, n)(ember.from_numpy(x), **kw).numpy()
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    saved = ckpool.avg_pool
    ckpool.avg_pool = lambda *a: None
    try:
        ref = _avg(ember, n)(ember.from_numpy(x), **kw).numpy()
    finally:
        ckpool.avg_pool = saved
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("include_pad", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,shape,kw", AVG)
def test_avg_pool_gradient_matches_torch_and_numpy_kernel(n, shape, kw, dtype, include_pad):
    kw = dict(kw, count_include_pad=include_pad)
    x = rng.standard_normal(shape).astype(dtype)
    xt = torch.from_numpy(x).requires_grad_()
    yt = _avg(torch, n)(xt, **kw)
    g = rng.standard_normal(tuple(yt.shape)).astype(dtype)
    yt.backward(torch.from_numpy(g))

    def ember_grad():
        xe = ember.from_numpy(x).requires_grad_()
        _avg(ember, n)(xe, **kw).backward(ember.from_numpy(g))
        return xe.grad.numpy()

    tol = 1e-6 if dtype == np.float32 else 1e-14
    got = ember_grad()
    np.testing.assert_allclose(got, xt.grad.numpy(), rtol=tol, atol=tol)
    saved = ckpool.avg_pool_backward
    ckpool.avg_pool_backward = lambda *a: None
    try:
        np.testing.assert_allclose(ember_grad(), got, rtol=tol, atol=tol)
    finally:
        ckpool.avg_pool_backward = saved


@needs_c
def test_avg_pool_backward_c_kernel_runs_and_has_gradients():
    g = rng.standard_normal((2, 3, 5, 4))
    r = ckpool.avg_pool_backward(g, (9, 8), (3, 3), (2, 2), (1, 1), True, None)
    assert r is not None and r.shape == (2, 3, 9, 8)
    # the gradient of the gradient is average pooling again (double backward), and its
    # vmap, forward AD and half dtypes follow torch's
    x = rng.standard_normal((2, 3, 9, 8))
    xt = torch.from_numpy(x).requires_grad_()
    xe = ember.from_numpy(x).requires_grad_()
    gt, ge = torch.from_numpy(g).requires_grad_(), ember.from_numpy(g).requires_grad_()
    outs = []
    for lib, xx, gg in ((torch, xt, gt), (ember, xe, ge)):
        y = lib.nn.functional.avg_pool2d(xx, 3, 2, 1)
        (gx,) = lib.autograd.grad(y, xx, gg, create_graph=True)
        (ggg,) = lib.autograd.grad((gx * gx).sum(), gg)
        outs.append((gx.detach().numpy(), ggg.numpy()))
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
    gcheck = ember.from_numpy(g).requires_grad_()
    assert ember.autograd.gradcheck(
        lambda t: P.apply(P.AVG_POOL_BACKWARD, (t,), dict(
            in_spatial=(9, 8), ks=(3, 3), stride=(2, 2), pad=(1, 1), ceil=False,
            include_pad=False, override=None)), (gcheck,))
    assert ember.autograd.gradgradcheck(
        lambda t: ember.nn.functional.avg_pool2d(t, 3, 2, 1), (xe,))
    vx = rng.standard_normal((4, 3, 9, 8)).astype(np.float32)

    def vgrad(lib):
        def one(x):
            return lib.func.vjp(lambda t: lib.nn.functional.avg_pool2d(t, 3, 2), x)[1](
                lib.ones(3, 4, 3))[0]
        return lib.func.vmap(one)(lib.from_numpy(vx)).numpy()

    np.testing.assert_allclose(vgrad(ember), vgrad(torch), rtol=1e-6, atol=1e-6)
    for dt in ("float16", "bfloat16"):
        xh = torch.from_numpy(vx).to(getattr(torch, dt)).requires_grad_()
        eh = ember.from_numpy(vx).to(getattr(ember, dt)).requires_grad_()
        torch.nn.functional.avg_pool2d(xh, 2).sum().backward()
        ember.nn.functional.avg_pool2d(eh, 2).sum().backward()
        assert eh.grad.dtype == getattr(ember, dt)
        np.testing.assert_allclose(eh.grad.float().numpy(), xh.grad.float().numpy(),
                                   rtol=1e-2, atol=1e-2)


@needs_c
def test_avg_pool_c_kernel_runs_and_halves_pool_through_float32():
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    assert ckpool.avg_pool(x, (3, 3), (2, 2), (1, 1), (5, 4), True, None) is not None
    t = torch.nn.functional.avg_pool2d(torch.from_numpy(x).half(), 3, 2, 1)
    e = ember.nn.functional.avg_pool2d(ember.from_numpy(x).half(), 3, 2, 1)
    assert e.dtype == ember.float16
    np.testing.assert_allclose(e.float().numpy(), t.float().numpy(), rtol=1e-3, atol=1e-3)
    xg = ember.from_numpy(x.astype(np.float64)).requires_grad_()
    assert ember.autograd.gradcheck(
        lambda t: ember.nn.functional.avg_pool2d(t, 3, 2, 1, count_include_pad=False), (xg,))


@pytest.mark.parametrize("shape,n,args", [((2, 1), 1, (3, 3, 1, 2, True)),
                                          ((2, 1, 1, 1), 2, (3, 3, 1, 2, True))])
def test_window_with_no_element_inside_indexes_as_torch(shape, n, args):
    # dilation steps over the whole (short) input: the value is -inf and the index the
    # window's first position at or after 0, as torch's
    x = np.ones(shape, np.float32)
    t = _fn(torch, n)(torch.from_numpy(x), *args, return_indices=True)
    for e in (_fn(ember, n)(ember.from_numpy(x), *args, return_indices=True),
              _numpy_path(lambda: _fn(ember, n)(ember.from_numpy(x), *args,
                                                return_indices=True))):
        np.testing.assert_array_equal(e[0].numpy(), t[0].numpy())
        np.testing.assert_array_equal(e[1].numpy(), t[1].numpy())
