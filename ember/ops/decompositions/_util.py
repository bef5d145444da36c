"""Shared helpers of the decompositions: the primitive namespace and shape-only constants.

Everything here either calls a primitive (`prim`) or builds a constant from static sizes
(`const`, `iota`, `full`): a graph keeps such constants as literals, never as data-dependent
computation.
"""
import numpy as np

from ..._core import dtype as _dt
from ..._core.op import REGISTRY
from ..._core.tensor import Tensor, wrap

__all__ = ["prim", "const", "iota", "full", "cast", "reshape", "unsqueeze", "squeeze",
           "movedim", "expand_as_shape", "wrap_dim", "numel", "float_of", "ones_like_shape",
           "slice_dim", "flatten", "np_dtype", "eps_of", "is_tensor"]


class _Prim:
    """``prim.name(*args, **params)`` calls primitive operator ``name``."""

    def __getattr__(self, name):
        return REGISTRY[name]


prim = _Prim()


def is_tensor(x):
    return isinstance(x, Tensor)


def np_dtype(d):
    return d.np if isinstance(d, _dt.dtype) else np.dtype(d)


def const(value, dtype=None):
    """A constant tensor (no operator call): shape-derived tables and literals."""
    a = np.asarray(value)
    if dtype is not None:
        a = a.astype(np_dtype(dtype))
    return wrap(np.array(a, order="C"))  # (ascontiguousarray would make 0-d arrays 1-d)


def iota(n, dtype=np.int64):
    """0, 1, ..., n - 1: the ``arange`` primitive once factories are operators."""
    op = REGISTRY.get("arange")
    if op is not None:
        return op(start=0, end=int(n), step=1, dtype=np_dtype(dtype))
    return const(np.arange(n), dtype)


def full(shape, value, dtype):
    """A filled tensor: the ``full`` primitive once factories are operators."""
    op = REGISTRY.get("full")
    if op is not None:
        return op(shape=tuple(int(s) for s in shape), fill_value=value, dtype=np_dtype(dtype))
    return const(np.full(tuple(shape), value, dtype=np_dtype(dtype)))


def cast(x, dtype):
    """``x`` converted to ``dtype`` (ember or NumPy dtype) by the cast primitive."""
    d = np_dtype(dtype)
    if not is_tensor(x):
        return x
    if x.dtype.np == d:
        return x
    return prim._to_copy(x, dtype=d)


def numel(shape):
    return int(np.prod(tuple(shape), dtype=np.int64))


def reshape(x, shape):
    """A logical reshape: ``view``, or ``_reshape_copy`` where eager strides forbid a view
    (the same primitive to a compiler, whose buffers are contiguous)."""
    shape = tuple(int(s) for s in shape)
    if tuple(x.shape) == shape:
        return x
    try:
        return prim.view(x, shape=shape)
    except RuntimeError:  # eager only: the strides forbid a view
        return prim._reshape_copy(x, shape=shape)


def wrap_dim(d, n):
    return d + n if d < 0 else d


def unsqueeze(x, d):
    s = list(x.shape)
    s.insert(wrap_dim(d, len(s) + 1), 1)
    return reshape(x, s)


def squeeze(x, dims):
    dims = {wrap_dim(d, x.ndim) for d in ((dims,) if isinstance(dims, int) else dims)}
    return reshape(x, [s for i, s in enumerate(x.shape) if i not in dims or s != 1])


def flatten(x):
    return reshape(x, (numel(x.shape),))


def movedim(x, src, dst):
    n = x.ndim
    src, dst = wrap_dim(src, n), wrap_dim(dst, n)
    if src == dst:
        return x
    order = [d for d in range(n) if d != src]
    order.insert(dst, src)
    return prim.permute(x, dims=tuple(order))


def expand_as_shape(x, shape):
    shape = tuple(shape)
    if not is_tensor(x):
        return x
    if tuple(x.shape) == shape:
        return x
    if x.ndim < len(shape):
        x = reshape(x, (1,) * (len(shape) - x.ndim) + tuple(x.shape))
    return prim.expand(x, shape=shape)


def slice_dim(x, dim, start, stop, step=1):
    """``x[..., start:stop:step, ...]`` along ``dim`` through the slice primitive."""
    key = tuple((None, None, None) for _ in range(dim)) + ((start, stop, step),)
    return prim.slice(x, key=key)


def float_of(x):
    """The floating dtype an op promotes ``x`` to (the default dtype for ints and bools)."""
    d = x.dtype
    if d.is_floating_point or d.is_complex:
        return d
    return _dt.get_default_dtype() if hasattr(_dt, "get_default_dtype") else _dt.float32


def ones_like_shape(shape, dtype):
    return full(shape, 1, dtype)


def eps_of(dtype):
    return float(np.finfo(np_dtype(dtype)).eps)
