"""The eager array kernels of convolution: forward, and the input and weight gradients.

Every convolution, transposed or not, is three products over one column buffer:

* ``forward``: cols (B, g, Cg*K, L) of the padded input's windows (K = prod(kernel), L =
  prod(output spatial)), then ``y[b, grp] = W[grp] @ cols[b, grp]``: one BLAS GEMM per
  (batch, group) that writes the (B, O, *Lo) output in place, with no transposed copy;
* ``input_grad``: ``cols = W^T @ gy`` per (batch, group), then col2im: each kernel
  offset's (B, C, *Lo) slab added into the padded input's gradient;
* ``weight_grad``: ``gw[grp] = sum_b gy[b, grp] @ cols[b, grp]^T``.

The column buffer is filled one kernel offset at a time (prod(kernel) strided slab copies
whose inner rows are contiguous for stride 1), which is several times faster than one
copy of a 2n-dimensional window view.  A 1x1 kernel with unit stride and no padding needs
no buffer at all: the input *is* its column matrix.  A transposed convolution's forward
is the input gradient of the plain one, and its gradients are the plain forward (input)
and the weight gradient with the roles of input and output exchanged, so these three
kernels serve both.  float16/bfloat16 compute in float32, rounded once.

Geometry is passed per spatial dim: ``ks`` kernel sizes, ``stride``, ``pad`` as (lo, hi)
pairs, ``dilation``.
"""
import itertools

from ..._core.blas_threads import matmul as _gemm
from .._helpers import _F32, _HALF

__all__ = ["out_spatial", "forward", "input_grad", "weight_grad", "compute_dtype"]


def out_spatial(spatial, ks, stride, pad, dilation):
    """Output sizes of a (plain) convolution; plain arithmetic, so sizes may be symbolic."""
    return tuple((L + p0 + p1 - d * (k - 1) - 1) // s + 1
                 for L, k, s, (p0, p1), d in zip(spatial, ks, stride, pad, dilation))


def compute_dtype(dt):
    """(dtype the kernels compute in, dtype to round the result to or None)."""
    return (_F32, dt) if dt in _HALF else (dt, None)


def _prod(s):
    r = 1
    for v in s:
        r *= v
    return r


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


def columns(xp, x, ks, stride, pad, dilation, groups):
    """The windows of ``x`` (B, C, *L) as (B, groups, C/groups * K, prod(Lo)), and Lo."""
    B, C = x.shape[:2]
    lo = out_spatial(x.shape[2:], ks, stride, pad, dilation)
    L = _prod(lo)
    if _is_pointwise(ks, stride, pad):
        return x.reshape(B, groups, C // groups, L), lo
    xpd = _padded(xp, x, pad)
    cols = xp.empty((B, C) + tuple(ks) + lo, dtype=x.dtype)
    lead = (slice(None), slice(None))
    for idx, sl in _offset_slices(ks, stride, dilation, lo):
        cols[lead + idx] = xpd[lead + sl]
    return cols.reshape(B, groups, (C // groups) * _prod(ks), L), lo


def _col2im(xp, cols, B, C, in_spatial, ks, stride, pad, dilation, lo):
    """Adjoint of `columns`: cols (B, C, *ks, *lo) summed into (B, C, *in_spatial)."""
    if _is_pointwise(ks, stride, pad):
        return cols.reshape((B, C) + tuple(in_spatial))
    full = tuple(L + p0 + p1 for L, (p0, p1) in zip(in_spatial, pad))
    out = xp.zeros((B, C) + full, dtype=cols.dtype)
    lead = (slice(None), slice(None))
    for idx, sl in _offset_slices(ks, stride, dilation, lo):
        out[lead + sl] += cols[lead + idx]
    if any(p for pr in pad for p in pr):
        out = out[lead + tuple(slice(p0, p0 + L) for L, (p0, _) in zip(in_spatial, pad))]
    return out


def forward(xp, x, w, b, ks, stride, pad, dilation, groups):
    """Plain convolution of x (B, C, *L) with w (O, C/g, *ks), plus bias b (O,) or None."""
    B, O = x.shape[0], w.shape[0]
    cols, lo = columns(xp, x, ks, stride, pad, dilation, groups)
    wm = w.reshape(groups, O // groups, cols.shape[2])
    y = _gemm(xp, wm, cols)                             # (B, g, O/g, L)
    y = y.reshape((B, O) + lo)
    if b is not None:
        y += b.reshape((O,) + (1,) * len(lo))
    return y


def input_grad(xp, gy, w, in_spatial, ks, stride, pad, dilation, groups):
    """Gradient of the plain convolution with respect to its input x (B, C, *in_spatial):
    also the forward of the transposed convolution of gy with w."""
    B, O = gy.shape[:2]
    lo = tuple(gy.shape[2:])
    Cg = w.shape[1]
    C = Cg * groups
    wm = w.reshape(groups, O // groups, Cg * _prod(ks))
    g4 = gy.reshape(B, groups, O // groups, _prod(lo))
    cols = _gemm(xp, wm.transpose(0, 2, 1), g4)         # (B, g, Cg*K, L)
    return _col2im(xp, cols.reshape((B, C) + tuple(ks) + lo), B, C, in_spatial, ks, stride,
                   pad, dilation, lo)


def weight_grad(xp, x, gy, ks, stride, pad, dilation, groups):
    """Gradient of the plain convolution with respect to its weight (O, C/g, *ks)."""
    B, O = gy.shape[:2]
    C = x.shape[1]
    cols, lo = columns(xp, x, ks, stride, pad, dilation, groups)
    g4 = gy.reshape(B, groups, O // groups, cols.shape[3])
    if B == 1:
        gw = _gemm(xp, g4[0], cols[0].transpose(0, 2, 1))
    else:
        # one GEMM per group over the batch and positions together: (O/g, B*L) @ (B*L, CgK)
        gt = g4.transpose(1, 2, 0, 3).reshape(groups, O // groups, B * cols.shape[3])
        ct = cols.transpose(1, 0, 3, 2).reshape(groups, B * cols.shape[3], cols.shape[2])
        gw = _gemm(xp, gt, ct)
    return gw.reshape((O, C // groups) + tuple(ks))
