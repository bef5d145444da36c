"""Indexing composites in the general gather/scatter primitives (``index``, ``index_put``,
``gather``, ``scatter*``) and ``nonzero`` for the data-dependent selections."""
import numpy as np

from . import decomposes
from ._util import cast, const, expand_as_shape, full, numel, prim, reshape


def _along(dim):
    return [None] * dim


def _vec(idx):
    return reshape(idx, (numel(idx.shape),))


@decomposes("index_select")
def _index_select(x, idx, dim):
    if x.ndim == 0:
        return reshape(prim.index(reshape(x, (1,)), _vec(idx)), idx.shape)
    return prim.index(x, *_along(dim), _vec(idx))


@decomposes("take")
def _take(x, idx):
    return prim.index(reshape(x, (numel(x.shape),)), idx)


@decomposes("put")
def _put(x, idx, src, accumulate=False):
    flat = reshape(x, (numel(x.shape),))
    vals = _vec(src) if hasattr(src, "shape") and src.ndim else src
    out = prim.index_put(flat, cast(vals, x.dtype), _vec(idx), accumulate=accumulate)
    return reshape(out, x.shape)


def _write(x, idx, src, dim, accumulate):
    if x.ndim == 0:
        flat = reshape(x, (1,))
        s = reshape(src, (1,)) if hasattr(src, "shape") and src.ndim == 0 else src
        return reshape(prim.index_put(flat, s, _vec(idx), accumulate=accumulate), ())
    return prim.index_put(x, src, *_along(dim), _vec(idx), accumulate=accumulate)


@decomposes("index_add")
def _index_add(x, idx, src, dim, alpha=1):
    s = cast(src, x.dtype)
    if alpha != 1:
        s = prim.mul(s, cast(const(alpha), x.dtype))
    return _write(x, idx, s, dim, True)


@decomposes("index_copy")
def _index_copy(x, idx, src, dim, alpha=1):
    return _write(x, idx, cast(src, x.dtype), dim, False)


@decomposes("index_fill")
def _index_fill(x, idx, value, dim, alpha=1):
    # a mask of the filled slots, then a where: each slot takes the value once, however
    # often the index repeats it (so the value's gradient counts it once)
    n = x.shape[dim] if x.ndim else 1
    i = prim.remainder(_vec(idx), n) if n else _vec(idx)  # fill accepts negative indices
    hit = prim.index_put(full((n,), False, np.bool_), True, i, accumulate=False)
    hit = reshape(hit, (n,) + (1,) * (x.ndim - dim - 1)) if x.ndim else reshape(hit, ())
    v = cast(value, x.dtype) if hasattr(value, "shape") else cast(const(value), x.dtype)
    return expand_as_shape(prim.where(hit, v, x), x.shape)


@decomposes("masked_fill")
def _masked_fill(x, mask, value):
    v = cast(value, x.dtype) if hasattr(value, "shape") else cast(const(value), x.dtype)
    r = prim.where(mask, v, x)
    return r if tuple(r.shape) == tuple(x.shape) else expand_as_shape(r, x.shape)


def _broadcast_pair(x, mask):
    shape = tuple(np.broadcast_shapes(tuple(x.shape), tuple(mask.shape)))
    return expand_as_shape(x, shape), expand_as_shape(mask, shape), shape


@decomposes("masked_select")
def _masked_select(x, mask):
    xb, mb, shape = _broadcast_pair(x, mask)
    flat_x = reshape(xb, (numel(shape),))
    pos = prim.nonzero(reshape(mb, (numel(shape),)))
    return prim.index(flat_x, reshape(pos, (pos.shape[0],)))


@decomposes("masked_scatter")
def _masked_scatter(x, mask, src):
    xb, mb, shape = _broadcast_pair(x, mask)
    n = numel(shape)
    flat_m = reshape(mb, (n,))
    # the k-th selected position takes source element k
    k = prim.sub(prim.cumsum(flat_m, dim=0, dtype=np.dtype(np.int64)), 1)
    k = prim.maximum(k, 0)
    srcf = reshape(src, (numel(src.shape),))
    if numel(src.shape) == 0:
        return prim._to_copy(xb, dtype=x.dtype.np)
    taken = cast(prim.index(srcf, prim.minimum(k, numel(src.shape) - 1)), x.dtype)
    out = prim.where(flat_m, taken, reshape(xb, (n,)))
    return reshape(out, shape)


