"""The window operators behind unfold/fold, pooling and convolution's decomposition, and
padding.

``im2col`` copies sliding windows into a (C, *k, B, *L) column buffer and ``col2im``, its
adjoint, sums windows back; each one's vjp is the other.  unfold/fold are these two, and
``convolution``'s decomposition (what compile and export lower; see `conv_ops` for the
eager operator) is im2col, a matmul and, for transposed convolution, col2im.  ``pad`` is
a primitive; its vjp folds the padded border back (``pad_backward``), whose vjp is ``pad``
again.

Batching: the vmap batch folds into the window batch B (im2col's output then carries it
next to B, where col2im takes it back).
"""
import itertools

import numpy as np

from ..._core.op import Op
from .._batching import _move_to_front
from .._helpers import _F32, _HALF, apply

__all__ = []


def _compute(x):
    """(array in its compute dtype, dtype to cast the result to or None)."""
    if x.dtype in _HALF:
        return x.astype(_F32), x.dtype
    return x, None


def _prod(s):
    r = 1
    for v in s:
        r *= v
    return r


# ---- im2col / col2im -------------------------------------------------------------------

def _windows(xp, x, ks, dilation, pad, stride):
    """Sliding windows over the last len(ks) dims of ``x`` as a view (..., *Lo, *k)."""
    n = len(ks)
    lead = x.ndim - n
    if any(p for pr in pad for p in pr):
        x = xp.pad(x, ((0, 0),) * lead + tuple(pad))
    eff = tuple(d * (k - 1) + 1 for k, d in zip(ks, dilation))
    win = xp.lib.stride_tricks.sliding_window_view(x, eff, axis=tuple(range(lead, lead + n)))
    return win[(slice(None),) * lead + tuple(slice(None, None, s) for s in stride) +
               tuple(slice(None, None, d) for d in dilation)]


def _im2col_kernel(xp, x, ks, dilation, pad, stride):
    n = len(ks)
    win = _windows(xp, x, ks, dilation, pad, stride)
    perm = (1,) + tuple(range(2 + n, 2 + 2 * n)) + (0,) + tuple(range(2, 2 + n))
    return xp.ascontiguousarray(win.transpose(perm))


def _col2im_kernel(xp, cols, in_spatial, ks, dilation, pad, stride):
    n = len(ks)
    a, back = _compute(cols)
    C, B, lo = a.shape[0], a.shape[1 + n], a.shape[2 + n:]
    full = tuple(L + p0 + p1 for L, (p0, p1) in zip(in_spatial, pad))
    out = xp.zeros((B, C) + full, dtype=a.dtype)
    for idx in itertools.product(*[range(k) for k in ks]):
        sl = tuple(slice(i * d, i * d + s * (m - 1) + 1, s)
                   for i, d, s, m in zip(idx, dilation, stride, lo))
        out[(slice(None), slice(None)) + sl] += a[(slice(None),) + idx].swapaxes(0, 1)
    if any(p for pr in pad for p in pr):
        out = xp.ascontiguousarray(out[(slice(None), slice(None)) + tuple(
            slice(p0, p0 + L) for L, (p0, _) in zip(in_spatial, pad))])
    return out if back is None else out.astype(back)


def _im2col_vjp(ctx, g, x, ks, dilation, pad, stride):
    return col2im(g, ctx.in_meta[0][0][2:], ks, dilation, pad, stride)


def _col2im_vjp(ctx, g, cols, in_spatial, ks, dilation, pad, stride):
    return im2col(g, ks, dilation, pad, stride)


def _im2col_shape(x, ks, dilation, pad, stride):
    n = len(ks)
    lead, spatial = x.shape[:-n], x.shape[-n:]
    lo = tuple((L + p0 + p1 - d * (k - 1) - 1) // s + 1
               for L, (p0, p1), k, d, s in zip(spatial, pad, ks, dilation, stride))
    return lead[1:] + tuple(ks) + lead[:1] + lo, x.dtype


def _col2im_shape(cols, in_spatial, ks, dilation, pad, stride):
    n = len(ks)
    return (cols.shape[1 + n], cols.shape[0]) + tuple(in_spatial), cols.dtype


def _im2col_batch(op, args, bdims, params, batch_size):
    # (V, B, C, *L) -> (V*B, C, *L) -> (C, *k, V*B, *Lo) -> (C, *k, V, B, *Lo)
    x = _move_to_front(args[0], bdims[0])
    n = len(params["ks"])
    # sizes spelled out: a -1 cannot be inferred when a batch is empty
    cols = op(x.reshape((batch_size * x.shape[1],) + tuple(x.shape[2:])), **params)
    shape = tuple(cols.shape)
    return cols.reshape(shape[:1 + n] + (batch_size, x.shape[1]) + shape[2 + n:]), 1 + n


def _col2im_batch(op, args, bdims, params, batch_size):
    # the vmap batch joins the column batch B (dim 1 + n of (C, *k, B, *Lo))
    n = len(params["ks"])
    cols = args[0].movedim(bdims[0], 1 + n)
    shape = tuple(cols.shape)
    out = op(cols.reshape(shape[:1 + n] + (batch_size * shape[2 + n],) + shape[3 + n:]),
             **params)
    return out.reshape((batch_size, shape[2 + n]) + tuple(out.shape[1:])), 0


IM2COL = Op("im2col", _im2col_kernel, _im2col_vjp, save_inputs=False, category="nn",
            shape=_im2col_shape, batch=_im2col_batch)
COL2IM = Op("col2im", _col2im_kernel, _col2im_vjp, save_inputs=False, category="nn",
            shape=_col2im_shape, batch=_col2im_batch)


