"""Normalization layers: values and gradients vs torch, running statistics, errors."""
import numpy as np
import pytest
import torch

import ember
from nnutil import check_fn, check_pair, same_error, np_of, make_pair, copy_params

rng = np.random.default_rng(2)


def R(*s):
    return rng.standard_normal(s)


@pytest.mark.parametrize("name,shape", [("BatchNorm1d", (4, 3)), ("BatchNorm1d", (4, 3, 5)),
                                        ("BatchNorm2d", (4, 3, 5, 2)),
                                        ("BatchNorm3d", (2, 3, 2, 3, 2))])
@pytest.mark.parametrize("kw", [dict(), dict(momentum=None), dict(affine=False),
                                dict(track_running_stats=False), dict(bias=False)])
def test_batchnorm_train_eval_and_running_stats(name, shape, kw):
    for dt in (np.float32, np.float64):
        tm, em = make_pair(name, 3, dtype=dt, **kw)
        for step in range(3):
            x = (R(*shape) * 2 + 1).astype(dt)
            check_pair_once(tm, em, x, "train")
        for b in ("running_mean", "running_var", "num_batches_tracked"):
            tb, eb = getattr(tm, b), getattr(em, b)
            assert (tb is None) == (eb is None)
            if tb is not None:
                np.testing.assert_allclose(np_of(eb), np_of(tb), rtol=1e-5, atol=1e-6)
        check_pair_once(tm, em, R(*shape).astype(dt), "eval")


def check_pair_once(tm, em, x, mode):
    from nnutil import check_module
    check_module(tm, em, [x], modes=(mode,))


@pytest.mark.parametrize("name,shape,kw", [
    ("InstanceNorm1d", (2, 3, 5), dict()), ("InstanceNorm1d", (3, 5), dict(affine=True)),
    ("InstanceNorm2d", (2, 3, 4, 5), dict(affine=True, track_running_stats=True)),
    ("InstanceNorm3d", (2, 3, 2, 3, 2), dict(track_running_stats=True))])
def test_instancenorm(name, shape, kw):
    tm, em = make_pair(name, 3, **kw)
    for _ in range(2):
        check_pair_once(tm, em, R(*shape).astype(np.float32), "train")
    if kw.get("track_running_stats"):
        np.testing.assert_allclose(np_of(em.running_var), np_of(tm.running_var), rtol=1e-5)
        np.testing.assert_allclose(np_of(em.running_mean), np_of(tm.running_mean), atol=1e-6)
    check_pair_once(tm, em, R(*shape).astype(np.float32), "eval")


@pytest.mark.parametrize("args,kw,shape", [((4,), {}, (2, 3, 4)), ((4,), dict(bias=False),
                                                                  (3, 4)),
                                           (((3, 4),), dict(elementwise_affine=False),
                                            (2, 3, 4)), ((4,), dict(eps=1e-3), (4,))])
def test_layernorm(args, kw, shape):
    tm, em = make_pair("LayerNorm", *args, **kw)
    # non-trivial affine parameters
    with torch.no_grad():
        for p in tm.parameters():
            p.copy_(torch.randn(p.shape))
    copy_params(tm, em)
    check_pair_once(tm, em, R(*shape).astype(np.float32), "train")
    check_pair("LayerNorm", *args, kwargs=kw, inputs=[R(*shape)], dtypes=(np.float64,))
    assert repr(em) == repr(tm)


def test_groupnorm_rmsnorm_lrn():
    check_pair("GroupNorm", 2, 4, inputs=[R(3, 4, 5)])
    check_pair("GroupNorm", 4, 4, kwargs=dict(affine=False), inputs=[R(3, 4, 2, 3)])
    check_pair("RMSNorm", (3, 4), inputs=[R(2, 3, 4)])
    check_pair("RMSNorm", 4, kwargs=dict(eps=1e-3, elementwise_affine=False), inputs=[R(2, 4)])
    check_pair("LocalResponseNorm", 3, inputs=[R(2, 5, 4, 3)])
    check_pair("LocalResponseNorm", 2, inputs=[R(2, 5, 7)])
    for args, m in [((2, 4), "GroupNorm"), ((4,), "RMSNorm"), ((3,), "LocalResponseNorm"),
                    ((3,), "BatchNorm2d"), ((3,), "InstanceNorm1d")]:
        assert repr(getattr(ember.nn, m)(*args)) == repr(getattr(torch.nn, m)(*args))


def test_functional_norms():
    x, w, b = R(4, 6, 5, 3), R(6), R(6)
    F = lambda lib: lib.nn.functional  # noqa: E731
    check_fn(lambda lib, x, w, b: F(lib).batch_norm(x, None, None, w, b, training=True),
             [x, w, b])
    rm, rv = R(6), rng.random(6) + 0.5
    check_fn(lambda lib, x, w, b, m, v: F(lib).batch_norm(x, m.detach(), v.detach(), w, b),
             [x, w, b, rm, rv])
    check_fn(lambda lib, x, w, b: F(lib).layer_norm(x, (5, 3), w, b),
             [x, R(5, 3), R(5, 3)])
    check_fn(lambda lib, x, w, b: F(lib).group_norm(x, 3, w, b), [x, w, b])
    check_fn(lambda lib, x, w, b: F(lib).instance_norm(x, weight=w, bias=b), [x, w, b])
    check_fn(lambda lib, x, w: F(lib).rms_norm(x, (5, 3), w), [x, R(5, 3)])
    check_fn(lambda lib, x: F(lib).layer_norm(x, (3,)), [x.astype(np.float32)])


def test_norm_double_backward():
    x, w = R(4, 6, 5), R(6)

    def dd(lib, fn):
        xt, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        y = fn(lib.nn.functional, xt, wt)
        gx, gw = lib.autograd.grad((y ** 3).sum(), (xt, wt), create_graph=True)
        return [np_of(g) for g in lib.autograd.grad((gx ** 2).sum() + (gw ** 2).sum(),
                                                    (xt, wt))]
    for fn in [lambda F, x, w: F.group_norm(x, 2, w),
               lambda F, x, w: F.batch_norm(x, None, None, w, training=True),
               lambda F, x, w: F.layer_norm(x, (5,), w[:5])]:
        for a, b in zip(dd(ember, fn), dd(torch, fn)):
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def test_norm_errors():
    same_error(lambda lib, x: lib.nn.BatchNorm2d(3)(x), R(2, 3, 4))
    same_error(lambda lib, x: lib.nn.BatchNorm1d(3)(x), R(1, 3))
    same_error(lambda lib, x: lib.nn.LayerNorm(4)(x), R(2, 3))
    same_error(lambda lib, x: lib.nn.GroupNorm(2, 4)(x), R(2, 3, 4))
    same_error(lambda lib: lib.nn.GroupNorm(3, 4))
    same_error(lambda lib, x: lib.nn.InstanceNorm2d(3, affine=True)(x), R(2, 4, 3, 3))
    same_error(lambda lib, x: lib.nn.functional.local_response_norm(x, 2), R(2, 3))
