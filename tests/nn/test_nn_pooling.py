"""Pooling: values, indices and gradients vs torch; modules; errors."""
import numpy as np
import pytest
import torch

import ember
from nnutil import check_fn, check_pair, same_error, np_of

rng = np.random.default_rng(1)


def R(*s):
    return rng.standard_normal(s)


_MAX = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
        dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1), padding=(1, 0)),
        dict(kernel_size=3, stride=2, ceil_mode=True)]


@pytest.mark.parametrize("kw", _MAX)
def test_max_pool2d(kw):
    x = R(2, 3, 9, 8)
    check_fn(lambda lib, x: lib.nn.functional.max_pool2d(x, **kw, return_indices=True), [x])
    check_fn(lambda lib, x: lib.nn.functional.max_pool2d_with_indices(x, **kw), [x[0]])
    check_fn(lambda lib, x: lib.nn.functional.max_pool2d(x, **kw),
             [np.maximum(x, 0).astype(np.float32)])     # ties: the first maximum wins


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 0),
                                     ceil_mode=True),
                                dict(kernel_size=3, stride=2, ceil_mode=True)])
@pytest.mark.parametrize("cip", [True, False])
def test_avg_pool2d(kw, cip):
    x = R(2, 3, 9, 8)
    check_fn(lambda lib, x: lib.nn.functional.avg_pool2d(x, **kw, count_include_pad=cip), [x])
    check_fn(lambda lib, x: lib.nn.functional.avg_pool2d(x, **kw, count_include_pad=cip),
             [x[0].astype(np.float32)])


def test_pool_1d_3d():
    x, x3 = R(2, 3, 11), R(2, 2, 5, 6, 7)
    F = lambda lib: lib.nn.functional  # noqa: E731
    check_fn(lambda lib, x: F(lib).max_pool1d(x, 3, 2, 1, return_indices=True), [x])
    check_fn(lambda lib, x: F(lib).avg_pool1d(x, 3, 2, 1, ceil_mode=True), [x])
    check_fn(lambda lib, x: F(lib).max_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 1, 0),
                                              ceil_mode=True, return_indices=True), [x3])
    check_fn(lambda lib, x: F(lib).avg_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 1, 0),
                                              ceil_mode=True, count_include_pad=False), [x3])
    check_fn(lambda lib, x: F(lib).avg_pool2d(x, 3, 2, 1, divisor_override=3), [R(2, 3, 7, 7)])
    check_fn(lambda lib, x: F(lib).lp_pool2d(x, 2, 3, 2), [R(2, 3, 7, 7)])
    check_fn(lambda lib, x: F(lib).lp_pool1d(x, 3, 2), [np.abs(R(2, 3, 8))])


@pytest.mark.parametrize("o", [(3, 5), (4, 4), 1, (None, 3), (9, 8)])
def test_adaptive(o):
    x = R(2, 3, 9, 8)
    F = lambda lib: lib.nn.functional  # noqa: E731
    check_fn(lambda lib, x: F(lib).adaptive_avg_pool2d(x, o), [x])
    check_fn(lambda lib, x: F(lib).adaptive_max_pool2d(x, o, return_indices=True), [x])
    check_fn(lambda lib, x: F(lib).adaptive_max_pool2d(x, o), [x[0].astype(np.float32)])


def test_adaptive_1d_3d():
    F = lambda lib: lib.nn.functional  # noqa: E731
    check_fn(lambda lib, x: F(lib).adaptive_avg_pool1d(x, 4), [R(2, 3, 9)])
    check_fn(lambda lib, x: F(lib).adaptive_max_pool1d(x, 4, return_indices=True), [R(3, 9)])
    check_fn(lambda lib, x: F(lib).adaptive_avg_pool3d(x, (2, 3, 4)), [R(2, 2, 5, 6, 7)])
    check_fn(lambda lib, x: F(lib).adaptive_max_pool3d(x, (2, 3, 4), return_indices=True),
             [R(2, 2, 5, 6, 7)])


