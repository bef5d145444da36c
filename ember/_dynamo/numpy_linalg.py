"""NumPy's linear algebra on `NumpyArray`s as ember ops: products (dot, vdot, inner, outer,
tensordot, einsum; ``@`` is the matmul ufunc), norms, solves and decompositions.

Integer inputs compute in float64 and float16 runs in NumPy, as NumPy's ``linalg`` does;
results keep NumPy's result types (``EighResult``, ``SVDResult``, ``QRResult``,
``SlogdetResult``).  ``np.linalg.eig`` is not captured: whether its result is real or
complex depends on the values.
"""
import operator

import numpy as np

from .numpy_array import NumpyArray
from .numpy_operands import (Fallback, NO, arr, cast, ember, finish, handles, numpy_meta,
                             rank_of)
from .numpy_ufuncs import check_matmul

__all__ = []


# ---- linear algebra --------------------------------------------------------------------
def _matmul_operands(a, b):
    a, b = arr(a), arr(b)
    rdtype = np.result_type(a.dtype, b.dtype)
    if rdtype == np.bool_:
        raise Fallback("boolean matrix product")
    return a, b, cast(a._t, rdtype), cast(b._t, rdtype)


@handles(np.dot)
def _dot(a, b, out=None):
    a, b, ta, tb = _matmul_operands(a, b)
    if a.ndim and b.ndim:
        check_matmul(a.shape, b.shape)
    if a.ndim == 0 or b.ndim == 0:
        r = ember.mul(ta, tb)
    elif b.ndim <= 2 and a.ndim <= 2 or b.ndim == 1:
        r = ember.matmul(ta, tb)
    else:
        r = ember.tensordot(ta, tb, dims=([a.ndim - 1], [b.ndim - 2]))
    return finish(r, rank_of(r) == 0, out)


@handles(np.vdot)
def _vdot(a, b):
    a, b, ta, tb = _matmul_operands(a, b)
    if a.size != b.size:
        raise Fallback("vdot of arrays of different sizes")
    r = ember.sum(ember.mul(ember.conj(ta).resolve_conj().reshape(-1), tb.reshape(-1)))
    return NumpyArray(r, True)


@handles(np.inner)
def _inner(a, b):
    a, b, ta, tb = _matmul_operands(a, b)
    r = ember.inner(ta, tb)
    return NumpyArray(r, rank_of(r) == 0)


@handles(np.outer)
def _outer(a, b, out=None):
    a, b, ta, tb = _matmul_operands(a, b)
    return finish(ember.outer(ta.reshape(-1), tb.reshape(-1)), False, out)


@handles(np.tensordot)
def _tensordot(a, b, axes=2):
    a, b, ta, tb = _matmul_operands(a, b)
    if not isinstance(axes, int):
        axes = [list(x) if isinstance(x, (list, tuple)) else [x] for x in axes]
    r = ember.tensordot(ta, tb, dims=axes)
    return NumpyArray(r, rank_of(r) == 0)


@handles(np.einsum)
def _einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    if not operands or not isinstance(operands[0], str):
        raise Fallback("einsum in the sublist form")
    arrays = [arr(x) for x in operands[1:]]
    rdtype = np.dtype(dtype) if dtype is not None else np.result_type(*[x.dtype for x in
                                                                        arrays])
    if rdtype == np.bool_:
        raise Fallback("boolean einsum")
    r = ember.einsum(operands[0], *[cast(x._t, rdtype) for x in arrays])
    return finish(r, rank_of(r) == 0 and out is None, out)


def _linalg_dtype(*arrays):
    d = np.result_type(*[x.dtype for x in arrays])
    if d.kind in "biu":
        return np.dtype(np.float64)
    if d not in (np.float32, np.float64, np.complex64, np.complex128):
        raise Fallback(f"linalg on {d}")
    return d


@handles(np.linalg.norm)
def _norm(x, ord=None, axis=None, keepdims=False):
    x = arr(x)
    rdtype, scalar = numpy_meta(np.linalg.norm, x, ord=ord, axis=axis, keepdims=keepdims) \
        if x.ndim <= 2 or axis is not None else (None, False)
    if rdtype is None:
        raise Fallback("norm over all axes of an array of rank > 2")
    t = cast(x._t, _linalg_dtype(x))
    dims = axis if axis is None or isinstance(axis, int) else tuple(axis)
    if axis is None and ord is None:
        r = ember.linalg.vector_norm(t.reshape(-1), 2)
        if keepdims:
            r = r.reshape((1,) * x.ndim)
    else:
        r = ember.linalg.norm(t, ord, dim=dims, keepdim=bool(keepdims))
    return NumpyArray(cast(r, rdtype), scalar)


@handles(np.linalg.solve)
def _solve(a, b):
    a, b = arr(a), arr(b)
    if b.ndim != 1 and b.ndim != a.ndim:
        raise Fallback("solve with batched vector right-hand sides")
    d = _linalg_dtype(a, b)
    return NumpyArray(ember.linalg.solve(cast(a._t, d), cast(b._t, d)))


@handles(np.linalg.inv)
def _inv(a):
    a = arr(a)
    return NumpyArray(ember.linalg.inv(cast(a._t, _linalg_dtype(a))))


@handles(np.linalg.det)
def _det(a):
    a = arr(a)
    r = ember.linalg.det(cast(a._t, _linalg_dtype(a)))
    return NumpyArray(r, rank_of(r) == 0)


@handles(np.linalg.cholesky)
def _cholesky(a, /, *, upper=False):
    a = arr(a)
    return NumpyArray(ember.linalg.cholesky(cast(a._t, _linalg_dtype(a)), upper=upper))


