"""ONNX lowerings of the common composites, kept whole because ONNX has an operator for them
(or a short chain): linear/addmm -> Gemm or MatMul, softmax, the normalisation statistics
-> LayerNormalization, pooling, the LSTM/GRU cell arithmetic, attention, and ``convolution`` (the ``conv*`` ops
decompose into it).  Every other composite is decomposed into primitives first (see
`_convert`).
"""
import numpy as np

from .._core import dtype as _dt
from ._ops_elementwise import operand
from ._ops_tensor import ints
from ._registry import lowers

__all__ = []


def _axes_const(b, axes):
    return b.const(np.array(list(axes), dtype=np.int64))


# ---- matrix products ------------------------------------------------------------------------

@lowers("linear")
def _linear(b, ctx, x, w, bias=None):
    dt = ctx.out.dtype
    xv, wv = b.cast(x, dt), b.cast(w, dt)
    bv = None if bias is None else b.cast(bias, dt)
    if x.ndim == 2 and w.ndim == 2:
        return b.op("Gemm", [xv, wv, bv], transB=1)
    wt = b.op("Transpose", [wv], perm=list(range(w.ndim))[::-1]) if w.ndim == 2 else wv
    y = b.op("MatMul", [xv, wt])
    return y if bv is None else b.op("Add", [y, bv])


@lowers("addmm")
def _addmm(b, ctx, inp, m1, m2, kind, beta=1, alpha=1):
    dt = ctx.out.dtype
    a, c = b.cast(m1, dt), b.cast(m2, dt)
    i = operand(b, inp, dt)
    if kind == "mm" and not dt.is_complex:
        if beta == 0:
            return b.op("Gemm", [a, c], alpha=float(alpha))
        return b.op("Gemm", [a, c, i], alpha=float(alpha), beta=float(beta))
    if kind == "r":
        p = b.op("Mul", [b.op("Unsqueeze", [a, _axes_const(b, [1])]),
                         b.op("Unsqueeze", [c, _axes_const(b, [0])])])
    else:
        p = b.op("MatMul", [a, c])
        if kind == "addbmm":
            p = b.op("ReduceSum", [p, _axes_const(b, [0])], keepdims=0)
    if alpha != 1:
        p = b.op("Mul", [p, b.scalar(alpha, dt)])
    if beta == 0:
        return p
    if beta != 1:
        i = b.op("Mul", [i, b.scalar(beta, dt)])
    return b.op("Add", [i, p])


@lowers("addcmul", "addcdiv")
def _addc(b, ctx, x, t1, t2, value=1):
    dt = ctx.out.dtype
    xv, a, c = (operand(b, v, dt) for v in (x, t1, t2))
    p = b.op("Mul" if ctx.name == "addcmul" else "Div", [a, c])
    if value != 1:
        p = b.op("Mul", [p, b.scalar(value, dt)])
    return b.op("Add", [xv, p])


# ---- softmax, statistics ----------------------------------------------------------------------

@lowers("softmax", "log_softmax")
def _softmax(b, ctx, x, dim, dtype=None):
    v = b.cast(x, ctx.out.dtype)
    if x.ndim == 0:
        return b.op("Identity", [v]) if ctx.name == "softmax" else \
            b.op("Sub", [v, v])  # one element: softmax 1, log_softmax 0
    kind = "Softmax" if ctx.name == "softmax" else "LogSoftmax"
    return b.op(kind, [v], axis=int(dim) % x.ndim)


@lowers("mean")
def _mean(b, ctx, x, dims, keepdim, dtype=None):
    v = b.cast(x, ctx.out.dtype)
    if dims is not None and len(tuple(dims)) == 0 or x.ndim == 0:
        return b.op("Identity", [v])
    axes = list(range(x.ndim)) if dims is None else [int(d) % x.ndim for d in dims]
    return b.op("ReduceMean", [v, _axes_const(b, axes)], keepdims=int(bool(keepdim)))


@lowers("rsqrt", "reciprocal")
def _rsqrt(b, ctx, x):
    v = b.cast(x, ctx.out.dtype)
    if ctx.name == "rsqrt":
        v = b.op("Sqrt", [v])
    return b.op("Reciprocal", [v])


