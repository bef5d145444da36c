"""Sorting and selection: sort, argsort, topk, kthvalue, median, nanmedian, mode,
quantile, nanquantile, unique, unique_consecutive, bincount, histc, searchsorted,
bucketize.

Sorting is always stable (torch's ``stable=False`` leaves tie order unspecified, so
a stable order is one valid answer); NaN sorts as the largest value.  Value
selections send their gradient back to the selected index (``select_back``);
quantile is sort + gather + lerp, so its gradient follows from those.
"""
import numpy as np

from .._core import dtype as _dt
from .._core import meta as _meta
from .._core.ckernels import selection as _ck_sel
from .._core.dispatch import overridable
from .._core.tensor import _wrap_dim
from . import _return_types as _rt
from ._batching import _batched_front, _dims_rule, _logical_ndim, _move_to_front
from ._batching_index import _dynamic_rule
from .._core.device import namespace_of
from ._helpers import (Op, Tensor, apply, cpp_name, host_tensor, no_derivative, write_out,
                       write_out_exact)
from .pointwise import where
from .reduce_basic import (_F32, _HALF, check_nonempty_dims, gather_along, ndim_of, public_fn,
                           reduced_shape, select_back, type_name, write_outs)

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode",
           "quantile", "nanquantile", "unique", "unique_consecutive", "bincount", "histc",
           "searchsorted", "bucketize"]


def _no_complex(name, x):
    if x.dtype.kind == "c":
        # torch's message opens with a space (sort, msort, topk)
        raise RuntimeError(f" {name} does not support complex dtypes on CPU")


def _order(x, dim, descending):
    """Stable sorting permutation of ``x`` along ``dim`` (NaN largest)."""
    xp = namespace_of(x)
    w = x.astype(_F32) if x.dtype in _HALF else x
    if not descending:
        return xp.argsort(w, axis=dim, kind="stable")
    # sort the reversed array ascending and reverse back: equal keys keep their order
    i = xp.argsort(xp.flip(w, dim), axis=dim, kind="stable")
    return (x.shape[dim] - 1) - xp.flip(i, dim)


def _sort_kernel(xp, x, dim, descending=False):
    _no_complex("Sort", x)
    if x.ndim == 0:
        return x.copy(), xp.zeros((), np.int64)
    i = _order(x, dim, descending)
    return xp.take_along_axis(x, i, axis=dim), i.astype(np.int64, copy=False)


def _select_vjp(ctx, g, x, dim, *args, **kw):
    keepdim = kw.get("keepdim", True)
    return select_back(g[0], ctx.out[1], dim, ctx.in_meta[0][0], keepdim)


def _same_shape2(x, dim, **kw):
    return (x.shape, x.dtype), (x.shape, _dt.int64)


SORT = Op("sort", _sort_kernel, _select_vjp, save_inputs=False, save_output=(1,), n_out=2,
          nondiff_outputs=(1,), shape=_same_shape2, category="sorting", batch=_dims_rule)


@overridable
def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    """The elements of ``input`` sorted along ``dim``, and their original indices."""
    r = apply(SORT, (input,), {"dim": _wrap_dim(dim, ndim_of(input)), "descending": descending})
    return write_outs(out, _rt.sort(*r), _rt.sort, exact=True, inputs=(input,))


@overridable
def argsort(input, dim=-1, descending=False, stable=False):
    """The indices that sort ``input`` along ``dim``."""
    return sort(input, dim, descending, stable)[1]


@overridable
def msort(input, *, out=None):
    """``input`` sorted along its first dimension."""
    r = sort(input, 0)[0]
    return r if out is None else write_out_exact(out, r)


Tensor.sort = lambda self, dim=-1, descending=False, stable=False: sort(self, dim, descending,
                                                                        stable)
Tensor.argsort = argsort
Tensor.msort = msort


