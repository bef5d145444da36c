"""Which dtypes unfold/fold, reflect/replicate padding and interpolate accept, against
torch: the same results, or torch's NotImplementedError naming its kernel."""
import numpy as np
import pytest
import torch

import ember

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64", "complex64", "complex128")

_CALLS = {
    "unfold": lambda F, x: F.unfold(x.reshape(1, 1, 4, 4), 2),
    "fold": lambda F, x: F.fold(x.reshape(1, 4, 4), (3, 3), 2),
    "reflect1d": lambda F, x: F.pad(x.reshape(2, 8), (1, 2), mode="reflect"),
    "reflect2d": lambda F, x: F.pad(x.reshape(1, 4, 4), (1, 1, 2, 1), mode="reflect"),
    "reflect3d": lambda F, x: F.pad(x.reshape(1, 2, 2, 4), (1, 1, 1, 1, 1, 1), mode="reflect"),
    "replicate1d": lambda F, x: F.pad(x.reshape(2, 8), (1, 2), mode="replicate"),
    "replicate2d": lambda F, x: F.pad(x.reshape(1, 4, 4), (1, 1, 2, 1), mode="replicate"),
    "circular1d": lambda F, x: F.pad(x.reshape(2, 8), (1, 2), mode="circular"),
    "nearest1d": lambda F, x: F.interpolate(x.reshape(1, 2, 8), 5),
    "nearest2d": lambda F, x: F.interpolate(x.reshape(1, 1, 4, 4), (3, 6)),
    "nearest3d": lambda F, x: F.interpolate(x.reshape(1, 1, 2, 2, 4), 3),
    "nearest_exact1d": lambda F, x: F.interpolate(x.reshape(1, 2, 8), 5, mode="nearest-exact"),
    "linear": lambda F, x: F.interpolate(x.reshape(1, 2, 8), 5, mode="linear"),
    "bilinear": lambda F, x: F.interpolate(x.reshape(1, 1, 4, 4), 3, mode="bilinear"),
    "bicubic": lambda F, x: F.interpolate(x.reshape(1, 1, 4, 4), 3, mode="bicubic"),
    "trilinear": lambda F, x: F.interpolate(x.reshape(1, 1, 2, 2, 4), 3, mode="trilinear"),
}


def _run(lib, name, dtype):
    x = lib.tensor(np.arange(16) % 5).to(getattr(lib, dtype))
    try:
        r = _CALLS[name](lib.nn.functional, x)
    except NotImplementedError as e:
        return "raised", str(e)
    return "ok", r


@pytest.mark.parametrize("name", sorted(_CALLS))
def test_dtypes_like_torch(name):
    for dtype in DTYPES:
        t = _run(torch, name, dtype)
        e = _run(ember, name, dtype)
        assert e[0] == t[0], (dtype, t, e)
        if t[0] == "raised":
            assert e[1] == t[1]
        else:
            assert str(e[1].dtype).split(".")[1] == str(t[1].dtype).split(".")[1]
            np.testing.assert_allclose(e[1].to(ember.complex128).numpy(),
                                       t[1].to(torch.complex128).numpy(), rtol=1e-2, atol=1e-2)


def test_unfold_reports_bad_geometry_before_the_dtype():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="calculated shape of the array of sliding "
                                               "blocks"):
            lib.nn.functional.unfold(lib.zeros(1, 1, 2, 2, dtype=lib.long), 3)


@pytest.mark.parametrize("fn", ("unfold", "fold"))
@pytest.mark.parametrize("geometry", (dict(kernel_size=0, dilation=0, padding=-1, stride=0),
                                      dict(kernel_size=2, dilation=0, padding=-1, stride=0),
                                      dict(kernel_size=2, dilation=1, padding=-1, stride=0),
                                      dict(kernel_size=2, dilation=1, padding=-1, stride=1),
                                      dict(kernel_size=6), dict(kernel_size=3),
                                      dict(kernel_size=2, stride=9)))
def test_unfold_fold_geometry_errors_like_torch(fn, geometry):
    msgs = []
    for lib in (torch, ember):
        F = lib.nn.functional
        try:
            r = F.unfold(lib.zeros(1, 1, 5, 5), **geometry) if fn == "unfold" else \
                F.fold(lib.zeros(1, 4, 16), (5, 5), **geometry)
            msgs.append(tuple(r.shape))
        except RuntimeError as e:
            msgs.append(str(e))
    assert msgs[0] == msgs[1]
