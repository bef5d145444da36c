"""The convolution operators (ember.ops.nn.conv_ops / conv_nd) against torch.

Forward and backward values of every variant (1-3 spatial dims, stride, padding incl.
'same'/'valid', dilation, groups, transposed with output_padding, unbatched, bias None),
float64 gradcheck and double backward, vmap per-sample gradients of a small CNN against a
loop and torch.func, forward-mode AD, the C window kernels against their NumPy fallback,
half dtypes, errors, and the exported graph (one ``conv2d`` node; ``convolution`` after
decomposition)."""
import numpy as np
import pytest
import torch

import ember
import ember.func as ef
import ember.nn.functional as F
from ember._core.ckernels import conv as ck
from ember.ops.nn import conv_kernels, conv_ops

TF = torch.nn.functional
RNG = np.random.default_rng(0)


def _arr(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _pair(a, grad=True):
    return (ember.from_numpy(a.copy()).requires_grad_(grad),
            torch.from_numpy(a.copy()).requires_grad_(grad))


# name, input shape, weight shape, bias?, kwargs
CASES = [
    ("conv1d", (2, 4, 9), (6, 2, 3), True, dict(stride=2, padding=1, groups=2)),
    ("conv1d", (3, 8), (5, 3, 2), False, dict(padding="same", dilation=3)),
    ("conv1d", (2, 3, 8), (4, 3, 1), True, {}),
    ("conv2d", (2, 3, 7, 6), (4, 3, 3, 2), True, dict(stride=(2, 1), padding=1,
                                                      dilation=(1, 2))),
    ("conv2d", (2, 4, 7, 6), (6, 2, 3, 3), True, dict(groups=2, padding="same")),
    ("conv2d", (4, 7, 6), (6, 4, 2, 2), False, dict(padding="same")),
    ("conv2d", (1, 3, 5, 5), (2, 3, 5, 5), True, dict(padding="valid")),
    ("conv2d", (3, 4, 6, 6), (4, 1, 3, 3), False, dict(groups=4, stride=2, padding=(0, 1))),
    ("conv2d", (40, 2, 5, 4), (3, 2, 2, 2), True, dict(padding=1)),      # batch-inside layout
    ("conv2d", (2, 9, 7, 6), (8, 9, 3, 3), True, dict(padding=1)),       # direct kernels
    ("conv2d", (9, 5, 5), (8, 9, 3, 3), False, {}),                      # direct, odd sizes
    ("conv_transpose2d", (2, 8, 4, 5), (8, 3, 3, 3), True, dict(padding=1)),  # direct
    ("conv3d", (2, 2, 5, 4, 5), (3, 2, 2, 3, 2), True, dict(stride=2, padding=(1, 0, 1))),
    ("conv3d", (2, 4, 4, 3), (2, 2, 2, 2, 2), False, dict(padding="same")),
    ("conv_transpose1d", (2, 4, 5), (4, 3, 3), False, dict(output_padding=1, dilation=2)),
    ("conv_transpose2d", (2, 4, 5, 4), (4, 3, 3, 2), True, dict(stride=2, padding=1,
                                                                output_padding=1, groups=2)),
    ("conv_transpose2d", (3, 4, 3), (3, 2, 2, 2), True, dict(stride=(1, 2))),
    ("conv_transpose3d", (2, 2, 3, 4, 3), (2, 3, 2, 2, 3), True, dict(stride=(1, 2, 2),
                                                                      output_padding=(0, 1, 1))),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


def _bias_size(name, ws, kw):
    return ws[1] * kw.get("groups", 1) if "transpose" in name else ws[0]


# torch warns that it pads a copy for 'same' with an even kernel (ember pads by one op too)
_SAME_WARNING = pytest.mark.filterwarnings("ignore:Using padding='same':UserWarning")


@_SAME_WARNING
@pytest.mark.parametrize("name,xs,ws,bias,kw", CASES, ids=IDS)
def test_forward_and_backward_match_torch(name, xs, ws, bias, kw):
    arrays = [_arr(*xs), _arr(*ws)] + ([_arr(_bias_size(name, ws, kw))] if bias else [])
    pairs = [_pair(a) for a in arrays]
    ye = getattr(F, name)(*[p[0] for p in pairs], **kw)
    yt = getattr(TF, name)(*[p[1] for p in pairs], **kw)
    assert tuple(ye.shape) == tuple(yt.shape)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-10)
    g = _arr(*yt.shape)
    ye.backward(ember.from_numpy(g))
    yt.backward(torch.from_numpy(g))
    for (e, t) in pairs:
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-9)


