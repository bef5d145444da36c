"""The C loops of ember/_core/ckernels/selection.py through their ops, against torch: relu
and its backward, gather, scatter_add, topk, flip, unique (counting path) and the fused
mse_loss.  Values, indices and dtypes bit for bit (where torch's result is deterministic),
gradients, NaN/-0.0, zero-size and non-contiguous inputs; sizes above the kernels' MIN_SIZE
so the C paths run (and the NumPy fallbacks where they decline)."""
import numpy as np
import pytest
import torch

import ember
from ember._core.ckernels import selection as sel

_DT = {"float32": (ember.float32, torch.float32), "float64": (ember.float64, torch.float64),
       "float16": (ember.float16, torch.float16), "bfloat16": (ember.bfloat16, torch.bfloat16),
       "int64": (ember.int64, torch.int64), "int32": (ember.int32, torch.int32),
       "int8": (ember.int8, torch.int8), "uint8": (ember.uint8, torch.uint8),
       "bool": (ember.bool, torch.bool), "complex128": (ember.complex128, torch.complex128)}


def _pair(a, dt):
    """(ember, torch) tensors of the float64/int array ``a`` cast to ``dt``."""
    e, t = _DT[dt]
    ta = torch.from_numpy(np.ascontiguousarray(a)).to(t)
    return ember.from_numpy(ta.to(torch.float32).numpy() if dt == "bfloat16" else
                            ta.numpy()).to(e), ta


def _np(t):
    t = t.detach()
    if isinstance(t, torch.Tensor):
        return t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    return t.float().numpy() if t.dtype == ember.bfloat16 else t.numpy()


def _same(e, t):
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    a, b = _np(e), _np(t)
    if a.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(a), np.signbit(b))
    np.testing.assert_array_equal(a, b)


def _special(shape, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    flat = a.reshape(-1)
    flat[::7] = 0.0
    flat[1::11] = -0.0
    flat[2::13] = np.nan
    flat[3::17] = np.inf
    flat[4::19] = -np.inf
    return a


# ---- relu ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16"])
def test_relu_values_and_gradient(dt):
    a = _special((40, 70), 0)
    e, t = _pair(a, dt)
    e.requires_grad_(True)
    t.requires_grad_(True)
    ye, yt = ember.relu(e), torch.relu(t)
    _same(ye, yt)
    g = _special((40, 70), 1)  # NaN/inf gradients where the output is 0 are dropped
    ge, gt = _pair(g, dt)
    ye.backward(ge)
    yt.backward(gt)
    _same(e.grad, t.grad)


def test_relu_noncontiguous_int_and_sum_gradient():
    a = _special((64, 96), 2)
    e, t = _pair(a, "float32")
    _same(ember.relu(e.t()), torch.relu(t.t()))
    _same(ember.relu(e[:, ::3]), torch.relu(t[:, ::3]))
    ie, it = _pair(np.arange(-3000, 3000).reshape(60, 100), "int64")
    _same(ember.relu(ie), torch.relu(it))
    e.requires_grad_(True)
    t.requires_grad_(True)
    ember.relu(e).sum().backward()  # one broadcast gradient value
    torch.relu(t).sum().backward()
    _same(e.grad, t.grad)
    z = ember.zeros(0, 5, requires_grad=True)
    ember.relu(z).sum().backward()
    assert z.grad.shape == (0, 5)


def test_relu_double_backward():
    a = np.random.default_rng(3).standard_normal((50, 50))
    e, t = _pair(a, "float64")
    e.requires_grad_(True)
    t.requires_grad_(True)
    ge, = ember.autograd.grad(ember.relu(e).pow(2).sum(), e, create_graph=True)
    gt, = torch.autograd.grad(torch.relu(t).pow(2).sum(), t, create_graph=True)
    _same(ge, gt)
    _same(ember.autograd.grad(ge.sum(), e)[0], torch.autograd.grad(gt.sum(), t)[0])


def test_relu_kernel_direct():
    x = _special((4096,), 4).astype(np.float32)
    y = sel.relu(x)
    want = torch.relu(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(np.signbit(y), np.signbit(want))
    assert sel.relu(x[:10]) is None  # below MIN_SIZE: NumPy


# ---- gather / scatter_add -----------------------------------------------------------------
@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "int64", "int8", "bool",
                                "complex128"])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_gather_matches_torch(dt, dim):
    rng = np.random.default_rng(dim)
    x = rng.standard_normal((9, 20, 30)) * 50
    e, t = _pair(x, dt)
    ishape = [7, 15, 25]
    ishape[dim] = 40
    idx = rng.integers(0, x.shape[dim], ishape)
    _same(ember.gather(e, dim, ember.from_numpy(idx)),
          torch.gather(t, dim, torch.from_numpy(idx)))
    # non-contiguous input and an int32, non-contiguous index
    it = np.ascontiguousarray(idx.transpose(2, 1, 0)).transpose(2, 1, 0).astype(np.int32)
    _same(ember.gather(e.transpose(0, 1).transpose(0, 1), dim, ember.from_numpy(it)),
          torch.gather(t, dim, torch.from_numpy(it).long()))


