"""Reductions and scans written in the primitive ones (sum, prod, amax/amin, arg*, any/all,
cumsum/cumprod/cummax/cummin) and sort for the order statistics.

Statistics follow the kernels' numerics: halves are computed in float32 and rounded once,
logsumexp shifts by the finite maximum, var divides by ``max(0, n - correction)``.
"""
import math

import numpy as np

from ..._core import dtype as _dt
from . import decomposes, no_decomposition
from ._util import (cast, const, flatten, float_of, full, iota, movedim, numel, prim, reshape,
                    squeeze, unsqueeze)

_HALVES = ("float16", "bfloat16")


def _work(x):
    """(x in its compute dtype, the dtype to round the result to or None)."""
    if x.dtype.name in _HALVES:
        return cast(x, _dt.float32), x.dtype
    return x, None


def _back(r, dt):
    return r if dt is None else cast(r, dt)


def _count(shape, dims):
    return numel([shape[d] for d in dims])


def _all_dims(x, dims):
    return tuple(range(x.ndim)) if dims is None else tuple(dims)


@decomposes("mean")
def _mean(x, dims, keepdim, dtype=None):
    if dtype is not None:
        x = cast(x, dtype)
    w, back = _work(x)
    dims = _all_dims(x, dims)
    s = prim.sum(w, dims=dims, keepdim=keepdim)
    return _back(prim.div(s, _count(x.shape, dims)), back)


def _sq_dev(x, dims):
    m = prim.div(prim.sum(x, dims=dims, keepdim=True), _count(x.shape, dims))
    d = prim.sub(x, m)
    if d.dtype.is_complex:
        re, im = prim.real(d), prim.imag(d)
        return prim.add(prim.mul(re, re), prim.mul(im, im))
    return prim.mul(d, d)


def _var_impl(x, dims, correction, keepdim):
    w, back = _work(x)
    dims = _all_dims(x, dims)
    dof = max(0, _count(x.shape, dims) - correction)
    v = prim.div(prim.sum(_sq_dev(w, dims), dims=dims, keepdim=keepdim), dof)
    return v, back


@decomposes("var")
def _var(x, dims, correction, keepdim):
    v, back = _var_impl(x, dims, correction, keepdim)
    return _back(v, back)


@decomposes("std")
def _std(x, dims, correction, keepdim):
    v, back = _var_impl(x, dims, correction, keepdim)
    return _back(prim.sqrt(v), back)


@decomposes("logsumexp")
def _logsumexp(x, dims, keepdim):
    x = cast(x, float_of(x))
    w, back = _work(x)
    dims = _all_dims(x, dims)
    if numel(x.shape) == 0:
        shape = [1 if i in dims else s for i, s in enumerate(x.shape)] if keepdim else \
            [s for i, s in enumerate(x.shape) if i not in dims]
        return full(shape, -math.inf, x.dtype)
    m = prim.amax(w, dims=dims, keepdim=True)
    # an infinite maximum would make x - m NaN: shift by 0 there instead
    m = prim.where(prim.eq(prim.sub(m, m), 0), m, 0)
    r = prim.add(prim.log(prim.sum(prim.exp(prim.sub(w, m)), dims=dims, keepdim=True)), m)
    if not keepdim:
        r = squeeze(r, dims) if dims else r
    return _back(r, back)


@decomposes("logcumsumexp")
def _logcumsumexp(x, dim, reverse=False):
    w, back = _work(x)
    if x.ndim == 0:
        return _back(prim._to_copy(w, dtype=w.dtype.np), back)
    if numel(x.shape) == 0:
        return _back(prim._to_copy(w, dtype=w.dtype.np), back)
    m = prim.amax(w, dims=(dim,), keepdim=True)
    m = prim.where(prim.eq(prim.sub(m, m), 0), m, 0)
    s = prim.cumsum(prim.exp(prim.sub(w, m)), dim=dim, reverse=reverse)
    return _back(prim.add(prim.log(s), m), back)


@decomposes("norm")
def _norm(x, ord, dims, keepdim):
    a = prim.abs(x)
    w, back = _work(a)
    dims = _all_dims(x, dims)
    kw = {"dims": dims, "keepdim": keepdim}
    if ord == math.inf:
        r = prim.amax(w, **kw)
    elif ord == -math.inf:
        r = prim.amin(w, **kw)
    elif ord == 0:
        r = prim.sum(cast(prim.ne(w, 0), w.dtype), **kw)
    elif ord == 1:
        r = prim.sum(w, **kw)
    elif ord == 2:
        r = prim.sqrt(prim.sum(prim.mul(w, w), **kw))
    else:
        r = prim.pow(prim.sum(prim.pow(w, ord), **kw), 1.0 / ord)
    return _back(r, back)