@_SAME_WARNING
@pytest.mark.parametrize("name,xs,ws,bias,kw", CASES, ids=IDS)
def test_float32_matches_torch_and_the_numpy_fallback(name, xs, ws, bias, kw, monkeypatch):
    arrays = [_arr(*xs, dtype=np.float32), _arr(*ws, dtype=np.float32)] + (
        [_arr(_bias_size(name, ws, kw), dtype=np.float32)] if bias else [])
    g = _arr(*getattr(TF, name)(*[torch.from_numpy(a) for a in arrays], **kw).shape,
             dtype=np.float32)

    def run(lib):
        ts = [lib.from_numpy(a.copy()).requires_grad_(True) for a in arrays]
        y = getattr(lib.nn.functional, name)(*ts, **kw)
        y.backward(lib.from_numpy(g))
        return [y.detach().numpy()] + [t.grad.numpy() for t in ts]
    want = run(torch)
    with_c = run(ember)
    monkeypatch.setattr(ck, "ENABLED", False)
    numpy_only = run(ember)
    for a, b, c in zip(with_c, numpy_only, want):
        np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("wide", [False, True])
def test_both_column_layouts_give_the_same_gradients(wide, monkeypatch):
    x, w, b = _arr(3, 4, 6, 5), _arr(6, 2, 3, 2), _arr(6)
    monkeypatch.setattr(conv_kernels, "WIDE", wide)
    pairs = [_pair(a) for a in (x, w, b)]
    ye = F.conv2d(*[p[0] for p in pairs], stride=(1, 2), padding=(2, 1), groups=2)
    yt = TF.conv2d(*[p[1] for p in pairs], stride=(1, 2), padding=(2, 1), groups=2)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), atol=1e-10)
    ye.sum().backward()
    yt.sum().backward()
    for e, t in pairs:
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-9)


@pytest.mark.parametrize("xs,ws,kw", [((5, 4, 9, 8), (6, 2, 3, 2), dict(stride=(1, 2),
                                                                       padding=(2, 1), groups=2)),
                                       ((3, 3, 20), (4, 3, 5), dict(padding=2, dilation=2))])
