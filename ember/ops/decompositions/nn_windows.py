"""Windowed nn operators (convolution's im2col/col2im, pooling, padding's adjoint) and
attention, in gathers, scatters, reductions and matmul.

A window over a spatial dim is a gather with a constant (outputs x kernel) table of input
positions, so im2col and every pooling are one ``index`` per spatial dim, and their
adjoints one ``index_put`` (accumulating) per dim.
"""
import math

import numpy as np

from ..._core import dtype as _dt
from . import decomposes
from ._util import cast, const, expand_as_shape, full, numel, prim, reshape

_HALVES = ("float16", "bfloat16")


def _work(x):
    if x.dtype.name in _HALVES:
        return cast(x, _dt.float32), x.dtype
    return x, None


def _back(r, dt):
    return r if dt is None else cast(r, dt)


def _table(outs, ks, stride, dil):
    """(outs, ks) input positions of each window element."""
    return np.arange(outs)[:, None] * stride + np.arange(ks)[None, :] * dil


def _gather_windows(x, tables):
    """x (..., *L) -> (..., *O, *K) through one gather per spatial dim."""
    n = len(tables)
    lead = x.ndim - n
    for i, t in enumerate(tables):
        x = prim.index(x, *([None] * (lead + 2 * i)), const(t, np.int64))
    # (..., O1, K1, O2, K2, ...) -> (..., O1, O2, ..., K1, K2, ...)
    order = list(range(lead)) + [lead + 2 * i for i in range(n)] + \
        [lead + 2 * i + 1 for i in range(n)]
    return prim.permute(x, dims=tuple(order))


def _scatter_windows(w, tables, sizes):
    """Adjoint of `_gather_windows`: w (..., *O, *K) summed back into (..., *sizes)."""
    n = len(tables)
    lead = w.ndim - 2 * n
    order = list(range(lead))
    for i in range(n):
        order += [lead + i, lead + n + i]
    w = prim.permute(w, dims=tuple(order))  # (..., O1, K1, ..., On, Kn)
    for i in reversed(range(n)):
        pos = lead + 2 * i
        shape = tuple(w.shape[:pos]) + (sizes[i],) + tuple(w.shape[pos + 2:])
        w = prim.index_put(full(shape, 0, w.dtype), w, *([None] * pos),
                           const(tables[i], np.int64), accumulate=True)
    return w


def _constant_pad(x, pad, value):
    pads = tuple((x.ndim - len(pad) + i, lo, hi) for i, (lo, hi) in enumerate(pad) if lo or hi)
    return prim.pad(x, pads=pads, mode="constant", value=value) if pads else x


# ---- convolution ---------------------------------------------------------------------------
def _conv_outs(spatial, ks, dilation, pad, stride):
    return tuple((L + p0 + p1 - d * (k - 1) - 1) // s + 1
                 for L, (p0, p1), k, d, s in zip(spatial, pad, ks, dilation, stride))


@decomposes("im2col")
def _im2col(x, ks, dilation, pad, stride):
    n = len(ks)
    outs = _conv_outs(tuple(x.shape[-n:]), ks, dilation, pad, stride)
    xp_ = _constant_pad(x, pad, 0.0)
    tables = [_table(o, k, s, d) for o, k, s, d in zip(outs, ks, stride, dilation)]
    w = _gather_windows(xp_, tables)  # (B, C, *O, *K)
    # -> (C, *K, B, *O)
    order = (1,) + tuple(range(2 + n, 2 + 2 * n)) + (0,) + tuple(range(2, 2 + n))
    return prim.permute(w, dims=order)


@decomposes("col2im")
def _col2im(cols, in_spatial, ks, dilation, pad, stride):
    n = len(ks)
    a, back = _work(cols)
    # (C, *K, B, *O) -> (B, C, *O, *K)
    order = (1 + n, 0) + tuple(range(2 + n, 2 + 2 * n)) + tuple(range(1, 1 + n))
    w = prim.permute(a, dims=order)
    outs = tuple(cols.shape[2 + n:])
    tables = [_table(o, k, s, d) for o, k, s, d in zip(outs, ks, stride, dilation)]
    padded = tuple(L + p0 + p1 for L, (p0, p1) in zip(in_spatial, pad))
    r = _scatter_windows(w, tables, padded)
    r = _constant_pad(r, tuple((-p0, -p1) for p0, p1 in pad), 0.0)
    return _back(r, back)