@decomposes("count_nonzero")
def _count_nonzero(x, dims):
    return prim.sum(prim.ne(x, 0), dims=_all_dims(x, dims), keepdim=False)


def _full_extreme(fn):
    def decomp(x, dims=None, keepdim=False):
        return fn(x, dims=_all_dims(x, dims), keepdim=keepdim)
    return decomp


decomposes("max")(_full_extreme(lambda x, **kw: prim.amax(x, **kw)))
decomposes("min")(_full_extreme(lambda x, **kw: prim.amin(x, **kw)))


def _extreme_dim(value_op, index_op):
    def decomp(x, dim, keepdim):
        if x.ndim == 0:
            return prim._to_copy(x, dtype=x.dtype.np), const(0, np.int64)
        # arg* reject bool: the same order on uint8
        xi = cast(x, np.uint8) if x.dtype == _dt.bool else x
        return (getattr(prim, value_op)(x, dims=(dim,), keepdim=keepdim),
                getattr(prim, index_op)(xi, dim=dim, keepdim=keepdim))
    return decomp


decomposes("max_dim")(_extreme_dim("amax", "argmax"))
decomposes("min_dim")(_extreme_dim("amin", "argmin"))


# ---- order statistics through sort ----------------------------------------------------------
def _pick(x, dim, keepdim, pos):
    """Value and index of sorted position ``pos`` (a tensor broadcastable along dim)."""
    _, order = prim.sort(x, dim=dim, descending=False)
    shape = list(x.shape)
    shape[dim] = 1
    pos = prim.expand(pos, shape=tuple(shape)) if tuple(pos.shape) != tuple(shape) else pos
    i = prim.gather(order, pos, dim=dim)
    v = prim.gather(x, i, dim=dim)
    if not keepdim:
        v, i = squeeze(v, dim), squeeze(i, dim)
    return v, i


@decomposes("kthvalue")
def _kthvalue(x, k, dim, keepdim=False):
    if x.ndim == 0:
        return prim._to_copy(x, dtype=x.dtype.np), const(0, np.int64)
    return _pick(x, dim, keepdim, const(np.full((1,) * x.ndim, k - 1), np.int64))