@lowers("_normalize")
def _normalize(b, ctx, x, dims, eps):
    """(x - mean) * rstd, mean, rstd over ``dims`` (kept as size-1 dims)."""
    axes = sorted(int(d) % x.ndim for d in dims)
    dt = x.dtype
    if axes == list(range(axes[0], x.ndim)):  # trailing dims: one LayerNormalization
        tail = x.shape[axes[0]:]
        if all(b.is_static(d) for d in tail):
            scale = b.const(np.ones([int(d) for d in tail], dtype=dt.np))
        else:
            scale = b.op("Expand", [b.scalar(1, dt), b.op("Shape", [x], start=axes[0])])
        y, mean, rstd = b.op("LayerNormalization", [x, scale], outputs=3, axis=axes[0],
                             epsilon=float(eps))
        return y, mean, rstd
    ax = _axes_const(b, axes)
    mean = b.op("ReduceMean", [x, ax], keepdims=1)
    xc = b.op("Sub", [x, mean])
    var = b.op("ReduceMean", [b.op("Mul", [xc, xc]), ax], keepdims=1)
    rstd = b.op("Reciprocal", [b.op("Sqrt", [b.op("Add", [var, b.scalar(eps, dt)])])])
    return b.op("Mul", [xc, rstd]), mean, rstd


# ---- convolution and pooling ------------------------------------------------------------------

@lowers("convolution")
def _convolution(b, ctx, x, w, bias, stride, padding, dilation, transposed, output_padding,
                 groups):
    """One ONNX Conv, or ConvTranspose (same weight layout as ember's, (C_in, C_out/g, *k))."""
    dt = ctx.out.dtype
    inputs = [b.cast(x, dt), b.cast(w, dt)] + ([] if bias is None else [b.cast(bias, dt)])
    attrs = dict(group=int(groups), kernel_shape=[int(k) for k in w.shape[2:]],
                 strides=[int(s) for s in stride], dilations=[int(d) for d in dilation],
                 pads=[int(p) for p in padding] * 2)
    if transposed:
        return b.op("ConvTranspose", inputs, output_padding=[int(p) for p in output_padding],
                    **attrs)
    return b.op("Conv", inputs, **attrs)


@lowers("im2col")
def _im2col(b, ctx, x, ks, dilation, pad, stride):
    """Windows of x (B, C, *L) as columns (C, *ks, B, *Lo): a depthwise convolution whose
    kernels pick one window offset each, then a transpose."""
    n = len(ks)
    C = x.shape[1]
    if not b.is_static(C):
        return None
    C, kk = int(C), int(np.prod(ks))
    eye = np.eye(kk, dtype=x.dtype.np).reshape((kk, 1) + tuple(ks))
    w = b.const(np.tile(eye, (C,) + (1,) * (n + 1)))  # (C*kk, 1, *ks)
    pads = [int(p[0]) for p in pad] + [int(p[1]) for p in pad]
    y = b.op("Conv", [x, w], group=C, kernel_shape=list(ks), strides=list(stride),
             dilations=list(dilation), pads=pads)  # (B, C*kk, *Lo)
    out_shape = ctx.out.shape  # (C, *ks, B, *Lo)
    split = [out_shape[1 + n]] + [C] + list(ks) + list(out_shape[2 + n:])
    y = b.op("Reshape", [y, ints(b, split)])
    perm = [1] + list(range(2, 2 + n)) + [0] + list(range(2 + n, 2 + 2 * n))
    return b.op("Transpose", [y], perm=perm)


@lowers("max_pool")
def _max_pool(b, ctx, x, ks, stride, pad, dil, ceil, need_idx):
    pads = [int(p) for p in pad] * 2
    attrs = dict(kernel_shape=list(ks), strides=list(stride), pads=pads, dilations=list(dil),
                 ceil_mode=int(bool(ceil)))
    if not need_idx:
        y = b.op("MaxPool", [x], **attrs)
        return y, b.const(np.zeros((0,), dtype=np.int64))
    y, idx = b.op("MaxPool", [x], outputs=2, **attrs)
    # ONNX numbers the max over the whole (N, C, *L) tensor, torch within each (*L) plane
    plane = 1
    for d in x.shape[x.ndim - len(ks):]:
        plane = plane * d
    return y, b.op("Mod", [idx, b.size0(plane)])


