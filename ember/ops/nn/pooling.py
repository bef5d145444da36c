"""The pooling primitives: max pooling (fixed and adaptive windows), its gradient, and
average pooling and its gradient.

Max pooling is one primitive producing values and flat indices into each input plane
(PyTorch's index convention); its gradient is the primitive ``max_pool_backward`` (a
scatter-add by index, done with one bincount), whose own gradient is a gather, so double
backward works.  Average pooling sums windows in one kernel; its gradient, the primitive
``avg_pool_backward``, spreads ``g / divisor`` back over the windows (and its own gradient
is average pooling again).  Every kernel treats the dimensions before the
pooled ones as batch, so the vmap batch is one more leading dimension (indices are
per plane, hence unchanged).
"""
import itertools

import numpy as np

from ..._core import dtype as _dt
from ..._core.ckernels import pooling as _ckpool
from ..._core.op import Op
from .._batching import _batched_front, _move_to_front
from .._helpers import apply, not_implemented, type_name
from ._rules import leading_rule
from .conv import _compute, _windows

__all__ = []


def _out_size(L, k, s, p, d, ceil):
    num = L + 2 * p - d * (k - 1) - 1
    o = (num + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= L + p:
        o -= 1
    return o


def _geometry(x_shape, ks, stride, pad, dil, ceil):
    """Output sizes and the (lo, hi) padding whose windows produce exactly those outputs."""
    n = len(ks)
    L = x_shape[-n:]
    outs = tuple(_out_size(*a, ceil) for a in zip(L, ks, stride, pad, dil))
    pads = tuple((p, max(0, (o - 1) * s + d * (k - 1) + 1 - l - p))
                 for l, k, s, p, d, o in zip(L, ks, stride, pad, dil, outs))
    return outs, pads


def _crop(win, outs, n):
    return win[(Ellipsis,) + tuple(slice(0, o) for o in outs) + (slice(None),) * n]


# ---- max pooling -------------------------------------------------------------------------

def _fill_low(dt):
    return -np.inf if dt.kind in "fV" else np.iinfo(dt).min


def _max_pool_kernel(xp, x, ks, stride, pad, dil, ceil, need_idx):
    n = len(ks)
    a, back = _compute(x)
    outs, pads = _geometry(a.shape, ks, stride, pad, dil, ceil)
    r = _ckpool.max_pool(a, ks, stride, pad, dil, outs, need_idx)
    if r is None:
        r, idx = _max_pool_numpy(xp, a, ks, stride, pad, dil, outs, pads, need_idx)
    else:
        r, idx = r
    return (r if back is None else r.astype(back)), idx


def _max_pool_numpy(xp, a, ks, stride, pad, dil, outs, pads, need_idx):
    """The NumPy kernel: the window maximum by strided views, the index by a scan."""
    n = len(ks)
    L = a.shape[-n:]
    lead = a.ndim - n
    if any(p for pr in pads for p in pr):
        a = xp.pad(a, ((0, 0),) * lead + pads, constant_values=_fill_low(a.dtype))
    win = _crop(_windows(xp, a, ks, dil, ((0, 0),) * n, stride), outs, n)
    if not need_idx:
        return win.max(axis=tuple(range(-n, 0))), xp.zeros((0,), dtype=np.int64)
    offsets = list(np.ndindex(*ks))
    views = [win[(Ellipsis,) + off] for off in offsets]
    r = views[0].copy()
    for v in views[1:]:
        xp.maximum(r, v, out=r)
    kt = np.int8 if len(views) < 128 else np.int64
    # where an offset reads the padding (None: nowhere), which PyTorch never picks even
    # when the whole window is the padding's value (-inf or the integer minimum)
    inside = [_inside(xp, off, outs, L, stride, pad, dil) for off in offsets] \
        if any(p for pr in pads for p in pr) else None
    if a.dtype.kind == "f" and xp.isnan(r).any():
        # PyTorch takes the last NaN of a window; the equality test below cannot see NaNs
        r = views[0].copy()
        k = xp.zeros(r.shape, dtype=kt)
        cur = None if inside is None else xp.broadcast_to(inside[0], r.shape).copy()
        for j, v in enumerate(views[1:], 1):
            upd = (v > r) | (v != v)
            if cur is not None:  # the first element inside replaces a padding start
                upd |= inside[j] & ~cur
                xp.copyto(cur, inside[j], where=upd)
            xp.copyto(r, v, where=upd)
            xp.copyto(k, j, where=upd)
    else:
        # the first offset holding the maximum, as PyTorch's strict '>' scan picks
        k = xp.full(r.shape, len(views) - 1, dtype=kt)
        for j in range(len(views) - 2, -1, -1):
            hit = views[j] == r
            xp.copyto(k, j, where=hit if inside is None else hit & inside[j])
    strides = [int(np.prod(L[i + 1:], dtype=np.int64)) for i in range(n)]
    base = 0
    for i in range(n):
        o = xp.arange(outs[i]).reshape((-1,) + (1,) * (n - 1 - i))
        base = base + (o * stride[i] - pad[i]) * strides[i]
    table = xp.array([sum(o[i] * dil[i] * strides[i] for i in range(n)) for o in offsets],
                     dtype=np.int64)
    idx = table[k]
    idx += base
    if inside is not None:
        some = None
        for m in inside:
            m = xp.broadcast_to(m, outs)
            some = m if some is None else some | m
        empty = ~some
        if bool(empty.any()):  # no element inside: torch's index is the first position >= 0
            first = 0
            for i in range(n):
                h = np.arange(outs[i]) * stride[i] - pad[i]
                h = np.where(h < 0, h + (dil[i] - 1 - h) // dil[i] * dil[i], h)
                first = first * L[i] + h.reshape((-1,) + (1,) * (n - 1 - i))
            idx = xp.where(xp.asarray(empty), xp.asarray(first), idx)
    return r, idx


def _inside(xp, off, outs, L, stride, pad, dil):
    """Whether window offset ``off`` reads inside the input, per output position."""
    m = True
    for i, o in enumerate(outs):
        h = np.arange(o) * stride[i] - pad[i] + off[i] * dil[i]
        m = m & ((h >= 0) & (h < L[i])).reshape((-1,) + (1,) * (len(outs) - 1 - i))
    return xp.asarray(m)


def _max_pool_vjp(ctx, g, x, ks, stride, pad, dil, ceil, need_idx):
    return max_pool_backward(g[0], ctx.out[1], ctx.in_meta[0][0], len(ks))


def _max_pool_shape(x, ks, stride, pad, dil, ceil, need_idx):
    s = x.shape[:-len(ks)] + _geometry(x.shape, ks, stride, pad, dil, ceil)[0]
    return (s, x.dtype), (s if need_idx else (0,), _dt.int64)


def _max_pool_batch(op, args, bdims, params, batch_size):
    out, idx = op(_move_to_front(args[0], bdims[0]), **params)
    # without need_idx the indices are an empty placeholder, the same for every example
    return (out, idx), [0, 0 if params["need_idx"] else None]


MAX_POOL = Op("max_pool", _max_pool_kernel, _max_pool_vjp, save_inputs=False, save_output=(1,),
              n_out=2, nondiff_outputs=(1,), category="nn", shape=_max_pool_shape,
              batch=_max_pool_batch)


def _max_pool_backward_kernel(xp, g, idx, in_shape, n):
    a, back = _compute(g)
    r = _ckpool.max_pool_backward(a, idx, in_shape, n)
    if r is None:
        r = _max_pool_backward_numpy(xp, a, idx, in_shape, n)
    return r.astype(back or a.dtype, copy=False)


def _max_pool_backward_numpy(xp, a, idx, in_shape, n):
    """The NumPy kernel: one bincount over the planes."""
    lead = int(np.prod(in_shape[:-n], dtype=np.int64))
    plane = int(np.prod(in_shape[-n:], dtype=np.int64))
    per = int(np.prod(idx.shape[idx.ndim - n:], dtype=np.int64))  # no -1: lead may be 0
    base = (xp.arange(lead, dtype=np.int64) * plane)[:, None] + idx.reshape(lead, per)
    r = xp.bincount(base.ravel(), weights=a.ravel(), minlength=lead * plane)
    return r.reshape(in_shape)


def _max_pool_backward_vjp(ctx, gg, g, idx, in_shape, n):
    lead = in_shape[:-n]
    flat = gg.reshape(lead + (int(np.prod(in_shape[-n:], dtype=np.int64)),))
    out_shape = ctx.in_meta[0][0]
    per = int(np.prod(out_shape[len(out_shape) - n:], dtype=np.int64))
    return flat.gather(-1, idx.reshape(lead + (per,))).reshape(out_shape), None


def _max_pool_backward_batch(op, args, bdims, params, batch_size):
    g = _batched_front(args[0], bdims[0], batch_size)
    idx = _batched_front(args[1], bdims[1], batch_size)
    return op(g, idx, in_shape=(batch_size,) + tuple(params["in_shape"]), n=params["n"]), 0


MAX_POOL_BACKWARD = Op("max_pool_backward", _max_pool_backward_kernel, _max_pool_backward_vjp,
                       save_inputs=(1,), category="nn",
                       shape=lambda g, idx, in_shape, n: (tuple(in_shape), g.dtype),
                       batch=_max_pool_backward_batch)


def max_pool_backward(g, idx, in_shape, n):
    return apply(MAX_POOL_BACKWARD, (g, idx), {"in_shape": tuple(in_shape), "n": n})


# ---- average pooling ---------------------------------------------------------------------

def _divisor(L, ks, stride, pad, outs, include_pad, override):
    if override:
        return None
    parts = []
    for l, k, s, p, o in zip(L, ks, stride, pad, outs):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, l + p)
        if include_pad:
            parts.append(end - start)
        else:
            parts.append(np.minimum(end, l) - np.maximum(start, 0))
    d = parts[0]
    for q in parts[1:]:
        d = d[..., None] * q
    return d


def _avg_pool_kernel(xp, x, ks, stride, pad, ceil, include_pad, override):
    n = len(ks)
    if x.dtype.kind not in "fV" and x.dtype != np.int64:
        raise NotImplementedError(f"\"avg_pool2d\" not implemented for '{type_name(x.dtype)}'")
    a, back = _compute(x)
    outs, pads = _geometry(a.shape, ks, stride, pad, (1,) * n, ceil)
    r = _ckpool.avg_pool(a, ks, stride, pad, outs, include_pad, override)
    if r is not None:
        return r if back is None else r.astype(back)
    win = _crop(_windows(xp, a, ks, (1,) * n, pads, stride), outs, n)
    s = win.sum(axis=tuple(range(-n, 0)))
    div = _divisor(a.shape[-n:], ks, stride, pad, outs, include_pad, override)
    d = override if div is None else xp.asarray(div, dtype=s.dtype)
    if s.dtype.kind == "i":  # int64 as torch: a wrapping window sum divided toward zero
        q = xp.floor_divide(s, d)
        return q + ((q * d != s) & ((s < 0) != (xp.asarray(d) < 0)))
    s = s / d
    return s if back is None else s.astype(back)


def _avg_pool_vjp(ctx, g, x, ks, stride, pad, ceil, include_pad, override):
    return apply(AVG_POOL_BACKWARD, (g,), {
        "in_spatial": tuple(ctx.in_meta[0][0][-len(ks):]), "ks": ks, "stride": stride,
        "pad": pad, "ceil": ceil, "include_pad": include_pad, "override": override})


def _avg_pool_shape(x, ks, stride, pad, ceil, include_pad, override):
    n = len(ks)
    return x.shape[:-n] + _geometry(x.shape, ks, stride, pad, (1,) * n, ceil)[0], x.dtype


def _avg_pool_jvp(out, ts, x, **params):
    return apply(AVG_POOL, (ts[0],), params)  # a linear map of x


AVG_POOL = Op("avg_pool", _avg_pool_kernel, _avg_pool_vjp, save_inputs=False, category="nn",
              shape=_avg_pool_shape, batch=leading_rule, jvp=_avg_pool_jvp)


# The gradient of average pooling is a primitive of its own (the adjoint linear map), so
# its C kernel spreads each output's share straight into the input gradient, with no
# column buffer expanded to every window element; its own gradient is average pooling.

def _avg_pool_backward_kernel(xp, g, in_spatial, ks, stride, pad, ceil, include_pad,
                              override):
    a, back = _compute(g)
    r = _ckpool.avg_pool_backward(a, in_spatial, ks, stride, pad, include_pad, override)
    if r is None:
        r = _avg_pool_backward_numpy(xp, a, in_spatial, ks, stride, pad, ceil, include_pad,
                                     override)
    return r if back is None else r.astype(back)


def _avg_pool_backward_numpy(xp, a, in_spatial, ks, stride, pad, ceil, include_pad,
                             override):
    """Each output's gradient over its divisor, added window offset by window offset into
    the padded input, which is then cropped."""
    n = len(ks)
    lead = a.shape[:a.ndim - n]
    outs, pads = _geometry(lead + tuple(in_spatial), ks, stride, pad, (1,) * n, ceil)
    div = _divisor(in_spatial, ks, stride, pad, outs, include_pad, override)
    a = a / (override if div is None else xp.asarray(div, dtype=a.dtype))
    full = xp.zeros(lead + tuple(L + p0 + p1 for L, (p0, p1) in zip(in_spatial, pads)),
                    dtype=a.dtype)
    for idx in itertools.product(*[range(k) for k in ks]):
        full[(Ellipsis,) + tuple(slice(i, i + s * (o - 1) + 1, s)
                                 for i, s, o in zip(idx, stride, outs))] += a
    return full[(Ellipsis,) + tuple(slice(p0, p0 + L) for L, (p0, _) in zip(in_spatial, pads))]


def _avg_pool_backward_vjp(ctx, gg, g, in_spatial, ks, stride, pad, ceil, include_pad,
                           override):
    return apply(AVG_POOL, (gg,), {"ks": ks, "stride": stride, "pad": pad, "ceil": ceil,
                                   "include_pad": include_pad, "override": override})


def _avg_pool_backward_shape(g, in_spatial, ks, **params):
    return g.shape[:-len(ks)] + tuple(in_spatial), g.dtype


def _avg_pool_backward_jvp(out, ts, g, **params):
    return apply(AVG_POOL_BACKWARD, (ts[0],), params)  # a linear map of g


AVG_POOL_BACKWARD = Op("avg_pool_backward", _avg_pool_backward_kernel, _avg_pool_backward_vjp,
                       save_inputs=False, category="nn", shape=_avg_pool_backward_shape,
                       batch=leading_rule, jvp=_avg_pool_backward_jvp)


# ---- adaptive max pooling ----------------------------------------------------------------

def _bounds(L, o):
    i = np.arange(o)
    return (i * L) // o, -((-(i + 1) * L) // o)


def _adaptive_max_kernel(xp, x, osz):
    n = len(osz)
    a, back = _compute(x)
    L = a.shape[-n:]
    idxs = []
    for i, (l, o) in enumerate(zip(L, osz)):
        s, e = _bounds(l, o)
        km = int((e - s).max())
        # windows padded to a common length by repeating their last element
        idxs.append(np.minimum(s[:, None] + np.arange(km), (e - 1)[:, None]))
    grids = []
    for i, ix in enumerate(idxs):
        shape = [1] * (2 * n)
        shape[i], shape[n + i] = ix.shape
        grids.append(ix.reshape(shape))
    sel = a[(Ellipsis,) + tuple(xp.asarray(g) for g in grids)]  # (..., *osz, *kmax)
    kmax = tuple(ix.shape[1] for ix in idxs)
    flat = sel.reshape(sel.shape[:a.ndim] + (int(np.prod(kmax)),))  # no -1: batch may be 0
    k = flat.argmax(axis=-1)
    r = xp.take_along_axis(flat, k[..., None], axis=-1)[..., 0]
    kidx = xp.unravel_index(k, kmax)
    pos = []
    for i, ix in enumerate(idxs):
        o = xp.arange(osz[i]).reshape((-1,) + (1,) * (n - 1 - i))
        pos.append(xp.asarray(ix)[o, kidx[i]])
    idx = xp.ravel_multi_index(tuple(pos), L) if n > 1 else pos[0]
    return (r if back is None else r.astype(back)), idx.astype(np.int64)


def _adaptive_max_vjp(ctx, g, x, osz):
    return max_pool_backward(g[0], ctx.out[1], ctx.in_meta[0][0], len(osz))


def _adaptive_max_shape(x, osz):
    s = x.shape[:-len(osz)] + tuple(osz)
    return (s, x.dtype), (s, _dt.int64)


ADAPTIVE_MAX = Op("adaptive_max_pool", _adaptive_max_kernel, _adaptive_max_vjp, n_out=2,
                  save_inputs=False, save_output=(1,), nondiff_outputs=(1,), category="nn",
                  shape=_adaptive_max_shape, batch=leading_rule)




# ---- max_unpool -----------------------------------------------------------------------------

def _max_unpool_kernel(xp, x, idx, osz):
    n = len(osz)
    if x.dtype.kind in "biuc":  # torch's 1d unpool runs its 2d kernel
        not_implemented(f"max_unpool{max(n, 2)}d", x.dtype)
    lead = x.shape[:x.ndim - n]
    plane = int(np.prod(osz, dtype=np.int64))
    # sizes spelled out: a -1 cannot be inferred when the batch is empty
    window = int(np.prod(x.shape[x.ndim - n:], dtype=np.int64))
    flat = idx.reshape(lead + (window,))
    if flat.size and (flat.max() >= plane or flat.min() < 0):
        raise RuntimeError(f"Found an invalid max index: {int(flat.max())} (output volumes are "
                           f"of size {'x'.join(map(str, osz))}")
    out = xp.zeros(lead + (plane,), dtype=x.dtype)
    xp.put_along_axis(out, flat, x.reshape(lead + (window,)), axis=-1)
    return out.reshape(lead + tuple(osz))


def _max_unpool_vjp(ctx, g, x, idx, osz):
    # each input value went to one output position: its gradient is read back from there
    shape = tuple(ctx.in_meta[0][0])
    lead = shape[:len(shape) - len(osz)]
    flat = g.reshape(lead + (int(np.prod(osz, dtype=np.int64)),))
    return flat.gather(-1, idx.reshape(lead + (-1,))).reshape(shape), None


def _max_unpool_jvp(out, tangents, x, idx, osz):
    return None if tangents[0] is None else MAX_UNPOOL(tangents[0], idx, osz=osz)


def _max_unpool_shape(x, idx, osz):
    return tuple(x.shape[:x.ndim - len(osz)]) + tuple(osz), x.dtype


MAX_UNPOOL = Op("max_unpool", _max_unpool_kernel, _max_unpool_vjp, save_inputs=(1,),
                category="nn", shape=_max_unpool_shape, jvp=_max_unpool_jvp, batch=leading_rule)


# forward mode derives these tangents from the vjp: it is written in differentiable ember ops
from ..._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, "max_pool", "max_pool_backward", "adaptive_max_pool")