# ---- topk / kthvalue --------------------------------------------------------------------
def _topk_kernel(xp, x, k, dim, largest=True):
    if x.dtype.kind == "b":
        raise RuntimeError("topk does not support bool dtypes on CPU")
    _no_complex("topk", x)
    x1 = x.reshape(1) if x.ndim == 0 else x
    r = _ck_sel.topk(_topk_work(x1), k, dim, largest) if type(x1) is np.ndarray else None
    if r is not None:  # one C pass per row (a bounded heap), ties by lower index
        v, i = r
        if v.dtype != x1.dtype:  # widened exactly; halves' NaN payloads kept by a take
            v = v.astype(x1.dtype) if x1.dtype.kind in "iu" else \
                xp.take_along_axis(x1, i, axis=dim)
        return (v.reshape(()), i.reshape(())) if x.ndim == 0 and k else (v, i)
    n = x1.shape[dim]
    if 0 < k < n // 4:
        # select the k first (NaN counts as largest), then order only those
        w = x1.astype(_F32) if x1.dtype in _HALF else x1
        part = xp.argpartition(w, n - k if largest else k - 1, axis=dim)
        cand = xp.take(part, xp.arange(n - k, n) if largest else xp.arange(k), axis=dim)
        i = xp.take_along_axis(cand, _order(xp.take_along_axis(x1, cand, axis=dim), dim,
                                            largest), axis=dim)
    else:
        i = xp.take(_order(x1, dim, largest), xp.arange(k), axis=dim)
    v = xp.take_along_axis(x1, i, axis=dim)
    if x.ndim == 0:
        return v.reshape(()) if k else v, i.reshape(()) if k else i
    return v, i.astype(np.int64, copy=False)


def _topk_work(x):
    """``x`` in a dtype the C topk compares (float32/64, int32/64), widened exactly."""
    if x.dtype in _HALF:
        return x.astype(_F32)
    if x.dtype.kind in "iu" and x.dtype.itemsize < 4 or x.dtype == np.uint16:
        return x.astype(np.int32)
    if x.dtype == np.uint32:
        return x.astype(np.int64)
    return x


def _topk_shape(x, k, dim, largest=True):
    s = tuple(k if i == dim else n for i, n in enumerate(x.shape))
    return (s, x.dtype), (s, _dt.int64)


TOPK = Op("topk", _topk_kernel, lambda ctx, g, x, k, dim, largest=True: select_back(
    g[0], ctx.out[1], dim, ctx.in_meta[0][0]), save_inputs=False, save_output=(1,), n_out=2,
    nondiff_outputs=(1,), shape=_topk_shape, category="sorting", batch=_dims_rule)


@overridable
def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """The ``k`` largest (or smallest) elements of ``input`` along ``dim``, sorted."""
    n = ndim_of(input)
    d = _wrap_dim(dim, n)
    size = input.shape[d] if n else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    r = apply(TOPK, (input,), {"k": int(k), "dim": d, "largest": largest})
    return write_outs(out, _rt.topk(*r), _rt.topk, exact=True, inputs=(input,))


def _pick_kernel(xp, x, dim, keepdim, pos, name):
    """Values/indices at sorted position ``pos`` (array broadcastable along dim) of ``x``."""
    if x.ndim == 0:
        return x.copy(), xp.zeros((), np.int64)
    i = xp.take_along_axis(_order(x, dim, False), pos, axis=dim)
    v = xp.take_along_axis(x, i, axis=dim)
    if not keepdim:
        v, i = v.squeeze(dim), i.squeeze(dim)
    return v, i.astype(np.int64, copy=False)


def _kth_kernel(xp, x, k, dim, keepdim=False):
    _no_complex("kthvalue()", x)
    pos = xp.full((1,) * x.ndim, k - 1, dtype=np.int64)
    return _pick_kernel(xp, x, dim, keepdim, pos, "kthvalue")


def _reduce_shape2(x, *args, dim=0, keepdim=False, **kw):
    s = _meta.reduce_shape(x.shape, (dim,), keepdim)
    return (s, x.dtype), (s, _dt.int64)


KTHVALUE = Op("kthvalue", _kth_kernel, _select_vjp, save_inputs=False, save_output=(1,),
              n_out=2, nondiff_outputs=(1,), shape=_reduce_shape2, category="sorting",
              batch=_dims_rule)


