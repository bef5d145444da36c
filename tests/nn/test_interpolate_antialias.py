"""interpolate(antialias=True) against torch: values and gradients of antialiased bilinear
and bicubic resampling (down and up, sizes and scale factors, align_corners), uint8 images
(torch's fixed-point kernel, bit for bit, plain bicubic too), and its argument and dtype
errors."""
import numpy as np
import pytest
import torch

import ember

A = np.random.default_rng(0).standard_normal((2, 3, 13, 17))


def _resample(lib, mode, align_corners, dtype="float64", grad=False, **size):
    x = lib.tensor(A).to(getattr(lib, dtype))
    if grad:
        x.requires_grad_(True)
    out = lib.nn.functional.interpolate(x, mode=mode, align_corners=align_corners,
                                        antialias=True, **size)
    if not grad:
        return out.detach().numpy(), None
    w = lib.tensor(np.linspace(-1.0, 1.0, out.numel()).reshape(tuple(out.shape)))
    (g,) = lib.autograd.grad((out * w).sum(), x)
    return out.detach().numpy(), g.numpy()


@pytest.mark.parametrize("mode", ("bilinear", "bicubic"))
@pytest.mark.parametrize("align_corners", (False, True))
@pytest.mark.parametrize("size", (dict(size=(5, 7)), dict(size=(26, 34)), dict(size=(3, 40)),
                                  dict(size=(1, 1)), dict(scale_factor=0.3),
                                  dict(scale_factor=2.5)))
def test_values_and_grads_like_torch(mode, align_corners, size):
    e_out, e_grad = _resample(ember, mode, align_corners, grad=True, **size)
    t_out, t_grad = _resample(torch, mode, align_corners, grad=True, **size)
    np.testing.assert_allclose(e_out, t_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(e_grad, t_grad, rtol=1e-10, atol=1e-12)


def test_float32_like_torch():
    e, _ = _resample(ember, "bicubic", False, "float32", size=(6, 5))
    t, _ = _resample(torch, "bicubic", False, "float32", size=(6, 5))
    np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode, shape", [("linear", (1, 1, 4)), ("nearest", (1, 1, 4, 4)),
                                         ("bilinear", (1, 1, 2, 2, 2))])
def test_refused_modes_like_torch(mode, shape):
    msgs = []
    for lib in (torch, ember):
        with pytest.raises(ValueError) as e:
            lib.nn.functional.interpolate(lib.zeros(shape), 3, mode=mode, antialias=True)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("dtype", ("float16", "bfloat16", "int64", "complex64"))
def test_kernel_dtypes_like_torch(dtype):
    msgs = []
    for lib in (torch, ember):
        x = lib.zeros(1, 1, 4, 4, dtype=getattr(lib, dtype))
        with pytest.raises(NotImplementedError) as e:
            lib.nn.functional.interpolate(x, 3, mode="bilinear", antialias=True)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("mode, antialias", [("bilinear", False), ("bilinear", True),
                                             ("bicubic", False), ("bicubic", True)])
@pytest.mark.parametrize("align_corners", (False, True))
@pytest.mark.parametrize("size", (dict(size=(5, 7)), dict(size=(26, 34)), dict(size=(13, 5)),
                                  dict(size=(3, 40)), dict(size=(1, 1)),
                                  dict(scale_factor=0.5), dict(scale_factor=2.5)))
def test_uint8_images_bit_for_bit(mode, antialias, align_corners, size):
    img = np.random.default_rng(1).integers(0, 256, (2, 4, 13, 17)).astype(np.uint8)
    outs = [lib.nn.functional.interpolate(lib.from_numpy(img.copy()), mode=mode,
                                          align_corners=align_corners, antialias=antialias,
                                          **size).numpy() for lib in (torch, ember)]
    assert outs[1].dtype == np.uint8
    np.testing.assert_array_equal(outs[1], outs[0])


_UINT8_SIZES = (dict(size=(5, 7)), dict(size=(26, 34)), dict(size=(13, 5)), dict(size=(3, 40)),
                dict(size=(1, 1)), dict(size=(13, 35)), dict(scale_factor=0.5),
                dict(scale_factor=2.5), dict(scale_factor=1.1), dict(scale_factor=(0.3, 3.7)),
                dict(scale_factor=1.7, recompute_scale_factor=True))


@pytest.mark.parametrize("channels", (1, 3, 4, 5))
@pytest.mark.parametrize("channels_last", (False, True))
@pytest.mark.parametrize("align_corners", (False, True))
@pytest.mark.parametrize("hw", ((13, 17), (2, 3), (32, 24)))
def test_uint8_plain_bicubic_bit_for_bit(channels, channels_last, align_corners, hw):
    """torch's uint8 bicubic without antialias: the -0.75 cubic's four taps, edge taps folded
    into the edge weight, int16 fixed point sized by the running maximum weight; up and down,
    sizes and scale factors, NCHW and channels_last (torch's AVX kernel and its generic one)."""
    img = np.random.default_rng(channels).integers(0, 256, (2, channels) + hw).astype(np.uint8)
    for size in _UINT8_SIZES:
        sf = size.get("scale_factor", 1.0)
        sf = sf if isinstance(sf, tuple) else (sf, sf)
        out_hw = size.get("size", (int(hw[0] * sf[0]), int(hw[1] * sf[1])))
        if min(out_hw) < 1:
            continue
        if channels == 3 and not channels_last and out_hw == (1, 1):
            continue  # torch's AVX kernel fails an internal assert on a (N, 3, 1, 1) output
        outs = []
        for lib in (torch, ember):
            x = lib.from_numpy(img.copy())
            if channels_last:
                x = x.contiguous(memory_format=lib.channels_last)
            outs.append(lib.nn.functional.interpolate(x, mode="bicubic",
                                                      align_corners=align_corners,
                                                      **size).numpy())
        assert outs[1].dtype == np.uint8
        np.testing.assert_array_equal(outs[1], outs[0], err_msg=str(size))


def test_uint8_single_column_is_resampled():
    """torch's generic (C > 4, NCHW) uint8 kernel repeats one value down a width-1 image (its
    two last strides coincide); ember resamples it as torch does for C <= 4 or in float."""
    img = np.random.default_rng(3).integers(0, 256, (1, 5, 7, 1)).astype(np.uint8)
    e = ember.nn.functional.interpolate(ember.from_numpy(img.copy()), size=(11, 1),
                                        mode="bicubic").numpy()
    cl = torch.from_numpy(img.copy()).contiguous(memory_format=torch.channels_last)
    t = torch.nn.functional.interpolate(cl, size=(11, 1), mode="bicubic").numpy()
    np.testing.assert_array_equal(e, t)
