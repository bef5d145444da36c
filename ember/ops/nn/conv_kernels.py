"""The eager array kernels of convolution: forward, and the input and weight gradients.

Every convolution, transposed or not, is three products over one column buffer:

* ``forward``: cols (B, g, Cg*K, L) of the padded input's windows (K = prod(kernel), L =
  prod(output spatial)), then ``y[b, grp] = W[grp] @ cols[b, grp]``: one BLAS GEMM per
  (batch, group) that writes the (B, O, *Lo) output in place, with no transposed copy;
* ``input_grad``: ``cols = W^T @ gy`` per (batch, group), then col2im: each kernel
  offset's (B, C, *Lo) slab added into the padded input's gradient;
* ``weight_grad``: ``gw[grp] = sum_b gy[b, grp] @ cols[b, grp]^T`` (one GEMM per
  (batch, group), then a sum over the batch).

The column buffer is filled one kernel offset at a time (prod(kernel) strided slab copies
whose inner rows are contiguous for stride 1), which is several times faster than one
copy of a 2n-dimensional window view.  A 1x1 kernel with unit stride and no padding needs
no buffer at all: the input *is* its column matrix.  A transposed convolution's forward
is the input gradient of the plain one, and its gradients are the plain forward (input)
and the weight gradient with the roles of input and output exchanged, so these three
kernels serve both.  Depthwise convolutions (a channel per group) run direct C kernels
(`ember._core.ckernels.depthwise`) instead, and so do stride-1 1-d/2-d float32/float64
convolutions (`ember._core.ckernels.conv.direct_conv`: forward, the input gradient as the
convolution with the flipped kernel, and `direct_weight_grad`), with no column buffer,
unless they would compute much more than the GEMMs (`_ck.waste`: tiny planes, the padded
plane of a transposed convolution's 1x1 input); strided forwards whose kernel sizes are
multiples of their strides run on the direct kernel too, in space-to-depth form
(`_to_depth`).  float16/bfloat16 compute in float32, rounded once.

Geometry is passed per spatial dim: ``ks`` kernel sizes, ``stride``, ``pad`` as (lo, hi)
pairs, ``dilation``.
"""
import itertools
import threading

import numpy as np

from ..._core.blas_threads import matmul as _gemm
from ..._core.ckernels import conv as _ck
from ..._core.ckernels import depthwise as _dw
from .._helpers import _F32, _HALF
from .conv import _prod

_I64 = np.dtype(np.int64)
_FLOAT = (np.dtype(np.float32), np.dtype(np.float64))

__all__ = ["out_spatial", "forward", "input_grad", "weight_grad", "compute_dtype"]


def out_spatial(spatial, ks, stride, pad, dilation):
    """Output sizes of a (plain) convolution; plain arithmetic, so sizes may be symbolic."""
    return tuple((L + p0 + p1 - d * (k - 1) - 1) // s + 1
                 for L, k, s, (p0, p1), d in zip(spatial, ks, stride, pad, dilation))


def compute_dtype(dt):
    """(dtype the kernels compute in, dtype to round the result to or None): halves in
    float32; integers in int64 (exact, and wrapping like the narrow type once cast back)."""
    if dt in _HALF:
        return _F32, dt
    if dt.kind in "iu":
        return _I64, (None if dt == _I64 else dt)
    return dt, None


def _offset_slices(ks, stride, dilation, lo):
    """For each kernel offset: its index tuple and the slices of the padded input it reads."""
    for idx in itertools.product(*[range(k) for k in ks]):
        yield idx, tuple(slice(i * d, i * d + s * (m - 1) + 1, s)
                         for i, d, s, m in zip(idx, dilation, stride, lo))


def _padded(xp, x, pad):
    if not any(p for pr in pad for p in pr):
        return x
    return xp.pad(x, ((0, 0), (0, 0)) + tuple(pad))


def _is_pointwise(ks, stride, pad):
    return all(k == 1 for k in ks) and all(s == 1 for s in stride) and \
        not any(p for pr in pad for p in pr)


def wide_layout(B, lo):
    """Whether the columns go batch-inside, (C*K, B*L), for one GEMM over the batch:
    when each example has few positions (per-example GEMMs would be small and many)."""
    if WIDE is not None:
        return WIDE
    return B > 1 and _prod(lo) < 256


WIDE = None  # force a layout (measurements)