# ---- decompositions and friends ---------------------------------------------------------
def _result_types():
    eye = np.eye(2)
    return (type(np.linalg.eigh(eye)), type(np.linalg.svd(eye)), type(np.linalg.qr(eye)),
            type(np.linalg.slogdet(eye)))


_EighResult, _SVDResult, _QRResult, _SlogdetResult = _result_types()


def _square(a, name):
    a = arr(a)
    if a.ndim < 2:
        raise Fallback(f"{name} of an array of rank < 2")
    return a, cast(a._t, _linalg_dtype(a))


@handles(np.linalg.eigh)
def _eigh(a, UPLO="L"):
    a, t = _square(a, "eigh")
    w, v = ember.linalg.eigh(t, UPLO=UPLO)
    return _EighResult(NumpyArray(w), NumpyArray(v))


@handles(np.linalg.eigvalsh)
def _eigvalsh(a, UPLO="L"):
    a, t = _square(a, "eigvalsh")
    return NumpyArray(ember.linalg.eigvalsh(t, UPLO=UPLO))


@handles(np.linalg.svd)
def _svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if hermitian:
        raise Fallback("svd with hermitian=True")
    a, t = _square(a, "svd")
    if not compute_uv:
        return NumpyArray(ember.linalg.svdvals(t))
    u, s, vh = ember.linalg.svd(t, full_matrices=bool(full_matrices))
    return _SVDResult(NumpyArray(u), NumpyArray(s), NumpyArray(vh))


@handles(np.linalg.qr)
def _qr(a, mode="reduced"):
    if mode not in ("reduced", "complete", "r"):
        raise Fallback(f"qr with mode={mode!r}")
    a, t = _square(a, "qr")
    q, r = ember.linalg.qr(t, mode="reduced" if mode == "r" else mode)
    return NumpyArray(r) if mode == "r" else _QRResult(NumpyArray(q), NumpyArray(r))


@handles(np.linalg.slogdet)
def _slogdet(a):
    a, t = _square(a, "slogdet")
    sign, logabsdet = ember.linalg.slogdet(t)
    return _SlogdetResult(NumpyArray(sign, rank_of(sign) == 0),
                          NumpyArray(logabsdet, rank_of(logabsdet) == 0))


@handles(np.linalg.pinv)
def _pinv(a, rcond=None, hermitian=False, *, rtol=NO):
    if hermitian:
        raise Fallback("pinv with hermitian=True")
    a, t = _square(a, "pinv")
    tol = rcond if rcond is not None else (None if rtol is NO else rtol)
    return NumpyArray(ember.linalg.pinv(t, rtol=tol))


@handles(np.linalg.matrix_power)
def _matrix_power(a, n):
    a = arr(a)
    if a.dtype.kind not in "fc" or a.ndim < 2:
        raise Fallback("matrix_power of integers (NumPy keeps them integers)")
    return NumpyArray(ember.linalg.matrix_power(a._t, operator.index(n)))


@handles(np.kron)
def _kron(a, b):
    a, b = arr(a), arr(b)
    d = np.result_type(a.dtype, b.dtype)
    return NumpyArray(ember.kron(cast(a._t, d), cast(b._t, d)))


@handles(np.cross)
def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    a, b = arr(a), arr(b)
    if axis is not None or (axisa, axisb, axisc) != (-1, -1, -1) or \
            a.shape[-1:] != (3,) or b.shape[-1:] != (3,):
        raise Fallback("cross of 2-vectors or along another axis")
    d = np.result_type(a.dtype, b.dtype)
    shape = np.broadcast_shapes(a.shape, b.shape)
    return NumpyArray(ember.cross(ember.broadcast_to(cast(a._t, d), shape),
                                  ember.broadcast_to(cast(b._t, d), shape), dim=-1))


def _covariance_input(m, y, rowvar, dtype):
    m = arr(m)
    if m.ndim > 2 or y is not None and arr(y).ndim > 2:
        raise Fallback("covariance of arrays of rank > 2")
    d = np.dtype(dtype) if dtype is not None else np.result_type(m.dtype, np.float64)
    t = cast(m._t, d)
    if t.dim() == 2 and not rowvar:
        t = t.T
    if y is not None:
        u = cast(arr(y)._t, d)
        if u.dim() == 2 and not rowvar:
            u = u.T
        t = ember.cat([t.reshape(-1, t.shape[-1]), u.reshape(-1, u.shape[-1])], dim=0)
    return t


@handles(np.cov)
def _cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
         dtype=None):
    if fweights is not None or aweights is not None:
        raise Fallback("cov with weights")
    t = _covariance_input(m, y, rowvar, dtype)
    correction = ddof if ddof is not None else (0 if bias else 1)
    return NumpyArray(ember.cov(t, correction=int(correction)))


@handles(np.corrcoef)
def _corrcoef(x, y=None, rowvar=True, *, dtype=None):
    return NumpyArray(ember.corrcoef(_covariance_input(x, y, rowvar, dtype)))


@handles(np.searchsorted)
def _searchsorted(a, v, side="left", sorter=None):
    if sorter is not None or side not in ("left", "right"):
        raise Fallback("searchsorted with sorter=")
    a, vv = arr(a), arr(v)
    if a.ndim != 1 or a.dtype.kind == "c":
        raise Fallback("searchsorted in an array that is not 1-d real")
    d = np.result_type(a.dtype, vv.dtype)
    r = ember.searchsorted(cast(a._t, d), cast(vv._t, d), side=side)
    return NumpyArray(r, rank_of(r) == 0 and not isinstance(v, np.ndarray) and
                      not (type(v) is NumpyArray and not v.scalar))
