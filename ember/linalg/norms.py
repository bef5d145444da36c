"""Norms and rank-like quantities: vector_norm, matrix_norm, norm, cond, matrix_rank."""
import numpy as np

from .._core import dtype as _dt
from .._core.dispatch import apply, overridable
from ..ops._helpers import type_name
from ..ops.pointwise import where
from ..ops.linalg.norms import RANK
from ..ops.reduce_basic import norm_dims
from ..ops.reduction import NORM
from ._common import check_float, check_matrix, check_square
from .eig import eigvalsh, svdvals
from .solve import _out, inv_ex

__all__ = ["vector_norm", "matrix_norm", "norm", "cond", "matrix_rank"]

_INF = float("inf")


def _cast_dtype(name, x, dtype):
    if dtype is None:
        return x
    dt = x.dtype
    if dtype is not dt and _dt.promote_types(dt, dtype) is not dtype:
        raise RuntimeError(f"{name}: the dtype of the input ({type_name(dt)}) should be "
                           f"convertible without narrowing to the specified dtype "
                           f"({type_name(dtype)})")
    return x.to(dtype)


@overridable
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """Computes a vector norm."""
    dt = x.dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {type_name(dt)}")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: Expected a numeric ord, got {ord}")
    x = _cast_dtype("linalg.vector_norm", x, dtype)
    if isinstance(dim, (list, tuple)) and len(dim) == 0:
        dim = None
    r = apply(NORM, (x,), {"ord": float(ord), "dims": norm_dims(dim, x.ndim),
                           "keepdim": keepdim})
    return _out(r, out)


def _matrix_norm_last2(a, ord):
    if ord == "fro":
        return vector_norm(a, 2, (-2, -1))
    if ord == "nuc":
        return svdvals(a).sum(-1)
    if ord in (2, -2):
        s = svdvals(a)
        return s.amax(-1) if ord == 2 else s.amin(-1)
    if ord in (1, -1):
        c = a.abs().sum(-2)
        return c.amax(-1) if ord == 1 else c.amin(-1)
    if ord in (_INF, -_INF):
        r = a.abs().sum(-1)
        return r.amax(-1) if ord > 0 else r.amin(-1)
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


@overridable
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Computes a matrix norm."""
    check_float("linalg.matrix_norm", A)
    check_matrix("linalg.matrix_norm", A)
    if isinstance(ord, str) and ord not in ("fro", "nuc"):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if not isinstance(ord, str) and ord not in (1, -1, 2, -2, _INF, -_INF):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    dim = tuple(dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(str(d) for d in dim)}")
    n = A.ndim
    d0, d1 = dim[0] % n, dim[1] % n
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, "
                           f"{dim[1]})")
    A = _cast_dtype("linalg.matrix_norm", A, dtype)
    if ord == "fro":
        r = vector_norm(A, 2, (d0, d1), keepdim)
    else:
        r = _matrix_norm_last2(A.movedim((d0, d1), (-2, -1)), ord)
        if keepdim:
            for d in sorted((d0, d1)):
                r = r.unsqueeze(d)
    return _out(r, out)


@overridable
def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """Computes a vector or matrix norm."""
    if dim is not None:
        dl = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
        if len(dl) == 1:
            return vector_norm(A, 2 if ord is None else ord, dl, keepdim, dtype=dtype, out=out)
        if len(dl) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dl, keepdim, dtype=dtype,
                               out=out)
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got "
                           f"{list(dl)}")
    if ord is not None:
        if A.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must "
                               f"be 1D or 2D. Got {A.ndim}D.")
        if A.ndim == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype, out=out)
        return vector_norm(A, ord, None, keepdim, dtype=dtype, out=out)
    return vector_norm(A, 2, None, keepdim, dtype=dtype, out=out)


@overridable
def cond(A, p=None, *, out=None):
    """Computes the condition number of a matrix with respect to a matrix norm."""
    check_matrix("linalg.cond", A)
    check_float("linalg.cond", A)
    if p is None or p in (2, -2):
        s = svdvals(A)
        r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
        return _out(r, out)
    if p not in ("fro", "nuc", 1, -1, _INF, -_INF):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    check_square("linalg.cond", A)
    ainv, info = inv_ex(A)
    r = matrix_norm(A, p) * matrix_norm(ainv, p)
    r = where(info > 0, _INF, r)
    return _out(r, out)


@overridable
def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """Computes the numerical rank of a matrix."""
    check_matrix("linalg.matrix_rank", A)
    check_float("linalg.matrix_rank", A)
    if tol is not None:
        atol, rtol = tol, 0.0
    if hermitian:
        check_square("linalg.matrix_rank", A)
        s = eigvalsh(A.detach()).abs()
    else:
        s = svdvals(A.detach())
    m, n = A.shape[-2:]
    smax = s.amax(-1) if s.shape[-1] else s.sum(-1)
    r = apply(RANK, (s, smax, atol, rtol), {"m": m, "n": n})
    return _out(r, out)
