"""The compiled eager kernels (ember._core.ckernels): each C kernel against its NumPy
fallback and a float64 reference, the public ops that use them against torch, and the
fallback when no library can be built (the builder's cache, damage and lock cases are in
test_ckernels_cache.py)."""
import os

import numpy as np
import pytest
import scipy.special as sps
import torch

import ember
from ember._core import ckernels as ck
from ember.nn.functional import activation as act
from ember.nn.functional.normalization import _normalize_kernel
from ember.ops.softmax import _log_softmax_kernel, _softmax_kernel

# CI has a C compiler, so there the compiled path is always tested (a build failure fails)
needs_c = pytest.mark.skipif(not ck.status()["available"] and not os.environ.get("CI"),
                             reason=f"no compiled kernels here: {ck.status()['reason']}")
BOTH = ("f32", "f64")
SIZES = (4096, 4096 * 3 + 7)


def _ulps(a, ref, dtype):
    """|a - ref| in units of the last place of ``ref`` rounded to ``dtype`` (NaNs must
    match, equal values count 0)."""
    a, ref = np.asarray(a, np.float64), np.asarray(ref, np.float64)
    assert np.array_equal(np.isnan(a), np.isnan(ref))
    rounded = ref.astype(dtype)
    same = (a == ref) | (a == rounded) | np.isnan(a)
    sp = np.spacing(np.abs(rounded)).astype(np.float64)
    return np.where(same, 0.0, np.abs(a - ref) / sp)


def _inputs(n, dtype, positive=False, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 12
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 88.7, 88.73, -87.4, -103.5, -110, 1e-40,
               -1e-40, 709.0, 710.0, -745.0, 1e-310, 3e38, -3e38, 0.5, -0.625, 0.625, 20, -20]
    x[:len(special)] = special
    if positive:
        x = np.abs(x)
        x[:4] = [1e-45, 1.2e-38, 1e-300, 5e-324]
    return x.astype(dtype)


# ---- each kernel against NumPy ----------------------------------------------------------------

UNARY = {"exp": (np.exp, False), "log": (np.log, True), "tanh": (np.tanh, False),
         "sigmoid": (sps.expit, False), "erf": (sps.erf, False)}


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("n", SIZES)
def test_unary_matches_numpy_and_float64_truth(name, dtype, n):
    f, positive = UNARY[name]
    x = _inputs(n, dtype, positive)
    y = ck.unary(name, None, BOTH)(np, x)
    assert y.dtype == dtype and y.shape == x.shape
    # NumPy's own SIMD float32 exp/log are off by up to ~2.5-3.3 ulp; ours by <= 2.5
    assert _ulps(y, f(x), dtype).max() <= 4
    if dtype == np.float32:
        assert _ulps(y, f(x.astype(np.float64)), dtype).max() <= 2.5


def _f32_grid(lo, hi, step):
    """Every ``step``-th float32 in [lo, hi] (both >= 0), by bit pattern, and its negation."""
    b = np.arange(np.float32(lo).view(np.int32), np.float32(hi).view(np.int32) + 1, step,
                  dtype=np.int32).view(np.float32)
    return np.concatenate([b, -b])


@needs_c
def test_float32_erf_within_2_ulp_of_float64_truth():
    # every float32 where the two fits meet (|x| = 0.9, the worst near 0.92: 1.61 ulp over
    # all floats) and where erf reaches 1 (|x| ~ 3.9), every 97th one from 0 to 6
    # (denormals included), and the edges
    edges = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-40, 1.17549e-38, 1e-30, 1.0, -1.0, 4.0,
                      6.0, 1e3, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan, -np.nan], np.float32)
    x = np.concatenate([_f32_grid(0, 6, 97), _f32_grid(0.89, 0.93, 1),
                        _f32_grid(3.8, 4.05, 1), edges])
    y = ck.unary("erf", None, ("f32",))(np, x)
    truth = sps.erf(x.astype(np.float64))
    assert _ulps(y, truth, np.float32).max() <= 2
    assert np.array_equal(y[-len(edges):][:-2], truth[-len(edges):][:-2].astype(np.float32))
    assert np.signbit(y[x == 0]).tolist() == np.signbit(x[x == 0]).tolist()


