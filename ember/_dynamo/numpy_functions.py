"""NumPy's functions on `NumpyArray`s (``__array_function__``) as ember ops, and ember's
functions given such arrays (``__ember_function__``).

Each handler takes NumPy's signature and registers in ``HANDLERS``; an argument form it does
not take raises `Fallback` (real NumPy runs the call).  Dtypes are NumPy's
(``np.result_type`` of the operands, Python scalars weak).  Importing this module binds the
protocols of `NumpyArray` (``numpy_array._impl``).
"""
import operator
import sys

import numpy as np

from .._core import dtype as _dt
from . import numpy_array as _numpy_array
from . import numpy_linalg, numpy_reductions  # noqa: F401  (register their handlers)
from .numpy_array import NumpyArray
from .numpy_indexing import astype, getitem, setitem
from .numpy_operands import (Fallback, NO, supported, arr, rank_of, cast, result_type,
                             operand_tensor, axes_of, finish, to_real, ember, HANDLERS,
                             handles, numpy_meta, no_complex, real_array, real_attribute,
                             function_call)
from .numpy_ufuncs import UFUNCS, ufunc_call

__all__ = ["ufunc_call", "function_call", "ember_function_call", "getitem", "setitem",
           "astype", "real_array", "real_attribute", "HANDLERS", "UFUNCS"]


# ---- elementwise functions that are not ufuncs ----------------------------------------
@handles(np.where)
def _where(condition, x=NO, y=NO):
    if x is NO or y is NO:
        raise Fallback("np.where with one argument (data-dependent shape)")
    rdtype = result_type(x, y)
    c = cast(arr(condition)._t, np.bool_)
    return NumpyArray(ember.where(c, operand_tensor(x, rdtype), operand_tensor(y, rdtype)))


@handles(np.clip)
def _clip(a, a_min=NO, a_max=NO, out=None, *, min=NO, max=NO, **kwargs):
    if kwargs:
        raise Fallback(f"np.clip with {sorted(kwargs)}")
    lo = a_min if a_min is not NO else (min if min is not NO else None)
    hi = a_max if a_max is not NO else (max if max is not NO else None)
    r = arr(a)
    if lo is not None:
        r = np.maximum(r, lo)
    if hi is not None:
        r = np.minimum(r, hi)
    if out is not None:
        return finish(r._t, False, out)
    return NumpyArray(r._t)


@handles(np.round, np.around)
def _round(a, decimals=0, out=None):
    a = arr(a)
    if a.dtype == np.bool_:
        raise Fallback("rounding booleans")
    if a.dtype.kind in "biu":
        if decimals < 0:
            raise Fallback("rounding integers to negative decimals")
        return finish(ember.clone(a._t), a.scalar, out)
    if a.dtype.kind == "c":
        raise Fallback("rounding complex numbers")
    return finish(ember.round(a._t, decimals=operator.index(decimals)), a.scalar, out)


@handles(np.isclose)
def _isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    rdtype = result_type(a, b)
    if rdtype.kind not in "fc":
        rdtype = np.dtype(np.float64)
    r = ember.isclose(operand_tensor(a, rdtype), operand_tensor(b, rdtype), rtol=rtol,
                      atol=atol, equal_nan=equal_nan)
    return NumpyArray(r, rank_of(r) == 0)


