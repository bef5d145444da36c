"""Shared pieces of ember.linalg: the error type, argument checks in torch's words,
batch loops over LAPACK routines that NumPy does not batch, and small ember-op helpers
used by the derivatives."""
import numpy as np

from .._core import dtype as _dt
from .._core.tensor import Tensor
from ..ops._helpers import type_name

_HALF = {np.dtype(np.float16), _dt.bfloat16.np}


class LinAlgError(RuntimeError):
    """Raised for singular or non-positive-definite input (like ``torch.linalg.LinAlgError``)."""


def arr(t):
    return t._data if isinstance(t, Tensor) else np.asarray(t)


def check_float(name, A, arg="A"):
    dt = A._data.dtype
    if dt in _HALF:
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {type_name(dt)}")
    if dt.kind not in "fc":
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {type_name(dt)}")


def check_matrix(name, A, arg="A"):
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")


def check_square(name, A, arg="A"):
    check_matrix(name, A, arg)
    m, n = A.shape[-2:]
    if m != n:
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are "
                           f"{m} by {n} matrices")


def check_same_dtype(name, A, B, an="A", bn="B"):
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(f"{name}: Expected {an} and {bn} to have the same dtype, but found "
                           f"{an} of type {type_name(A._data.dtype)} and {bn} of type "
                           f"{type_name(B._data.dtype)} instead")


def batch_prefix(batch_shape, i):
    """torch's '(Batch element i): ' prefix, empty for a single matrix."""
    return f"(Batch element {i}): " if len(batch_shape) else ""


def raise_info(name, batch_shape, info, fmt):
    """Raise LinAlgError for the first non-zero entry of ``info`` (shape ``batch_shape``)."""
    flat = np.asarray(info).reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size:
        i = int(bad[0])
        raise LinAlgError(f"{name}: {batch_prefix(batch_shape, i)}{fmt.format(int(flat[i]))}")


def lapack(prefix, dt):
    """The scipy LAPACK routine ``prefix`` for dtype ``dt`` (s/d/c/z)."""
    from scipy.linalg import lapack as lp
    c = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}[np.dtype(dt).name]
    return getattr(lp, c + prefix)


def batched(fn, a, *others):
    """Apply ``fn`` (matrix -> tuple of arrays) to every matrix of the batch of ``a``
    (and the matching matrices of ``others``, broadcast already); stack the results."""
    bs = a.shape[:-2]
    n = int(np.prod(bs)) if bs else 1
    af = a.reshape((n,) + a.shape[-2:])
    of = [o.reshape((n,) + o.shape[len(bs):]) for o in others]
    res = [fn(af[i], *[o[i] for o in of]) for i in range(n)]
    if not res:
        return None
    outs = []
    for k in range(len(res[0])):
        s = np.stack([np.asarray(r[k]) for r in res])
        outs.append(s.reshape(bs + s.shape[1:]))
    return outs


def getrf_info(a):
    """LAPACK getrf info per matrix of the batch ``a`` (0 when U has no zero pivot)."""
    f = lapack("getrf", a.dtype)
    r = batched(lambda m: (f(m)[2],), a)
    return r[0] if r is not None else np.zeros(a.shape[:-2], np.int32)


def potrf_info(a, lower=True):
    f = lapack("potrf", a.dtype)
    r = batched(lambda m: (f(m, lower=lower, clean=True)[1],), a)
    return r[0] if r is not None else np.zeros(a.shape[:-2], np.int32)
