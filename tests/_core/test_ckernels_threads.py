"""Threads in the compiled eager kernels (ember._core.ckernels): ``ember.set_num_threads``
governs them, every row kernel gives bitwise the same values on 2 threads as on 1 (rows
are split between threads, never a row's sum), and the fused softmax/log_softmax gradient
agrees with torch's."""
import os

import numpy as np
import pytest
import torch

import ember
from ember._core import ckernels as ck

needs_c = pytest.mark.skipif(not ck.status()["available"] and not os.environ.get("CI"),
                             reason=f"no compiled kernels here: {ck.status()['reason']}")


@pytest.fixture
def threads():
    prior = ember.get_num_threads()
    yield
    ember.set_num_threads(prior)


@needs_c
def test_set_num_threads_governs_the_kernels(threads):
    big = ck.PARALLEL_SIZE
    # built without OpenMP, every kernel runs on one thread whatever the setting
    openmp = ck.status()["openmp"]
    for n in (1, 2, 3):
        ember.set_num_threads(n)
        assert ember.get_num_threads() == n
        assert ck._threads(big) == (n if openmp else 1)
        assert ck._threads(big - 1) == 1  # below the threshold: no thread start


def _rows(dtype, shape, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(dtype)


def _same_on_one_and_two_threads(monkeypatch, run):
    """``run()``'s arrays (none may be None: each kernel must have run) bitwise equal with
    the kernels on 1 and on 2 threads."""
    monkeypatch.setattr(ck, "_threads", lambda n: 1)
    one = run()
    monkeypatch.setattr(ck, "_threads", lambda n: 2)
    two = run()
    for a, b in zip(one, two, strict=True):
        assert a is not None
        np.testing.assert_array_equal(a, b)


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_kernels_same_on_two_threads(monkeypatch, dtype):
    # 301 rows: the threads' shares differ in size
    x, g = _rows(dtype, (301, 1000)), _rows(dtype, (301, 1000), 1)
    xhat, mean, rstd = ck.normalize(x, (1,), 1e-5)
    gm, gr = _rows(dtype, mean.shape, 2), _rows(dtype, mean.shape, 3)
    few = _rows(dtype, (21, 997), 4)  # few rows: two threads chunk them more finely

    def run():
        return [ck.softmax(x, 1, False), ck.softmax(x, 1, True),
                ck.softmax(few, 1, False), ck.softmax(few, 1, True),
                ck.softmax_backward(g, x, 1, False), ck.softmax_backward(g, x, 1, True),
                *ck.normalize(x, (1,), 1e-5),
                ck.normalize_backward(g, gm, gr, xhat, rstd, (1,)),
                ck.activation("gelu", x.ravel()), ck.activation_backward("gelu", g, x)]
    _same_on_one_and_two_threads(monkeypatch, run)


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_kernels_same_on_two_threads(monkeypatch, dtype):
    x = _rows(dtype, (301, 1000))
    t = np.random.default_rng(1).integers(0, 1000, 301)
    t[7] = -100  # ignored
    w = np.abs(_rows(dtype, (1000,), 2))
    g_rows = _rows(dtype, (301,), 3)

    def run():
        out = []
        for weight in (None, w):
            for smoothing in (0.0, 0.1):
                nll, sm, wt = ck.cross_entropy(x, t, weight, -100, smoothing)
                out += [nll, wt] + ([sm] if smoothing else [])  # sm unwritten without it
                out.append(ck.cross_entropy_grad(np.array(1.5, dtype), x, t, weight, -100,
                                                 "mean", smoothing))
                out.append(ck.cross_entropy_grad(g_rows, x, t, weight, -100, "none",
                                                 smoothing))
        return out
    _same_on_one_and_two_threads(monkeypatch, run)
    # a target out of range: torch's IndexError names the first such row's target
    bad = t.copy()
    bad[250], bad[40] = 1000, -3
    with pytest.raises(IndexError, match="Target -3 is out of bounds"):
        ck.cross_entropy(x, bad, None, -100, 0.0)
    assert ck.cross_entropy_grad(np.array(1.0, dtype), x, bad, None, -100, "sum", 0.0) is None


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape", [(64, 4096), (3, 5, 700)])
def test_softmax_gradient_matches_torch(dtype, log, shape):
    """ember's error against the float64 truth (torch in float64 on the same inputs) is at
    most twice torch's own in ``dtype`` (ember sums each row in double: usually smaller)."""
    rng = np.random.default_rng(0)
    xn = (rng.standard_normal(shape) * 4).astype(dtype)
    gn = rng.standard_normal(shape).astype(dtype)
    name = "log_softmax" if log else "softmax"

    def grads(lib, cast=None):
        out = []
        for g in (gn, None):  # an incoming gradient, then sum's broadcast one
            x = lib.tensor(xn if cast is None else xn.astype(cast), requires_grad=True)
            y = getattr(lib, name)(x, -1)
            if g is None:
                y.mul(2.0).sum().backward()
            else:
                y.backward(lib.tensor(g if cast is None else g.astype(cast)))
            out.append(x.grad.detach().numpy().astype(np.float64))
        return out
    for e, t, truth in zip(grads(ember), grads(torch), grads(torch, np.float64)):
        floor = 64 * np.finfo(dtype).eps * max(1.0, np.abs(truth).max())  # torch exact
        assert np.abs(e - truth).max() <= max(2 * np.abs(t - truth).max(), floor)


@needs_c
def test_softmax_gradient_kernel_is_used_and_double_backward_still_works():
    xn = np.random.default_rng(0).standard_normal((64, 4096)).astype(np.float32)
    y = ember.tensor(xn).softmax(-1)
    g = ember.ones_like(y)
    fused = ck.softmax_backward(g._data, y._data, 1, False)
    assert fused is not None
    ref = y * (g - (g * y).sum(-1, keepdim=True))  # the composite formula
    np.testing.assert_allclose(fused, ref.numpy(), rtol=1e-5, atol=1e-7)
    assert ck.softmax_backward(g._data, y._data, 0, False) is None  # not the last dim
    assert ck.softmax_backward(g._data[:, :100], y._data[:, :100], 1, False) is None  # small
    # create_graph: the vjp is recorded in ember ops, so a second derivative exists
    out = {}
    for lib in (torch, ember):
        x = lib.tensor(xn[:4, :50], requires_grad=True)
        w = lib.tensor(np.linspace(-1, 1, 50, dtype=np.float32))
        for f in (lib.softmax, lib.log_softmax):
            (gx,) = lib.autograd.grad((f(x, -1) * w).sum(), x, create_graph=True)
            (ggx,) = lib.autograd.grad((gx * gx).sum(), x)
            out.setdefault(lib.__name__, []).append(ggx.detach().numpy())
    for a, b in zip(out["ember"], out["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