@overridable
def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The ``k``-th smallest element of ``input`` along ``dim`` and its index."""
    n = ndim_of(input)
    d = _wrap_dim(dim, n)
    size = input.shape[d] if n else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    r = apply(KTHVALUE, (input,), {"k": int(k), "dim": d, "keepdim": keepdim})
    return write_outs(out, _rt.kthvalue(*r), _rt.kthvalue)


Tensor.topk = topk
Tensor.kthvalue = kthvalue


# ---- median / nanmedian / mode ----------------------------------------------------------
def _median_pos(x, dim, ignore_nan):
    n = x.shape[dim]
    xp = namespace_of(x)
    if x.dtype.kind not in "fV":
        return xp.full((1,) * x.ndim, (n - 1) // 2, dtype=np.int64)
    nan = xp.isnan(x.astype(_F32) if x.dtype in _HALF else x)
    valid = n - nan.sum(axis=dim, keepdims=True)
    if ignore_nan:  # an all-NaN slice picks its first NaN
        return xp.maximum((valid - 1) // 2, 0)
    return xp.where(valid < n, valid, (n - 1) // 2)  # a NaN slice picks its first NaN


def _median_dim_kernel(xp, x, dim, keepdim, ignore_nan=False):
    if x.dtype.kind == "b":
        raise NotImplementedError("\"median_cpu\" not implemented for 'Bool'")
    _no_complex("median()", x)
    if x.ndim == 0:
        return x.copy(), xp.zeros((), np.int64)
    return _pick_kernel(xp, x, dim, keepdim, _median_pos(x, dim, ignore_nan), "median")


def _median_kernel(xp, x, ignore_nan=False):
    if x.size == 0:
        return xp.full((), np.nan, dtype=x.dtype)
    return _median_dim_kernel(xp, x.reshape(-1), 0, False, ignore_nan)[0]


def _evenly_vjp(ctx, g, x, ignore_nan=False):
    out = ctx.out
    mask = (x == out) | (x.isnan() & out.isnan())
    return where(mask, g / mask.sum(), 0)


def _median_rule(op, args, bdims, params, batch_size):
    x = _move_to_front(args[0], bdims[0]).reshape(batch_size, -1)
    if x.shape[1] == 0:
        return op(x[:, :0].reshape(batch_size, 0)[0], **params).expand(batch_size), 0
    return MEDIAN_DIM(x, dim=1, keepdim=False, **params)[0], 0



MEDIAN = Op("median", _median_kernel, _evenly_vjp, save_output=True,
            shape=lambda x, **kw: ((), x.dtype), category="sorting", batch=_median_rule)
MEDIAN_DIM = Op("median_dim", _median_dim_kernel, _select_vjp, save_inputs=False,
                save_output=(1,), n_out=2, nondiff_outputs=(1,), shape=_reduce_shape2,
                category="sorting", batch=_dims_rule)


def _def_median(name, ignore_nan, rt):
    def public(input, dim=None, keepdim=False, *, out=None):
        n = ndim_of(input)
        p = {"ignore_nan": True} if ignore_nan else {}
        if dim is None:
            r = apply(MEDIAN, (input,), p)
            return r if out is None else write_out(out, r)
        d = _wrap_dim(dim, n)
        if n:
            check_nonempty_dims(name, input.shape, (d,))
        r = apply(MEDIAN_DIM, (input,), dict(p, dim=d, keepdim=keepdim))
        return write_outs(out, rt(*r), rt)
    return public_fn(public, name,
                     "The lower median of " + ("the non-NaN values of " if ignore_nan else "")
                     + "``input``; with ``dim``, the named tuple (values, indices) along it.")


median = _def_median("median", False, _rt.median)
nanmedian = _def_median("nanmedian", True, _rt.nanmedian)
Tensor.median = median
Tensor.nanmedian = nanmedian


def _mode_kernel(xp, x, dim, keepdim):
    _no_complex("mode()", x)
    if x.ndim == 0:
        return x.copy(), xp.zeros((), np.int64)
    w = xp.moveaxis(x.astype(_F32) if x.dtype in _HALF else x, dim, -1)
    perm = xp.argsort(w, axis=-1, kind="stable")
    s = xp.take_along_axis(w, perm, axis=-1)
    n = s.shape[-1]
    j = xp.arange(n)
    new = xp.ones(s.shape, bool)
    new[..., 1:] = s[..., 1:] != s[..., :-1]
    last = xp.ones(s.shape, bool)
    last[..., :-1] = new[..., 1:]
    start = xp.maximum.accumulate(xp.where(new, j, 0), axis=-1)
    end = xp.flip(xp.minimum.accumulate(xp.flip(xp.where(last, j, n), -1), axis=-1), -1)
    # the longest run; the smallest value on ties (runs are in ascending order)
    best = xp.argmax(end - start, axis=-1)[..., None]
    pos = xp.take_along_axis(end, best, axis=-1)
    i = xp.take_along_axis(perm, pos, axis=-1)  # the last occurrence, as torch reports
    i = xp.moveaxis(i, -1, dim)
    v = xp.take_along_axis(x, i, axis=dim)
    if not keepdim:
        v, i = v.squeeze(dim), i.squeeze(dim)
    return v, i.astype(np.int64, copy=False)


MODE = Op("mode", _mode_kernel, _select_vjp, save_inputs=False, save_output=(1,), n_out=2,
          nondiff_outputs=(1,), shape=_reduce_shape2, category="sorting", batch=_dims_rule)


@overridable
def mode(input, dim=-1, keepdim=False, *, out=None):
    """The most frequent value of ``input`` along ``dim`` (the smallest on ties) and the index
    of its last occurrence."""
    n = ndim_of(input)
    d = _wrap_dim(dim, n)
    if n:
        check_nonempty_dims("mode", input.shape, (d,))
    r = apply(MODE, (input,), {"dim": d, "keepdim": keepdim})
    return write_outs(out, _rt.mode(*r), _rt.mode)


Tensor.mode = mode


# ---- quantile ---------------------------------------------------------------------------
_INTERP = ("linear", "lower", "higher", "midpoint", "nearest")


def _qpos_kernel(xp, s, q, interpolation, ignore_nan):
    """Where the ``q`` quantiles of each sorted row of ``s`` lie: the indices below and above
    and the interpolation weight.  ``q``'s last dim holds the quantiles; its leading dims
    broadcast against ``s``'s (a batched ``q`` under vmap)."""
    if not ((q >= 0) & (q <= 1)).all():
        raise RuntimeError(f"{'nanquantile' if ignore_nan else 'quantile'}() q values must be "
                           f"in the range [0, 1]")
    dt = s.dtype
    last = s.shape[-1] - 1
    nan = xp.isnan(s)
    if ignore_nan:
        scale = (xp.sum(~nan, axis=-1, keepdims=True) - 1).astype(dt)
        ranks = q * scale
        ranks = xp.where(ranks < 0, 0, ranks)
    else:
        ranks = xp.where(nan.any(-1, keepdims=True), last, q * dt.type(last))
    full = np.broadcast_shapes(s.shape[:-1], q.shape[:-1]) + q.shape[-1:]
    ranks = xp.broadcast_to(ranks.astype(dt), full)
    if interpolation in ("lower", "higher", "nearest"):
        ranks = {"lower": xp.floor, "higher": xp.ceil, "nearest": xp.round}[interpolation](ranks)
    below = ranks.astype(np.int64)
    w = xp.full(full, 0.5, dt) if interpolation == "midpoint" else (ranks - below).astype(dt)
    return below, xp.ceil(ranks).astype(np.int64), w