def test_forward_in_batch_blocks_equals_the_whole_batch(xs, ws, kw, monkeypatch):
    # the per-example column layout filled one and two examples at a time (the last block
    # shorter): the same output as the whole batch's buffer, and torch's
    x, w, b = _arr(*xs), _arr(*ws), _arr(ws[0])
    n = len(xs) - 2
    monkeypatch.setattr(conv_kernels, "WIDE", False)
    monkeypatch.setattr(conv_kernels, "DIRECT", False)  # stride 1 would take the direct kernel

    def run():
        return getattr(F, f"conv{n}d")(*(ember.from_numpy(a) for a in (x, w, b)), **kw).numpy()
    whole = run()
    per = xs[1] * int(np.prod(ws[2:])) * int(np.prod(whole.shape[2:])) * x.itemsize
    got = []
    for nb in (1, 2):
        monkeypatch.setattr(conv_kernels, "COLS_BLOCK_BYTES", nb * per)
        assert conv_kernels._batch_block(x, ws[2:], whole.shape[2:], (1,) * n,
                                         ((1, 1),) * n, False) == nb
        got.append(run())
    want = getattr(TF, f"conv{n}d")(*(torch.from_numpy(a) for a in (x, w, b)), **kw).numpy()
    for g in got:
        np.testing.assert_allclose(g, whole, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(whole, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name,xs,ws,bias,kw", [CASES[i] for i in (0, 4, 9, 12, 15, 17)],
                         ids=[IDS[i] for i in (0, 4, 9, 12, 15, 17)])
def test_gradcheck_and_gradgradcheck(name, xs, ws, bias, kw):
    small = tuple(max(1, s - 1) if i >= 2 else s for i, s in enumerate(xs))
    if "transpose" not in name and len(small) == len(xs):
        small = xs
    arrays = [_arr(*small), _arr(*ws)] + ([_arr(_bias_size(name, ws, kw))] if bias else [])
    ts = tuple(ember.from_numpy(a).requires_grad_(True) for a in arrays)
    fn = lambda *a: getattr(F, name)(*a, **kw)  # noqa: E731
    assert ember.autograd.gradcheck(fn, ts)
    assert ember.autograd.gradgradcheck(fn, ts)


def test_double_backward_matches_torch():
    x, w, b = _arr(2, 3, 6, 5), _arr(4, 3, 3, 2), _arr(4)
    (xe, xt), (we, wt), (be, bt) = _pair(x), _pair(w), _pair(b)
    res = []
    for lib, (X, W, B) in ((ember, (xe, we, be)), (torch, (xt, wt, bt))):
        y = lib.nn.functional.conv2d(X, W, B, stride=2, padding=1).tanh()
        gx, gw, gb = lib.autograd.grad(y.sum(), (X, W, B), create_graph=True)
        (gx.pow(2).sum() + (gw * gw.sin()).sum() + gb.pow(3).sum()).backward()
        res.append([X.grad.numpy(), W.grad.numpy(), B.grad.numpy()])
    for a, c in zip(*res):
        np.testing.assert_allclose(a, c, rtol=1e-8, atol=1e-9)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_forward_mode_matches_torch():
    x, w, b, tx, tw, tb = _arr(2, 3, 6, 5), _arr(4, 3, 3, 2), _arr(4), _arr(2, 3, 6, 5), \
        _arr(4, 3, 3, 2), _arr(4)
    ye, je = ef.jvp(lambda a, c, d: F.conv2d(a, c, d, padding=1),
                    tuple(ember.from_numpy(v) for v in (x, w, b)),
                    tuple(ember.from_numpy(v) for v in (tx, tw, tb)))
    yt, jt = torch.func.jvp(lambda a, c, d: TF.conv2d(a, c, d, padding=1),
                            tuple(torch.from_numpy(v) for v in (x, w, b)),
                            tuple(torch.from_numpy(v) for v in (tx, tw, tb)))
    np.testing.assert_allclose(je.numpy(), jt.numpy(), rtol=1e-10, atol=1e-10)


def _cnn(lib, params, x):
    F_ = lib.nn.functional
    h = F_.conv2d(x, params["c1"], params["b1"], padding=1).relu()
    h = F_.conv2d(h, params["c2"], None, stride=2, groups=2)
    return F_.linear(h.flatten(), params["fc"]).sum()


def test_vmap_per_sample_grads_equal_a_loop_and_torch_func():
    shapes = {"c1": (4, 2, 3, 3), "b1": (4,), "c2": (4, 2, 2, 2), "fc": (1, 4 * 3 * 3)}
    params = {k: _arr(*s) for k, s in shapes.items()}
    xs = _arr(5, 2, 6, 6)  # 5 examples, each unbatched (C, H, W)
    pe = {k: ember.from_numpy(v) for k, v in params.items()}
    pt = {k: torch.from_numpy(v) for k, v in params.items()}
    ge = ef.vmap(ef.grad(lambda p, x: _cnn(ember, p, x)), in_dims=(None, 0))(
        pe, ember.from_numpy(xs))
    gt = torch.func.vmap(torch.func.grad(lambda p, x: _cnn(torch, p, x)), in_dims=(None, 0))(
        pt, torch.from_numpy(xs))
    for i in range(xs.shape[0]):
        loop = ef.grad(lambda p: _cnn(ember, p, ember.from_numpy(xs[i])))(pe)
        for k in shapes:
            np.testing.assert_allclose(ge[k][i].numpy(), loop[k].numpy(), atol=1e-10)
    for k in shapes:
        np.testing.assert_allclose(ge[k].numpy(), gt[k].numpy(), rtol=1e-9, atol=1e-10)


def test_vmap_of_transposed_convolution_with_per_example_weights():
    x, w, b = _arr(3, 2, 4, 5, 4), _arr(3, 4, 3, 2, 2), _arr(3, 6)
    f = lambda a, c, d: F.conv_transpose2d(a, c, d, stride=2, groups=2,  # noqa: E731
                                           output_padding=1)
    got = ef.vmap(f)(*(ember.from_numpy(v) for v in (x, w, b)))
    want = torch.func.vmap(lambda a, c, d: TF.conv_transpose2d(a, c, d, stride=2, groups=2,
                                                               output_padding=1))(
        *(torch.from_numpy(v) for v in (x, w, b)))
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-10)


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
def test_half_dtypes_compute_in_float32(dtype):
    x, w, b = _arr(2, 3, 6, 6), _arr(4, 3, 3, 3), _arr(4)
    te = [ember.from_numpy(a).to(dtype).requires_grad_(True) for a in (x, w, b)]
    tdt = getattr(torch, str(dtype).split(".")[-1])
    tt = [torch.from_numpy(a).to(tdt).requires_grad_(True) for a in (x, w, b)]
    ye, yt = F.conv2d(*te, padding=1), TF.conv2d(*tt, padding=1)
    assert ye.dtype == dtype
    np.testing.assert_allclose(ye.float().detach().numpy(), yt.float().detach().numpy(),
                               rtol=2e-2, atol=5e-2)
    ye.sum().backward()
    yt.sum().backward()
    for e, t in zip(te, tt):
        assert e.grad.dtype == dtype
        np.testing.assert_allclose(e.grad.float().numpy(), t.grad.float().numpy(), rtol=2e-2,
                                   atol=1e-1)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8", "complex64",
                                   "complex128"])
