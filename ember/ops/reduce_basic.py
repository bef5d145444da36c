"""The reductions everything else leans on: sum, mean, sum_to_size.

A reduction's derivative broadcasts the output gradient back over the reduced
dimensions (``_expand_back``), written in ember ops.
"""
import numpy as np

from .._core import dtype as _dt
from .._core.tensor import _wrap_dim
from ._helpers import NeedsOverride, Op, Tensor, _E, apply, handle_override, write_out

__all__ = ["sum", "mean"]

_HALF = {np.dtype(np.float16), _dt.bfloat16.np}


def norm_dims(dim, ndim):
    """Reduction dims as a sorted tuple of non-negative ints (``None`` -> all)."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        return (_wrap_dim(int(dim), ndim),)
    dims = tuple(sorted({_wrap_dim(int(d), ndim) for d in dim}))
    if len(dims) != len(dim):
        raise RuntimeError("dim appears multiple times in the list of dims")
    if not dims:
        return tuple(range(ndim))
    return dims


def reduced_shape(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def expand_back(g, in_shape, dims, keepdim):
    """Broadcast a reduction's output gradient ``g`` back to the input shape."""
    if not keepdim and dims:
        g = g.reshape(reduced_shape(in_shape, dims, True))
    return g.expand(in_shape)


def _sum_kernel(xp, x, dims, keepdim, dtype=None):
    if dtype is None:
        if x.dtype.kind in "bu" or x.dtype.kind == "i":
            dtype = np.int64
        elif x.dtype in _HALF:
            return xp.sum(x, axis=dims, keepdims=keepdim, dtype=np.float32).astype(x.dtype)
    return xp.sum(x, axis=dims, keepdims=keepdim, dtype=dtype)


def _sum_vjp(ctx, g, x, dims, keepdim, dtype=None):
    return expand_back(g, ctx.in_meta[0][0], dims, keepdim)


def _reduce_shape_rule(x, dims, keepdim, **kw):
    return reduced_shape(tuple(x.shape), dims, keepdim), None


SUM = Op("sum", _sum_kernel, _sum_vjp, save_inputs=False, shape=_reduce_shape_rule,
         category="reduction")


def _mean_kernel(xp, x, dims, keepdim, dtype=None):
    if dtype is None and x.dtype.kind in "biu":
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {_kind_name(x.dtype)}")
    if x.dtype in _HALF:
        return xp.mean(x, axis=dims, keepdims=keepdim, dtype=np.float32).astype(x.dtype)
    return xp.mean(x, axis=dims, keepdims=keepdim, dtype=dtype)


def _kind_name(dt):
    from .._core.dispatch import _cat_name
    return _cat_name(_dt.FROM_NP[dt])


def _mean_vjp(ctx, g, x, dims, keepdim, dtype=None):
    shape = ctx.in_meta[0][0]
    n = 1
    for d in dims:
        n *= shape[d]
    return expand_back(g, shape, dims, keepdim) / n


MEAN = Op("mean", _mean_kernel, _mean_vjp, save_inputs=False, shape=_reduce_shape_rule,
          category="reduction")


def _np_dtype(dtype):
    return None if dtype is None else dtype.np


def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum of the elements of ``input`` over ``dim`` (all dimensions if None)."""
    try:
        dims = norm_dims(dim, input._data.ndim)
    except AttributeError:
        return handle_override(sum, (input,), {"dim": dim, "keepdim": keepdim, "dtype": dtype})
    params = {"dims": dims, "keepdim": keepdim}
    if dtype is not None:
        params["dtype"] = dtype.np
    r = apply(SUM, (input,), params)
    return r if out is None else write_out(out, r)


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean of the elements of ``input`` over ``dim`` (all dimensions if None)."""
    try:
        dims = norm_dims(dim, input._data.ndim)
    except AttributeError:
        return handle_override(mean, (input,), {"dim": dim, "keepdim": keepdim, "dtype": dtype})
    params = {"dims": dims, "keepdim": keepdim}
    if dtype is not None:
        params["dtype"] = dtype.np
    r = apply(MEAN, (input,), params)
    return r if out is None else write_out(out, r)


def _sum_to_size(self, *size):
    """Sum ``self`` down to ``size`` (the reverse of broadcasting)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    shape = self._data.shape
    if tuple(size) == shape:
        return self
    lead = len(shape) - len(size)
    if lead < 0:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size)
                                      if s == 1 and shape[lead + i] != 1)
    for i, s in enumerate(size):
        if s != 1 and s != shape[lead + i]:
            raise RuntimeError(f"size {{{list(size)}}} is not expandable to size "
                               f"{{{list(shape)}}}.")
    r = apply(SUM, (self,), {"dims": dims, "keepdim": True}) if dims else self
    if lead:
        r = r.reshape(tuple(size))
    return r


Tensor.sum = sum
Tensor.mean = mean
Tensor.sum_to_size = _sum_to_size
_ = (NeedsOverride, _E)