def _qpos_vjp(ctx, g, s, q, interpolation, ignore_nan):
    if interpolation != "linear":
        return None, None
    # d(weight)/dq is the rank scale, 0 where the rank is pinned (NaN rows)
    # (a where, not a product: the incoming gradient is NaN on NaN rows)
    nan = s.isnan()
    if ignore_nan:
        scale = (~nan).sum(-1, keepdim=True).to(s.dtype) - 1
        return None, where(scale < 0, 0, g[2] * scale)
    return None, where(nan.any(-1, keepdim=True), 0, g[2] * (s.shape[-1] - 1))


def _qpos_shape(s, q, **p):
    full = tuple(_meta.broadcast_shapes(tuple(s.shape[:-1]), tuple(q.shape[:-1]))) + \
        tuple(q.shape[-1:])
    return (full, _dt.int64), (full, _dt.int64), (full, s.dtype)


def _qpos_batch(op, args, bdims, params, batch_size):
    s, q = args
    if bdims[0] is not None:
        s = s.movedim(bdims[0], 0)
    if bdims[1] is not None:
        # the batch leads q's broadcast dims: (B, 1, ..., 1, k) against s's (B, ..., n)
        q = q.movedim(bdims[1], 0)
        lead = s.dim() - (bdims[0] is not None) - 1
        q = q.reshape((batch_size,) + (1,) * lead + tuple(q.shape[1:]))
    return op(s, q, **params), (0, 0, 0)