@needs_c
def test_erf_op_takes_the_compiled_path_and_matches_torch(monkeypatch):
    x = np.concatenate([_f32_grid(0, 5, 2999), np.float32([np.nan, np.inf, -np.inf])])
    calls = []
    real = ck._fn
    monkeypatch.setattr(ck, "_fn", lambda sym, t: calls.append(sym) or real(sym, t))
    y = ember.erf(ember.tensor(x)).numpy()
    assert calls == ["ck_erf_f32"]
    assert _ulps(y, torch.erf(torch.tensor(x)).numpy(), np.float32).max() <= 2
    monkeypatch.setattr(ck, "ENABLED", False)
    assert _ulps(y, ember.erf(ember.tensor(x)).numpy(), np.float32).max() <= 1  # scipy's


@needs_c
def test_exact_gelu_values_and_grads_match_torch_on_large_tensors():
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(ck.PARALLEL_SIZE + 123) * 4).astype(np.float32)
    x[:10] = [0.0, -0.0, 1e-40, -1e-40, 0.7071, -3.9, 5.5, -5.5, 30, -30]
    g = rng.standard_normal(x.shape).astype(np.float32)
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ye, yt = ember.nn.functional.gelu(xe), torch.nn.functional.gelu(xt)
    ye.backward(ember.tensor(g))
    yt.backward(torch.tensor(g))
    eps = np.finfo(np.float32).eps
    a, b = ye.detach().numpy(), yt.detach().numpy()
    # both cancel in 1 + erf for x << 0, an absolute error of a few eps * |x|
    assert np.all(np.abs(a - b) <= 4 * eps * (np.abs(b) + np.abs(x)))
    ga, gb = xe.grad.numpy(), xt.grad.numpy()
    assert np.all(np.abs(ga - gb) <= 4 * eps * np.abs(g) * (1 + np.abs(x)))


def test_small_noncontiguous_and_other_dtypes_take_numpy():
    k = ck.unary("exp", lambda xp, x: "numpy", BOTH)
    for x in (np.ones(ck.MIN_SIZE - 1, np.float32), np.ones((ck.MIN_SIZE, 2), np.float32)[:, 0],
              np.ones(ck.MIN_SIZE, np.float16), np.ones(ck.MIN_SIZE, np.complex64)):
        assert k(np, x) == "numpy"
    assert ck.softmax(np.ones((64, 128), np.float32), 0, False) is None  # not the last dim
    assert ck.normalize(np.ones((64, 128), np.float32), (0,), 1e-5) is None  # not trailing


def _rows(dtype, shape=(37, 1031)):
    x = _inputs(int(np.prod(shape)), dtype).reshape(shape)
    x[3] = -np.inf  # an all -inf row
    x[5, 7] = np.nan
    x[6, 9] = np.inf
    x[8] = np.clip(x[8], -50, 50) * 30  # wide range: only the max survives
    return x


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows_match_numpy(dtype, log, monkeypatch):
    x = _rows(dtype)
    y = ck.softmax(x, 1, log, BOTH)
    monkeypatch.setattr(ck, "ENABLED", False)
    ref = (_log_softmax_kernel if log else _softmax_kernel)(np, x, 1)
    eps = np.finfo(dtype).eps
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))
    # the row sums differ by a few eps * log2(n) (SIMD lanes vs pairwise), which log_softmax
    # carries as an absolute error
    np.testing.assert_allclose(y, ref, rtol=8 * eps, atol=(32 if log else 8) * eps)


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("n", [5, 16, 67, 75, 1024])
def test_softmax_row_lengths_and_backward_match_numpy(dtype, log, n):
    # the row kernels reduce by vector lanes: rows shorter than a vector, whole vectors, a
    # few leftovers (scalar) and a partial last vector (overlapping the one before)
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((max(4096 // n + 1, 3), n)) * 4).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    y = ck.softmax(x, 1, log, BOTH)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    ref = e / e.sum(1, keepdims=True)
    if log:
        ref = np.log(ref)
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(y, ref, rtol=8 * eps, atol=(32 if log else 8) * eps)
    gx = ck.softmax_backward(g, y, 1, log, BOTH)
    y64, g64 = y.astype(np.float64), g.astype(np.float64)
    want = (g64 - np.exp(y64) * g64.sum(1, keepdims=True) if log
            else y64 * (g64 - (g64 * y64).sum(1, keepdims=True)))
    scale = np.abs(g64).sum(1, keepdims=True) * (np.exp(y64) if log else y64)
    assert np.all(np.abs(gx - want) <= 8 * eps * (scale + np.abs(g64)))


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dims", [((64, 129), (1,)), ((3, 40, 7, 11), (2, 3)),
                                        ((5000,), (0,))])
def test_normalize_matches_numpy(dtype, shape, dims, monkeypatch):
    x = (np.random.default_rng(1).standard_normal(shape) * 4 + 3).astype(dtype)
    got = ck.normalize(x, dims, 1e-5, BOTH)
    monkeypatch.setattr(ck, "ENABLED", False)
    ref = _normalize_kernel(np, x, dims, 1e-5)
    tol = 16 * np.finfo(dtype).eps
    for g, r in zip(got, ref):
        assert g.shape == r.shape and g.dtype == r.dtype
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol)


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dims", [((64, 129), (1,)), ((3, 40, 7, 11), (2, 3)),
                                        ((5000,), (0,))])
