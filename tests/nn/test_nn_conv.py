"""Convolutions, transposed convolutions, F.pad, unfold/fold: values and gradients vs torch."""
import numpy as np
import pytest
import torch

import ember
from nnutil import check_fn, check_pair, same_error, np_of

rng = np.random.default_rng(0)


def R(*s):
    return rng.standard_normal(s)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("kw", [
    dict(), dict(stride=2, padding=1), dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2)),
    dict(groups=2, padding="same", dilation=(2, 1)), dict(padding="valid", groups=2, stride=3)])
def test_conv2d_functional(kw):
    g = kw.get("groups", 1)
    check_fn(lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b, **kw),
             [R(2, 4, 9, 8), R(6, 4 // g, 3, 2), R(6)])
    check_fn(lambda lib, x, w: lib.nn.functional.conv2d(x, w, **kw),
             [R(4, 9, 8).astype(np.float32), R(6, 4 // g, 3, 2).astype(np.float32)])


def test_conv1d_conv3d_functional():
    check_fn(lambda lib, x, w, b: lib.nn.functional.conv1d(x, w, b, stride=2, padding=2,
                                                           dilation=2, groups=3),
             [R(2, 6, 13), R(3, 2, 3), R(3)])
    check_fn(lambda lib, x, w: lib.nn.functional.conv3d(x, w, stride=(1, 2, 1), padding=1),
             [R(1, 2, 5, 6, 4), R(3, 2, 2, 3, 2)])


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, output_padding=1),
                                dict(stride=3, padding=1, output_padding=1, groups=2,
                                     dilation=2)])
def test_conv_transpose_functional(kw):
    check_fn(lambda lib, x, w, b: lib.nn.functional.conv_transpose2d(x, w, b, **kw),
             [R(2, 4, 5, 6), R(4, 3, 3, 2), R(3 * kw.get("groups", 1))])
    check_fn(lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, **kw),
             [R(2, 4, 7), R(4, 2, 3)])
    check_fn(lambda lib, x, w: lib.nn.functional.conv_transpose3d(x, w, stride=2, padding=1),
             [R(1, 2, 3, 4, 3), R(2, 3, 2, 3, 2)])


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_conv_modules(mode, dt):
    x = R(2, 4, 9, 10)
    check_pair("Conv2d", 4, 6, 3, kwargs=dict(stride=2, padding=1, padding_mode=mode),
               inputs=[x], dtypes=(dt,))
    check_pair("Conv2d", 4, 6, (3, 2), kwargs=dict(padding="same", dilation=2, groups=2,
                                                   padding_mode=mode), inputs=[x], dtypes=(dt,))
    check_pair("Conv1d", 4, 2, 3, kwargs=dict(padding=2, bias=False, padding_mode=mode),
               inputs=[x[:, :, 0]], dtypes=(dt,))
    check_pair("Conv1d", 4, 2, 3, kwargs=dict(padding=1, padding_mode=mode), inputs=[x[0, :, 0]],
               dtypes=(dt,))


def test_conv3d_and_transpose_modules():
    check_pair("Conv3d", 2, 4, 3, kwargs=dict(padding=1, stride=(1, 2, 2)), inputs=[R(2, 2, 4, 5, 6)])
    check_pair("ConvTranspose2d", 4, 6, 3, 2, 1, 1, 2,
               inputs=[R(2, 4, 5, 5)])
    check_pair("ConvTranspose1d", 3, 2, 4, 2, inputs=[R(3, 7)])
    tm = torch.nn.ConvTranspose2d(3, 2, 3, stride=2).double()
    em = ember.nn.ConvTranspose2d(3, 2, 3, stride=2).double()
    em.load_state_dict({k: ember.from_numpy(np_of(v)) for k, v in tm.state_dict().items()})
    x = R(1, 3, 4, 4)
    a = em(ember.from_numpy(x), output_size=(10, 10))
    b = tm(torch.from_numpy(x), output_size=(10, 10))
    np.testing.assert_allclose(np_of(a), np_of(b), atol=1e-10)


def test_conv_double_backward():
    x, w = R(2, 4, 6, 6), R(6, 2, 3, 3)

    def dd(lib):
        xt = lib.tensor(x, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True)
        y = lib.nn.functional.conv2d(xt, wt, stride=2, padding=1, groups=2)
        gx, gw = lib.autograd.grad((y ** 2).sum(), (xt, wt), create_graph=True)
        return lib.autograd.grad((gx ** 2).sum() + (gw * gw).sum(), (xt, wt))
    for a, b in zip(dd(ember), dd(torch)):
        np.testing.assert_allclose(np_of(a), np_of(b), rtol=1e-9)


def test_module_init_and_repr():
    for args, kw in [((3, 4, 3), dict(padding="same", padding_mode="reflect")),
                     ((3, 4, 3), dict(bias=False, dilation=2)),
                     ((4, 6, 3), dict(stride=2, groups=2))]:
        assert repr(ember.nn.Conv2d(*args, **kw)) == repr(torch.nn.Conv2d(*args, **kw))
    t = torch.nn.ConvTranspose2d(4, 6, 3, 2, output_padding=1, groups=2)
    e = ember.nn.ConvTranspose2d(4, 6, 3, 2, output_padding=1, groups=2)
    assert repr(e) == repr(t)
    assert [(k, tuple(v.shape)) for k, v in e.named_parameters()] == \
        [(k, tuple(v.shape)) for k, v in t.named_parameters()]
    c = ember.nn.Conv2d(8, 16, 3)
    bound = 1 / np.sqrt(8 * 9)
    assert np.abs(np_of(c.weight)).max() <= bound and np.abs(np_of(c.bias)).max() <= bound
    lazy = ember.nn.LazyConv2d(5, 3)
    y = lazy(ember.randn(2, 3, 8, 8))
    assert type(lazy) is ember.nn.Conv2d and tuple(lazy.weight.shape) == (5, 3, 3, 3)
    assert tuple(y.shape) == (2, 5, 6, 6)


@pytest.mark.parametrize("pad,mode", [((1, 2, 3, 1), "constant"), ((1, 2, -1, 3), "constant"),
                                      ((2, 1, 1, 2), "reflect"), ((2, 3, 1, 0), "replicate"),
                                      ((2, 1, 3, 0), "circular"),
                                      ((1, 2, 0, 1, 1, 1), "replicate")])
def test_pad(pad, mode):
    x = R(2, 3, 5, 6)
    check_fn(lambda lib, x: lib.nn.functional.pad(x, pad, mode=mode), [x])
    if mode == "constant":
        check_fn(lambda lib, x: lib.nn.functional.pad(x, pad, value=2.5), [x])


@pytest.mark.parametrize("name,pad,shape", [
    ("ZeroPad2d", (1, 2, 0, 3), (2, 3, 4, 5)), ("ReflectionPad1d", 2, (2, 3, 5)),
    ("ReflectionPad2d", (1, 2, 2, 1), (3, 4, 5)), ("ReplicationPad3d", 1, (1, 2, 3, 4, 3)),
    ("CircularPad2d", (1, 0, 2, 1), (1, 2, 3, 4)), ("ReplicationPad1d", (3, 1), (2, 4)),
    ("ZeroPad1d", 2, (2, 3)), ("ZeroPad3d", 1, (1, 2, 2, 2))])
def test_pad_modules(name, pad, shape):
    check_pair(name, pad, inputs=[R(*shape)])
    assert repr(getattr(ember.nn, name)(pad)) == repr(getattr(torch.nn, name)(pad))
    check_pair("ConstantPad2d", (1, 2, 0, 1), 3.5, inputs=[R(2, 3, 4)])


def test_unfold_fold():
    check_fn(lambda lib, x: lib.nn.functional.unfold(x, (2, 3), dilation=(1, 2), padding=1,
                                                     stride=(2, 1)), [R(2, 4, 9, 8)])
    check_fn(lambda lib, x: lib.nn.functional.fold(x, (5, 6), (2, 3), padding=1),
             [R(2, 12, 36)])
    check_pair("Unfold", 2, 1, 1, inputs=[R(3, 5, 5)])
    check_pair("Fold", (4, 5), 2, inputs=[R(2, 8, 12)])


def test_conv_errors():
    F = lambda lib: lib.nn.functional  # noqa: E731
    same_error(lambda lib, x, w: F(lib).conv2d(x, w), R(2, 3), R(4, 3, 3, 3))
    _, e = same_error(lambda lib, x, w: F(lib).conv2d(x, w), R(1, 4, 8, 8), R(6, 3, 3, 3))
    assert "expected input[1, 4, 8, 8] to have 3 channels, but got 4 channels" in str(e)
    same_error(lambda lib, x, w: F(lib).conv2d(x, w), R(1, 3, 2, 2), R(6, 3, 3, 3))
    same_error(lambda lib, x, w: F(lib).conv2d(x, w, stride=2, padding="same"),
               R(1, 3, 5, 5), R(6, 3, 3, 3))
    same_error(lambda lib, x, w: F(lib).conv2d(x, w, groups=2), R(1, 4, 5, 5), R(3, 2, 3, 3))
    same_error(lambda lib, x, w: F(lib).conv_transpose2d(x, w, stride=2, output_padding=2),
               R(1, 3, 5, 5), R(3, 2, 3, 3))
    for kw in [dict(groups=2), dict(padding="foo"), dict(padding="same", stride=2),
               dict(padding_mode="wrap")]:
        same_error(lambda lib: lib.nn.Conv2d(3, 4, 3, **kw))
    same_error(lambda lib, x: F(lib).pad(x, (3, 3), mode="reflect"), R(2, 3, 3))
    same_error(lambda lib, x: F(lib).pad(x, (1, 2, 3)), R(2, 3, 3))
    same_error(lambda lib, x: F(lib).pad(x, (1, 1), mode="reflect"), R(2, 3, 3, 4))
    same_error(lambda lib, x: F(lib).fold(x, (5, 6), (2, 3)), R(2, 12, 10))