QUANTILE_POS = Op("_quantile_positions", _qpos_kernel, _qpos_vjp, save_inputs=(0,), n_out=3,
                  nondiff_outputs=(0, 1), shape=_qpos_shape, batch=_qpos_batch)


def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):
    n = ndim_of(input)
    x = input._data  # metadata only (a stand-in under vmap): values flow through ops
    if x.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if x.size == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if interpolation not in _INTERP:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype != input.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        q_dims, qt = q.ndim, q.reshape(-1)
    else:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
        q_dims, qt = 0, host_tensor(np.asarray([q], dtype=x.dtype), input)
    if dim is None:
        src, out_shape = input.reshape(-1), reduced_shape(x.shape, tuple(range(n)), keepdim)
    else:
        d = _wrap_dim(dim, n)
        src = input.movedim(d, -1) if n else input.reshape(1)
        out_shape = reduced_shape(x.shape, (d,) if n else (), keepdim)
    srt = sort(src, -1)[0]
    below, above, w = apply(QUANTILE_POS, (srt, qt),
                            {"interpolation": interpolation, "ignore_nan": ignore_nan})
    last = srt.ndim - 1
    r = gather_along(srt, below, last)
    if interpolation in ("linear", "midpoint"):
        r = r + w * (gather_along(srt, above, last) - r)
    # r: (..., len(q)) -> q first, then the reduced shape
    k = qt.shape[0]
    r = r.movedim(-1, 0).reshape((k,) + tuple(out_shape))
    return r if q_dims else r.reshape(tuple(out_shape))


def _def_quantile(name, ignore_nan):
    def public(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
        r = _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan)
        return r if out is None else write_out(out, r)
    return public_fn(public, name,
                     f"The ``q``-th quantiles of {'the non-NaN values of ' if ignore_nan else ''}"
                     f"``input`` (over ``dim``), interpolated as ``interpolation`` says.")


quantile = _def_quantile("quantile", False)
nanquantile = _def_quantile("nanquantile", True)
Tensor.quantile = quantile
Tensor.nanquantile = nanquantile


# ---- unique -----------------------------------------------------------------------------
def _unique_counting(xp, flat):
    """``np.unique(flat)``'s values, inverse and counts for integers (or bools) whose range is
    not much wider than their number, by counting (no sort: NumPy's sort of 256K int64 costs
    ~10 ms here, bincount ~0.3); None for other arrays."""
    if type(flat) is not np.ndarray or flat.dtype.kind not in "biu" or not flat.size:
        return None
    a = flat.view(np.uint8) if flat.dtype.kind == "b" else flat
    lo, hi = int(a.min()), int(a.max())
    span = hi - lo + 1
    if span > 4 * a.size + 4096 or lo < -(1 << 62) or hi > (1 << 62):
        return None
    off = np.subtract(a, lo, dtype=np.intp) if lo else a.astype(np.intp, copy=False)
    every = np.bincount(off, minlength=span)
    pos = np.flatnonzero(every)
    rank = np.cumsum(every != 0) - 1
    return (pos + lo).astype(flat.dtype), rank[off], every[pos]