@pytest.mark.parametrize("stats", ["none", "mean", "rstd", "both", "zeros"])
def test_normalize_backward_matches_numpy(dtype, shape, dims, stats, monkeypatch):
    from ember.ops.nn.normalization import _normalize_backward_kernel
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(shape) * 4 + 3).astype(dtype)
    xhat, mean, rstd = ck.normalize(x, dims, 1e-5, BOTH)
    g = rng.standard_normal(shape).astype(dtype)
    gm = rng.standard_normal(mean.shape).astype(dtype) if stats in ("mean", "both") else None
    gr = rng.standard_normal(mean.shape).astype(dtype) if stats in ("rstd", "both") else None
    if stats == "zeros":  # what the engine passes for unused outputs: the terms are skipped
        gm, gr = np.zeros_like(mean), np.zeros_like(rstd)
    n = x.size // mean.size
    assert ck.normalize_backward(g, gm, gr, xhat, rstd, dims, BOTH) is not None
    got = _normalize_backward_kernel(np, g, gm, gr, xhat, rstd, dims, n)
    # a broadcast (non-contiguous) incoming gradient, as sum's backward gives, fits too
    ones = np.broadcast_to(np.ones((), dtype), shape)
    got_b = _normalize_backward_kernel(np, ones, gm, gr, xhat, rstd, dims, n)
    monkeypatch.setattr(ck, "ENABLED", False)
    ref = _normalize_backward_kernel(np, g, gm, gr, xhat, rstd, dims, n)
    ref_b = _normalize_backward_kernel(np, ones, gm, gr, xhat, rstd, dims, n)
    # the float64 truth of the formula, from the same xhat/rstd
    d64 = [a.astype(np.float64) for a in (g, xhat, rstd)]
    g64, xh64, r64 = d64
    truth = (g64 - g64.mean(dims, keepdims=True)
             - xh64 * (g64 * xh64).mean(dims, keepdims=True)) * r64
    if stats in ("mean", "both"):
        truth += gm.astype(np.float64) / n
    if stats in ("rstd", "both"):
        truth -= xh64 * (gr.astype(np.float64) * r64 * r64 / n)
    tol = 64 * np.finfo(dtype).eps * max(1.0, float(np.abs(truth).max()))
    for a, b in ((got, ref), (got_b, ref_b)):
        assert a.shape == b.shape == shape and a.dtype == b.dtype == dtype
        np.testing.assert_allclose(a, b, rtol=0, atol=tol)
    np.testing.assert_allclose(got, truth, rtol=0, atol=tol)


