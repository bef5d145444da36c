"""Vision functions and modules: pixel shuffle, interpolate/Upsample, grid_sample,
affine_grid, channel_shuffle."""
import numpy as np
import pytest
import torch

import ember
from nnutil import check_fn, check_pair, same_error

rng = np.random.default_rng(3)


def R(*s):
    return rng.standard_normal(s)


def test_pixel_shuffle():
    check_fn(lambda lib, x: lib.nn.functional.pixel_shuffle(x, 2), [R(2, 8, 3, 4)])
    check_fn(lambda lib, x: lib.nn.functional.pixel_unshuffle(x, 2), [R(3, 2, 4, 6)])
    check_fn(lambda lib, x: lib.nn.functional.channel_shuffle(x, 3), [R(2, 6, 3)])
    check_pair("PixelShuffle", 3, inputs=[R(1, 9, 2, 2)])
    check_pair("PixelUnshuffle", 2, inputs=[R(1, 1, 4, 4)])
    check_pair("ChannelShuffle", 2, inputs=[R(1, 4, 2, 2)])
    same_error(lambda lib, x: lib.nn.functional.pixel_shuffle(x, 2), R(1, 5, 2, 2))
    same_error(lambda lib, x: lib.nn.functional.pixel_unshuffle(x, 2), R(1, 1, 3, 4))


@pytest.mark.parametrize("mode,shape", [("nearest", (2, 3, 5)), ("nearest", (2, 3, 4, 5)),
                                        ("nearest-exact", (2, 3, 4, 5)),
                                        ("nearest", (1, 2, 3, 4, 5)),
                                        ("linear", (2, 3, 5)), ("bilinear", (2, 3, 4, 5)),
                                        ("bicubic", (2, 3, 4, 5)),
                                        ("trilinear", (1, 2, 3, 4, 5)), ("area", (2, 3, 7, 5))])
@pytest.mark.parametrize("kw", [dict(scale_factor=2), dict(scale_factor=0.6),
                                dict(scale_factor=1.7, recompute_scale_factor=True),
                                dict(size=7), dict(size=3)])
def test_interpolate(mode, shape, kw):
    aligns = [None] if mode in ("nearest", "nearest-exact", "area") else [False, True]
    for ac in aligns:
        check_fn(lambda lib, x: lib.nn.functional.interpolate(x, mode=mode, align_corners=ac,
                                                              **kw), [R(*shape)])
    check_fn(lambda lib, x: lib.nn.functional.interpolate(x, mode=mode, **kw),
             [R(*shape).astype(np.float32)])


def _channels_last(x):
    """``x`` laid out channels-last (N, spatial..., C innermost), by permutes both libraries
    read the same way."""
    nd = x.dim()
    return x.permute((0,) + tuple(range(2, nd)) + (1,)).contiguous().permute(
        (0, nd - 1) + tuple(range(1, nd - 1)))


@pytest.mark.parametrize("mode,shape,kw", [
    ("nearest", (2, 3, 4, 5), {}), ("nearest-exact", (2, 3, 4, 5), {}),
    ("bilinear", (2, 3, 4, 5), {}), ("bilinear", (2, 3, 4, 5), dict(align_corners=True)),
    ("bicubic", (2, 3, 4, 5), {}), ("bilinear", (2, 3, 4, 5), dict(antialias=True)),
    ("area", (2, 3, 7, 5), {}), ("nearest", (1, 2, 3, 4, 5), {}),
    ("trilinear", (1, 2, 3, 4, 5), {}), ("area", (1, 2, 3, 4, 5), {}),
    ("bilinear", (2, 1, 4, 5), {}), ("nearest", (1, 3, 1, 1), {})])
@pytest.mark.parametrize("layout", ["channels_last", "contiguous"])
def test_interpolate_keeps_the_memory_format_like_torch(mode, shape, kw, layout):
    """torch's resampling keeps a channels-last input's layout (its 3-d adaptive average
    pool, the 5-d area mode, does not; a size-1 channel dim reads as contiguous): the same
    strides, the same values and gradients."""
    x0 = R(*shape)
    out = []
    for lib in (torch, ember):
        x = lib.tensor(x0, requires_grad=True)
        xi = _channels_last(x) if layout == "channels_last" else x
        y = lib.nn.functional.interpolate(xi, scale_factor=2, mode=mode, **kw)
        y.backward(lib.tensor(np.arange(y.numel(), dtype=np.float64).reshape(y.shape)))
        out.append((y.stride(), y.detach().numpy(), x.grad.numpy()))
    assert out[1][0] == out[0][0]
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out[1][2], out[0][2], rtol=1e-10, atol=1e-9)
    # uint8 images keep it too
    if mode in ("nearest", "bilinear", "bicubic") and len(shape) == 4 and not kw:
        strides = [lib.nn.functional.interpolate(
            _channels_last(lib.tensor((x0 * 40 + 100).clip(0, 255).astype(np.uint8))),
            scale_factor=2, mode=mode).stride() for lib in (torch, ember)]
        assert strides[0] == strides[1]


