"""ember's LAPACK routines take NumPy arrays only: another backend's array gets a
TypeError before it reaches f2py, whose failed conversion releases the dtype once too
often (NumPy's fortranobject.c) and eventually aborts the interpreter."""
import sys

import numpy as np
import pytest

from ember.ops.linalg._lapack import lapack


class _Opaque:
    shape, dtype = (2, 2), np.dtype(np.complex128)

    def __array__(self, *args, **kwargs):
        raise RuntimeError("not a NumPy array")


def test_foreign_array_is_refused_and_dtype_references_kept():
    gesv = lapack("gesv", np.complex128)
    before = sys.getrefcount(np.dtype(np.complex128))
    for _ in range(20):
        with pytest.raises(TypeError, match="zgesv runs on NumPy arrays; got _Opaque"):
            gesv(_Opaque(), _Opaque())
    assert sys.getrefcount(np.dtype(np.complex128)) >= before


def test_numpy_arrays_solve():
    a = np.array([[3.0, 1.0], [1.0, 2.0]])
    b = np.array([[9.0], [8.0]])
    lu, piv, x, info = lapack("gesv", np.float64)(a, b)
    assert info == 0
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-14)