def test_max_unpool():
    def fn(lib, x):
        y, i = lib.nn.functional.max_pool2d(x, 2, return_indices=True)
        return lib.nn.functional.max_unpool2d(y, i, 2, output_size=x.shape)
    check_fn(fn, [R(2, 3, 9, 8)])
    tm, em = torch.nn.MaxUnpool1d(2), ember.nn.MaxUnpool1d(2)
    x = R(1, 2, 8)
    for lib, m in ((torch, tm), (ember, em)):
        y, i = lib.nn.functional.max_pool1d(lib.from_numpy(x), 2, return_indices=True)
        m.out = np_of(m(y, i))
    np.testing.assert_array_equal(em.out, tm.out)


def test_pool_double_backward():
    x = R(2, 3, 7, 6)

    def dd(lib, fn):
        xt = lib.tensor(x, requires_grad=True)
        gx, = lib.autograd.grad((fn(lib.nn.functional, xt) ** 3).sum(), (xt,),
                                create_graph=True)
        return np_of(lib.autograd.grad((gx ** 3).sum(), (xt,))[0])
    for fn in [lambda F, x: F.max_pool2d(x, 3, 2, 1), lambda F, x: F.avg_pool2d(x, 3, 2, 1),
               lambda F, x: F.adaptive_max_pool2d(x, (3, 5)),
               lambda F, x: F.adaptive_avg_pool2d(x, (3, 4))]:
        np.testing.assert_allclose(dd(ember, fn), dd(torch, fn), rtol=1e-9)


@pytest.mark.parametrize("name,args,shape", [
    ("MaxPool2d", (3, 2, 1), (2, 3, 8, 8)), ("MaxPool1d", (2,), (2, 3, 7)),
    ("MaxPool3d", (2,), (1, 2, 4, 4, 4)), ("AvgPool1d", (3, 2, 1), (2, 3, 9)),
    ("AvgPool2d", (3, 2, 1, True, False), (2, 3, 8, 8)), ("AvgPool3d", (2,), (1, 2, 4, 4, 4)),
    ("AdaptiveAvgPool2d", ((None, 3),), (2, 3, 8, 7)), ("AdaptiveMaxPool2d", (3,), (2, 3, 8, 7)),
    ("AdaptiveAvgPool1d", (3,), (2, 7)), ("AdaptiveMaxPool1d", (3,), (2, 3, 7)),
    ("AdaptiveAvgPool3d", (2,), (1, 2, 5, 4, 3)), ("LPPool2d", (2, 3), (2, 3, 8, 8))])
def test_pool_modules(name, args, shape):
    x = R(*shape)
    check_pair(name, *args, inputs=[x])
    assert repr(getattr(ember.nn, name)(*args)) == repr(getattr(torch.nn, name)(*args))


def test_pool_module_return_indices():
    tm, em = torch.nn.MaxPool2d(2, return_indices=True), ember.nn.MaxPool2d(2,
                                                                            return_indices=True)
    x = R(2, 3, 6, 6)
    (a, ia), (b, ib) = em(ember.from_numpy(x)), tm(torch.from_numpy(x))
    np.testing.assert_array_equal(np_of(a), np_of(b))
    np.testing.assert_array_equal(np_of(ia), np_of(ib))
    assert ia.dtype == ember.int64


def test_pool_errors():
    F = lambda lib: lib.nn.functional  # noqa: E731
    same_error(lambda lib, x: F(lib).max_pool2d(x, 2), R(8, 8))
    same_error(lambda lib, x: F(lib).max_pool2d(x, 2, padding=2), R(1, 1, 8, 8))
    same_error(lambda lib, x: F(lib).avg_pool2d(x, 3, padding=2), R(1, 1, 8, 8))
    same_error(lambda lib, x: F(lib).max_pool2d(x, 5), R(1, 1, 3, 3))
    same_error(lambda lib, x: F(lib).adaptive_avg_pool2d(x, (2, 2)), R(3, 4))