def _unique_kernel(xp, x, dim=None):
    w = x.astype(_F32) if x.dtype in _HALF else x
    if dim is None:
        r = _unique_counting(xp, w.reshape(-1))
        if r is not None:
            v, inv, cnt = r
        else:
            v, inv, cnt = xp.unique(w.reshape(-1), return_inverse=True, return_counts=True,
                                    equal_nan=False)
        inv = inv.reshape(x.shape)
    else:
        if x.shape[dim] == 0:
            return x.copy(), xp.zeros(0, np.int64), xp.zeros(0, np.int64)
        v, inv, cnt = xp.unique(w, return_inverse=True, return_counts=True, axis=dim,
                                equal_nan=False)
        inv = inv.reshape(-1)
    return v.astype(x.dtype, copy=False), inv.astype(np.int64), cnt.astype(np.int64)


def _unique_consecutive_kernel(xp, x, dim=None):
    if dim is None:
        flat = x.reshape(-1)
        new = xp.ones(flat.shape, bool)
        new[1:] = flat[1:] != flat[:-1]
        v = flat[new]
    else:
        m = xp.moveaxis(x, dim, 0)
        new = xp.ones(m.shape[0], bool)
        if m.shape[0]:
            new[1:] = (m[1:] != m[:-1]).reshape(m.shape[0] - 1, -1).any(axis=1)
        v = xp.moveaxis(m[new], 0, dim)
    inv = xp.cumsum(new) - 1
    cnt = xp.diff(xp.append(xp.flatnonzero(new), new.size))
    return (xp.ascontiguousarray(v), inv.reshape(x.shape if dim is None else -1).astype(np.int64),
            cnt.astype(np.int64))


def _data_dependent(*args, **params):
    raise _meta.DataDependentShape("the output size depends on the input's values")


# torch's values output requires grad, and its backward raises
UNIQUE = Op("unique", _unique_kernel,
            **no_derivative(lambda p: "_unique2" if p.get("dim") is None else "unique_dim"),
            save_inputs=False, n_out=3, nondiff_outputs=(1, 2), category="sorting",
            shape=_data_dependent, batch=_dynamic_rule)
UNIQUE_CONSECUTIVE = Op("unique_consecutive", _unique_consecutive_kernel,
                        **no_derivative("unique_consecutive"), save_inputs=False, n_out=3,
                        nondiff_outputs=(1, 2), category="sorting", shape=_data_dependent,
                        batch=_dynamic_rule)


def _unique_result(r, return_inverse, return_counts):
    if not (return_inverse or return_counts):
        return r[0]
    return (r[0],) + ((r[1],) if return_inverse else ()) + ((r[2],) if return_counts else ())


