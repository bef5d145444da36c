"""interpolate(antialias=True) against torch: values and gradients of antialiased bilinear
and bicubic resampling (down and up, sizes and scale factors, align_corners), uint8 images
(torch's fixed-point kernel, bit for bit), and its argument and dtype errors."""
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
                                             ("bicubic", True)])
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