@lowers("avg_pool")
def _avg_pool(b, ctx, x, ks, stride, pad, ceil, include_pad, override):
    pads = [int(p) for p in pad] * 2
    if override is not None:  # the window sums (a depthwise convolution of ones) / override
        C = x.shape[1] if x.ndim == len(ks) + 2 else None
        if C is None or not b.is_static(C) or ceil:
            return None
        ones = b.const(np.ones((int(C), 1) + tuple(ks), dtype=x.dtype.np))
        total = b.op("Conv", [x, ones], group=int(C), kernel_shape=list(ks),
                     strides=list(stride), pads=pads)
        return b.op("Div", [total, b.scalar(override, x.dtype)])
    return b.op("AveragePool", [x], kernel_shape=list(ks), strides=list(stride), pads=pads,
                ceil_mode=int(bool(ceil)), count_include_pad=int(bool(include_pad)))


@lowers("embedding")
def _embedding(b, ctx, w, idx, *, padding_idx=None, scale_freq=False):
    return b.op("Gather", [w, idx], axis=0)


# ---- recurrent cells --------------------------------------------------------------------------

def _split_last(b, v, n, parts):
    return b.op("Split", [v, b.const(np.array([n] * parts, dtype=np.int64))], outputs=parts,
                axis=-1)


@lowers("_lstm_cell")
def _lstm_cell(b, ctx, gates, c):
    n = c.shape[-1]
    if not b.is_static(n):
        return None
    dt = c.dtype
    i, f, g, o = _split_last(b, b.cast(gates, dt), int(n), 4)
    i, f, o = (b.op("Sigmoid", [t]) for t in (i, f, o))
    c2 = b.op("Add", [b.op("Mul", [f, c]), b.op("Mul", [i, b.op("Tanh", [g])])])
    h = b.op("Mul", [o, b.op("Tanh", [c2])])
    return h, c2


@lowers("_gru_cell")
def _gru_cell(b, ctx, gi, gh, h):
    n = h.shape[-1]
    if not b.is_static(n):
        return None
    n = int(n)
    dt = h.dtype
    gi_rz, gi_n = b.op("Split", [b.cast(gi, dt), b.const(np.array([2 * n, n], np.int64))],
                       outputs=2, axis=-1)
    gh_rz, gh_n = b.op("Split", [b.cast(gh, dt), b.const(np.array([2 * n, n], np.int64))],
                       outputs=2, axis=-1)
    rz = b.op("Sigmoid", [b.op("Add", [gi_rz, gh_rz])])
    r, z = _split_last(b, rz, n, 2)
    cand = b.op("Tanh", [b.op("Add", [gi_n, b.op("Mul", [r, gh_n])])])
    one = b.scalar(1, dt)
    return b.op("Add", [b.op("Mul", [b.op("Sub", [one, z]), cand]), b.op("Mul", [z, h])])


# ---- attention --------------------------------------------------------------------------------

@lowers("_flash_attention")
def _flash_attention(b, ctx, q, k, v, mask, scale, causal):
    """softmax(q k^T * scale + mask) v; rows with every key masked give 0, as the kernel
    does.  The log-sum-exp output (for the backward pass) is not computed."""
    dt = q.dtype
    if dt in (_dt.float16, _dt.bfloat16):
        return None
    kt = b.op("Transpose", [k], perm=list(range(k.ndim - 2)) + [k.ndim - 1, k.ndim - 2])
    s = b.op("MatMul", [b.op("Mul", [q, b.scalar(scale, dt)]), kt])
    neg_inf = b.scalar(-np.inf, dt)
    if mask is not None:
        if mask.dtype == _dt.bool:
            s = b.op("Where", [mask, s, neg_inf])
        else:
            s = b.op("Add", [s, b.cast(mask, dt)])
    if causal:
        L, S = q.shape[-2], k.shape[-2]
        ones = b.op("ConstantOfShape", [ints(b, (L, S))],
                    value=_tensor_value(np.array([1], dtype=np.int64)))
        keep = b.cast(b.op("Trilu", [ones], upper=0), _dt.bool, _dt.int64)
        s = b.op("Where", [keep, s, neg_inf])
    last = _axes_const(b, [-1])
    m = b.op("ReduceMax", [s, last], keepdims=1)
    m_safe = b.op("Where", [b.op("Equal", [m, neg_inf]), b.scalar(0, dt), m])
    e = b.op("Exp", [b.op("Sub", [s, m_safe])])
    total = b.op("ReduceSum", [e, last], keepdims=1)
    total = b.op("Where", [b.op("Equal", [total, b.scalar(0, dt)]), b.scalar(1, dt), total])
    out = b.op("Div", [b.op("MatMul", [e, v]), total])
    return out, None


def _tensor_value(arr):
    from onnx import numpy_helper
    return numpy_helper.from_array(arr, "value")