def _float64_gelu(x, tanh):
    return act._gelu_np(np, x.astype(np.float64), tanh)


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,tanh", [("gelu", False), ("gelu", True), ("silu", False)])
def test_activations_match_numpy(name, tanh, dtype, monkeypatch):
    x = _inputs(SIZES[1], dtype)
    g = np.random.default_rng(2).standard_normal(x.shape).astype(dtype)
    y = ck.activation(name, x, tanh, BOTH)
    gx = ck.activation_backward(name, g, x, tanh, BOTH)
    monkeypatch.setattr(ck, "ENABLED", False)
    fwd = act._gelu_np(np, x, tanh) if name == "gelu" else act._silu_np(np, x)
    xe, ge = ember.from_numpy(x), ember.from_numpy(g)
    vjp = act._gelu_vjp if name == "gelu" else (lambda c, g_, x_, t: act._silu_vjp(c, g_, x_))
    bwd = vjp(None, ge, xe, tanh).numpy()
    eps = np.finfo(dtype).eps
    # the NumPy forms cancel (1 + erf, 1 + tanh) for very negative x: an absolute tolerance
    # of a few eps covers that, relative 8 eps the rest
    np.testing.assert_allclose(y, fwd, rtol=8 * eps, atol=4 * eps)
    # near |x| ~ 5 the tanh form's 1 - t*t is resolved only to an ulp of t ~ +-1, so both
    # forms carry an absolute error of ~ eps * |g| * K/2 |x| (1 + 0.134 x^2) ~ 35 eps |g|
    np.testing.assert_allclose(gx, bwd, rtol=64 * eps, atol=(64 if tanh else 8) * eps *
                               np.abs(g).max())
    if name == "gelu" and dtype == np.float32:
        fine = np.isfinite(x)
        np.testing.assert_allclose(y[fine], _float64_gelu(x, tanh)[fine], rtol=4 * eps,
                                   atol=2 * eps)


# ---- the public operators against torch (large enough to take the C path) -------------------

def _pair(shape, seed=0, scale=3.0):
    a = (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)
    return ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("fn", [
    lambda L, x: L.softmax(x, dim=-1), lambda L, x: L.log_softmax(x, dim=-1),
    lambda L, x: L.exp(x), lambda L, x: L.log(x.abs() + 0.1), lambda L, x: L.sigmoid(x),
    lambda L, x: L.nn.functional.gelu(x), lambda L, x: L.nn.functional.gelu(x, approximate="tanh"),
    lambda L, x: L.nn.functional.silu(x),
    lambda L, x: L.nn.functional.layer_norm(x, (512,)),
    lambda L, x: L.nn.functional.group_norm(x.reshape(16, 8, 64), 4),
])
def test_ops_on_large_tensors_match_torch(fn):
    xe, xt = _pair((16, 512))
    ye, yt = fn(ember, xe), fn(torch, xt)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = np.random.default_rng(3).standard_normal(tuple(yt.shape)).astype(np.float32)
    ye.backward(ember.tensor(g))
    yt.backward(torch.tensor(g))
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_double_backward_still_recorded(approximate):
    xe, xt = _pair((8, 1024), scale=1.0)
    (ge,) = ember.autograd.grad(ember.nn.functional.gelu(xe, approximate=approximate).sum(), xe,
                                create_graph=True)
    (gt,) = torch.autograd.grad(torch.nn.functional.gelu(xt, approximate=approximate).sum(), xt,
                                create_graph=True)
    ge.sum().backward()
    gt.sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)


# ---- the builder (its cache, lock and damage cases: test_ckernels_cache.py) ----------------

@pytest.fixture
def unloaded(monkeypatch, tmp_path):
    """The eager kernels as in a process that has not tried to build them yet, with an empty
    cache (the loaded library and its state come back after the test), enabled even where
    the suite runs with EMBER_CKERNELS=0 (these tests are about the build)."""
    for name, value in (("_lib", None), ("_tried", False), ("_reason", None), ("_info", {}),
                        ("_fns", {}), ("ENABLED", True)):
        monkeypatch.setattr(ck, name, value)
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _softmax_sum():
    x = ember.tensor(np.linspace(-3, 3, 8192, dtype=np.float32).reshape(8, 1024))
    y = ember.softmax(x, dim=-1).numpy()
    np.testing.assert_allclose(y, torch.softmax(torch.from_numpy(x.numpy()), -1).numpy(),
                               rtol=1e-6, atol=1e-7)
    return float(y.sum())


