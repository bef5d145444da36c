"""NumPy's reductions and statistics on `NumpyArray`s as ember ops.

The result dtype is NumPy's, asked of NumPy on a one-element array of the input's dtype and
rank (``sum`` of int32 is int64, ``mean`` of ints float64, ``argmax`` intp), which also
validates axis and dtype arguments; so is whether NumPy returns a scalar.  The input is cast
to that dtype first (NumPy's accumulator), the result after.
"""
import operator

import numpy as np

from .numpy_array import NumpyArray
from .numpy_operands import (Fallback, NO, arr, cast, axes_of, finish, ember, HANDLERS,
                             handles, numpy_meta, no_complex)

__all__ = []


def _reduction(func, compute, cast_input=True, takes_dtype=True, real_only=False):
    def handler(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True,
                initial=NO, **extra):
        if where is not True or initial is not NO:
            raise Fallback("where= or initial=")
        a = arr(a)
        if real_only:
            no_complex(a)
        kw = dict(axis=axis, keepdims=keepdims, **extra)
        if takes_dtype:
            kw["dtype"] = dtype
        elif dtype is not None:
            raise TypeError(f"{func.__name__}() got an unexpected keyword argument 'dtype'")
        rdtype, scalar = numpy_meta(func, a, **kw)
        t = cast(a._t, rdtype) if cast_input else a._t
        dims = axes_of(axis, a.ndim)
        if dims is None and keepdims:
            dims = tuple(range(a.ndim))
        r = compute(t, dims, bool(keepdims), **extra) if a.ndim else compute(t, None, False,
                                                                               **extra)
        return finish(cast(r, rdtype), scalar, out)
    return handler


def _prod(t, dims, keep):
    if dims is None:
        return ember.prod(t)
    for d in sorted((d % t.dim() for d in dims), reverse=True):
        t = ember.prod(t, d, keepdim=keep)
    return t


def _minmax(op):
    def compute(t, dims, keep):
        return op(t, dim=dims if dims is not None else tuple(range(t.dim())), keepdim=keep)
    return compute


def _var(op):
    def compute(t, dims, keep, ddof=0):
        return op(t, dim=dims, correction=ddof, keepdim=keep)
    return compute


HANDLERS[np.sum] = _reduction(np.sum, lambda t, d, k: ember.sum(t, dim=d, keepdim=k))
HANDLERS[np.mean] = _reduction(np.mean, lambda t, d, k: ember.mean(t, dim=d, keepdim=k))
HANDLERS[np.prod] = _reduction(np.prod, _prod)
HANDLERS[np.max] = HANDLERS[np.amax] = _reduction(np.max, _minmax(ember.amax), False, False,
                                                  True)
HANDLERS[np.min] = HANDLERS[np.amin] = _reduction(np.min, _minmax(ember.amin), False, False,
                                                  True)
HANDLERS[np.all] = _reduction(np.all, lambda t, d, k: ember.all(t, dim=d, keepdim=k), False,
                              False)
HANDLERS[np.any] = _reduction(np.any, lambda t, d, k: ember.any(t, dim=d, keepdim=k), False,
                              False)
HANDLERS[np.std] = _reduction(np.std, _var(ember.std), real_only=True)
HANDLERS[np.var] = _reduction(np.var, _var(ember.var), real_only=True)


def _quantile_of(func, a, q, axis, keepdims, scale, method="linear", **unsupported):
    if unsupported or method != "linear" or not isinstance(q, (int, float, np.floating,
                                                                np.integer)):
        raise Fallback("only a scalar q with linear interpolation is captured")
    a = arr(a)
    if isinstance(axis, (tuple, list)) or a.dtype.kind in "cb":
        raise Fallback("several axes or complex numbers")
    rdtype, scalar = numpy_meta(func, a, **({"q": q} if func is not np.median else {}),
                           axis=axis, keepdims=keepdims)
    t = cast(a._t, rdtype if rdtype.kind == "f" else np.float64)
    if axis is None:
        r = ember.quantile(t.reshape(-1), float(q) / scale, dim=0)
        if keepdims:
            r = r.reshape((1,) * a.ndim)
    else:
        r = ember.quantile(t, float(q) / scale, dim=operator.index(axis),
                           keepdim=bool(keepdims))
    return NumpyArray(cast(r, rdtype), scalar)


@handles(np.median)
def _median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    if out is not None:
        raise Fallback("out=")
    return _quantile_of(np.median, a, 0.5, axis, keepdims, 1)


@handles(np.percentile)
def _percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, **kw):
    if out is not None:
        raise Fallback("out=")
    return _quantile_of(np.percentile, a, q, axis, keepdims, 100, method, **kw)


@handles(np.quantile)
def _quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
              keepdims=False, **kw):
    if out is not None:
        raise Fallback("out=")
    return _quantile_of(np.quantile, a, q, axis, keepdims, 1, method, **kw)


@handles(np.average)
def _average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    if weights is not None or returned:
        raise Fallback("average with weights")
    return np.mean(a, axis=axis, keepdims=keepdims)


@handles(np.ptp)
def _ptp(a, axis=None, out=None, keepdims=False):
    return np.subtract(np.max(a, axis=axis, keepdims=keepdims),
                       np.min(a, axis=axis, keepdims=keepdims), out=out)


@handles(np.count_nonzero)
def _count_nonzero(a, axis=None, *, keepdims=False):
    if axis is None and not keepdims:
        raise Fallback("count_nonzero of the whole array (a Python int)")
    return np.sum(np.not_equal(a, 0), axis=axis, keepdims=keepdims, dtype=np.intp)


def _arg_reduction(func, op):
    @handles(func)
    def handler(a, axis=None, out=None, *, keepdims=False):
        a = arr(a)
        no_complex(a)
        rdtype, scalar = numpy_meta(func, a, axis=axis, keepdims=keepdims)
        if axis is None:
            r = op(a._t.reshape(-1), 0)
            if keepdims:
                r = r.reshape((1,) * a.ndim)
        else:
            r = op(a._t, operator.index(axis), keepdim=bool(keepdims))
        return finish(cast(r, rdtype), scalar, out)


_arg_reduction(np.argmax, ember.argmax)
_arg_reduction(np.argmin, ember.argmin)


def _cumulative(func, op):
    @handles(func)
    def handler(a, axis=None, dtype=None, out=None):
        a = arr(a)
        rdtype, _ = numpy_meta(func, a, axis=axis, dtype=dtype)
        t = cast(a._t, rdtype)
        if axis is None:
            t, axis = t.reshape(-1), 0
        return finish(cast(op(t, operator.index(axis)), rdtype), False, out)


_cumulative(np.cumsum, ember.cumsum)
_cumulative(np.cumprod, ember.cumprod)
