"""vmap over the nn operators: convolutions, pooling and their backward operators.

Every case runs ``ember.func.vmap`` over a batch of examples and compares with a Python
loop over the same examples (values), with the batch in front and elsewhere, with shared
and per-example weights; ``vmap(grad(...))`` covers the backward operators.  No case
may reach the looping fallback.  Per-sample gradients of a small CNN are compared with a
loop of single-example gradients and with ``torch.func.vmap(torch.func.grad(...))``.
"""
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember import func as ef
from ember.ops import _batching as batching

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")

V = 3  # examples per vmap batch


def arr(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def run_vmap(fn, args, in_dims):
    """vmap(fn) on ``args`` (NumPy, batch at ``in_dims``), asserting no looping fallback."""
    batching._WARNED.clear()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = ef.vmap(fn, in_dims=tuple(in_dims))(*[ember.from_numpy(a) for a in args])
    loops = [str(w.message) for w in rec if "batching rule for" in str(w.message)]
    assert not loops, loops
    return out


def loop(fn, args, in_dims):
    outs = []
    for i in range(V):
        ex = [ember.from_numpy(np.ascontiguousarray(np.take(a, i, axis=d)) if d is not None
                               else a) for a, d in zip(args, in_dims)]
        outs.append(fn(*ex))
    if isinstance(outs[0], (tuple, list)):
        return tuple(np.stack([o[k].detach().numpy() for o in outs]) for k in range(len(outs[0])))
    return np.stack([o.detach().numpy() for o in outs])


def check(fn, args, in_dims, atol=1e-10):
    got = run_vmap(fn, args, in_dims)
    want = loop(fn, args, in_dims)
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert tuple(g.shape) == w.shape and g.dtype.name == w.dtype.name
            np.testing.assert_allclose(g.detach().numpy(), w, atol=atol, rtol=1e-9)
        return
    assert tuple(got.shape) == want.shape
    np.testing.assert_allclose(got.detach().numpy(), want, atol=atol, rtol=1e-9)


def batched(shape, seed, dim=0):
    """V examples of ``shape`` stacked at ``dim``."""
    return np.moveaxis(arr((V,) + tuple(shape), seed), 0, dim)


# ---- convolutions --------------------------------------------------------------------------

CONVS = [
    ("conv1d", (2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, dilation=2, groups=2)),
    ("conv1d", (4, 9), (5, 4, 3), dict(padding="same")),
    ("conv2d", (2, 4, 7, 6), (6, 4, 3, 2), dict(stride=(2, 1), padding=(1, 0))),
    ("conv2d", (1, 6, 6, 6), (9, 2, 3, 3), dict(padding=2, dilation=2, groups=3)),
    ("conv2d", (4, 5, 5), (3, 4, 3, 3), {}),
    ("conv3d", (2, 2, 4, 5, 4), (4, 1, 2, 3, 2), dict(stride=(1, 2, 1), padding=1, groups=2)),
]

CONV_TRANSPOSES = [
    ("conv_transpose1d", (2, 4, 5), (4, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose2d", (2, 4, 4, 3), (4, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0),
                                                         dilation=(1, 2), groups=2)),
    ("conv_transpose2d", (4, 3, 3), (4, 3, 3, 3), dict(stride=2, output_padding=1)),
    ("conv_transpose3d", (1, 2, 3, 3, 2), (2, 2, 2, 2, 2), dict(stride=2, padding=1)),
]


def _conv_cases():
    for name, xs, ws, kw in CONVS + CONV_TRANSPOSES:
        yield pytest.param(name, xs, ws, kw, id=f"{name}-{len(xs)}d-{sorted(kw)}")


@pytest.mark.parametrize("name,xs,ws,kw", list(_conv_cases()))
def test_conv_shared_weights_matches_loop(name, xs, ws, kw):
    op = getattr(F, name)
    bias_n = ws[1] * kw.get("groups", 1) if name.startswith("conv_t") else ws[0]
    w, b = arr(ws, 1), arr((bias_n,), 2)
    fn = lambda x: op(x, ember.from_numpy(w), ember.from_numpy(b), **kw)  # noqa: E731
    check(fn, [batched(xs, 0)], [0])
    check(fn, [batched(xs, 0, dim=len(xs))], [len(xs)])  # the batch in the last dim


@pytest.mark.parametrize("name,xs,ws,kw", list(_conv_cases()))
def test_conv_per_example_weights_matches_loop(name, xs, ws, kw):
    op = getattr(F, name)
    bias_n = ws[1] * kw.get("groups", 1) if name.startswith("conv_t") else ws[0]
    fn = lambda x, w, b: op(x, w, b, **kw)  # noqa: E731
    check(fn, [batched(xs, 0), batched(ws, 1, dim=1), batched((bias_n,), 2)], [0, 1, 0])
    # one input for every example, a weight per example, no bias
    check(lambda x, w: op(x, w, **kw), [arr(xs, 3), batched(ws, 4)], [None, 0])


@pytest.mark.parametrize("name,xs,ws,kw", list(_conv_cases()))
def test_conv_vmap_grad_matches_loop(name, xs, ws, kw):
    """Per-example gradients of input and weight: convolution_backward under vmap."""
    op = getattr(F, name)
    ct = ember.from_numpy(arr((1,), 5))

    def loss(x, w):
        return (op(x, w, **kw).tanh() * ct).sum()
    fn = lambda x, w: ef.grad(loss, argnums=(0, 1))(x, w)  # noqa: E731
    check(fn, [batched(xs, 0), batched(ws, 1)], [0, 0])
    check(fn, [batched(xs, 0, dim=1), arr(ws, 1)], [1, None])


def test_unfold_fold_and_pad_match_loop():
    x = batched((2, 3, 6, 5), 0)
    check(lambda a: F.unfold(a, (2, 3), dilation=(2, 1), padding=1, stride=(1, 2)), [x], [0])
    cols = batched((2, 3 * 4, 12), 1)
    check(lambda c: F.fold(c, (4, 5), (2, 2), stride=1), [cols], [0])
    for mode in ("constant", "reflect", "replicate", "circular"):
        check(lambda a: F.pad(a, (1, 2, 2, 1), mode=mode), [x], [0])
        check(lambda a: ef.grad(lambda t: (F.pad(t, (1, 2, 2, 1), mode=mode) ** 2).sum())(a),
              [x], [0])
    check(lambda a: F.pad(a, (-1, 2)), [batched((3, 5), 2, dim=2)], [2])


# ---- pooling -------------------------------------------------------------------------------

POOLS = {
    "max_pool1d": (lambda a: F.max_pool1d(a, 3, 2, padding=1), (2, 3, 9)),
    "max_pool1d_idx": (lambda a: F.max_pool1d(a, 2, return_indices=True), (3, 8)),
    "max_pool2d": (lambda a: F.max_pool2d(a, (3, 2), (2, 1), dilation=(1, 2), ceil_mode=True),
                   (2, 2, 7, 8)),
    "max_pool2d_idx": (lambda a: F.max_pool2d(a, 2, return_indices=True), (2, 3, 6, 6)),
    "max_pool3d": (lambda a: F.max_pool3d(a, 2, padding=1), (2, 2, 4, 5, 4)),
    "max_pool3d_idx": (lambda a: F.max_pool3d(a, 2, return_indices=True), (2, 4, 4, 4)),
    "avg_pool1d": (lambda a: F.avg_pool1d(a, 3, 2, padding=1, count_include_pad=False),
                   (2, 3, 9)),
    "avg_pool2d": (lambda a: F.avg_pool2d(a, 3, 2, padding=1, ceil_mode=True), (2, 2, 7, 6)),
    "avg_pool2d_div": (lambda a: F.avg_pool2d(a, 2, divisor_override=3), (3, 6, 6)),
    "avg_pool3d": (lambda a: F.avg_pool3d(a, 2, stride=1), (2, 2, 4, 3, 4)),
    "adaptive_avg_pool1d": (lambda a: F.adaptive_avg_pool1d(a, 4), (2, 3, 9)),
    "adaptive_avg_pool2d": (lambda a: F.adaptive_avg_pool2d(a, (3, 2)), (2, 2, 7, 5)),
    "adaptive_avg_pool3d": (lambda a: F.adaptive_avg_pool3d(a, (2, 3, 1)), (2, 5, 7, 3)),
    "adaptive_max_pool1d": (lambda a: F.adaptive_max_pool1d(a, 4, return_indices=True),
                            (2, 3, 9)),
    "adaptive_max_pool2d": (lambda a: F.adaptive_max_pool2d(a, (3, 2)), (2, 2, 7, 5)),
    "adaptive_max_pool3d": (lambda a: F.adaptive_max_pool3d(a, 2, return_indices=True),
                            (2, 5, 4, 3)),
    "lp_pool1d": (lambda a: F.lp_pool1d(a, 2, 3, stride=2), (2, 3, 9)),
    "lp_pool2d": (lambda a: F.lp_pool2d(a, 3, 2), (2, 2, 6, 6)),
    "lp_pool3d": (lambda a: F.lp_pool3d(a, 2, 2), (2, 4, 4, 4)),
}


@pytest.mark.parametrize("name", list(POOLS))
def test_pool_matches_loop(name):
    fn, shape = POOLS[name]
    check(fn, [batched(shape, 0)], [0])
    check(fn, [batched(shape, 0, dim=len(shape))], [len(shape)])


@pytest.mark.parametrize("name", list(POOLS))
def test_pool_vmap_grad_matches_loop(name):
    """max_pool_backward (by index), avg_pool's col2im and the adaptive composites under
    vmap, through ember.func.grad."""
    fn, shape = POOLS[name]

    def loss(a):
        out = fn(a)
        out = out[0] if isinstance(out, tuple) else out
        return (out * out.detach().sign()).sum() if "lp_pool" in name else (out ** 2).sum()
    x = batched(shape, 1)
    if "lp_pool" in name:
        x = np.abs(x) + 0.5  # lp pooling's power is smooth away from zero
    check(ef.grad(loss), [x], [0])
    check(ef.grad(loss), [np.moveaxis(x, 0, 1)], [1])


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_matches_loop(n):
    pool = getattr(F, f"max_pool{n}d")
    unpool = getattr(F, f"max_unpool{n}d")
    x = batched((2,) + (4,) * n, 0)
    fn = lambda a: unpool(*pool(a, 2, return_indices=True), 2)  # noqa: E731
    check(fn, [x], [0])
    check(ef.grad(lambda a: (fn(a) ** 2).sum()), [x], [0])


def test_max_pool_without_indices_keeps_them_unbatched():
    """Without return_indices and grad, the indices are an empty placeholder shared by all
    examples (not a per-example tensor reshaped from nothing)."""
    x = batched((2, 4, 4), 0)
    out, idx = run_vmap(lambda a: F.max_pool2d_with_indices(a, 2), [x], [0])
    np.testing.assert_array_equal(idx.numpy(), loop(lambda a: F.max_pool2d(
        a, 2, return_indices=True)[1], [x], [0]))
    out = run_vmap(lambda a: F.max_pool2d(a, 2), [x], [0])
    np.testing.assert_array_equal(out.numpy(), x.reshape(V, 2, 2, 2, 2, 2).max((3, 5)))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_pool_jacfwd_matches_torch_func(n):
    """Forward AD derives max pooling's tangent from its vjp, which reads the indices: they
    are computed whenever forward AD is active (jacfwd also runs that under vmap)."""
    x = arr((2,) + (5,) * n, 0)
    fe = lambda a: getattr(F, f"max_pool{n}d")(a, 2, padding=1)  # noqa: E731
    ft = lambda a: getattr(torch.nn.functional, f"max_pool{n}d")(a, 2, padding=1)  # noqa: E731
    he = ef.jacfwd(fe)(ember.from_numpy(x))
    ht = torch.func.jacfwd(ft)(torch.from_numpy(x))
    np.testing.assert_array_equal(he.numpy(), ht.numpy())


# ---- per-sample gradients of a small CNN ---------------------------------------------------

def _cnn_params(rng):
    return {"c1.w": rng.standard_normal((4, 2, 3, 3)) * 0.5, "c1.b": rng.standard_normal(4) * 0.1,
            "c2.w": rng.standard_normal((6, 2, 3, 3)) * 0.3, "c2.b": rng.standard_normal(6) * 0.1,
            "fc.w": rng.standard_normal((3, 6 * 2 * 2)) * 0.3, "fc.b": rng.standard_normal(3) * 0.1}


def _cnn_loss(lib):
    Fl = lib.nn.functional

    def loss(p, x, y):
        h = Fl.max_pool2d(Fl.relu(Fl.conv2d(x.unsqueeze(0), p["c1.w"], p["c1.b"], padding=1)), 2)
        h = Fl.conv2d(h, p["c2.w"], p["c2.b"], padding=1, groups=2).relu()
        h = Fl.max_pool2d(h, 2).flatten(1)
        return Fl.cross_entropy(Fl.linear(h, p["fc.w"], p["fc.b"]), y.unsqueeze(0))
    return loss


def test_cnn_per_sample_grads_match_loop_and_torch_func():
    rng = np.random.default_rng(0)
    params = _cnn_params(rng)
    xs = rng.standard_normal((5, 2, 8, 8))
    ys = np.array([0, 2, 1, 1, 0])
    pe = {k: ember.from_numpy(v.copy()) for k, v in params.items()}
    pt = {k: torch.from_numpy(v.copy()) for k, v in params.items()}
    batching._WARNED.clear()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        ge = ef.vmap(ef.grad(_cnn_loss(ember)), in_dims=(None, 0, 0))(
            pe, ember.from_numpy(xs), ember.from_numpy(ys))
    assert not [w for w in rec if "batching rule for" in str(w.message)]
    gt = torch.func.vmap(torch.func.grad(_cnn_loss(torch)), in_dims=(None, 0, 0))(
        pt, torch.from_numpy(xs), torch.from_numpy(ys))
    for i in range(len(xs)):
        gi = ember.func.grad(_cnn_loss(ember))(pe, ember.from_numpy(xs[i]),
                                               ember.from_numpy(ys[i:i + 1].reshape(())))
        for k in params:
            np.testing.assert_allclose(ge[k].numpy()[i], gi[k].numpy(), rtol=1e-10, atol=1e-12)
    for k in params:
        assert tuple(ge[k].shape) == (5,) + params[k].shape
        np.testing.assert_allclose(ge[k].numpy(), gt[k].numpy(), rtol=1e-9, atol=1e-11)