@pytest.mark.parametrize("name,xs,ws,kw", [
    ("conv1d", (2, 4, 7), (6, 2, 3), dict(groups=2, stride=2)),
    ("conv2d", (2, 4, 6, 5), (6, 4, 3, 2), dict(padding=1, dilation=(1, 2))),
    ("conv3d", (1, 2, 4, 3, 4), (3, 2, 2, 2, 2), dict(padding="same")),
    ("conv_transpose2d", (2, 4, 3, 4), (4, 3, 2, 2), dict(stride=2, groups=2)),
])
def test_integer_and_complex_match_torch(dtype, name, xs, ws, kw):
    """torch computes integer convolutions on CPU (wrapping in the dtype; int64 only when
    dilated or transposed, never bool) and complex ones: the same values or errors."""
    if dtype.startswith("complex"):
        x, w = (_arr(*s) + 1j * _arr(*s) for s in (xs, ws))
    else:
        x, w = (RNG.integers(-100, 100, s) for s in (xs, ws))
    x, w = x.astype(dtype), w.astype(dtype)
    try:
        want = getattr(TF, name)(torch.from_numpy(x), torch.from_numpy(w), **kw)
    except NotImplementedError as e:
        with pytest.raises(NotImplementedError, match=str(e).replace('"', '.')[:40]):
            getattr(F, name)(ember.from_numpy(x), ember.from_numpy(w), **kw)
        return
    got = getattr(F, name)(ember.from_numpy(x), ember.from_numpy(w), **kw)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-4)


def test_complex_gradients_match_torch():
    x, w, b = (_arr(*s) + 1j * _arr(*s) for s in ((2, 4, 6, 5), (6, 2, 3, 2), (6,)))
    res = []
    for lib in (ember, torch):
        ts = [lib.from_numpy(a.copy()).requires_grad_(True) for a in (x, w, b)]
        y = lib.nn.functional.conv2d(*ts, groups=2, padding=1)
        (y * y.conj()).real.sum().backward()
        res.append([t.grad.numpy() for t in ts])
    for a, c in zip(*res):
        np.testing.assert_allclose(a, c, rtol=1e-9, atol=1e-9)


def test_aten_convolution_matches_torch():
    x, w, b = _arr(2, 4, 3, 4), _arr(4, 3, 3, 2), _arr(6)
    args = ((2, 2), (1, 0), (1, 1), True, (1, 0), 2)
    got = ember.convolution(*(ember.from_numpy(v) for v in (x, w, b)), *args)
    want = torch.convolution(*(torch.from_numpy(v) for v in (x, w, b)), *args)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-10)


@pytest.mark.parametrize("call", [
    lambda lib, x, w: lib.nn.functional.conv2d(x, w[:, :2]),                # channels
    lambda lib, x, w: lib.nn.functional.conv2d(x, w, stride=0),
    lambda lib, x, w: lib.nn.functional.conv2d(x, w, padding=-1),
    lambda lib, x, w: lib.nn.functional.conv2d(x, w, padding="same", stride=2),
    lambda lib, x, w: lib.nn.functional.conv2d(x, w, padding="full"),
    lambda lib, x, w: lib.nn.functional.conv2d(x.bool(), w.bool()),          # bool
    lambda lib, x, w: lib.nn.functional.conv_transpose2d(x.int(), w.int()),  # int32 transposed
    lambda lib, x, w: lib.nn.functional.conv2d(x[..., :2, :2], w),           # kernel too big
    lambda lib, x, w: lib.nn.functional.conv2d(x[0, 0], w),                  # 2-d input
    lambda lib, x, w: lib.nn.functional.conv2d(x, w, lib.zeros(3, dtype=x.dtype)),  # bias
    lambda lib, x, w: lib.nn.functional.conv2d(x, w.double()),               # mixed dtypes
    lambda lib, x, w: lib.nn.functional.conv_transpose2d(x, w, output_padding=2),
])
def test_errors_match_torch(call):
    x, w = _arr(1, 3, 5, 5, dtype=np.float32), _arr(4, 3, 3, 3, dtype=np.float32)
    with pytest.raises(Exception) as t_exc:
        call(torch, torch.from_numpy(x), torch.from_numpy(w))
    with pytest.raises(type(t_exc.value)):
        call(ember, ember.from_numpy(x), ember.from_numpy(w))


def test_export_shows_one_conv2d_and_decomposes_to_convolution():
    from ember.export import export
    mod = ember.nn.Conv2d(3, 4, 3, padding=1)
    ep = export(mod, (ember.randn(2, 3, 5, 5),))
    names = [getattr(n.target, "name", None) for n in ep.graph.nodes if n.op == "call_function"]
    assert names == ["conv2d"]
    conv2d = ember._core.op.REGISTRY["conv2d"]
    dec = ep.run_decompositions({conv2d: conv2d.decomp})
    names = [getattr(n.target, "name", None) for n in dec.graph.nodes
             if n.op == "call_function"]
    assert "convolution" in names and "conv2d" not in names
    x = ember.randn(2, 3, 5, 5)
    np.testing.assert_allclose(dec.module()(x).detach().numpy(), mod(x).detach().numpy(),
                               atol=1e-5)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_int64_avg_pool_matches_torch(n):
    """torch pools int64 (a wrapping window sum divided toward zero); ember as well."""
    for kw in (dict(kernel_size=2), dict(kernel_size=3, padding=1, count_include_pad=False),
               dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)) + (
            (dict(kernel_size=2, divisor_override=-3),) if n > 1 else ()):
        x = RNG.integers(-1000, 1000, (2, 3) + (7, 6, 5)[:n])
        x.reshape(-1)[:3] = [2 ** 62, 2 ** 62, -2 ** 63]
        want = getattr(TF, f"avg_pool{n}d")(torch.from_numpy(x), **kw)
        got = getattr(F, f"avg_pool{n}d")(ember.from_numpy(x), **kw)
        assert got.dtype == ember.int64
        np.testing.assert_array_equal(got.numpy(), want.numpy())


