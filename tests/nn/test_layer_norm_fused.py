"""layer_norm with weight and bias as one op (torch's native_layer_norm: one forward pass,
one NativeLayerNormBackward0 node giving the input's, weight's and bias's gradients),
checked against torch: values and gradients over dtypes, shapes and thread counts,
gradients of a subset of inputs, the statistics outputs (differentiated, where torch drops
their gradients), double backward, in-place writes after the call, vmap with shared and
per-example parameters, modes (the composite), and the C kernels against the NumPy
composite."""
import numpy as np
import pytest
import torch

import ember
from ember._core.op import REGISTRY
from ember._core.ckernels import layer_norm as _layer_norm_c
from ember._core.ckernels import status as _ck_status
from ember.ops.nn.normalization import _normalize_kernel

CASES = [((16, 8, 32), (32,)), ((5, 7), (7,)), ((3, 4, 6), (4, 6)), ((200, 48), (48,)),
         ((6,), (6,)), ((0, 4), (4,))]


def _args(shape, ns, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype) * 3 + 1
    w = rng.standard_normal(ns).astype(dtype)
    b = rng.standard_normal(ns).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    return x, w, b, g


def _run(lib, x, w, b, g, ns, eps, need=(True, True, True)):
    ts = [lib.tensor(a, requires_grad=r) for a, r in zip((x, w, b), need)]
    y = lib.nn.functional.layer_norm(ts[0], ns, ts[1], ts[2], eps)
    y.backward(lib.tensor(g))
    return y, [t.grad for t in ts]


