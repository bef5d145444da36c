"""Binary ops with Python scalars and 0-dim tensors of other dtypes, against torch: result
dtypes and values, and torch's TypeError for tensor-only arguments."""
import numpy as np
import pytest
import torch

import ember

BASE = np.array([[1, 2, 3], [0, 5, 7]])


@pytest.mark.parametrize("name", ("isclose", "dist", "ldexp"))
@pytest.mark.parametrize("scalar", (2, 2.5, True))
def test_tensor_only_arguments_refuse_scalars(name, scalar):
    msgs = []
    for lib in (torch, ember):
        x = lib.tensor(BASE, dtype=lib.float32)
        for args in ((x, scalar), (scalar, x)):
            with pytest.raises(TypeError) as e:
                getattr(lib, name)(*args)
            msgs.append(str(e.value))
    assert msgs[:2] == msgs[2:]


# float16 with a complex scalar is complex32 in torch, a dtype ember does not have
_RSUB = [(d, o) for d in ("uint8", "int8", "int32", "int64", "float16", "float32", "float64",
                          "complex64") for o in (2, 2.5, -3, 1 + 1j)
         if not (d == "float16" and isinstance(o, complex))]


@pytest.mark.parametrize("dtype, other", _RSUB)
@pytest.mark.parametrize("alpha", (1, 2))
def test_rsub_like_torch(dtype, other, alpha):
    res = []
    for lib in (torch, ember):
        x = lib.tensor(BASE).to(getattr(lib, dtype))
        try:
            r = lib.rsub(x, other, alpha=alpha)
            res.append((str(r.dtype).split(".")[1], r.to(lib.complex128).numpy()))
        except RuntimeError as e:
            res.append(str(e))
    if isinstance(res[0], str):
        assert res[0] == res[1]
    else:
        assert res[0][0] == res[1][0]
        np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-3)


def test_rsub_refusals_like_torch():
    for lib in (torch, ember):
        with pytest.raises(TypeError, match=r"rsub\(\) received an invalid combination"):
            lib.rsub(2, lib.ones(2))
        with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
            lib.rsub(lib.ones(2, dtype=lib.uint8), True)


@pytest.mark.parametrize("dtype", ("bool", "uint8", "int64", "float16", "float32"))
def test_nextafter_promotes_before_its_dtype_check(dtype):
    res = []
    for lib in (torch, ember):
        x = lib.tensor(BASE).to(getattr(lib, dtype))
        try:
            r = lib.nextafter(x, lib.tensor(3.5, dtype=lib.float64))
            res.append((str(r.dtype).split(".")[1], r.tolist()))
        except NotImplementedError as e:
            res.append(str(e))
    assert res[0] == res[1]


@pytest.mark.parametrize("dtype", ("float16", "bfloat16", "float32", "float64"))
def test_nextafter_steps_in_its_own_dtype(dtype):
    # halves step their own 16-bit pattern; x == y gives y (signed zeros included)
    vals = [1.0, 2.0, 0.0, -0.0, 5.0, -3.0, float("inf"), float("-inf"), float("nan"), 1e-7,
            -1e-7, 3.5]
    for y in (3.5, -3.5, 0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-7):
        res = []
        for lib in (torch, ember):
            x = lib.tensor(vals).to(getattr(lib, dtype))
            r = lib.nextafter(x, lib.tensor([y] * len(vals)).to(getattr(lib, dtype)))
            res.append(r.to(lib.float64).numpy())
        np.testing.assert_array_equal(res[1], res[0])
        np.testing.assert_array_equal(np.signbit(res[1]), np.signbit(res[0]))
