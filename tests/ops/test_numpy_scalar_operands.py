"""NumPy scalars as operands are read as torch reads them: as Python numbers (weak in type
promotion), np.bool_ as a float; in binary ops, comparisons, clamp bounds and full()."""
import numpy as np
import pytest
import torch

import ember

_SCALARS = [np.float64(1.5), np.float32(2.5), np.float16(1.5), np.int64(2), np.int32(3),
            np.uint8(200), np.bool_(True), np.complex128(1 + 1j)]
_TENSORS = [([1, 2], None), ([1.0, 2.0], None), ([1.0, 2.0], "float16"), ([True, False], None)]
_OPS = ["s * t", "t * s", "s + t", "t - s", "s / t", "t > s", "t ** s", "s // t", "t % s"]


def _run(lib, expr, s, data, dtype):
    t = lib.tensor(data, dtype=getattr(lib, dtype) if dtype else None)
    try:
        r = eval(expr, {"s": s, "t": t, "lib": lib})
    except Exception as e:  # noqa: BLE001 - the error type is compared
        return type(e).__name__
    return str(r.dtype).split(".")[-1], r.tolist()


@pytest.mark.parametrize("s", _SCALARS, ids=lambda s: type(s).__name__)
def test_binary_ops_as_torch(s):
    for data, dtype in _TENSORS:
        for expr in _OPS:
            if isinstance(s, np.complexfloating) and (dtype == "float16" or "**" in expr
                                                      or "//" in expr or "%" in expr):
                continue  # complex32 / complex pow precision: not about NumPy scalars
            want = _run(torch, expr, s, data, dtype)
            got = _run(ember, expr, s, data, dtype)
            if isinstance(want, tuple) and isinstance(got, tuple):
                assert got[0] == want[0], (expr, data, dtype)
                np.testing.assert_allclose(np.asarray(got[1], dtype=complex),
                                           np.asarray(want[1], dtype=complex), rtol=1e-6,
                                           err_msg=f"{expr} {data} {dtype}")
            else:
                assert got == want, (expr, data, dtype)


@pytest.mark.parametrize("expr", [
    "lib.full((2,), np.bool_(True))", "lib.full((2,), np.float64(1.5))",
    "lib.full((2,), np.int32(1))", "lib.tensor([1, 2]).clamp(min=np.float64(1.5))",
    "lib.add(lib.tensor([1]), np.float64(1.5))", "lib.tensor([1.0, 2.0]) * np.float64(1.1)",
    "lib.tensor([1.0, 2.0]) / np.float64(3)", "lib.tensor(np.float64(1.5))",
    "lib.where(lib.tensor([True, False]), lib.tensor([1.0, 2.0]), np.float64(0))"])
def test_creation_and_functions_as_torch(expr):
    got, want = (eval(expr, {"lib": lib, "np": np}) for lib in (ember, torch))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    # a float64 scalar is rounded to the float32 op's dtype first, as torch does: bitwise
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_bool_scalar_reads_as_float():
    with pytest.raises(NotImplementedError):
        torch.tensor([True]) & np.bool_(True)
    with pytest.raises(NotImplementedError):
        ember.tensor([True]) & np.bool_(True)