def test_upsample_modules():
    check_pair("Upsample", kwargs=dict(scale_factor=2), inputs=[R(1, 2, 3, 4)])
    check_pair("Upsample", kwargs=dict(size=(5, 7), mode="bilinear"), inputs=[R(1, 2, 3, 4)])
    check_pair("UpsamplingBilinear2d", kwargs=dict(scale_factor=2), inputs=[R(1, 2, 3, 4)])
    check_pair("UpsamplingNearest2d", kwargs=dict(size=5), inputs=[R(1, 2, 3, 4)])
    for args in [dict(scale_factor=2), dict(size=3, mode="bilinear")]:
        assert repr(ember.nn.Upsample(**args)) == repr(torch.nn.Upsample(**args))


def test_interpolate_errors():
    F = lambda lib: lib.nn.functional  # noqa: E731
    same_error(lambda lib, x: F(lib).interpolate(x, scale_factor=2, mode="bilinear"),
               R(2, 3, 4))
    same_error(lambda lib, x: F(lib).interpolate(x, size=3, scale_factor=2), R(2, 3, 4))
    same_error(lambda lib, x: F(lib).interpolate(x), R(2, 3, 4))
    same_error(lambda lib, x: F(lib).interpolate(x, size=3, align_corners=True), R(2, 3, 4))


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("ac", [False, True])
def test_grid_sample(mode, padding_mode, ac):
    x = R(2, 3, 5, 6)
    grid = rng.uniform(-1.4, 1.4, (2, 4, 3, 2))
    check_fn(lambda lib, x, g: lib.nn.functional.grid_sample(
        x, g, mode=mode, padding_mode=padding_mode, align_corners=ac), [x, grid],
        atol=1e-8, rtol=1e-7)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("ac", [False, True])
def test_grid_sample_volumetric(mode, padding_mode, ac):
    x = R(2, 3, 3, 4, 5)
    grid = rng.uniform(-1.4, 1.4, (2, 3, 2, 4, 3))
    check_fn(lambda lib, x, g: lib.nn.functional.grid_sample(
        x, g, mode=mode, padding_mode=padding_mode, align_corners=ac), [x, grid],
        atol=1e-8, rtol=1e-7)


def test_grid_sample_errors():
    F = lambda lib: lib.nn.functional  # noqa: E731
    # bicubic is 2-D only; grid rank must match
    same_error(lambda lib, x, g: F(lib).grid_sample(x, g, mode="bicubic", align_corners=False),
               R(1, 1, 2, 2, 2), rng.uniform(-1, 1, (1, 1, 1, 1, 3)))
    same_error(lambda lib, x, g: F(lib).grid_sample(x, g, align_corners=False),
               R(1, 1, 2, 2), rng.uniform(-1, 1, (1, 1, 1, 1, 3)))


@pytest.mark.parametrize("ac", [False, True])
def test_affine_grid(ac):
    check_fn(lambda lib, t: lib.nn.functional.affine_grid(t, (2, 3, 4, 5), align_corners=ac),
             [R(2, 2, 3)])
    check_fn(lambda lib, t: lib.nn.functional.affine_grid(t, (2, 1, 3, 4, 5),
                                                          align_corners=ac), [R(2, 3, 4)])
    check_fn(lambda lib, t, x: lib.nn.functional.grid_sample(
        x, lib.nn.functional.affine_grid(t, (2, 3, 4, 5), align_corners=ac),
        align_corners=ac), [R(2, 2, 3) * 0.5, R(2, 3, 6, 7)])
    same_error(lambda lib, t: lib.nn.functional.affine_grid(t, (2, 3, 4, 5), align_corners=ac),
               R(2, 3, 3))


@pytest.mark.parametrize("ac", [False, True])
@pytest.mark.parametrize("size", [(3, 1, 5, 7), (2, 1, 28, 28), (2, 1, 3, 4, 5)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_affine_grid_bits_and_identity_theta_gradient(ac, size, dtype):
    # torch's grid bit for bit; at the identity the points sit on pixel centres, where the
    # bilinear gradient jumps: a last-bit difference in the grid changed theta's gradient by
    # 20% (the spatial transformer tutorial's start)
    d = len(size) - 2
    theta = np.eye(d, d + 1)[None].repeat(size[0], 0)
    x = rng.standard_normal(size)
    out = []
    for lib in (torch, ember):
        t = lib.tensor(theta, dtype=getattr(lib, dtype), requires_grad=True)
        g = lib.nn.functional.affine_grid(t, size, align_corners=ac)
        y = lib.nn.functional.grid_sample(lib.tensor(x, dtype=t.dtype), g, align_corners=ac)
        (y * y).sum().backward()
        out.append((g.detach().numpy(), t.grad.numpy()))
    np.testing.assert_array_equal(out[1][0], out[0][0])
    if dtype == "float32":   # float64 grid_sample still rounds pixel centres its own way
        np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-4, atol=1e-3)


def test_vision_warnings_point_at_the_caller():
    import warnings
    for fn in (lambda: ember.nn.functional.affine_grid(ember.zeros(1, 2, 3), (1, 1, 2, 2)),
               lambda: ember.nn.functional.upsample(ember.ones(1, 1, 2, 2), scale_factor=2)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fn()
        assert w and w[0].filename == __file__