# The vmap/export batch B is kept a dim of its own in every reshape below (never merged with
# the positions): a graph generalised over a symbolic batch then needs no size products.

@decomposes("convolution")
def _convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    """im2col and one matmul per (batch, group); transposed: the matmul's columns summed
    back by col2im (the adjoint of im2col)."""
    ks = tuple(w.shape[2:])
    n = len(ks)
    pad = tuple((p, p) for p in padding)
    geo = {"ks": ks, "dilation": tuple(dilation), "pad": pad, "stride": tuple(stride)}
    B, C = x.shape[:2]
    G, K = groups, numel(ks)
    if not transposed:
        O = w.shape[0]
        lo = _conv_outs(tuple(x.shape[2:]), ks, dilation, pad, stride)
        cols = _batch_first_columns(prim.im2col(x, **geo), G)       # (B, G, Cg*K, L)
        y = prim.matmul(reshape(w, (G, O // G, (C // G) * K)), cols)
        out = reshape(y, (B, O) + lo)
        cout = O
    else:
        L = tuple(x.shape[2:])
        cout = w.shape[1] * G
        out_sp = tuple((l - 1) * s - 2 * p + d * (k - 1) + op + 1 for l, s, p, d, k, op in
                       zip(L, stride, padding, dilation, ks, output_padding))
        wT = prim.permute(reshape(w, (G, C // G, (cout // G) * K)), dims=(0, 2, 1))
        cols = prim.matmul(wT, reshape(x, (B, G, C // G, numel(L))))  # (B, G, Coutg*K, L)
        cols = _columns_batch_inside(reshape(cols, (B, cout) + ks + L), n)
        out = prim.col2im(cols, in_spatial=out_sp, **geo)
    if b is None:
        return out
    return prim.add(out, reshape(cast(b, out.dtype), (cout,) + (1,) * n))


def _batch_first_columns(cols, groups):
    """im2col's (C, *ks, B, *lo) as (B, groups, C/groups * K, L)."""
    n = (cols.ndim - 2) // 2
    C, B = cols.shape[0], cols.shape[1 + n]
    CK, L = numel(cols.shape[:1 + n]), numel(cols.shape[2 + n:])
    return prim.permute(reshape(cols, (groups, CK // groups, B, L)), dims=(2, 0, 1, 3))


def _columns_batch_inside(cols, n):
    """(B, C, *ks, *lo) -> im2col's layout (C, *ks, B, *lo)."""
    return prim.permute(cols, dims=(1,) + tuple(range(2, 2 + n)) + (0,) +
                        tuple(range(2 + n, 2 + 2 * n)))


@decomposes("convolution_backward")
def _convolution_backward(gy, x, w, bias_sizes, stride, padding, dilation, transposed,
                          output_padding, groups, output_mask):
    """The adjoints of `_convolution`'s products: the input gradient goes back through
    col2im (plain) or is a plain convolution's matmul (transposed); the weight gradient is
    a matmul of the output gradient with the columns of the other operand, summed over
    the batch."""
    ks = tuple(w.shape[2:])
    n = len(ks)
    pad = tuple((p, p) for p in padding)
    geo = {"ks": ks, "dilation": tuple(dilation), "pad": pad, "stride": tuple(stride)}
    B, C = x.shape[:2]
    G, K, L = groups, numel(ks), tuple(x.shape[2:])
    gx = gw = gb = full((0,), 0, x.dtype)
    if not transposed:
        O = w.shape[0]
        g4 = reshape(gy, (B, G, O // G, numel(gy.shape[2:])))
        if output_mask[0]:
            wT = prim.permute(reshape(w, (G, O // G, (C // G) * K)), dims=(0, 2, 1))
            gcols = reshape(prim.matmul(wT, g4), (B, C) + ks + tuple(gy.shape[2:]))
            gx = prim.col2im(_columns_batch_inside(gcols, n), in_spatial=L, **geo)
        if output_mask[1]:
            cols = _batch_first_columns(prim.im2col(x, **geo), G)
            gw = _batch_sum(prim.matmul(g4, prim.permute(cols, dims=(0, 1, 3, 2))), w.shape)
    else:
        cout = gy.shape[1]
        cols = prim.im2col(gy, **geo)                                 # (Cout, *ks, B, *lo)
        if tuple(cols.shape[2 + n:]) != L:  # output_padding past the stride
            cols = prim.slice(cols, key=((None, None, None),) * (2 + n) + tuple(
                (0, l, 1) for l in L))
        cols = _batch_first_columns(cols, G)                          # (B, G, Coutg*K, L)
        if output_mask[0]:
            y = prim.matmul(reshape(w, (G, C // G, (cout // G) * K)), cols)
            gx = reshape(y, (B, C) + L)
        if output_mask[1]:
            x4 = reshape(x, (B, G, C // G, numel(L)))
            gw = _batch_sum(prim.matmul(x4, prim.permute(cols, dims=(0, 1, 3, 2))), w.shape)
    if output_mask[2]:
        gb = prim.sum(gy, dims=(0,) + tuple(range(2, gy.ndim)), keepdim=False)
    return gx, gw, gb


def _batch_sum(per_example, shape):
    """(B, G, a, b) per-example weight gradients summed over the batch, as ``shape``."""
    return reshape(prim.sum(per_example, dims=(0,), keepdim=False), tuple(shape))


def _conv_nd(name):
    def decomp(*args, **params):
        # torch's argument handling lives with the op (unbatched input, 'same' padding)
        from ..nn.conv_nd import RULES
        return RULES[name].decomp(*args, **params)
    decomp.__name__ = f"_{name}"
    return decomp


for _name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d"):
    decomposes(_name)(_conv_nd(_name))


# ---- padding's adjoint ---------------------------------------------------------------------------
def _source_index(n, lo, hi, mode):
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


@decomposes("pad_backward")
def _pad_backward(g, in_shape, pads, mode):
    out = g
    for d, lo, hi in reversed(pads):
        src = _source_index(in_shape[d], lo, hi, mode)
        keep = np.nonzero(src >= 0)[0]
        vals = prim.index(out, *([None] * d), const(keep, np.int64))
        shape = list(out.shape)
        shape[d] = in_shape[d]
        out = prim.index_put(full(shape, 0, out.dtype), vals, *([None] * d),
                             const(src[keep], np.int64), accumulate=True)
    return out


# ---- pooling -------------------------------------------------------------------------------------
def _pool_geometry(shape, ks, stride, pad, dil, ceil):
    from ..nn.pooling import _geometry
    return _geometry(shape, ks, stride, pad, dil, ceil)


def _low(dt):
    return -math.inf if dt.is_floating_point else int(np.iinfo(dt.np).min)


def _flat_positions(tables, pad, L):
    """(O1, ..., On, K1*...*Kn) flat indices into the unpadded input plane."""
    n = len(tables)
    strides = [int(np.prod(L[i + 1:], dtype=np.int64)) for i in range(n)]
    total = 0
    for i, t in enumerate(tables):
        pos = (t - pad[i]) * strides[i]  # (Oi, Ki)
        shape = [1] * (2 * n)
        shape[i], shape[n + i] = pos.shape
        total = total + pos.reshape(shape)
    outs = tuple(t.shape[0] for t in tables)
    return total.reshape(outs + (-1,))


def _max_over_windows(w, n, positions):
    lead = w.shape[:w.ndim - 2 * n]
    outs = tuple(w.shape[w.ndim - 2 * n:w.ndim - n])
    flat = reshape(w, tuple(lead) + outs + (numel(w.shape[w.ndim - n:]),))
    last = flat.ndim - 1
    vals = prim.amax(flat, dims=(last,), keepdim=False)
    k = prim.argmax(flat, dim=last, keepdim=True)
    table = prim.expand(reshape(const(positions, np.int64), (1,) * len(lead) + positions.shape),
                        shape=tuple(flat.shape))
    idx = reshape(prim.gather(table, k, dim=last), tuple(lead) + outs)
    return vals, idx


@decomposes("max_pool")
def _max_pool(x, ks, stride, pad, dil, ceil, need_idx):
    n = len(ks)
    a, back = _work(x)
    outs, pads = _pool_geometry(tuple(a.shape), ks, stride, pad, dil, ceil)
    padded = _constant_pad(a, pads, _low(a.dtype))
    tables = [_table(o, k, s, d) for o, k, s, d in zip(outs, ks, stride, dil)]
    w = _gather_windows(padded, tables)
    positions = _flat_positions(tables, [p for p, _ in pads], tuple(x.shape[-n:]))
    vals, idx = _max_over_windows(w, n, positions)
    if not need_idx:
        idx = full((0,), 0, np.int64)
    return _back(vals, back), idx


@decomposes("adaptive_max_pool")
def _adaptive_max_pool(x, osz):
    n = len(osz)
    a, back = _work(x)
    L = tuple(a.shape[-n:])
    tables = []
    for l, o in zip(L, osz):
        i = np.arange(o)
        s, e = (i * l) // o, -((-(i + 1) * l) // o)
        km = int((e - s).max())
        tables.append(np.minimum(s[:, None] + np.arange(km), (e - 1)[:, None]))
    w = _gather_windows(a, tables)
    vals, idx = _max_over_windows(w, n, _flat_positions(tables, [0] * n, L))
    return _back(vals, back), idx


@decomposes("max_pool_backward")
def _max_pool_backward(g, idx, in_shape, n):
    a, back = _work(g)
    lead = numel(in_shape[:-n])
    plane = numel(in_shape[-n:])
    per = numel(idx.shape[idx.ndim - n:])
    zeros = full((lead, plane), 0, a.dtype)
    r = prim.scatter_add(zeros, reshape(idx, (lead, per)), reshape(a, (lead, per)), dim=1)
    return _back(reshape(r, in_shape), back)


@decomposes("avg_pool")
def _avg_pool(x, ks, stride, pad, ceil, include_pad, override):
    from ..nn.pooling import _divisor
    n = len(ks)
    a, back = _work(x)
    outs, pads = _pool_geometry(tuple(a.shape), ks, stride, pad, (1,) * n, ceil)
    tables = [_table(o, k, s, 1) for o, k, s in zip(outs, ks, stride)]
    w = _gather_windows(_constant_pad(a, pads, 0.0), tables)
    s = prim.sum(w, dims=tuple(range(w.ndim - n, w.ndim)), keepdim=False)
    div = _divisor(tuple(a.shape[-n:]), ks, stride, pad, outs, include_pad, override)
    s = prim.div(s, override if div is None else const(div, s.dtype))
    return _back(s, back)


# ---- attention -----------------------------------------------------------------------------------
@decomposes("avg_pool_backward")
def _avg_pool_backward(g, in_spatial, ks, stride, pad, ceil, include_pad, override):
    from ..nn.pooling import _divisor
    n = len(ks)
    a, back = _work(g)
    shape = tuple(a.shape)
    outs, pads = _pool_geometry(shape[:len(shape) - n] + tuple(in_spatial), ks, stride, pad,
                                (1,) * n, ceil)
    div = _divisor(tuple(in_spatial), ks, stride, pad, outs, include_pad, override)
    a = prim.div(a, override if div is None else const(div, a.dtype))
    w = expand_as_shape(reshape(a, shape + (1,) * n), shape + tuple(ks))  # (..., *O, *K)
    tables = [_table(o, k, s, 1) for o, k, s in zip(outs, ks, stride)]
    r = _scatter_windows(w, tables, tuple(L + p0 + p1 for L, (p0, p1) in zip(in_spatial, pads)))
    return _back(_constant_pad(r, tuple((-p0, -p1) for p0, p1 in pads), 0.0), back)


def _scores(q, k, mask, scale, causal, cdt):
    kT = prim.permute(k, dims=tuple(range(k.ndim - 2)) + (k.ndim - 1, k.ndim - 2))
    s = prim.matmul(prim.mul(q, cast(const(scale), cdt)), kT)
    if mask is not None:
        if mask.dtype == _dt.bool:
            s = prim.where(mask, s, -math.inf)
        else:
            s = prim.add(s, cast(mask, cdt))
    if causal:
        L, S = q.shape[-2], k.shape[-2]
        after = np.arange(S)[None, :] > np.arange(L)[:, None]
        s = prim.add(s, const(np.where(after, -np.inf, 0), cdt))
    return s


@decomposes("_flash_attention")
def _flash_attention(q, k, v, mask, scale, causal):
    dt = q.dtype
    cdt = _dt.float32 if dt.name in _HALVES else dt
    q, k, v = cast(q, cdt), cast(k, cdt), cast(v, cdt)
    L, S = q.shape[-2], k.shape[-2]
    shapes = [tuple(q.shape[:-2]), tuple(k.shape[:-2]), tuple(v.shape[:-2])]
    if mask is not None:
        shapes.append(tuple(mask.shape[:-2]))
    batch = tuple(np.broadcast_shapes(*shapes))
    if L == 0 or S == 0:
        return (full(batch + (L, v.shape[-1]), 0, dt), full(batch + (L,), math.inf, cdt))
    s = _scores(q, k, mask, scale, causal, cdt)
    last = s.ndim - 1
    m = prim.amax(s, dims=(last,), keepdim=True)
    m = prim.where(prim.eq(m, -math.inf), 0, m)
    p = prim.exp(prim.sub(s, m))
    lsum = prim.sum(p, dims=(last,), keepdim=True)
    empty = prim.eq(lsum, 0)
    out = prim.div(prim.matmul(p, v), prim.where(empty, 1, lsum))
    lse = prim.where(empty, math.inf, prim.add(m, prim.log(prim.where(empty, 1, lsum))))
    out = prim.expand(out, shape=batch + (L, v.shape[-1])) if tuple(out.shape[:-2]) != batch \
        else out
    lse = reshape(lse, tuple(lse.shape[:-1]))
    lse = prim.expand(lse, shape=batch + (L,)) if tuple(lse.shape[:-1]) != batch else lse
    return cast(out, dt), lse


def _swap(t):
    return prim.permute(t, dims=tuple(range(t.ndim - 2)) + (t.ndim - 1, t.ndim - 2))


@decomposes("_flash_attention_backward")
def _flash_attention_backward(q, k, v, mask, g_out, out, lse, g_lse, scale, causal,
                              mask_grad=True):
    cdt = lse.dtype
    q, k, v, g_out, out = (cast(t, cdt) for t in (q, k, v, g_out, out))
    s = _scores(q, k, mask, scale, causal, cdt)
    p = prim.exp(prim.sub(s, reshape(lse, tuple(lse.shape) + (1,))))
    last = g_out.ndim - 1
    delta = prim.sum(prim.mul(g_out, out), dims=(last,), keepdim=False)
    if g_lse is not None:
        delta = prim.sub(delta, g_lse)
    dv = prim.matmul(_swap(p), g_out)
    ds = prim.mul(prim.sub(prim.matmul(g_out, _swap(v)), reshape(delta, tuple(delta.shape) +
                                                                  (1,))), p)
    dq = prim.mul(prim.matmul(ds, k), scale)
    dk = prim.mul(prim.matmul(_swap(ds), q), scale)
    if not mask_grad:  # the op's score gradient is empty then
        ds = full(tuple(lse.shape) + (0,), 0, cdt)
    return dq, dk, dv, ds




@decomposes("max_unpool")
def _max_unpool(x, idx, osz):
    n = len(osz)
    lead = tuple(x.shape[:x.ndim - n])
    plane = numel(osz)
    per = numel(x.shape[x.ndim - n:])
    out = prim.scatter(full(lead + (plane,), 0, x.dtype), reshape(idx, lead + (per,)),
                       reshape(x, lead + (per,)), dim=len(lead))
    return reshape(out, lead + tuple(osz))