def _fill_view(xp, buf, B, C, ks, lo, wide):
    """``buf`` seen as (B, C, *ks, *lo) whatever its layout (for the NumPy loops)."""
    n = len(ks)
    if not wide:
        return buf.reshape((B, C) + tuple(ks) + tuple(lo))
    v = buf.reshape((C,) + tuple(ks) + (B,) + tuple(lo))
    return xp.moveaxis(v, 1 + n, 0)


def columns(xp, x, ks, stride, pad, dilation, groups, wide):
    """The windows of ``x`` (B, C, *L): (B, groups, C/groups * K, L) or, ``wide``,
    (groups, C/groups * K, B * L); and Lo."""
    B, C = x.shape[:2]
    lo = out_spatial(x.shape[2:], ks, stride, pad, dilation)
    L, CK = _prod(lo), (C // groups) * _prod(ks)
    if _is_pointwise(ks, stride, pad) and not wide:
        return x.reshape(B, groups, C // groups, L), lo
    shape = (C * _prod(ks), B, L) if wide else (B, C * _prod(ks), L)
    buf = scratch(xp, "cols", shape, x.dtype)
    if xp is not np or _ck.im2col(x, ks, stride, pad, dilation, lo, wide, buf) is None:
        view = _fill_view(xp, buf, B, C, ks, lo, wide)
        xpd = _padded(xp, x, pad)
        lead = (slice(None), slice(None))
        for idx, sl in _offset_slices(ks, stride, dilation, lo):
            view[lead + idx] = xpd[lead + sl]
    if wide:
        return buf.reshape(groups, CK, B * L), lo
    return buf.reshape(B, groups, CK, L), lo


_SCRATCH = threading.local()
SCRATCH_MAX = 1 << 26  # bytes kept per buffer; larger temporaries are allocated per call


def scratch(xp, slot, shape, dtype):
    """A temporary array of ``shape`` from a per-thread buffer kept between calls: a column
    buffer is written and read once per call, and a fresh one of several MB costs more in
    page faults than its fill (the allocator returns big blocks to the OS when freed).
    Valid until the next request of the same ``slot`` in this thread."""
    n = _prod(shape)
    dtype = np.dtype(dtype)
    if xp is not np or n * dtype.itemsize > SCRATCH_MAX:
        return xp.empty(shape, dtype=dtype)
    bufs = _SCRATCH.__dict__.setdefault("bufs", {})
    buf = bufs.get((slot, dtype))
    if buf is None or buf.size < n:
        buf = bufs[slot, dtype] = np.empty(max(n, 1 << 16), dtype=dtype)
    return buf[:n].reshape(shape)


def _np_scratch(slot, shape, dtype):
    return scratch(np, slot, shape, dtype)


def _col2im(xp, cols, B, C, in_spatial, ks, stride, pad, dilation, lo, wide):
    """Adjoint of `columns`: the columns (either layout) summed into (B, C, *in_spatial)."""
    if _is_pointwise(ks, stride, pad) and tuple(lo) == tuple(in_spatial) and not wide:
        return cols.reshape((B, C) + tuple(in_spatial))
    out = _ck.col2im(cols, B, C, in_spatial, ks, stride, pad, dilation, lo, wide) \
        if xp is np else None
    if out is not None:
        return out
    view = _fill_view(xp, cols, B, C, ks, lo, wide)
    full = tuple(L + p0 + p1 for L, (p0, p1) in zip(in_spatial, pad))
    out = xp.zeros((B, C) + full, dtype=cols.dtype)
    lead = (slice(None), slice(None))
    for idx, sl in _offset_slices(ks, stride, dilation, lo):
        out[lead + sl] += view[lead + idx]
    if any(p for pr in pad for p in pr):
        out = xp.ascontiguousarray(
            out[lead + tuple(slice(p0, p0 + L) for L, (p0, _) in zip(in_spatial, pad))])
    return out


def _batch_inside(xp, a, groups):
    """(B, O, *L) as (groups, O/groups, B*L), contiguous (one transposed copy)."""
    B, O = a.shape[:2]
    L = _prod(a.shape[2:])
    t = xp.ascontiguousarray(a.reshape(B, O, L).transpose(1, 0, 2))
    return t.reshape(groups, O // groups, B * L)


def _direct(xp, ks, stride, pad):
    """Whether the direct C kernels (`_ck.direct_conv`, `_ck.direct_weight_grad`) may take
    the convolution: NumPy arrays, 1-d or 2-d windows of stride 1 other than 1x1 without
    padding (whose GEMM needs no column buffer at all).  They also check the arrays."""
    return DIRECT and xp is np and len(ks) in (1, 2) and all(s == 1 for s in stride) and \
        not _is_pointwise(ks, stride, pad)


DIRECT = True  # False: the column route everywhere (tests and measurements)


# ---- strided forward convolutions on the stride-1 kernel (space to depth) ------------------
# With kernel offset k = s * a + r (r < s), input row s * i + k of output row i is row i + a
# of phase r: the padded input's phases stacked as channels, X[(c, r)][u] = xpad[c][s*u + r],
# and the kernel's as W[o, (c, r)][a] = w[o, c][s*a + r], make a stride-s convolution with
# kernel k the stride-1 convolution of X with W (kernel k / s, no padding), with no zero
# taps when s divides k (dcgan's 4x4 stride-2 layers: 2x2 on four times the channels).  For
# the forward only: 1 thread, CPU time, 4x4 stride 2 from 32x32 planes, 16x64 -> 128
# channels 15.9 -> 13.8 ms, 3 -> 64 channels 2.2 -> 1.8 ms; from 16x16 planes (the kernel
# computes 80 positions per 64) 15.5 -> 16.6, hence `DEPTH_MAX_WASTE`.  The gradients stay
# on the column GEMMs: the input gradient measured even, the weight gradient's 2x2 kernel
# fills two of its three-column accumulator blocks (1.5-2x slower).

DEPTH_MAX_WASTE = 1.15  # `_ck.waste` up to which the space-to-depth forward is used


def _depth_form(xp, dtype, spatial, ks, stride, pad, dilation):
    """(sizes of X's planes, output sizes) when the strided convolution may run on the
    direct stride-1 kernels in its space-to-depth form (1-d/2-d float32/float64 NumPy, no
    dilation, every kernel size a multiple of its stride, one larger), else None."""
    if not (DIRECT and xp is np and dtype in _FLOAT and len(ks) in (1, 2)
            and any(s > 1 for s in stride)
            and all(d == 1 for d in dilation) and any(k > s for k, s in zip(ks, stride))
            and all(k % s == 0 for k, s in zip(ks, stride))):
        return None
    lo = out_spatial(spatial, ks, stride, pad, dilation)
    if any(o <= 0 for o in lo):
        return None
    return tuple(o + k // s - 1 for o, k, s in zip(lo, ks, stride)), lo


def _phase_slices(L, s, p0, size):
    """For each phase r of a dim (length L, stride s, low padding p0, X's size): the X
    rows and the input rows they hold (slices), or None when the phase holds padding only."""
    out = []
    for r in range(s):
        u0, u1 = max(0, -(-(p0 - r) // s)), min(size, (L - 1 + p0 - r) // s + 1)
        i0 = s * u0 + r - p0
        out.append((slice(u0, u1), slice(i0, i0 + s * (u1 - u0 - 1) + 1, s))
                   if u1 > u0 else None)
    return out


def _phases(x_spatial, stride, pad, size):
    """(phase index, X slices, input slices) of every phase with input rows."""
    dims = [_phase_slices(L, s, p0, z) for L, s, (p0, _), z in zip(x_spatial, stride, pad, size)]
    for idx in itertools.product(*[range(s) for s in stride]):
        sl = [d[r] for d, r in zip(dims, idx)]
        if all(v is not None for v in sl):
            yield idx, tuple(v[0] for v in sl), tuple(v[1] for v in sl)


def _to_depth(x, stride, pad, size):
    """x (B, C, *L) as X (B, C * prod(stride), *size), zeros where it reaches the padding."""
    B, C = x.shape[:2]
    X = np.zeros((B, C) + tuple(stride) + tuple(size), dtype=x.dtype)
    for idx, xs, ins in _phases(x.shape[2:], stride, pad, size):
        X[(slice(None), slice(None)) + idx + xs] = x[(Ellipsis,) + ins]
    return X.reshape((B, C * _prod(stride)) + tuple(size))


def _depth_weight(w, stride):
    """w (O, Cg, *ks) as W (O, Cg * prod(stride), *ks / stride)."""
    O, Cg, n = w.shape[0], w.shape[1], len(stride)
    a = [k // s for k, s in zip(w.shape[2:], stride)]
    split = (O, Cg) + tuple(v for pair in zip(a, stride) for v in pair)     # (.., a1, s1, ..)
    order = (0, 1) + tuple(3 + 2 * d for d in range(n)) + tuple(2 + 2 * d for d in range(n))
    return np.ascontiguousarray(w.reshape(split).transpose(order)).reshape(
        (O, Cg * _prod(stride)) + tuple(a))


def _depthwise(xp, groups, C, O, Cg):
    """One input and one output channel per group: the direct C kernels (`_dw`) instead of
    a GEMM of one row per example and channel."""
    return xp is np and groups == C == O and Cg == 1 and groups > 1


def forward(xp, x, w, b, ks, stride, pad, dilation, groups):
    """Plain convolution of x (B, C, *L) with w (O, C/g, *ks), plus bias b (O,) or None."""
    B, O = x.shape[0], w.shape[0]
    if _depthwise(xp, groups, x.shape[1], O, w.shape[1]):
        lo = out_spatial(x.shape[2:], ks, stride, pad, dilation)
        y = _dw.forward(x, w, ks, stride, pad, dilation, lo)
        if y is not None:
            if b is not None:
                y += b.reshape((O,) + (1,) * len(lo))
            return y
    if _direct(xp, ks, stride, pad):
        y = _ck.direct_conv(x, w, b, pad, dilation, groups, _np_scratch)
        if y is not None:
            return y
    depth = _depth_form(xp, x.dtype, x.shape[2:], ks, stride, pad, dilation)
    if depth is not None:
        (size, lo), n = depth, len(ks)
        OH, OW = (1,) + lo if n == 1 else lo
        if _ck.waste(x.itemsize, O // groups, OH, OW, size[-1], OH * OW) <= DEPTH_MAX_WASTE:
            y = _ck.direct_conv(_to_depth(x, stride, pad, size), _depth_weight(w, stride), b,
                                ((0, 0),) * n, (1,) * n, groups, _np_scratch)
            if y is not None:
                return y
    lo = out_spatial(x.shape[2:], ks, stride, pad, dilation)
    wide = wide_layout(B, lo)
    nb = _batch_block(x, ks, lo, stride, pad, wide)
    if nb < B:
        return _forward_blocked(xp, x, w, b, ks, stride, pad, dilation, groups, lo, nb)
    cols, lo = columns(xp, x, ks, stride, pad, dilation, groups, wide)
    wm = w.reshape(groups, O // groups, cols.shape[-2])
    if wide:  # (O, B, L) -> (B, O, L), the bias added on the way
        y = _gemm(xp, wm, cols, scratch(xp, "prod", (groups, O // groups, cols.shape[-1]),
                                        cols.dtype))
        yt = y.reshape(O, B, _prod(lo)).transpose(1, 0, 2)
        out = xp.empty((B, O) + tuple(lo), dtype=y.dtype)
        o3 = out.reshape(B, O, _prod(lo))
        if b is None:
            o3[...] = yt
        else:
            xp.add(yt, b.reshape(O, 1), out=o3)
        return out
    y = _gemm(xp, wm, cols).reshape((B, O) + lo)        # (B, g, O/g, L): already (B, O, *Lo)
    if b is not None:
        y += b.reshape((O,) + (1,) * len(lo))
    return y


COLS_BLOCK_BYTES = 1 << 21  # column buffer of the examples filled and multiplied at once


def _batch_block(x, ks, lo, stride, pad, wide):
    """How many examples' columns the per-example layout fills before their GEMMs: as many
    as fit `COLS_BLOCK_BYTES`, so that the GEMMs read the columns from cache, not from
    memory (the buffer is K times the input); the whole batch when that is one block."""
    B = x.shape[0]
    if wide or B <= 1 or _is_pointwise(ks, stride, pad):
        return B
    per = x.shape[1] * _prod(ks) * _prod(lo) * x.dtype.itemsize
    return max(1, min(B, COLS_BLOCK_BYTES // max(per, 1)))


def _forward_blocked(xp, x, w, b, ks, stride, pad, dilation, groups, lo, nb):
    """`forward`'s per-example GEMMs, ``nb`` examples' columns at a time, written straight
    into the output."""
    B, O = x.shape[0], w.shape[0]
    L = _prod(lo)
    y = xp.empty((B, O) + tuple(lo), dtype=x.dtype)
    y4 = y.reshape(B, groups, O // groups, L)
    wm = None
    for b0 in range(0, B, nb):
        cols, _ = columns(xp, x[b0:b0 + nb], ks, stride, pad, dilation, groups, False)
        if wm is None:
            wm = w.reshape(groups, O // groups, cols.shape[-2])
        _gemm(xp, wm, cols, y4[b0:b0 + nb])
    if b is not None:
        y += b.reshape((O,) + (1,) * len(lo))
    return y


def input_grad(xp, gy, w, in_spatial, ks, stride, pad, dilation, groups):
    """Gradient of the plain convolution with respect to its input x (B, C, *in_spatial):
    also the forward of the transposed convolution of gy with w."""
    B, O = gy.shape[:2]
    lo = tuple(gy.shape[2:])
    if _depthwise(xp, groups, w.shape[0], O, w.shape[1]):
        gx = _dw.input_grad(gy, w, in_spatial, ks, stride, pad, dilation)
        if gx is not None:
            return gx
    span = [d * (k - 1) for k, d in zip(ks, dilation)]
    if _direct(xp, ks, stride, pad) and all(p <= e for pr, e in zip(pad, span) for p in pr):
        # stride 1: the input gradient is the convolution of gy with each group's kernel
        # transposed (in <-> out channels) and flipped, padded by d * (k - 1) - p
        G, Og, Cg = groups, O // groups, w.shape[1]
        wf = w.reshape((G, Og, Cg) + tuple(ks)).swapaxes(1, 2)
        wf = wf[(Ellipsis,) + (slice(None, None, -1),) * len(ks)]
        wf = wf.reshape((G * Cg, Og) + tuple(ks))
        gx = _ck.direct_conv(gy, wf, None, tuple((e - p0, e - p1) for (p0, p1), e in
                                                 zip(pad, span)), dilation, groups, _np_scratch,
                             useful=_prod(lo))
        if gx is not None and tuple(gx.shape[2:]) == tuple(in_spatial):
            return gx
    Cg = w.shape[1]
    C = Cg * groups
    wT = w.reshape(groups, O // groups, Cg * _prod(ks)).transpose(0, 2, 1)
    wide = wide_layout(B, lo)
    L = _prod(lo)
    if wide:                                                      # (g, Cg*K, B*L)
        cols = _gemm(xp, wT, _batch_inside(xp, gy, groups),
                     scratch(xp, "prod", (groups, wT.shape[1], B * L), gy.dtype))
    else:                                                         # (B, g, Cg*K, L)
        # a 1x1 kernel's columns are the result itself: no scratch buffer then
        out = None if _is_pointwise(ks, stride, pad) else \
            scratch(xp, "prod", (B, groups, wT.shape[1], L), gy.dtype)
        cols = _gemm(xp, wT, gy.reshape(B, groups, O // groups, L), out)
    return _col2im(xp, cols, B, C, in_spatial, ks, stride, pad, dilation, lo, wide)


def weight_grad(xp, x, gy, ks, stride, pad, dilation, groups):
    """Gradient of the plain convolution with respect to its weight (O, C/g, *ks)."""
    B, O = gy.shape[:2]
    C = x.shape[1]
    lo = tuple(gy.shape[2:])
    if _depthwise(xp, groups, C, O, 1):
        gw = _dw.weight_grad(x, gy, ks, stride, pad, dilation)
        if gw is not None:
            return gw
    if _direct(xp, ks, stride, pad):
        gw = _ck.direct_weight_grad(x, gy, ks, pad, dilation, groups, _np_scratch)
        if gw is not None:
            return gw
    wide = wide_layout(B, lo)
    cols, _ = columns(xp, x, ks, stride, pad, dilation, groups, wide)
    if wide:  # one GEMM per group over batch and positions: (O/g, B*L) @ (B*L, Cg*K)
        gw = _gemm(xp, _batch_inside(xp, gy, groups), cols.transpose(0, 2, 1))
    else:
        # per example (BLAS reads the transposed columns in place), then summed over the
        # batch: transposing the columns in memory for one big product costs ten times more
        g4 = gy.reshape(B, groups, O // groups, cols.shape[3])
        gw = _gemm(xp, g4, cols.transpose(0, 1, 3, 2),  # (B, g, O/g, Cg*K)
                   scratch(xp, "prod", (B, groups, O // groups, cols.shape[2]), gy.dtype))
        gw = gw[0].copy() if B == 1 else gw.sum(0)
    return gw.reshape((O, C // groups) + tuple(ks))