def test_no_compiler_falls_back_silently(unloaded, tmp_path, monkeypatch):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    r = ck.status()
    assert not r["available"] and "no C compiler" in r["reason"]
    assert abs(_softmax_sum() - 8.0) < 1e-4
    monkeypatch.setattr(ck, "_tried", False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CC", "")
    r = ck.status()
    assert not r["available"] and "no C compiler" in r["reason"]
    assert not unloaded.exists()  # no cache made without a compiler


def test_failing_compiler_falls_back_silently(unloaded, tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "cc"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'broken compiler' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    r = ck.status()
    assert not r["available"] and "broken compiler" in r["reason"]
    assert ck._fn("ck_exp_f32", ck._types("c_void_p")) is None
    assert abs(_softmax_sum() - 8.0) < 1e-4
    # no temporary files left behind
    assert sorted(f for f in os.listdir(unloaded) if not f.endswith(".lock")) == []


@needs_c
def test_openmp_threads_give_the_same_results(monkeypatch):
    x = _rows(np.float32, (300, 1100))
    flat = x.ravel()
    one = [ck.softmax(x, 1, False), ck.normalize(x, (1,), 1e-5)[0],
           ck.unary("exp", None)(np, flat), ck.activation("gelu", flat)]
    monkeypatch.setattr(ck, "_threads", lambda n: 2)
    two = [ck.softmax(x, 1, False), ck.normalize(x, (1,), 1e-5)[0],
           ck.unary("exp", None)(np, flat), ck.activation("gelu", flat)]
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


@needs_c
def test_two_libraries_in_one_process_each_run_their_own_code(tmp_path, monkeypatch):
    # the loader names a library by /proc/self/fd/N: a reused N would hand back the first one
    from ember._core.ckernels import build as ckbuild
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    libs = [ckbuild.build(f"ember_two_{k}", f"int ck_abi(void) {{ return {k}; }}\n",
                          lambda lib, k=k: lib.ck_abi() == k)[0] for k in (41, 42, 43)]
    assert [lib.ck_abi() for lib in libs] == [41, 42, 43]


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("shape", [(1, 10), (67, 96), (20, 67), (40, 75)])
def test_cross_entropy_matches_numpy(dtype, reduction, weighted, smoothing, shape, monkeypatch):
    from ember.ops.nn.loss import _ce_grad_kernel, _ce_kernel
    rng = np.random.default_rng(4)
    N, C = shape
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    t = rng.integers(0, C, N)
    if N > 2:
        t[::7] = -100  # ignored rows, one of them with NaN logits (masked, so 0 loss)
        x[7, 3] = np.nan
        x[5, :] = -np.inf if N > 5 else x[5, :]
    w = rng.random(C).astype(dtype) + 0.5 if weighted else None
    g = rng.standard_normal(N).astype(dtype) if reduction == "none" else np.asarray(
        dtype(1.7))
    p = dict(ignore_index=-100, reduction=reduction, smoothing=smoothing)
    assert ck.cross_entropy(x, t, w, -100, smoothing) is not None
    assert ck.cross_entropy_grad(g, x, t, w, -100, reduction, smoothing) is not None
    got = _ce_kernel(np, x, t, w, **p), _ce_grad_kernel(np, g, x, t, w, **p)
    monkeypatch.setattr(ck, "ENABLED", False)
    ref = _ce_kernel(np, x, t, w, **p), _ce_grad_kernel(np, g, x, t, w, **p)
    tol = 64 * np.finfo(dtype).eps
    for a, b in zip(got, ref):
        assert a.shape == b.shape and a.dtype == b.dtype == dtype
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_cross_entropy_out_of_range_target_is_torchs_index_error():
    x = ember.randn(4, 5, requires_grad=True)
    for bad in (5, -1):
        t = ember.tensor([0, 1, bad, 2])
        with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
            ember.nn.functional.cross_entropy(x, t)
        with pytest.raises(IndexError):
            torch.nn.functional.cross_entropy(torch.randn(4, 5), torch.tensor([0, 1, bad, 2]))


@pytest.mark.parametrize("shape", [(3, 7), (1024, 96)])
def test_cross_entropy_values_and_grads_match_torch(shape):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    t = rng.integers(0, shape[1], shape[0])
    t[1] = -100
    w = (rng.random(shape[1]) + 0.5).astype(np.float32)
    for kw in ({}, {"weight": True, "label_smoothing": 0.2}, {"reduction": "sum"},
               {"reduction": "none", "label_smoothing": 0.05}):
        outs = []
        for lib in (ember, torch):
            xi = lib.tensor(x, requires_grad=True)
            args = dict(kw, weight=lib.tensor(w)) if "weight" in kw else kw
            loss = lib.nn.functional.cross_entropy(xi, lib.tensor(t), **args)
            (gx,) = lib.autograd.grad(loss.sum(), xi)
            outs.append((np.asarray(loss.detach().numpy()), gx.numpy()))
        for a, b in zip(*outs):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