def im2col(x, ks, dilation, pad, stride):
    """Windows of ``x`` (B, C, *L) as columns (C, *ks, B, *Lo); ``pad`` is ((lo, hi), ...)."""
    return apply(IM2COL, (x,), {"ks": ks, "dilation": dilation, "pad": pad, "stride": stride})


def col2im(cols, in_spatial, ks, dilation, pad, stride):
    """Adjoint of `im2col`: columns (C, *ks, B, *Lo) summed back into (B, C, *in_spatial)."""
    return apply(COL2IM, (cols,), {"in_spatial": tuple(in_spatial), "ks": ks,
                                   "dilation": dilation, "pad": pad, "stride": stride})


# ---- pad ---------------------------------------------------------------------------------

def _source_index(n, lo, hi, mode):
    """For each output position along a dim of size n padded by (lo, hi): its source index
    (-1 where a constant fills it)."""
    j = np.arange(n + lo + hi) - lo
    if mode == "reflect":
        period = 2 * (n - 1)
        if period == 0:
            return np.zeros_like(j)
        j = np.abs(j) % period
        return np.where(j >= n, period - j, j)
    if mode == "replicate":
        return np.clip(j, 0, n - 1)
    if mode == "circular":
        return j % n
    return np.where((j >= 0) & (j < n), j, -1)


_NP_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
            "circular": "wrap"}


def _pad_kernel(xp, x, pads, mode, value=0.0):
    """``pads``: ((dim, lo, hi), ...) for the padded dims."""
    if all(lo >= 0 and hi >= 0 for _, lo, hi in pads):
        width = [(0, 0)] * x.ndim
        for d, lo, hi in pads:
            width[d] = (lo, hi)
        if mode == "constant":
            return xp.pad(x, width, mode="constant", constant_values=value)
        return xp.pad(x, width, mode=_NP_MODE[mode])
    out = x
    for d, lo, hi in pads:
        src = _source_index(out.shape[d], lo, hi, mode)
        # the index tables are host arrays computed from shapes: moved to the device once
        taken = xp.take(out, xp.asarray(np.maximum(src, 0)), axis=d)
        if mode == "constant" and (src < 0).any():
            shape = [1] * out.ndim
            shape[d] = len(src)
            taken = xp.where(xp.asarray((src < 0).reshape(shape)),
                             xp.asarray(value, dtype=out.dtype), taken)
        out = taken
    return out


def _pad_backward_kernel(xp, g, in_shape, pads, mode):
    out = g
    for d, lo, hi in reversed(pads):
        n = in_shape[d]
        src = _source_index(n, lo, hi, mode)
        shape = list(out.shape)
        shape[d] = n
        acc = xp.zeros(shape, dtype=out.dtype)
        moved_acc = xp.moveaxis(acc, d, -1)
        moved_g = xp.moveaxis(out, d, -1)
        # interior positions map one to one; the few border positions are added one by one
        inner = np.nonzero((src == np.arange(len(src)) - lo) & (src >= 0))[0]
        if len(inner):
            a, b = inner[0], inner[-1] + 1
            moved_acc[..., a - lo:b - lo] += moved_g[..., a:b]
        else:
            a = b = 0
        for j in itertools.chain(range(0, a), range(b, len(src))):
            if src[j] >= 0:
                moved_acc[..., src[j]] += moved_g[..., j]
        out = acc
    return out


def _pad_vjp(ctx, g, x, pads, mode, value=0.0):
    return apply(PAD_BACKWARD, (g,), {"in_shape": ctx.in_meta[0][0], "pads": pads, "mode": mode})


def _pad_backward_vjp(ctx, g, gy, in_shape, pads, mode):
    return apply(PAD, (g,), {"pads": pads, "mode": mode})


def _pad_shape(x, pads, mode, value=0.0):
    s = list(x.shape)
    for d, lo, hi in pads:
        s[d] = s[d] + lo + hi
    return tuple(s), x.dtype


def _shifted_pads(pads):
    # pads name absolute dims: the vmap batch in front moves each by one
    return tuple((d + 1, lo, hi) for d, lo, hi in pads)


def _pad_batch(op, args, bdims, params, batch_size):
    x = _move_to_front(args[0], bdims[0])
    return op(x, **dict(params, pads=_shifted_pads(params["pads"]))), 0


def _pad_backward_batch(op, args, bdims, params, batch_size):
    g = _move_to_front(args[0], bdims[0])
    return op(g, in_shape=(batch_size,) + tuple(params["in_shape"]),
              pads=_shifted_pads(params["pads"]), mode=params["mode"]), 0


PAD = Op("pad", _pad_kernel, _pad_vjp, save_inputs=False, category="nn", shape=_pad_shape,
         batch=_pad_batch)
PAD_BACKWARD = Op("pad_backward", _pad_backward_kernel, _pad_backward_vjp, save_inputs=False,
                  category="nn", shape=lambda g, in_shape, pads, mode: (tuple(in_shape), g.dtype),
                  batch=_pad_backward_batch)


# ---- forward mode: each of these is linear in its tensor inputs --------------------------

def _linear_jvp(op):
    # a linear map: the tangent goes through the op itself (constant padding is affine: the
    # tangent's border is 0)
    def jvp(out, ts, x, **params):
        if "value" in params:
            params = dict(params, value=0.0)
        return apply(op, (ts[0],), params)
    return jvp


for _op in (IM2COL, COL2IM, PAD):
    _op.jvp = _linear_jvp(_op)

from ..._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, PAD_BACKWARD)  # its vjp is pad, itself differentiable