# the direct stride-1 kernels (ember._core.ckernels.conv.direct_conv/direct_weight_grad):
# widths that are not a multiple of the vector or position block, output channels not a
# multiple of the register block, groups, dilation, asymmetric padding, 1-d, padding past
# the kernel's reach (the input gradient then takes the column route), rows stored without
# their right padding
DIRECT_CASES = [
    ((3, 5, 7, 13), (11, 5, 3, 3), dict(padding=1)),
    ((2, 6, 9, 4), (4, 3, 2, 3), dict(padding=(2, 0), dilation=(2, 1), groups=2)),
    ((2, 3, 5, 17), (9, 3, 1, 5), dict(padding=(0, 3))),
    ((4, 4, 30), (10, 2, 4), dict(padding=3, dilation=2, groups=2)),
    ((1, 2, 3, 3), (3, 2, 3, 3), dict(padding=3)),
    ((2, 33, 8, 8), (17, 33, 3, 3), dict(padding=1)),
    # rows stored without their right padding (ckernels.conv._row_width), dilated; 1-d
    ((2, 3, 6, 7), (4, 3, 3, 3), dict(padding=(1, 2), dilation=(1, 2))),
    ((2, 3, 11), (4, 3, 5), dict(padding=2)),
    ((2, 3, 6, 9), (4, 3, 3, 4), dict(padding="same")),  # W padded (1, 2): stored
]


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")  # torch's
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,kw", DIRECT_CASES)
def test_direct_kernels_match_torch_and_the_column_route(xs, ws, kw, dtype, monkeypatch):
    name = f"conv{len(xs) - 2}d"
    arrays = [_arr(*xs, dtype=dtype), _arr(*ws, dtype=dtype), _arr(ws[0], dtype=dtype)]
    yt = getattr(TF, name)(*[torch.from_numpy(a) for a in arrays], **kw)
    g = _arr(*yt.shape, dtype=dtype)
    calls = []

    def spy(*args, _real, _name, **kwargs):
        out = _real(*args, **kwargs)
        if out is not None:
            calls.append(_name)
        return out
    for fn in ("direct_conv", "direct_weight_grad"):
        monkeypatch.setattr(ck, fn, lambda *a, _f=getattr(ck, fn), _n=fn, **k:
                            spy(*a, _real=_f, _name=_n, **k))
    # the kernels on these shapes whatever they waste (the column route is faster for some)
    monkeypatch.setattr(ck, "MAX_WASTE", dict.fromkeys(ck.MAX_WASTE, float("inf")))

    def run(lib):
        ts = [lib.from_numpy(a.copy()).requires_grad_(True) for a in arrays]
        y = getattr(lib.nn.functional, name)(*ts, **kw)
        y.backward(lib.from_numpy(g))
        return [y.detach().numpy()] + [t.grad.numpy() for t in ts]
    want, direct = run(torch), run(ember)
    # forward, input gradient (unless the padding exceeds the kernel's reach), weight gradient
    assert calls.count("direct_conv") == (1 if kw["padding"] == 3 and len(xs) == 4 else 2)
    assert calls.count("direct_weight_grad") == 1
    monkeypatch.setattr(conv_kernels, "DIRECT", False)
    columns = run(ember)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for a, b, c in zip(direct, columns, want):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, c, rtol=tol, atol=tol)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_direct_kernels_give_the_same_values_on_two_threads():
    x, w, g = _arr(4, 16, 20, 20), _arr(24, 16, 3, 3), _arr(4, 24, 20, 20)
    sc = (lambda slot, shape, dtype: np.empty(shape, dtype))
    pad = ((1, 1), (1, 1))
    prev = ember.get_num_threads()
    out = []
    try:
        for n in (1, 2):
            ember.set_num_threads(n)
            out.append((ck.direct_conv(x, w, None, pad, (1, 1), 1, sc),
                        ck.direct_weight_grad(x, g, (3, 3), pad, (1, 1), 1, sc)))
    finally:
        ember.set_num_threads(prev)
    want_y = TF.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1).numpy()
    want_w = torch.nn.grad.conv2d_weight(torch.from_numpy(x), w.shape, torch.from_numpy(g),
                                         padding=1).numpy()
    for y, gw in out:
        np.testing.assert_allclose(y, want_y, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(gw, want_w, rtol=1e-10, atol=1e-10)


# the direct weight gradient of a large convolution is cut into work items (chunks of the
# batch, then of the input channels) whose partial sums are added in a fixed order: ragged
# chunks (37 examples; 23 input channels in chunks of 2; both) give torch's values, and the same bits at 1 and 2
# threads and from run to run
@pytest.mark.parametrize("xs,ws,pad,split", [
    ((37, 1, 28, 28), (6, 1, 5, 5), 2, (True, False)),    # LeNet's first layer
    ((1, 23, 48, 48), (8, 23, 3, 3), 1, (False, True)),   # one example
    ((5, 16, 20, 20), (32, 16, 3, 3), 1, (True, True)),
])
@pytest.mark.parametrize("vec", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_direct_weight_grad_chunks_give_torchs_values_and_fixed_bits(xs, ws, pad, split,
                                                                      dtype, vec, monkeypatch):
    # vec: the chunks' vector accumulators summed (small layers), else their lane sums
    monkeypatch.setattr(ck, "WGRAD_VEC_BYTES", ck.WGRAD_VEC_BYTES if vec else -1)
    x, w = _arr(*xs, dtype=dtype), _arr(*ws, dtype=dtype)
    yt = TF.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=pad)
    g = _arr(*yt.shape, dtype=dtype)
    macs = int(np.prod(ws)) * xs[0] * yt.shape[2] * yt.shape[3]
    OB = ck._blocks()[0] if ck.available() else 8
    BC, CC = ck._wgrad_chunks(xs[0], -(-ws[0] // OB), xs[1], macs)
    assert (BC < xs[0], CC < xs[1]) == split
    sc = (lambda slot, shape, dtype: np.empty(shape, dtype))
    pp = ((pad, pad), (pad, pad))
    prev = ember.get_num_threads()
    out = []
    try:
        for n in (1, 2, 2):
            ember.set_num_threads(n)
            out.append(ck.direct_weight_grad(x, g, ws[2:], pp, (1, 1), 1, sc))
    finally:
        ember.set_num_threads(prev)
    want = torch.nn.grad.conv2d_weight(torch.from_numpy(x), ws, torch.from_numpy(g),
                                       padding=pad).numpy()
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(out[0], want, rtol=tol, atol=tol * np.abs(want).max())
    assert out[0].dtype == dtype
    for other in out[1:]:
        np.testing.assert_array_equal(other.view(np.uint8), out[0].view(np.uint8))


# an inf or NaN at an input pixel: the direct weight gradient multiplies pixels that no
# output reads (dilation's gaps; past each output row, which wraps to the next row's first
# columns) by zero gradients, so it hands such inputs to the column route; values and which
# entries are finite as torch's
@pytest.mark.parametrize("xs,ws,kw,pixel,value", [
    ((2, 3, 8, 8), (4, 3, 3, 3), dict(dilation=3), (2, 2), np.inf),       # unused (gap)
    ((2, 3, 8, 8), (4, 3, 3, 3), dict(dilation=3), (5, 1), np.nan),       # unused (gap)
    ((2, 3, 7, 9), (5, 3, 3, 3), {}, (3, 0), -np.inf),                     # used, column 0
    ((2, 2, 11), (3, 2, 3), dict(dilation=4, padding=1), (4,), np.inf),    # 1-d, unused
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_non_finite_input_pixels_give_torchs_weight_gradient(xs, ws, kw, pixel, value, dtype):
    name = f"conv{len(xs) - 2}d"
    x, w = _arr(*xs, dtype=dtype), _arr(*ws, dtype=dtype)
    x[(0, 1) + pixel] = value
    yt = getattr(TF, name)(torch.from_numpy(x), torch.from_numpy(w), **kw)
    g = _arr(*yt.shape, dtype=dtype)
    got, want = [], []
    for lib, out in ((ember, got), (torch, want)):
        xt, wt = (lib.from_numpy(a.copy()).requires_grad_(True) for a in (x, w))
        y = getattr(lib.nn.functional, name)(xt, wt, **kw)
        y.backward(lib.from_numpy(g))
        out += [y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.isfinite(a), np.isfinite(b))
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    assert np.isfinite(want[2]).sum() > 0   # the case has finite weight-gradient entries


# the direct kernels decline shapes where they would compute much more than the column
# GEMMs (whole vectors of positions for tiny planes, the padded plane of a transposed
# convolution's 1x1 input, a register block of output channels for one channel): dcgan's
# first ConvTranspose2d (1x1 -> 4x4) runs on columns, a 3x3 layer on 8x8 planes direct
@pytest.mark.parametrize("name,xs,ws,kw,direct", [
    ("conv_transpose2d", (3, 10, 1, 1), (10, 12, 4, 4), {}, (0, 0)),
    ("conv2d", (3, 10, 4, 4), (12, 10, 4, 4), {}, (0, 0)),
    ("conv2d", (3, 1, 12, 12), (8, 1, 5, 5), {}, (1, 1)),   # input gradient: 1 channel
    ("conv2d", (3, 16, 8, 8), (16, 16, 3, 3), dict(padding=1), (2, 1)),
    # few output channels: the GEMMs' rows are as few, only the input gradient counts them
    ("conv2d", (3, 16, 14, 14), (4, 16, 5, 5), {}, (2, 1)),
    ("conv2d", (3, 3, 14, 14), (4, 3, 5, 5), {}, (1, 1)),
    # 3x3 planes: the weight gradient would run over 1.8 positions per useful one
    ("conv2d", (3, 16, 3, 3), (16, 16, 3, 3), dict(padding=1), (2, 0)),
])
def test_direct_kernels_leave_wasteful_shapes_to_the_column_route(name, xs, ws, kw, direct,
                                                                   monkeypatch):
    done = {"direct_conv": 0, "direct_weight_grad": 0}
    for fn in done:
        def spy(*a, _f=getattr(ck, fn), _n=fn, **k):
            out = _f(*a, **k)
            done[_n] += out is not None
            return out
        monkeypatch.setattr(ck, fn, spy)
    x, w = _arr(*xs), _arr(*ws)
    g = None
    for lib in (torch, ember):
        xt, wt = (lib.from_numpy(a.copy()).requires_grad_(True) for a in (x, w))
        y = getattr(lib.nn.functional, name)(xt, wt, **kw)
        g = _arr(*y.shape) if g is None else g
        y.backward(lib.from_numpy(g))
        got = [y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()]
        if lib is torch:
            want = got
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    assert (done["direct_conv"], done["direct_weight_grad"]) == direct


# strided forward convolutions whose kernel sizes are multiples of the strides run on the
# direct stride-1 kernel in space-to-depth form (conv_kernels._to_depth): values against
# torch and the column route; phases that reach only padding, 1-d, groups, uneven strides
@pytest.mark.parametrize("xs,ws,kw", [
    ((2, 5, 9, 10), (6, 5, 4, 4), dict(stride=2, padding=1)),
    ((2, 4, 8, 11), (6, 2, 4, 6), dict(stride=(2, 3), padding=(1, 2), groups=2)),
    ((2, 3, 17), (4, 3, 6), dict(stride=3, padding=2)),
    ((2, 3, 7, 7), (4, 3, 4, 4), dict(stride=2)),
    ((2, 3, 5, 6), (9, 3, 4, 2), dict(stride=(2, 1), padding=(3, 1))),
    ((2, 3, 32, 32), (16, 3, 4, 4), dict(stride=2, padding=1)),   # taken unforced
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strided_forward_in_space_to_depth_form_matches_torch(xs, ws, kw, dtype, monkeypatch):
    name = f"conv{len(xs) - 2}d"
    x, w, b = _arr(*xs, dtype=dtype), _arr(*ws, dtype=dtype), _arr(ws[0], dtype=dtype)
    want = getattr(TF, name)(*[torch.from_numpy(a) for a in (x, w, b)], **kw).numpy()
    used = []
    real = conv_kernels._to_depth
    monkeypatch.setattr(conv_kernels, "_to_depth", lambda *a: used.append(1) or real(*a))
    if xs[2:] != (32, 32):
        monkeypatch.setattr(conv_kernels, "DEPTH_MAX_WASTE", float("inf"))
    got = getattr(F, name)(*[ember.from_numpy(a) for a in (x, w, b)], **kw).numpy()
    assert used == [1] and got.dtype == dtype
    monkeypatch.setattr(conv_kernels, "DIRECT", False)
    columns = getattr(F, name)(*[ember.from_numpy(a) for a in (x, w, b)], **kw).numpy()
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    np.testing.assert_allclose(got, columns, rtol=tol, atol=tol)


# the window kernels split the (example, channel) planes over the OpenMP threads for large
# buffers: the same values on one and two threads, both layouts, as the NumPy loops
@pytest.mark.parametrize("wide", [False, True])
def test_window_kernels_give_the_same_values_on_two_threads(wide, monkeypatch):
    x = _arr(4, 24, 40, 40)
    geo = ((3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1))
    lo = conv_kernels.out_spatial(x.shape[2:], *geo)
    shape = (24 * 9, 4, lo[0] * lo[1]) if wide else (4, 24 * 9, lo[0] * lo[1])
    assert np.prod(shape) * 4 >= 1 << 20   # past the threads' threshold
    prev = ember.get_num_threads()
    got = []
    try:
        for n in (1, 2):
            ember.set_num_threads(n)
            cols = ck.im2col(x, *geo, lo, wide, np.empty(shape))
            got.append((cols, ck.col2im(cols, 4, 24, x.shape[2:], *geo, lo, wide)))
    finally:
        ember.set_num_threads(prev)
    want_cols = np.empty(shape)
    view = conv_kernels._fill_view(np, want_cols, 4, 24, (3, 3), lo, wide)
    xpd = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for idx, sl in conv_kernels._offset_slices((3, 3), (2, 2), (1, 1), lo):
        view[(slice(None), slice(None)) + idx] = xpd[(slice(None), slice(None)) + sl]
    monkeypatch.setattr(ck, "ENABLED", False)
    want_x = conv_kernels._col2im(np, want_cols, 4, 24, x.shape[2:], *geo, lo, wide)
    for cols, back in got:
        np.testing.assert_array_equal(cols, want_cols)
        np.testing.assert_array_equal(back, got[0][1])
        np.testing.assert_allclose(back, want_x, rtol=1e-12, atol=1e-12)


# channels-last results, as torch's: the output and convolution_backward's input and weight
# gradients are laid out channels-last when the input or the weight reads so (4-d
# channels_last; 5-d channels_last_3d for float32, not float64); ambiguous strides (one
# channel, 1x1 planes) and 1-d convolutions stay contiguous, and the output gradient's
# layout does not count
@pytest.mark.parametrize("name,xs,ws,kw,layouts,dtype,cl", [
    ("conv2d", (2, 3, 8, 8), (4, 3, 3, 3), dict(padding=1), "x", np.float64, True),
    ("conv2d", (2, 3, 8, 8), (4, 3, 3, 3), dict(padding=1), "w", np.float64, True),
    ("conv2d", (2, 3, 8, 8), (4, 3, 3, 3), dict(padding=1), "xw", np.float32, True),
    ("conv2d", (2, 3, 8, 8), (4, 3, 3, 3), dict(padding=1), "g", np.float64, False),
    ("conv2d", (2, 4, 9, 9), (6, 2, 3, 3), dict(stride=2, groups=2), "x", np.float64, True),
    ("conv2d", (2, 4, 8, 8), (4, 1, 3, 3), dict(padding=1, groups=4), "x", np.float32, True),
    ("conv2d", (2, 4, 8, 8), (6, 4, 1, 1), {}, "x", np.float64, True),
    ("conv2d", (2, 1, 8, 8), (4, 1, 3, 3), dict(padding=1), "x", np.float64, False),
    ("conv2d", (2, 3, 1, 1), (4, 3, 1, 1), {}, "x", np.float64, False),
    ("conv_transpose2d", (2, 4, 5, 5), (4, 3, 3, 3), dict(stride=2), "x", np.float64, True),
    ("conv3d", (2, 3, 5, 5, 5), (4, 3, 3, 3, 3), dict(padding=1), "x", np.float32, True),
    ("conv3d", (2, 3, 5, 5, 5), (4, 3, 3, 3, 3), dict(padding=1), "x", np.float64, False),
    ("conv1d", (2, 3, 9), (4, 3, 3), {}, "x", np.float64, False),
])
def test_channels_last_operands_give_channels_last_results_as_torch(name, xs, ws, kw, layouts,
                                                                      dtype, cl):
    n = len(xs) - 2
    x, w = _arr(*xs, dtype=dtype), _arr(*ws, dtype=dtype)
    geo = ((kw.get("stride", 1),) * n, (kw.get("padding", 0),) * n, (1,) * n,
           name.startswith("conv_transpose"), (0,) * n, kw.get("groups", 1), [True, True, False])
    res = {}
    for lib in (torch, ember):
        fmt = {4: lib.channels_last, 5: lib.channels_last_3d}.get(len(xs))

        def lay(a, key):
            t = lib.from_numpy(a.copy())
            return t.contiguous(memory_format=fmt) if key in layouts and fmt else t
        xt, wt = lay(x, "x"), lay(w, "w")
        y = getattr(lib.nn.functional, name)(xt, wt, **kw)
        g = lay((np.arange(y.numel()) % 7 - 3).astype(dtype).reshape(tuple(y.shape)), "g")
        backward = torch.ops.aten.convolution_backward if lib is torch else \
            conv_ops.convolution_backward
        gx, gw, _ = backward(g, xt, wt, None, *geo)
        res[lib] = [(tuple(a.stride()), a.detach().numpy()) for a in (y, gx, gw)]
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for (got_strides, got), (want_strides, want) in zip(res[ember], res[torch]):
        sized = [d for d, n in enumerate(want.shape) if n > 1]   # a size-1 dim's stride is free
        assert [got_strides[d] for d in sized] == [want_strides[d] for d in sized]
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    y_strides, y = res[torch][0]
    assert (y_strides != tuple(s // y.itemsize for s in np.empty(y.shape).strides)) == cl
