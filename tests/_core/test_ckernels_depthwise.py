"""The depthwise convolution C kernels (ember._core.ckernels.depthwise): output, input and
weight gradients against torch for 1-3 spatial dims, stride, dilation, asymmetric padding,
transposed convolutions and half dtypes; the same values as the column (GEMM) route they
replace; OpenMP threads; gradcheck."""
import os

import numpy as np
import pytest
import torch

import ember
from ember._core import ckernels as ck
from ember._core.ckernels import depthwise as dw
from ember.ops.nn import conv_kernels

needs_c = pytest.mark.skipif(not ck.status()["available"] and not os.environ.get("CI"),
                             reason=f"no compiled kernels here: {ck.status()['reason']}")

rng = np.random.default_rng(11)

# (input shape, weight shape, keyword arguments, transposed)
CASES = [
    ((2, 4, 9, 8), (4, 1, 3, 3), dict(padding=1), False),
    ((2, 4, 9, 8), (4, 1, 3, 3), dict(padding=(2, 0), stride=(2, 1), dilation=(1, 2)), False),
    ((3, 5, 17), (5, 1, 5), dict(padding=2, stride=3), False),
    ((2, 3, 5, 6, 7), (3, 1, 2, 3, 2), dict(padding=1, stride=(1, 2, 1)), False),
    ((1, 6, 1, 1), (6, 1, 3, 3), dict(padding=1), False),
    ((2, 4, 7, 6), (4, 1, 4, 4), dict(padding=1, stride=2), True),
    ((2, 4, 7, 6), (4, 1, 3, 3), dict(padding=1, stride=2, output_padding=1), True),
]


def _run(lib, x, w, b, g, kw, transposed):
    n = x.ndim - 2
    f = getattr(lib.nn.functional, f"conv_transpose{n}d" if transposed else f"conv{n}d")
    ts = [lib.from_numpy(a.copy()).requires_grad_() for a in (x, w, b)]
    y = f(*ts, groups=x.shape[1], **kw)
    if g is None:
        g = rng.standard_normal(tuple(y.shape)).astype(x.dtype)
    y.backward(lib.from_numpy(g))
    return [y.detach().numpy()] + [t.grad.numpy() for t in ts], g


def _arrays(xs, ws, dtype):
    C = xs[1]
    return (rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype),
            rng.standard_normal(C).astype(dtype))


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,kw,transposed", CASES)
def test_matches_torch_and_the_column_route(xs, ws, kw, transposed, dtype, monkeypatch):
    x, w, b = _arrays(xs, ws, dtype)
    want, g = _run(torch, x, w, b, None, kw, transposed)
    got, _ = _run(ember, x, w, b, g, kw, transposed)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for name, a, e in zip(("output", "input grad", "weight grad", "bias grad"), want, got):
        np.testing.assert_allclose(e, a, rtol=tol, atol=tol, err_msg=name)
    for name in ("forward", "input_grad", "weight_grad"):  # the GEMM route: same values
        monkeypatch.setattr(dw, name, lambda *a, **k: None)
    ref, _ = _run(ember, x, w, b, g, kw, transposed)
    for a, e in zip(ref, got):
        np.testing.assert_allclose(e, a, rtol=tol, atol=tol)


@needs_c
def test_kernels_run_and_threads_give_the_same_values(monkeypatch):
    x = rng.standard_normal((4, 8, 12, 10)).astype(np.float32)
    w = rng.standard_normal((8, 1, 3, 3)).astype(np.float32)
    gy = rng.standard_normal((4, 8, 6, 10)).astype(np.float32)
    geo = ((3, 3), (2, 1), ((1, 1), (1, 1)), (1, 1))
    one = (dw.forward(x, w, *geo, (6, 10)), dw.input_grad(gy, w, (12, 10), *geo),
           dw.weight_grad(x, gy, *geo))
    assert all(r is not None for r in one)
    monkeypatch.setattr(dw, "_threads", lambda work: 2)
    two = (dw.forward(x, w, *geo, (6, 10)), dw.input_grad(gy, w, (12, 10), *geo),
           dw.weight_grad(x, gy, *geo))
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


def test_not_depthwise_or_foreign_arrays_take_the_column_route():
    assert not conv_kernels._depthwise(np, 1, 1, 1, 1)       # one group: a plain convolution
    assert not conv_kernels._depthwise(np, 4, 4, 8, 1)       # a channel multiplier
    assert not conv_kernels._depthwise(np, 2, 4, 4, 2)       # two channels a group
    assert conv_kernels._depthwise(np, 4, 4, 4, 1)
    x = np.ones((1, 2, 5, 5), np.int64)
    assert dw.forward(x, np.ones((2, 1, 3, 3), np.int64), (3, 3), (1, 1), ((0, 0),) * 2,
                      (1, 1), (3, 3)) is None
    e = ember.nn.functional.conv2d(ember.from_numpy(x), ember.ones(2, 1, 3, 3, dtype=ember.long),
                                   groups=2)
    t = torch.nn.functional.conv2d(torch.from_numpy(x), torch.ones(2, 1, 3, 3, dtype=torch.long),
                                   groups=2)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_dtypes_compute_in_float32(dt):
    x = rng.standard_normal((2, 4, 9, 8)).astype(np.float32)
    w = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)
    res = []
    for lib in (torch, ember):
        xt = lib.from_numpy(x).to(getattr(lib, dt)).requires_grad_()
        wt = lib.from_numpy(w).to(getattr(lib, dt)).requires_grad_()
        y = lib.nn.functional.conv2d(xt, wt, padding=1, groups=4)
        y.float().sum().backward()
        res.append([y.detach().float().numpy(), xt.grad.float().numpy(), wt.grad.float().numpy()])
        assert y.dtype == getattr(lib, dt)
    for a, e in zip(*res):
        np.testing.assert_allclose(e, a, rtol=2e-2, atol=2e-2)


def test_gradcheck_and_gradgradcheck_float64():
    x = ember.from_numpy(rng.standard_normal((2, 3, 6, 5))).requires_grad_()
    w = ember.from_numpy(rng.standard_normal((3, 1, 3, 2))).requires_grad_()

    def f(a, b):
        return ember.nn.functional.conv2d(a, b, stride=(1, 2), padding=1, dilation=(2, 1),
                                          groups=3)
    assert ember.autograd.gradcheck(f, (x, w))
    assert ember.autograd.gradgradcheck(f, (x, w))