def test_gather_out_of_range_and_gradient():
    x = np.random.default_rng(5).standard_normal((30, 50))
    e, t = _pair(x, "float32")
    idx = np.random.default_rng(6).integers(0, 50, (30, 60))
    bad = idx.copy()
    bad[3, 7] = 50
    with pytest.raises(RuntimeError, match="index 50 is out of bounds for dimension 1 with size"
                                           " 50"):
        ember.gather(e, 1, ember.from_numpy(bad))
    bad[3, 7] = -1
    with pytest.raises(RuntimeError, match="index -1 is out of bounds"):
        ember.gather(e, 1, ember.from_numpy(bad))
    e.requires_grad_(True)
    t.requires_grad_(True)
    g = np.random.default_rng(7).standard_normal((30, 60)).astype(np.float32)
    ember.gather(e, 1, ember.from_numpy(idx)).backward(ember.from_numpy(g))
    torch.gather(t, 1, torch.from_numpy(idx)).backward(torch.from_numpy(g))
    _same(e.grad, t.grad)


@pytest.mark.parametrize("dt", ["float32", "float64", "int64", "int32", "float16"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_add_matches_torch(dt, dim):
    rng = np.random.default_rng(10 + dim)
    x = rng.standard_normal((12, 40)) * 10
    src = rng.standard_normal((20, 60)) * 10
    d = dim % 2
    ishape = [10, 30]
    ishape[d] = 200  # many repeats per row
    idx = rng.integers(0, x.shape[d], ishape)
    (xe, xt), (se, st) = _pair(x, dt), _pair(np.resize(src, (210, 210)), dt)
    # a source larger than the index: only its leading block is read
    _same(ember.scatter_add(xe, dim, ember.from_numpy(idx), se),
          torch.scatter_add(xt, dim, torch.from_numpy(idx), st))
    # in place, with the source exactly the index's shape
    s2 = rng.standard_normal(ishape) * 10
    (s2e, s2t) = _pair(s2, dt)
    re, rt = xe.clone(), xt.clone()
    re.scatter_add_(dim, ember.from_numpy(idx), s2e)
    rt.scatter_add_(dim, torch.from_numpy(idx), s2t)
    _same(re, rt)


def test_scatter_add_errors_and_gradient():
    rng = np.random.default_rng(20)
    x = rng.standard_normal((16, 64))
    idx = rng.integers(0, 16, (40, 64))
    src = rng.standard_normal((40, 64))
    (xe, xt), (se, st) = _pair(x, "float64"), _pair(src, "float64")
    bad = idx.copy()
    bad[39, 63] = 16
    with pytest.raises(RuntimeError, match="index 16 is out of bounds for dimension 0 with size"
                                           " 16"):
        xe.scatter_add_(0, ember.from_numpy(bad), se)
    _same(xe, xt)  # nothing written
    for a in (xe, xt, se, st):
        a.requires_grad_(True)
    g = rng.standard_normal((16, 64))
    ember.scatter_add(xe, 0, ember.from_numpy(idx), se).backward(ember.from_numpy(g))
    torch.scatter_add(xt, 0, torch.from_numpy(idx), st).backward(torch.from_numpy(g))
    _same(xe.grad, xt.grad)
    _same(se.grad, st.grad)


# ---- topk ---------------------------------------------------------------------------------
def _distinct(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.permutation(np.prod(shape)).reshape(shape).astype(np.float64) - np.prod(shape) / 2


@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16", "int64", "int32",
                                "int8", "uint8"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_distinct_matches_torch(dt, largest):
    x = _distinct((20, 100), 30)
    if dt in ("int8", "uint8"):
        x = _distinct((2, 100), 31) + (50 if dt == "int8" else 150)
    elif dt in ("float16", "bfloat16"):
        x = _distinct((2, 100), 30) / 4  # exact in both: 8 significant bits
    e, t = _pair(x, dt)
    for dim, k in ((1, 7), (1, 60), (0, 2), (-1, 100), (1, 0)):
        re, rt = ember.topk(e, k, dim, largest), torch.topk(t, k, dim, largest)
        _same(re.values, rt.values)
        _same(re.indices, rt.indices)


def test_topk_nan_largest_and_noncontiguous():
    x = _distinct((30, 80), 32)
    x[5, 10] = np.nan
    x[9, [3, 70]] = np.nan
    e, t = _pair(x, "float32")
    for largest in (True, False):
        for k in (1, 3, 50, 80):
            re, rt = ember.topk(e, k, 1, largest), torch.topk(t, k, 1, largest)
            _same(re.values, rt.values)
            # row 9's two NaNs tie: torch's order between them is its C++ library's
            keep = [r for r in range(30) if r != 9]
            _same(re.indices[keep], rt.indices[keep])
            np.testing.assert_array_equal(np.take_along_axis(x.astype(np.float32),
                                                             re.indices.numpy(), 1),
                                          re.values.numpy())
    et, tt = e.t(), t.t()  # strided rows
    _same(ember.topk(et, 4, 0).values, torch.topk(tt, 4, 0).values)
    _same(ember.topk(et, 4, 0).indices[:, keep], torch.topk(tt, 4, 0).indices[:, keep])
    _same(ember.topk(e[keep, ::2], 6).indices, torch.topk(t[keep, ::2], 6).indices)


def test_topk_ties_lower_index_first_and_unsorted_set():
    # torch's CPU order of equal values is its C++ library's (unstable partial_sort /
    # nth_element); ember keeps ties in index order: the same values, a valid index set
    rng = np.random.default_rng(33)
    x = rng.integers(0, 5, (16, 300)).astype(np.float32)
    x[:, ::9] = -0.0
    e, t = _pair(x, "float32")
    for largest in (True, False):
        for k in (3, 40, 299):
            re, rt = ember.topk(e, k, 1, largest), torch.topk(t, k, 1, largest)
            # equal values, but -0.0 and 0.0 tie: torch's order between them is its own
            np.testing.assert_array_equal(re.values.numpy(), rt.values.numpy())
            vi = re.indices.numpy()
            np.testing.assert_array_equal(np.take_along_axis(x, vi, 1), re.values.numpy())
            for r in range(x.shape[0]):
                for v in np.unique(re.values.numpy()[r]):
                    pos = vi[r][re.values.numpy()[r] == v]
                    assert (np.diff(pos) > 0).all()  # ties in increasing index
                    everything = np.flatnonzero(x[r] == v)
                    if v != re.values.numpy()[r][-1]:  # a group inside the k: all of it
                        np.testing.assert_array_equal(pos, everything)
                    else:  # the boundary group: the lowest indices
                        np.testing.assert_array_equal(pos, everything[:pos.size])
            ru = ember.topk(e, k, 1, largest, sorted=False)
            tu = torch.topk(t, k, 1, largest, sorted=False)
            np.testing.assert_array_equal(np.sort(ru.values.numpy(), 1),
                                          np.sort(tu.values.numpy(), 1))


def test_topk_gradient_zero_size_and_errors():
    x = _distinct((12, 90), 34)
    e, t = _pair(x, "float64")
    e.requires_grad_(True)
    t.requires_grad_(True)
    g = np.random.default_rng(35).standard_normal((12, 9))
    ember.topk(e, 9).values.backward(ember.from_numpy(g))
    torch.topk(t, 9).values.backward(torch.from_numpy(g))
    _same(e.grad, t.grad)
    z = ember.zeros(0, 7)
    r = ember.topk(z, 3)
    assert r.values.shape == (0, 3) and r.indices.dtype == ember.int64
    assert ember.topk(ember.zeros(4, 0), 0).values.shape == (4, 0)
    with pytest.raises(RuntimeError, match="topk does not support bool"):
        ember.topk(ember.ones(3, dtype=ember.bool), 1)


# ---- flip ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "int8", "bool", "complex128"])
def test_flip_matches_torch(dt):
    x = np.random.default_rng(40).standard_normal((6, 20, 50)) * 30
    e, t = _pair(x, dt)
    for dims in ((2,), (-1,), (0, 2), (0, 1, 2), (1,), (0,)):
        _same(ember.flip(e, dims), torch.flip(t, dims))
    _same(ember.flip(e.transpose(0, 2), (2,)), torch.flip(t.transpose(0, 2), (2,)))
    _same(ember.flip(e[:, :, ::2], (2,)), torch.flip(t[:, :, ::2], (2,)))
    assert ember.flip(e, (2,)).is_contiguous()


def test_flip_gradient():
    x = np.random.default_rng(41).standard_normal((30, 70))
    e, t = _pair(x, "float32")
    e.requires_grad_(True)
    t.requires_grad_(True)
    g = np.random.default_rng(42).standard_normal((30, 70)).astype(np.float32)
    ember.flip(e, (0, 1)).backward(ember.from_numpy(g))
    torch.flip(t, (0, 1)).backward(torch.from_numpy(g))
    _same(e.grad, t.grad)


# ---- unique -------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["small_int64", "negative_int8", "uint8", "bool", "wide",
                                  "int32_2d", "one"])
def test_unique_counting_matches_torch(case):
    rng = np.random.default_rng(50)
    x, dt = {"small_int64": (rng.integers(-40, 900, 5000), "int64"),
             "negative_int8": (rng.integers(-128, 128, 3000), "int8"),
             "uint8": (rng.integers(0, 256, 3000), "uint8"),
             "bool": (rng.integers(0, 2, 3000), "bool"),
             "wide": (rng.integers(-(1 << 50), 1 << 50, 3000), "int64"),
             "int32_2d": (rng.integers(5, 60, (40, 30)), "int32"),
             "one": (np.full(100, 7), "int64")}[case]
    e, t = _pair(x, dt)
    for inv in (False, True):
        for cnt in (False, True):
            re = ember.unique(e, return_inverse=inv, return_counts=cnt)
            rt = torch.unique(t, return_inverse=inv, return_counts=cnt)
            re, rt = (re, rt) if isinstance(rt, tuple) else ((re,), (rt,))
            assert len(re) == len(rt)
            for a, b in zip(re, rt):
                _same(a, b)


def test_unique_float_nan_and_empty():
    x = np.array([3.0, -0.0, 0.0, np.nan, 1.5, np.nan, 3.0, -2.0] * 300)
    e, t = _pair(x, "float32")
    for inv in (False, True):
        re = ember.unique(e, return_inverse=inv, return_counts=True)
        rt = torch.unique(t, return_inverse=inv, return_counts=True)
        np.testing.assert_array_equal(re[0].numpy(), rt[0].numpy())
        np.testing.assert_array_equal(re[-1].numpy(), rt[-1].numpy())
        if inv:
            _same(re[1], rt[1])
    ze, zt = _pair(np.zeros(0), "int64")
    for a, b in zip(ember.unique(ze, return_inverse=True, return_counts=True),
                    torch.unique(zt, return_inverse=True, return_counts=True)):
        _same(a, b)


# ---- mse_loss -----------------------------------------------------------------------------
@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_matches_torch(dt, reduction):
    rng = np.random.default_rng(60)
    a, b = rng.standard_normal((2, 48, 40))
    (xe, xt), (ye, yt) = _pair(a, dt), _pair(b, dt)
    for v in (xe, xt, ye, yt):
        v.requires_grad_(True)
    le = ember.nn.functional.mse_loss(xe, ye, reduction=reduction)
    lt = torch.nn.functional.mse_loss(xt, yt, reduction=reduction)
    if reduction == "none":
        _same(le, lt)
    else:  # the reduction's order of sums is ember's sum/mean (last-bit differences)
        assert le.dtype == _DT[dt][0] and le.shape == ()
        np.testing.assert_allclose(_np(le.detach()), _np(lt.detach()),
                                   rtol=1e-2 if dt in ("float16", "bfloat16") else 1e-5)
    # gradients: torch's alpha * (x - y) * g, bit for bit, with a gradient other than one
    ge = (le * 3).sum() if reduction == "none" else le * 3
    gt = (lt * 3).sum() if reduction == "none" else lt * 3
    ge.backward()
    gt.backward()
    _same(xe.grad, xt.grad)
    _same(ye.grad, yt.grad)


def test_mse_loss_noncontiguous_double_backward_vmap_and_fallbacks():
    rng = np.random.default_rng(61)
    a, b = rng.standard_normal((2, 30, 20))
    (xe, xt), (ye, yt) = _pair(a, "float64"), _pair(b, "float64")
    xe.requires_grad_(True)
    xt.requires_grad_(True)
    ge, = ember.autograd.grad(ember.nn.functional.mse_loss(xe.t(), ye.t()), xe,
                              create_graph=True)
    gt, = torch.autograd.grad(torch.nn.functional.mse_loss(xt.t(), yt.t()), xt,
                              create_graph=True)
    _same(ge, gt)
    np.testing.assert_allclose(ember.autograd.grad((ge * ge).sum(), xe)[0].numpy(),
                               torch.autograd.grad((gt * gt).sum(), xt)[0].numpy(), rtol=1e-13)
    # per-example losses under vmap equal a loop
    per = ember.vmap(lambda p, q: ember.nn.functional.mse_loss(p, q))(xe.detach(), ye)
    want = torch.stack([torch.nn.functional.mse_loss(p, q) for p, q in zip(xt.detach(), yt)])
    np.testing.assert_allclose(per.numpy(), want.numpy(), rtol=1e-12)
    # broadcasting and mixed dtypes take the composite, as before
    with pytest.warns(UserWarning):
        r = ember.nn.functional.mse_loss(xe.detach(), ye[:1])
    with pytest.warns(UserWarning):
        want = torch.nn.functional.mse_loss(xt.detach(), yt[:1]).item()
    np.testing.assert_allclose(r.item(), want, rtol=1e-12)
    m = ember.nn.functional.mse_loss(xe.detach().float(), ye)
    assert m.dtype == ember.float64
    z = ember.nn.functional.mse_loss(ember.zeros(0), ember.zeros(0))
    assert np.isnan(z.item()) and np.isnan(
        torch.nn.functional.mse_loss(torch.zeros(0), torch.zeros(0)).item())


def _topk_reference(x, k, largest):
    """Indices of the k first elements of each row of 2-d ``x``: NaN the largest, ties by
    lower index (lexsort: the last key is the primary one)."""
    nan = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
    filled = np.where(nan, 0, x)
    idx = np.broadcast_to(np.arange(x.shape[1]), x.shape)
    out = []
    for r in range(x.shape[0]):
        keys = (idx[r], -filled[r], ~nan[r]) if largest else (idx[r], filled[r], nan[r])
        out.append(np.lexsort(keys)[:k])
    return np.array(out).reshape(x.shape[0], k)


@pytest.mark.parametrize("pattern", ["ascending", "descending", "organ", "equal", "few",
                                     "random_nan"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_topk_kernel_patterns_against_reference(pattern, dtype):
    n = 3000
    base = {"ascending": np.arange(n), "descending": np.arange(n)[::-1],
            "organ": np.concatenate([np.arange(n // 2), np.arange(n - n // 2)[::-1]]),
            "equal": np.zeros(n), "few": np.random.default_rng(70).integers(0, 3, n),
            "random_nan": np.random.default_rng(71).standard_normal(n) * 100}[pattern]
    x = np.stack([base, base[::-1], np.roll(base, 7)]).astype(np.float64)
    if pattern == "random_nan" and np.dtype(dtype).kind == "f":
        x[:, ::5] = np.nan
    x = x.astype(dtype)
    for largest in (True, False):
        for k in (1, 5, 180, 1500, n):
            v, i = sel.topk(x, k, 1, largest)
            np.testing.assert_array_equal(i, _topk_reference(x, k, largest))
            np.testing.assert_array_equal(v, np.take_along_axis(x, i, 1))


def test_numpy_fallbacks_equal_the_c_loops(monkeypatch):
    """With the kernels off (no compiler, EMBER_CKERNELS=0) every op gives the same values."""
    from ember._core import ckernels as ck
    rng = np.random.default_rng(80)
    x = _special((50, 90), 81).astype(np.float32)
    d = _distinct((50, 90), 82).astype(np.float32)
    idx = rng.integers(0, 50, (70, 90))
    h = rng.standard_normal((70, 90)).astype(np.float16)
    g = _special((50, 90), 83).astype(np.float32)

    def run():
        xe = ember.from_numpy(x.copy()).requires_grad_(True)
        y = ember.relu(xe)
        y.backward(ember.from_numpy(g))
        he = ember.from_numpy(h)
        ye = ember.from_numpy(d).requires_grad_(True)
        loss = ember.nn.functional.mse_loss(ye, ember.from_numpy(x))
        (loss * 3).backward()
        return [y.detach().numpy(), xe.grad.numpy(), loss.detach().numpy(), ye.grad.numpy(),
                ember.gather(ember.from_numpy(x), 0, ember.from_numpy(idx[:40])).numpy(),
                ember.scatter_add(he[:50], 0, ember.from_numpy(idx), he).numpy(),
                *(a.numpy() for a in ember.topk(ember.from_numpy(d), 12, 1)),
                ember.flip(ember.from_numpy(x), (0, 1)).numpy(),
                *(a.numpy() for a in ember.unique(ember.from_numpy(idx), return_inverse=True,
                                                  return_counts=True))]
    with_c = run()
    monkeypatch.setattr(ck, "ENABLED", False)
    for a, b in zip(with_c, run()):
        np.testing.assert_array_equal(a, b)
        if a.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(a), np.signbit(b))