@handles(np.allclose)
def _allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(np.all(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


@handles(np.nan_to_num)
def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = arr(x)
    if not copy:
        raise Fallback("nan_to_num in place")
    if x.dtype.kind not in "fc":
        return NumpyArray(ember.clone(x._t), x.scalar)
    if x.dtype.kind == "c":
        raise Fallback("nan_to_num of complex numbers")
    return NumpyArray(ember.nan_to_num(x._t, nan=nan, posinf=posinf, neginf=neginf), x.scalar)


@handles(np.real)
def _real(val):
    a = arr(val)
    return NumpyArray(ember.real(a._t), a.scalar) if a.dtype.kind == "c" else a


@handles(np.imag)
def _imag(val):
    a = arr(val)
    if a.dtype.kind == "c":
        return NumpyArray(ember.imag(a._t), a.scalar)
    return NumpyArray(ember.zeros_like(a._t), a.scalar)


@handles(np.copy)
def _copy(a, order="K", subok=False):
    a = arr(a)
    return NumpyArray(ember.clone(a._t), False)


def _like(fill):
    def handler(a, dtype=None, order="K", subok=True, shape=None, *, device=None, **kw):
        a = arr(a)
        d = np.dtype(dtype) if dtype is not None else a.dtype
        if not supported(d):
            raise Fallback(f"dtype {d}")
        shape = a.shape if shape is None else (
            (shape,) if isinstance(shape, int) else tuple(shape))
        value = fill(kw)
        return NumpyArray(ember.full(shape, value, dtype=_dt.FROM_NP[d]))
    return handler


HANDLERS[np.zeros_like] = _like(lambda kw: 0)
HANDLERS[np.empty_like] = _like(lambda kw: 0)
HANDLERS[np.ones_like] = _like(lambda kw: 1)


@handles(np.full_like)
def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    if not isinstance(fill_value, (int, float, complex, bool, np.generic)):
        raise Fallback("full_like with an array fill value")
    return _like(lambda kw: fill_value)(a, dtype, order, subok, shape)


@handles(np.shape)
def _shape(a):
    return arr(a).shape


@handles(np.ndim)
def _ndim(a):
    return arr(a).ndim


@handles(np.size)
def _size(a, axis=None):
    a = arr(a)
    return a.size if axis is None else a.shape[axis]


@handles(np.result_type)
def _result_type_handler(*arrays_and_dtypes):
    return np.result_type(*[x.dtype if type(x) is NumpyArray else x
                            for x in arrays_and_dtypes])


# ---- shape and movement --------------------------------------------------------------
@handles(np.reshape)
def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    shape = newshape if shape is None else shape
    if order != "C" or copy is False:
        raise Fallback(f"reshape with order={order!r}, copy={copy!r}")
    a = arr(a)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    r = ember.reshape(a._t, shape)
    return NumpyArray(ember.clone(r) if copy else r)


@handles(np.ravel)
def _ravel(a, order="C"):
    if order not in ("C", "K", "A"):
        raise Fallback(f"ravel with order={order!r}")
    return NumpyArray(ember.reshape(arr(a)._t, (-1,)))


@handles(np.transpose)
def _transpose(a, axes=None):
    a = arr(a)
    axes = tuple(reversed(range(a.ndim))) if axes is None else tuple(axes)
    if sorted(x % a.ndim if a.ndim else x for x in axes) != list(range(a.ndim)):
        raise Fallback("axes don't match array")
    return NumpyArray(ember.permute(a._t, axes))


@handles(np.swapaxes)
def _swapaxes(a, axis1, axis2):
    return NumpyArray(ember.transpose(arr(a)._t, axis1, axis2))


@handles(np.moveaxis)
def _moveaxis(a, source, destination):
    return NumpyArray(ember.moveaxis(arr(a)._t, source, destination))


@handles(np.expand_dims)
def _expand_dims(a, axis):
    a = arr(a)
    axes = axes_of(axis, a.ndim)
    nd = a.ndim + len(axes)
    axes = sorted(x % nd for x in axes)
    if len(set(axes)) != len(axes):
        raise Fallback("repeated axis")
    t = a._t
    for x in axes:
        t = ember.unsqueeze(t, x)
    return NumpyArray(t)


@handles(np.squeeze)
def _squeeze(a, axis=None):
    a = arr(a)
    if axis is None:
        return NumpyArray(ember.squeeze(a._t))
    dims = axes_of(axis, a.ndim)
    if any(a.shape[d] != 1 for d in dims):
        raise Fallback("squeezing an axis whose size is not 1")
    t = a._t
    for d in sorted((d % a.ndim for d in dims), reverse=True):
        t = ember.squeeze(t, d)
    return NumpyArray(t)


def _arrays(arrays, dtype=None):
    arrays = [arr(x) for x in arrays]
    if not arrays:
        raise Fallback("no arrays")
    rdtype = np.dtype(dtype) if dtype is not None else np.result_type(*[x.dtype for x in
                                                                        arrays])
    return arrays, [cast(x._t, rdtype) for x in arrays]


@handles(np.concatenate)
def _concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _, ts = _arrays(arrays, dtype)
    if axis is None:
        ts, axis = [t.reshape(-1) for t in ts], 0
    if any(rank_of(t) == 0 for t in ts):
        raise Fallback("zero-dimensional arrays cannot be concatenated")
    return finish(ember.cat(ts, dim=operator.index(axis)), False, out)


@handles(np.stack)
def _stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _, ts = _arrays(arrays, dtype)
    return finish(ember.stack(ts, dim=operator.index(axis)), False, out)


@handles(np.vstack)
def _vstack(tup, *, dtype=None, casting="same_kind"):
    _, ts = _arrays(tup, dtype)
    ts = [t.reshape(1, -1) if rank_of(t) < 2 else t for t in ts]
    return NumpyArray(ember.cat(ts, dim=0))


@handles(np.hstack)
def _hstack(tup, *, dtype=None, casting="same_kind"):
    _, ts = _arrays(tup, dtype)
    ts = [t.reshape(-1) if rank_of(t) == 0 else t for t in ts]
    return NumpyArray(ember.cat(ts, dim=0 if rank_of(ts[0]) == 1 else 1))


@handles(np.broadcast_to)
def _broadcast_to(array, shape, subok=False):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return NumpyArray(ember.broadcast_to(arr(array)._t, shape))


@handles(np.flip)
def _flip(m, axis=None):
    m = arr(m)
    dims = axes_of(axis, m.ndim)
    return NumpyArray(ember.flip(m._t, dims if dims is not None else tuple(range(m.ndim))))


@handles(np.roll)
def _roll(a, shift, axis=None):
    a = arr(a)
    if axis is None:
        return NumpyArray(ember.roll(a._t.reshape(-1), shift, 0).reshape(a.shape))
    return NumpyArray(ember.roll(a._t, shift, axis))


@handles(np.repeat)
def _repeat(a, repeats, axis=None):
    if not isinstance(repeats, (int, np.integer)):
        raise Fallback("repeats given per element")
    a = arr(a)
    t = a._t if axis is not None else a._t.reshape(-1)
    return NumpyArray(ember.repeat_interleave(t, int(repeats), dim=0 if axis is None else axis))


@handles(np.tile)
def _tile(A, reps):
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    a = arr(A)
    t = a._t
    if len(reps) > a.ndim:
        t = t.reshape((1,) * (len(reps) - a.ndim) + a.shape)
    return NumpyArray(ember.tile(t, reps))


def _atleast(nd):
    def handler(*arys):
        out = []
        for a in arys:
            a = arr(a)
            t = a._t
            if a.ndim < nd:
                shape = {0: (1,) * nd, 1: (1,) + a.shape + (1,) * (nd - 2)}.get(
                    a.ndim, a.shape + (1,))
                t = t.reshape(shape[:nd] if a.ndim == 0 else shape)
            out.append(NumpyArray(t))
        return out[0] if len(out) == 1 else tuple(out)
    return handler


HANDLERS[np.atleast_1d] = _atleast(1)
HANDLERS[np.atleast_2d] = _atleast(2)
HANDLERS[np.atleast_3d] = _atleast(3)


@handles(np.column_stack)
def _column_stack(tup):
    _, ts = _arrays(tup)
    return NumpyArray(ember.cat([t.reshape(-1, 1) if rank_of(t) < 2 else t for t in ts], dim=1))


@handles(np.meshgrid)
def _meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if sparse or indexing not in ("xy", "ij"):
        raise Fallback("sparse meshgrid")
    _, ts = _arrays(xi)
    grids = ember.meshgrid(*[t.reshape(-1) for t in ts], indexing=indexing)
    return tuple(NumpyArray(ember.clone(g) if copy else g) for g in grids)


@handles(np.split, np.array_split)
def _split(ary, indices_or_sections, axis=0):
    a = arr(ary)
    if isinstance(indices_or_sections, (int, np.integer)) and \
            a.shape[axis] % int(indices_or_sections):
        raise Fallback("array split does not result in an equal division")
    if not isinstance(indices_or_sections, (int, np.integer)):
        indices_or_sections = [int(i) for i in indices_or_sections]
    return [NumpyArray(t) for t in ember.tensor_split(a._t, indices_or_sections, dim=axis)]


@handles(np.diagonal)
def _diagonal(a, offset=0, axis1=0, axis2=1):
    return NumpyArray(ember.diagonal(arr(a)._t, offset, axis1, axis2))


@handles(np.diag)
def _diag(v, k=0):
    v = arr(v)
    if v.ndim not in (1, 2):
        raise Fallback("diag of an array that is not 1-d or 2-d")
    return NumpyArray(ember.diag(v._t, k))


@handles(np.tril)
def _tril(m, k=0):
    return NumpyArray(ember.tril(arr(m)._t, k))


@handles(np.triu)
def _triu(m, k=0):
    return NumpyArray(ember.triu(arr(m)._t, k))


@handles(np.trace)
def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    a = arr(a)
    rdtype, scalar = numpy_meta(np.trace, a, offset=0, axis1=axis1, axis2=axis2, dtype=dtype)
    d = ember.diagonal(cast(a._t, rdtype), offset, axis1, axis2)
    return finish(cast(ember.sum(d, dim=-1), rdtype), scalar, out)


@handles(np.diff)
def _diff(a, n=1, axis=-1, prepend=NO, append=NO):
    a = arr(a)
    if prepend is not NO or append is not NO or a.dtype == np.bool_:
        raise Fallback("diff with prepend/append or of booleans")
    return NumpyArray(ember.diff(a._t, n=n, dim=axis))


# ---- sorting and gathering -------------------------------------------------------------
@handles(np.sort)
def _sort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        raise Fallback("sort with order=")
    a = arr(a)
    no_complex(a)
    t = a._t if axis is not None else a._t.reshape(-1)
    return NumpyArray(ember.sort(t, dim=-1 if axis is None else axis, stable=True)[0])


@handles(np.argsort)
def _argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        raise Fallback("argsort with order=")
    a = arr(a)
    no_complex(a)
    t = a._t if axis is not None else a._t.reshape(-1)
    return NumpyArray(ember.argsort(t, dim=-1 if axis is None else axis, stable=True))


@handles(np.take_along_axis)
def _take_along_axis(arr_, indices, axis=-1):
    a, i = arr(arr_), arr(indices)
    if axis is None:
        return NumpyArray(ember.take_along_dim(a._t.reshape(-1), i._t, 0))
    axis = operator.index(axis) % max(a.ndim, 1)
    if i.ndim == a.ndim and all(x == y for d, (x, y) in enumerate(zip(i.shape, a.shape))
                                if d != axis):
        # no broadcasting needed: a gather (whose graphs stay symbolic in the sizes)
        return NumpyArray(ember.gather(a._t, axis, i._t))
    return NumpyArray(ember.take_along_dim(a._t, i._t, axis))


@handles(np.take)
def _take(a, indices, axis=None, out=None, mode="raise"):
    if mode != "raise":
        raise Fallback(f"take with mode={mode!r}")
    a = arr(a)
    scalar = isinstance(indices, (int, np.integer))
    idx = indices if scalar else arr(indices)._t
    if axis is None:
        r = a._t.reshape(-1)[idx]
    else:
        axis = operator.index(axis) % a.ndim
        r = a._t[(slice(None),) * axis + (idx,)]
    return finish(r, scalar and axis is None, out)


# ---- ember functions called with NumPy arrays ----------------------------------------
def _to_tensors(x):
    if type(x) is NumpyArray:
        return x._t
    if type(x) in (list, tuple):
        return type(x)(_to_tensors(i) for i in x)
    if type(x) is dict:
        return {k: _to_tensors(v) for k, v in x.items()}
    return x


def ember_function_call(func, args, kwargs):
    """``__ember_function__``: an ember function given arrays of this program.  The
    functions that take ndarrays eagerly take the array's tensor (``ember.from_numpy(a)``
    is ``a``'s tensor, sharing its memory; ``ember.tensor(a)`` a copy of it); any other
    gets the real array, as it would eagerly (usually its TypeError)."""
    if args and type(args[0]) is NumpyArray:
        t = args[0]._t
        if func is ember.from_numpy and len(args) == 1 and not kwargs:
            return t
        if func is ember.as_tensor or func is ember.asarray and not kwargs.get("copy"):
            return func(t, *args[1:], **kwargs)
        if func is ember.tensor and len(args) == 1 or func is ember.asarray:
            dtype = kwargs.get("dtype")
            r = ember.clone(t) if dtype is None or dtype == t.dtype else t.to(dtype)
            if kwargs.get("requires_grad"):
                r.requires_grad_(True)
            return r
    return func(*to_real(args), **to_real(kwargs))


_numpy_array._impl = sys.modules[__name__]
