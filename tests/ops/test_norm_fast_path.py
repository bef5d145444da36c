"""The 2-norm over trailing dimensions as blocked dot products (ops.reduction._sumsq_trailing)
and clip_grad_norm_ on per-tensor norms: values against torch and float64, shapes, keepdim,
dtypes, accuracy on long vectors, and torch's errors."""
import numpy as np
import pytest
import torch

import ember
from ember.ops.reduction import _sumsq_trailing

RNG = np.random.default_rng(0)
CASES = [((5,), None), ((3, 5000), 1), ((3, 5000), (0, 1)), ((2, 3, 4097), -1),
         ((2, 3, 12288), (1, 2)), ((7, 8192), 1), ((4, 6), 0), ((4, 6), (1, 0)), ((0, 3), 1),
         ((3, 0), 1), ((), None)]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim", CASES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_norm_against_torch(shape, dim, dt, keepdim):
    x = RNG.standard_normal(shape).astype(dt)
    e = ember.from_numpy(x).norm(dim=dim, keepdim=keepdim)
    t = torch.from_numpy(x).norm(dim=dim, keepdim=keepdim)
    assert tuple(e.shape) == tuple(t.shape) and str(e.dtype)[6:] == str(t.dtype)[6:]
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6 if dt == np.float32 else 1e-14)


def test_norm_gradient_and_special_values():
    x = RNG.standard_normal((3, 5000))
    x[1, 7], x[2, 9] = np.inf, np.nan
    for lib in (torch, ember):
        a = lib.from_numpy(x[:1].copy()).requires_grad_()
        a.norm(dim=1).sum().backward()
        if lib is torch:
            tg = a.grad.numpy()
        else:
            np.testing.assert_allclose(a.grad.numpy(), tg, rtol=1e-14)
    e = ember.from_numpy(x).norm(dim=1).numpy()
    assert e[1] == np.inf and np.isnan(e[2])


def test_sumsq_accuracy_and_fallbacks():
    v = RNG.random(2**22).astype(np.float32)
    exact = float(np.dot(v.astype(np.float64), v.astype(np.float64)))
    assert abs(float(_sumsq_trailing(v, (0,))) / exact - 1) < 1e-6  # torch's float32: ~1e-4
    assert _sumsq_trailing(v.reshape(64, -1), (0,)) is None  # leading dims: not this path
    assert _sumsq_trailing(v[::2], (0,)) is None  # strided
    assert _sumsq_trailing(v.astype(np.float16), (0,)) is None


def _params(dts):
    ps = []
    for i, dt in enumerate(dts):
        w = RNG.standard_normal((17 + i, 300)).astype(dt)
        g = RNG.standard_normal(w.shape).astype(dt)
        ps.append((w, g))
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf"), 0.0])
@pytest.mark.parametrize("dts", [(np.float32,) * 3, (np.float32, np.float64)])
def test_clip_grad_norm_against_torch(norm_type, dts):
    ps = _params(dts)
    out = {}
    for lib in (torch, ember):
        params = []
        for w, g in ps:
            p = lib.from_numpy(w.copy()).requires_grad_()
            p.grad = lib.from_numpy(g.copy())
            params.append(p)
        total = lib.nn.utils.clip_grad_norm_(params, 0.5, norm_type)
        out[lib] = (total, [p.grad.numpy() for p in params])
    assert str(out[ember][0].dtype)[6:] == str(out[torch][0].dtype)[6:]
    np.testing.assert_allclose(out[ember][0].numpy(), out[torch][0].numpy(), rtol=1e-6)
    for a, b in zip(out[ember][1], out[torch][1]):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=2e-6)


def test_clip_grad_norm_errors_like_torch():
    for lib in (torch, ember):
        p = lib.ones(3, requires_grad=True)
        p.grad = lib.tensor([1.0, float("inf"), 2.0])
        with pytest.raises(RuntimeError, match="non-finite"):
            lib.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
        q = lib.zeros(3, dtype=lib.int64)
        with pytest.raises(RuntimeError, match="floating point"):
            lib.nn.utils.get_total_norm([q])
        assert float(lib.nn.utils.get_total_norm([])) == 0.0