def _median_pos(x, dim, ignore_nan):
    n = x.shape[dim]
    if not x.dtype.is_floating_point:
        return const(np.full((1,) * x.ndim, (n - 1) // 2), np.int64)
    valid = prim.sub(n, prim.sum(prim.isnan(x), dims=(dim,), keepdim=True))
    if ignore_nan:  # an all-NaN slice picks its first NaN
        return prim.maximum(prim.floor_divide(prim.sub(valid, 1), 2), 0)
    return prim.where(prim.lt(valid, n), valid, (n - 1) // 2)


@decomposes("median_dim")
def _median_dim(x, dim, keepdim, ignore_nan=False):
    if x.ndim == 0:
        return prim._to_copy(x, dtype=x.dtype.np), const(0, np.int64)
    return _pick(x, dim, keepdim, _median_pos(x, dim, ignore_nan))


@decomposes("median")
def _median(x, ignore_nan=False):
    if numel(x.shape) == 0:
        return full((), math.nan, x.dtype)
    return _median_dim(flatten(x), 0, False, ignore_nan)[0]


@decomposes("mode")
def _mode(x, dim, keepdim):
    if x.ndim == 0:
        return prim._to_copy(x, dtype=x.dtype.np), const(0, np.int64)
    w, _ = _work(x)
    w = movedim(w, dim, -1)
    s, perm = prim.sort(w, dim=w.ndim - 1, descending=False)
    n = s.shape[-1]
    last = w.ndim - 1
    j = iota(n)
    # runs of equal sorted values: where each starts and ends
    differs = prim.ne(_slice_last(s, 1, n), _slice_last(s, 0, n - 1))
    first = full(tuple(s.shape[:-1]) + (1,), True, np.bool_)
    new = prim.cat(first, differs, dim=last, sizes=(1, n - 1))
    lastmask = prim.cat(differs, first, dim=last, sizes=(n - 1, 1))
    start = prim.cummax(prim.where(new, j, 0), dim=last)[0]
    end = prim.flip(prim.cummin(prim.flip(prim.where(lastmask, j, n), dims=(last,)),
                                dim=last)[0], dims=(last,))
    best = prim.argmax(prim.sub(end, start), dim=last, keepdim=True)
    pos = prim.gather(end, best, dim=last)
    i = movedim(prim.gather(perm, pos, dim=last), -1, dim)
    v = prim.gather(x, i, dim=dim)
    if not keepdim:
        v, i = squeeze(v, dim), squeeze(i, dim)
    return v, i


def _slice_last(x, start, stop):
    key = tuple((None, None, None) for _ in range(x.ndim - 1)) + ((start, stop, 1),)
    return prim.slice(x, key=key)


@decomposes("nuclear_norm")
def _nuclear_norm(x, dims, keepdim):
    m = _to_end(x, dims)
    # svd's singular values, not svdvals: they carry the derivative U V^H
    r = prim.sum(prim.linalg_svd(m, full_matrices=False)[1], dims=(m.ndim - 2,), keepdim=False)
    if keepdim:
        shape = [1 if i in dims else s for i, s in enumerate(x.shape)]
        r = reshape(r, shape)
    return r


def _to_end(x, dims):
    d0, d1 = (d % x.ndim for d in dims)
    order = [d for d in range(x.ndim) if d not in (d0, d1)] + [d0, d1]
    return prim.permute(x, dims=tuple(order))


def _from_end(x, dims):
    d0, d1 = (d % x.ndim for d in dims)
    order = [d for d in range(x.ndim) if d not in (d0, d1)] + [d0, d1]
    inv = [order.index(i) for i in range(x.ndim)]
    return prim.permute(x, dims=tuple(inv))


@decomposes("_nuc_basis")
def _nuc_basis(x, dims):
    u, _, vh = prim.linalg_svd(_to_end(x, dims), full_matrices=False)
    return _from_end(prim.matmul(u, vh), dims)


@decomposes("_quantile_positions")
def _quantile_positions(s, q, interpolation, ignore_nan):
    dt = s.dtype
    last = s.shape[-1] - 1
    nan = prim.isnan(s)
    if ignore_nan:
        scale = cast(prim.sub(prim.sum(prim.logical_not(nan), dims=(s.ndim - 1,), keepdim=True),
                              1), dt)
        ranks = prim.mul(q, scale)
        ranks = prim.where(prim.lt(ranks, 0), 0, ranks)
    else:
        anynan = prim.any(nan, dims=(s.ndim - 1,), keepdim=True)
        ranks = prim.where(anynan, float(last), prim.mul(q, float(last)))
    ranks = cast(ranks, dt)
    full_shape = tuple(np.broadcast_shapes(tuple(s.shape[:-1]), tuple(q.shape[:-1]))) + \
        tuple(q.shape[-1:])
    ranks = prim.expand(ranks, shape=full_shape) if tuple(ranks.shape) != full_shape else ranks
    if interpolation in ("lower", "higher", "nearest"):
        ranks = {"lower": prim.floor, "higher": prim.ceil, "nearest": prim.round}[
            interpolation](ranks)
    below = cast(ranks, np.int64)
    if interpolation == "midpoint":
        w = full(full_shape, 0.5, dt)
    else:
        w = cast(prim.sub(ranks, cast(below, dt)), dt)
    return below, cast(prim.ceil(ranks), np.int64), w


@decomposes("_gather_along")
def _gather_along(x, idx, dim, unique=False):
    shape = tuple(np.broadcast_shapes(tuple(x.shape[:dim]) + (1,) + tuple(x.shape[dim + 1:]),
                                      tuple(idx.shape)))
    ishape = shape[:dim] + (idx.shape[dim],) + shape[dim + 1:]
    xshape = shape[:dim] + (x.shape[dim],) + shape[dim + 1:]
    if tuple(idx.shape) != ishape:
        idx = prim.expand(idx, shape=ishape)
    if tuple(x.shape) != xshape:
        x = prim.expand(x, shape=xshape)
    return prim.gather(x, idx, dim=dim)


@decomposes("_scatter_along")
def _scatter_along(src, idx, dim, shape, accumulate=False):
    w, back = _work(src)
    zeros = full(shape, 0, w.dtype)
    if accumulate:
        return _back(prim.scatter_add(zeros, idx, w, dim=dim), back)
    return _back(prim.scatter(zeros, idx, w, dim=dim), back)


@decomposes("histc")
def _histc(x, bins, min, max):
    # halves are binned in float32, and the bounds and their span are rounded to the
    # computing dtype first, as the kernel does: a value on a bin edge falls in the same bin
    st = np.float32 if x.dtype.itemsize < 4 else x.dtype.np.type
    xf = cast(x, np.float32) if x.dtype.itemsize < 4 else x
    lo, hi = st(min), st(max)
    if lo == hi and numel(x.shape):
        lo, hi = prim.amin(xf, dims=tuple(range(x.ndim)), keepdim=False), \
            prim.amax(xf, dims=tuple(range(x.ndim)), keepdim=False)
        same = prim.eq(lo, hi)
        lo, hi = prim.where(same, prim.sub(lo, 1), lo), prim.where(same, prim.add(hi, 1), hi)
    elif lo == hi:
        lo, hi = lo - 1, hi + 1
    flat = flatten(xf)
    inside = prim.logical_and(prim.ge(flat, lo), prim.le(flat, hi))
    span = hi - lo if isinstance(lo, np.generic) else prim.sub(hi, lo)
    pos = prim.floor(prim.mul(prim.div(prim.sub(flat, lo), span), bins))
    b = prim.minimum(prim.maximum(cast(prim.where(inside, pos, 0), np.int64), 0), bins - 1)
    ones = cast(inside, x.dtype)
    return prim.scatter_add(full((bins,), 0, x.dtype), b, ones, dim=0)


@decomposes("isin")
def _isin(elements, test, assume_unique=False, invert=False):
    if not hasattr(elements, "shape"):  # a scalar element against a tensor
        hit = prim.any(prim.eq(flatten(test), elements), dims=(0,), keepdim=False)
        return prim.logical_not(hit) if invert else hit
    e = unsqueeze(elements, -1) if elements.ndim else reshape(elements, (1,))
    cand = flatten(test) if hasattr(test, "shape") else test
    hit = prim.any(prim.eq(e, cand), dims=(e.ndim - 1,), keepdim=False)
    if not elements.ndim:
        hit = reshape(hit, ())
    return prim.logical_not(hit) if invert else hit


@decomposes("_prod_others")
def _prod_others(x, dim):
    # the product of every other element along dim: exclusive products from the left times
    # those from the right, exact with zeros
    n = x.shape[dim]
    if n < 2:
        return full(x.shape, 1, x.dtype)
    shape = list(x.shape)
    shape[dim] = 1
    one = full(shape, 1, x.dtype)
    left = cast(prim.cumprod(_slice_dim(x, dim, 0, n - 1), dim=dim), x.dtype)
    right = cast(prim.cumprod(_slice_dim(x, dim, 1, n), dim=dim, reverse=True), x.dtype)
    e = prim.cat(one, left, dim=dim, sizes=(1, n - 1))
    f = prim.cat(right, one, dim=dim, sizes=(n - 1, 1))
    return prim.mul(e, f)


def _slice_dim(x, dim, start, stop):
    key = tuple((None, None, None) for _ in range(dim)) + ((start, stop, 1),)
    return prim.slice(x, key=key)


@decomposes("_cumprod_backward")
def _cumprod_backward(x, g, out, dim, reverse=False):
    dt = _dt.promote_types(x.dtype, out.dtype)
    work = _dt.float32 if dt.name in _HALVES else dt
    x, g, out = cast(x, work), cast(g, work), cast(out, work)
    if work.is_complex:
        x, out = prim.conj(x), prim.conj(out)
    return cast(_cumprod_grad(x, g, out, dim, reverse, 1), dt)


def _cumprod_grad(x, g, out, dim, reverse, depth):
    """sum_{j >= k} g_j d(out_j)/d(x_k) (x, out conjugated): before a slice's first zero the
    quotient form, at it (z) the products with that zero replaced by 1, after it 0, written
    as x_z times the same gradient for that y (one zero fewer) so that its derivative
    through x_z, the fused op's vjp (`vjp_from_decomposition`), is right; the nesting stops
    after ``depth`` levels.  Every case is computed and one picked by where, so no value
    decides which ops run."""
    zero = prim.eq(x, 0)
    seen = prim.cumsum(zero, dim=dim, reverse=reverse)
    before = prim.eq(seen, 0)
    first = prim.logical_and(zero, prim.eq(seen, 1))
    a = prim.div(prim.cumsum(prim.mul(g, out), dim=dim, reverse=not reverse),
                 prim.where(before, x, 1))
    y = prim.where(first, 1, x)
    c = prim.cumprod(y, dim=dim, reverse=reverse)
    b = prim.cumsum(prim.mul(g, c), dim=dim, reverse=not reverse)
    if depth <= 0:
        return prim.where(before, a, prim.where(first, b, 0))
    x_z = prim.sum(prim.where(first, x, 0), dims=(dim,), keepdim=True)
    rest = prim.mul(x_z, _cumprod_grad(y, g, c, dim, reverse, depth - 1))
    return prim.where(before, a, prim.where(first, b, rest))


# histogramdd's binning: a search of every point among its dimension's edges, on the host
# (as histogram, an extern primitive); compile and export keep the operators as calls
for _name in ("_histogramdd_bin_edges", "_histogramdd_from_bin_cts",
              "_histogramdd_from_bin_tensors"):
    no_decomposition(_name, "binning searches each point among data-dependent edges on the "
                            "host, as histogram (an extern primitive) does")