@overridable
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The unique elements (or slices along ``dim``) of ``input``, in ascending order, with
    optional inverse indices and counts."""
    n = ndim_of(input)
    p = {} if dim is None else {"dim": _wrap_dim(dim, n)}
    return _unique_result(apply(UNIQUE, (input,), p), return_inverse, return_counts)


@overridable
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """``input`` with each run of equal consecutive elements (or slices) collapsed to one."""
    n = ndim_of(input)
    p = {} if dim is None else {"dim": _wrap_dim(dim, n)}
    return _unique_result(apply(UNIQUE_CONSECUTIVE, (input,), p), return_inverse, return_counts)


Tensor.unique = unique
Tensor.unique_consecutive = unique_consecutive


# ---- bincount / histc -------------------------------------------------------------------
def _bincount_kernel(xp, x, weights, minlength=0):
    if x.dtype.kind not in "iu":
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{type_name(x.dtype)}'")
    if x.ndim != 1 or (x.size and x.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is None:
        return xp.bincount(x, minlength=minlength).astype(np.int64)
    if weights.shape != x.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    r = xp.bincount(x, weights=weights.astype(np.float64), minlength=minlength)
    return r.astype(np.float32 if weights.dtype == np.float32 else np.float64)


BINCOUNT = Op("bincount", _bincount_kernel, **no_derivative("bincount", aten=True),
              save_inputs=False, category="sorting",
              shape=_data_dependent,  # max(input) + 1 bins
              batch=_dynamic_rule)


@overridable
def bincount(input, weights=None, minlength=0):
    """The number of occurrences of each value in a 1-D tensor of non-negative ints (summed
    ``weights`` if given)."""
    return apply(BINCOUNT, (input, weights), {"minlength": int(minlength)})


def _histc_kernel(xp, x, bins, min, max):
    if x.dtype.kind in "biuc":
        # the first of torch's steps to refuse the dtype: the bin edges, the data's range
        step = "linspace" if x.dtype.kind == "b" else \
            "aminmax" if x.dtype.kind == "c" and min == max else "histogram"
        raise NotImplementedError(f"\"{step}_cpu\" not implemented for '{type_name(x.dtype)}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    w = (x.astype(_F32) if x.dtype in _HALF else x).reshape(-1)
    lo, hi = w.dtype.type(min), w.dtype.type(max)
    if lo == hi and w.size:
        lo, hi = w.min(), w.max()  # the data's range (NaN if there is one)
    if not (xp.isfinite(lo) and xp.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{float(lo):g}, {float(hi):g}] is not finite")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    keep = w[(w >= lo) & (w <= hi)]
    pos = ((keep - lo) / (hi - lo) * w.dtype.type(bins)).astype(np.int64)
    pos = xp.minimum(pos, bins - 1)
    return xp.bincount(pos, minlength=bins).astype(x.dtype)


def _histc_rule(op, args, bdims, params, batch_size):
    x = _move_to_front(args[0], bdims[0])
    if not x.is_floating_point() or x.numel() == 0:
        return _loop_free_empty_histc(op, x, params, batch_size)
    bins, lo, hi = params["bins"], params["min"], params["max"]
    w = x.reshape(batch_size, -1)
    if w.dtype.itemsize < 4:
        w = w.float()
    if lo == hi:
        fin = w.isfinite()
        inf = float("inf")
        lo_t = w.masked_fill(~fin, inf).amin(1, keepdim=True)
        hi_t = w.masked_fill(~fin, -inf).amax(1, keepdim=True)
        same = lo_t == hi_t
        lo_t, hi_t = lo_t - same.to(w.dtype), hi_t + same.to(w.dtype)
    else:
        lo_t = w.new_full((batch_size, 1), lo)
        hi_t = w.new_full((batch_size, 1), hi)
    keep = (w >= lo_t) & (w <= hi_t)
    pos = ((w - lo_t) / (hi_t - lo_t) * bins).nan_to_num(0.0).clamp(0, bins - 1).long()
    counts = w.new_zeros((batch_size, bins)).scatter_add(1, pos, keep.to(w.dtype))
    return counts.to(x.dtype), 0


def _loop_free_empty_histc(op, x, params, batch_size):
    one = op(x.reshape(batch_size, -1)[0], **params)  # raises the kernel's own dtype errors
    return one.unsqueeze(0).expand(batch_size, *one.shape).contiguous(), 0



HISTC = Op("histc", _histc_kernel, None, differentiable=False, save_inputs=False,
           category="sorting", shape=lambda x, bins, min, max: ((bins,), x.dtype),
           batch=_histc_rule)


@overridable
def histc(input, bins=100, min=0, max=0, *, out=None):
    """A histogram of ``input`` with ``bins`` equal bins over [min, max] (the data's range if
    both are equal); values outside are ignored."""
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)):
        raise TypeError(f"histc(): argument 'bins' (position 2) must be int, not "
                        f"{type(bins).__name__}")
    if isinstance(out, Tensor) and isinstance(input, Tensor) and out.dtype is not input.dtype:
        raise RuntimeError(f"torch.histogram: input tensor and hist tensor should have the same "
                           f"dtype, but got input {cpp_name(input.dtype)} and hist "
                           f"{cpp_name(out.dtype)}")
    r = apply(HISTC, (input,), {"bins": int(bins), "min": min, "max": max})
    return r if out is None else write_out(out, r)


Tensor.bincount = bincount
Tensor.histc = histc


# ---- searchsorted / bucketize -----------------------------------------------------------
def _search_kernel(xp, seq, values, sorter, side="left", out_int32=False):
    dt = np.int32 if out_int32 else np.int64
    v = xp.asarray(values)
    if sorter is not None:
        seq = xp.take_along_axis(seq, sorter, axis=-1)
    if seq.ndim == 1:
        return xp.searchsorted(seq, v, side=side).astype(dt)
    if v.ndim != seq.ndim or v.shape[:-1] != seq.shape[:-1]:
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the "
                           f"first N-1 dimensions of boundaries tensor and input value tensor "
                           f"must match, but we got boundaries tensor {list(seq.shape)} and "
                           f"input value tensor {list(v.shape)}")
    s2 = seq.reshape(-1, seq.shape[-1])
    v2 = v.reshape(-1, v.shape[-1])
    r = xp.empty(v2.shape, dt)
    for k in range(s2.shape[0]):
        r[k] = xp.searchsorted(s2[k], v2[k], side=side)
    return r.reshape(v.shape)


def _search_shape(seq, values, sorter, side="left", out_int32=False):
    shape = values.shape if isinstance(values, _meta.TensorMeta) else ()
    return shape, _dt.int32 if out_int32 else _dt.int64


def _searchsorted_rule(op, args, bdims, params, batch_size):
    seq, values = args[0], args[1]
    sorter = args[2] if len(args) > 2 else None
    bs, bv = bdims[0], bdims[1]
    bo = bdims[2] if len(bdims) > 2 else None
    if bs is None and bo is None and _logical_ndim(seq, bs) == 1:
        return op(seq, _move_to_front(values, bv), *args[2:], **params), 0
    seq = _batched_front(seq, bs, batch_size)
    if sorter is not None:
        sorter = _batched_front(sorter, bo, batch_size)
    scalar = not isinstance(values, Tensor)
    if scalar:
        values = seq.new_full((batch_size, 1), values)
    else:
        values = _batched_front(values, bv, batch_size)
    vshape = tuple(values.shape)
    if seq.dim() == 2:  # one sorted row per example: values flattened to (B, n)
        values = values.reshape(batch_size, -1)
    r = op(seq, values, sorter, *args[3:], **params)
    if scalar:
        return r.reshape(batch_size), 0
    return r.reshape(vshape), 0



SEARCHSORTED = Op("searchsorted", _search_kernel, None, differentiable=False, save_inputs=False,
                  category="sorting", shape=_search_shape, batch=_searchsorted_rule)


@overridable
def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None,
                 sorter=None, out=None):
    """Indices where ``values`` would be inserted into the innermost dimension of
    ``sorted_sequence`` to keep it sorted."""
    if side is not None and side not in ("left", "right"):
        raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got "
                           f"{side}")
    if side == "left" and right:
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got "
                           "side of left while right was True")
    side = side or ("right" if right else "left")
    ndim_of(sorted_sequence)
    r = apply(SEARCHSORTED, (sorted_sequence, values, sorter),
              {"side": side, "out_int32": out_int32})
    return r if out is None else _write_indices(out, r, out_int32)


@overridable
def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The index of the bucket of ``boundaries`` each element of ``input`` falls in."""
    if ndim_of(boundaries) != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.dim()})")
    r = apply(SEARCHSORTED, (boundaries, input, None),
              {"side": "right" if right else "left", "out_int32": out_int32})
    return r if out is None else _write_indices(out, r, out_int32)


def _write_indices(out, r, out_int32):
    """``out=`` of searchsorted/bucketize: torch wants out in the result's index dtype."""
    if isinstance(out, Tensor) and out.dtype is not r.dtype:
        from .._core.dispatch import _cat_name
        raise RuntimeError(f"torch.searchsorted(): output tensor's dtype is wrong, it can only "
                           f"be Int(int32) or Long(int64) depending on whether out_int32 flag "
                           f"is True, but we got output tensor's dtype {_cat_name(out.dtype)} "
                           f"and out_int32 flag is {bool(out_int32)}")
    return write_out(out, r)


# no jvp rules written: forward AD derives these tangents from the vjps
from .._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, "sort", "topk", "kthvalue", "median", "median_dim", "mode",
                 "_quantile_positions")