@pytest.mark.parametrize("dtype,tol", [(np.float32, 2e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("shape,ns", CASES)
def test_values_and_gradients_match_torch(shape, ns, dtype, tol):
    x, w, b, g = _args(shape, ns, dtype)
    ye, ge = _run(ember, x, w, b, g, ns, 1e-5)
    yt, gt = _run(torch, x, w, b, g, ns, 1e-5)
    assert ye.grad_fn.name() == "NativeLayerNormBackward0"
    assert ye.dtype == getattr(ember, np.dtype(dtype).name)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=tol, atol=tol)
    for a, c in zip(ge, gt):
        np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("threads", [1, 2])
def test_thread_count_does_not_change_values(threads):
    # rows over several gradient blocks and above the threads' size threshold
    x, w, b, g = _args((3000, 96), (96,), np.float32, seed=3)
    prev = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        y1, g1 = _run(ember, x, w, b, g, (96,), 1e-5)
        ember.set_num_threads(threads)
        y2, g2 = _run(ember, x, w, b, g, (96,), 1e-5)
    finally:
        ember.set_num_threads(prev)
    np.testing.assert_array_equal(y1.detach().numpy(), y2.detach().numpy())
    for a, c in zip(g1, g2):
        np.testing.assert_array_equal(a.numpy(), c.numpy())
    yt, gt = _run(torch, x, w, b, g, (96,), 1e-5)
    for a, c in zip(g2, gt):
        np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("need", [(True, False, False), (False, True, False),
                                  (False, False, True), (False, True, True)])
def test_gradients_of_some_inputs(need):
    x, w, b, g = _args((9, 70, 16), (16,), np.float64, seed=1)
    _, ge = _run(ember, x, w, b, g, (16,), 1e-5, need)
    _, gt = _run(torch, x, w, b, g, (16,), 1e-5, need)
    for a, c, r in zip(ge, gt, need):
        assert (a is None) == (not r)
        if r:
            np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=1e-11, atol=1e-11)


def test_statistics_outputs_and_their_gradients():
    # torch's native_layer_norm drops the statistics' gradients; ember's op differentiates
    # them, checked against torch autograd through the formula
    x, w, b, g = _args((4, 5, 6), (6,), np.float64, seed=2)
    rng = np.random.default_rng(5)
    gm, gr = rng.standard_normal((4, 5, 1)), rng.standard_normal((4, 5, 1))
    te = [ember.tensor(a, requires_grad=True) for a in (x, w, b)]
    tt = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    oe = REGISTRY["native_layer_norm"](*te, normalized_shape=(6,), eps=1e-5)
    mean = tt[0].mean(-1, keepdim=True)
    rstd = 1 / torch.sqrt(((tt[0] - mean) ** 2).mean(-1, keepdim=True) + 1e-5)
    ot = ((tt[0] - mean) * rstd * tt[1] + tt[2], mean, rstd)
    assert tuple(torch.native_layer_norm(tt[0], (6,), tt[1], tt[2], 1e-5)[1].shape) == (4, 5, 1)
    for a, c in zip(oe, ot):
        np.testing.assert_allclose(a.detach().numpy(), c.detach().numpy(), rtol=1e-12, atol=1e-12)
    for lib, o in ((ember, oe), (torch, ot)):
        ((o[0] * lib.tensor(g)).sum() + (o[1] * lib.tensor(gm)).sum()
         + (o[2] * lib.tensor(gr)).sum()).backward()
    for a, c in zip(te, tt):
        np.testing.assert_allclose(a.grad.numpy(), c.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_double_backward_matches_torch():
    x, w, b, g = _args((3, 4, 5), (5,), np.float64, seed=4)
    res = []
    for lib in (ember, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = lib.nn.functional.layer_norm(ts[0], (5,), ts[1], ts[2])
        grads = lib.autograd.grad((y * lib.tensor(g)).sum(), ts, create_graph=True)
        sum((q * q).sum() for q in grads).backward()
        res.append([None if t.grad is None else t.grad.numpy() for t in ts])
    for a, c in zip(*res):
        assert (a is None) == (c is None)
        if a is not None:
            np.testing.assert_allclose(a, c, rtol=1e-9, atol=1e-9)


def test_in_place_write_of_the_output_is_allowed():
    # torch saves the input, weight, mean and rstd, not the output
    x, w, b, g = _args((4, 6), (6,), np.float64)
    res = []
    for lib in (ember, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = lib.nn.functional.layer_norm(ts[0], (6,), ts[1], ts[2])
        y.mul_(2)
        y.backward(lib.tensor(g))
        res.append([t.grad.numpy() for t in ts])
    for a, c in zip(*res):
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)


def test_modified_input_raises_as_torch():
    x, w, b, g = _args((4, 6), (6,), np.float64)
    for lib in (ember, torch):
        xt = lib.tensor(x, requires_grad=True)
        h = xt * 1
        y = lib.nn.functional.layer_norm(h, (6,), lib.tensor(w, requires_grad=True),
                                         lib.tensor(b))
        h.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward(lib.tensor(g))


@pytest.mark.parametrize("per_example", [False, True])
def test_vmap_matches_torch(per_example):
    x, w, b, _ = _args((3, 4, 5), (5,), np.float64)
    rng = np.random.default_rng(7)
    wb = rng.standard_normal((3, 5)) if per_example else w
    bb = rng.standard_normal((3, 5)) if per_example else b
    dims = (0, 0, 0) if per_example else (0, None, None)
    res = []
    for lib in (ember, torch):
        f = lib.func.vmap(lambda a, c, d, lib=lib: lib.nn.functional.layer_norm(a, (5,), c, d),
                          in_dims=dims)
        res.append(f(lib.tensor(x), lib.tensor(wb), lib.tensor(bb)).numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("per_example", [False, True])
def test_batch_rule_called_directly(per_example):
    op = REGISTRY["native_layer_norm"]
    x, w, b, _ = _args((3, 4, 5), (5,), np.float64)
    rng = np.random.default_rng(8)
    W = rng.standard_normal((3, 5)) if per_example else w
    B = rng.standard_normal((3, 5)) if per_example else b
    bd = (0, 0, 0) if per_example else (0, None, None)
    outs, out_dims = op.batch(op, (ember.tensor(x), ember.tensor(W), ember.tensor(B)), bd,
                              {"normalized_shape": (5,), "eps": 1e-5}, 3)
    assert list(out_dims) == [0, 0, 0]
    for i in range(3):
        wi, bi = (W[i], B[i]) if per_example else (w, b)
        want = torch.native_layer_norm(torch.tensor(x[i]), (5,), torch.tensor(wi),
                                       torch.tensor(bi), 1e-5)
        for o, c in zip(outs, want):
            np.testing.assert_allclose(o[i].numpy(), c.numpy(), rtol=1e-12, atol=1e-12)


def test_modes_see_the_composite_and_compile_matches():
    x, w, b, g = _args((4, 6), (6,), np.float32)
    ln = ember.nn.LayerNorm(6)
    with ember.no_grad():
        ln.weight.copy_(ember.tensor(w))
        ln.bias.copy_(ember.tensor(b))
    eager = ln(ember.tensor(x))
    compiled = ember.compile(ln)(ember.tensor(x))
    np.testing.assert_allclose(compiled.detach().numpy(), eager.detach().numpy(), rtol=1e-6,
                               atol=1e-6)
    gm = ember.fx.symbolic_trace(ln) if hasattr(ember.fx, "symbolic_trace") else None
    assert gm is None or "layer_norm" in gm.code


def test_mixed_half_input_and_missing_affine_keep_the_composite():
    x, w, b, g = _args((4, 6), (6,), np.float32)
    y = ember.nn.functional.layer_norm(ember.tensor(x, requires_grad=True), (6,),
                                       ember.tensor(w, requires_grad=True))
    assert y.grad_fn.name() != "NativeLayerNormBackward0"
    xb = ember.tensor(x).to(ember.bfloat16).requires_grad_(True)
    yb = ember.nn.functional.layer_norm(xb, (6,), ember.tensor(w), ember.tensor(b))
    tb = torch.nn.functional.layer_norm(torch.tensor(x).to(torch.bfloat16), (6,),
                                        torch.tensor(w), torch.tensor(b))
    assert yb.dtype == ember.bfloat16
    np.testing.assert_allclose(yb.float().detach().numpy(), tb.float().numpy(), rtol=2e-2,
                               atol=2e-2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_c_kernels_against_the_numpy_composite(dtype):
    x, w, b, g = _args((130, 3, 40), (40,), dtype, seed=9)
    fused = _layer_norm_c.forward(x, w, b, 1, 1e-5)
    assert fused is not None, f"the C kernels are unavailable: {_ck_status()}"
    xhat, mean, rstd = _normalize_kernel(np, x, (2,), 1e-5)
    np.testing.assert_array_equal(fused[0], b + xhat * w)  # bit for bit the composite's
    np.testing.assert_array_equal(fused[1], mean)
    np.testing.assert_array_equal(fused[2], rstd)
    gx, gw, gb = _layer_norm_c.backward(g, x, w, mean, rstd, True, True, True)
    gh = g * w
    want = (gh - gh.mean(-1, keepdims=True) - xhat * (gh * xhat).mean(-1, keepdims=True)) * rstd
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(gx, want, rtol=tol, atol=tol)
    np.testing.assert_allclose(gw, (g * xhat).reshape(-1, 40).sum(0), rtol=tol, atol=tol * 10)
    np.testing.assert_allclose(gb, g.reshape(-1, 40).sum(0), rtol=tol, atol=tol * 10)
    assert gw.dtype == gb.dtype == gx.dtype == dtype
    # arrays that do not fit (strided, mixed dtypes) are declined
    assert _layer_norm_c.forward(x[:, :, ::2], w[::2], b[::2], 1, 1e-5) is None
    assert _layer_norm_c.forward(x, w.astype(np.float16), b, 1, 1e-5) is None


@pytest.mark.parametrize("shape", [(3, 8), (5, 64), (600, 8), (40, 128)])
def test_eager_equals_the_decomposition_exported_graphs_run(shape):
    """Eager layer_norm keeps the values of the composite (normalize + addcmul) that compiled
    and exported graphs run, at every size (small ones run the composite's NumPy sums)."""
    from ember._core.dispatch import apply
    from ember.ops.nn.normalization import NORMALIZE
    rng = np.random.default_rng(sum(shape))
    x, w, b = (ember.from_numpy(rng.standard_normal(s).astype(np.float32))
               for s in (shape, shape[-1:], shape[-1:]))
    y = ember.nn.functional.layer_norm(x, shape[-1:], w, b)
    z = ember.addcmul(b, apply(NORMALIZE, (x,), {"dims": (1,), "eps": 1e-5})[0], w)
    np.testing.assert_array_equal(y.numpy(), z.numpy())
