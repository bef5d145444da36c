"""Depthwise convolution in C: forward, input gradient and weight gradient of a convolution
whose groups are its channels (one input and one output channel per group, MobileNet's
3x3 layers), rendered from pooling's window template.

The column route spends one tiny GEMM ((1, K) @ (K, L)) per example and channel plus a
column buffer K times the input; here each output row is updated once per window offset
by a unit-stride loop, as average pooling with a weight per offset: ``y = sum_k w[c, k]
x[window k]``.  The input gradient is the adjoint (each output's gradient times the
offset's weight, added into its window), and the weight gradient per plane ``sum_o gy[o]
x[window k of o]``, summed over the batch by the caller (planes of one channel go to
different threads).  Planes (batch x channels) are split over OpenMP threads.  Geometry
as `pooling`'s (sizes read at run time), plus dilation and the channel count ``CH``.
"""
import ctypes
import math

import numpy as np

from .pooling import _SUFFIX, _decls, _fits, _names, _plane_function, _row_windows, \
    _threads, _values

__all__ = ["render", "forward", "input_grad", "weight_grad"]

_CTYPE = {"f32": "float", "f64": "double"}


def _kindex(n):
    """C expression of the flat window offset from the window loop indices k0..k{n-1}."""
    e = "k0"
    for d in range(1, n):
        e = f"({e}) * K{d} + k{d}"
    return e


def _unit_or_strided(m, loop):
    """``loop`` (its input stride written ``@``) twice: with stride 1, which the compiler
    vectorises, and with the row stride ``S{m}``."""
    return [f"if (S{m} == 1) {{ {loop.replace('@', '1')} }}",
            f"else {{ {loop.replace('@', f'S{m}')} }}"]


def _source(fname, ctype, n, kind):
    """One kernel: ``kind`` 'forward' (y, x, w), 'input' (gx, gy, w) or 'weight' (gwp, gy,
    x); pointers then the geometry array ``g`` and the thread count."""
    names = _names(n, [f"D{d}" for d in range(n)] + ["CH"])
    m = n - 1
    pin = " * ".join(f"L{d}" for d in range(n))
    pout = " * ".join(f"O{d}" for d in range(n))
    kk = " * ".join(f"K{d}" for d in range(n))
    k = _kindex(n)
    if kind == "forward":
        args = [f"{ctype} *restrict y", f"const {ctype} *restrict x",
                f"const {ctype} *restrict w"]
        body = [f"const {ctype} *xp = x + l * ({pin});",
                f"const {ctype} *wp = w + (l % CH) * ({kk});",
                f"{ctype} *vr = y + l * ({pout});"]
        init = ["vr[o] = 0;"]
        update = [f"const {ctype} wk = wp[{k}];"] + _unit_or_strided(
            m, "for (int64_t o = lo; o < hi; o++) vr[o] += wk * xp[off + o * @];")
        advance = [f"vr += O{m};"]
    elif kind == "input":
        args = [f"{ctype} *restrict gx", f"const {ctype} *restrict gy",
                f"const {ctype} *restrict w"]
        body = [f"{ctype} *op = gx + l * ({pin});", f"const {ctype} *gr = gy + l * ({pout});",
                f"const {ctype} *wp = w + (l % CH) * ({kk});",
                f"for (int64_t q = 0; q < {pin}; q++) op[q] = 0;"]
        init = []
        update = [f"const {ctype} wk = wp[{k}];"] + _unit_or_strided(
            m, "for (int64_t o = lo; o < hi; o++) op[off + o * @] += wk * gr[o];")
        advance = [f"gr += O{m};"]
    else:
        args = [f"{ctype} *restrict gwp", f"const {ctype} *restrict gy",
                f"const {ctype} *restrict x"]
        body = [f"const {ctype} *xp = x + l * ({pin});",
                f"const {ctype} *gr = gy + l * ({pout});",
                f"{ctype} *wr = gwp + l * ({kk});",
                f"for (int64_t q = 0; q < {kk}; q++) wr[q] = 0;"]
        init = []
        update = [f"{ctype} acc = 0;"] + _unit_or_strided(
            m, "for (int64_t o = lo; o < hi; o++) acc += gr[o] * xp[off + o * @];") + \
            [f"wr[{k}] += acc;"]
        advance = [f"gr += O{m};"]
    body += _row_windows(n, ctype, init, update, [], advance)
    params = [_decls(names, _values(names, None, "g"))] + args + ["const int64_t *restrict g"]
    work = f"LEAD * {pout} * {kk}"
    return _plane_function(fname, params, work, body, "CK_PRAGMA", 0)


def render():
    """The eager library's depthwise kernels, ``ck_dw{forward,input,weight}{1,2,3}d_f32/_f64``."""
    parts = ["\n/* ---- depthwise convolution (ember/_core/ckernels/depthwise.py) ---- */\n"]
    for suffix, ctype in _CTYPE.items():
        for n in (1, 2, 3):
            for kind in ("forward", "input", "weight"):
                parts.append(_source(f"ck_dw{kind}{n}d_{suffix}", ctype, n, kind))
    return "".join(parts)


# ---- the eager callers ---------------------------------------------------------------------

def _call(kind, out, a, b, spatial_in, outs, ks, stride, pad, dilation):
    """Run one kernel over the planes of ``a`` (B, C, ...); False when it cannot be had."""
    from . import _fn
    n = len(ks)
    f = _fn(f"ck_dw{kind}{n}d_{_SUFFIX[a.dtype]}", [ctypes.c_void_p] * 4 + [ctypes.c_int])
    if f is None:
        return False
    B, C = a.shape[:2]
    geo = np.array((B * C,) + tuple(spatial_in) + tuple(outs) + tuple(ks) + tuple(stride)
                   + tuple(p for p, _ in pad) + tuple(dilation) + (C,), np.int64)
    f(out.ctypes.data, a.ctypes.data, b.ctypes.data, geo.ctypes.data,
      _threads(B * C * math.prod(outs) * math.prod(ks)))
    return True


def _ok(*arrays, ks):
    return 1 <= len(ks) <= 3 and all(_fits(a) and a.flags.c_contiguous for a in arrays) and \
        all(a.dtype == arrays[0].dtype for a in arrays)


def forward(x, w, ks, stride, pad, dilation, outs):
    """The depthwise convolution of x (B, C, *L) with w (C, 1, *ks) into (B, C, *outs), or
    None when the C kernel cannot be had (no bias: the caller adds it)."""
    if not _ok(x, w, ks=ks):
        return None
    y = np.empty(x.shape[:2] + tuple(outs), x.dtype)
    return y if _call("forward", y, x, w, x.shape[2:], outs, ks, stride, pad, dilation) \
        else None


def input_grad(gy, w, in_spatial, ks, stride, pad, dilation):
    """The input gradient (B, C, *in_spatial) of the depthwise convolution, or None."""
    if not _ok(gy, w, ks=ks):
        return None
    gx = np.empty(gy.shape[:2] + tuple(in_spatial), gy.dtype)
    return gx if _call("input", gx, gy, w, in_spatial, gy.shape[2:], ks, stride, pad,
                       dilation) else None


def weight_grad(x, gy, ks, stride, pad, dilation):
    """The weight gradient (C, 1, *ks) of the depthwise convolution, or None."""
    if not _ok(x, gy, ks=ks):
        return None
    B, C = x.shape[:2]
    per_plane = np.empty((B, C) + tuple(ks), x.dtype)
    if not _call("weight", per_plane, gy, x, x.shape[2:], gy.shape[2:], ks, stride, pad,
                 dilation):
        return None
    return per_plane.sum(0).reshape((C, 1) + tuple(ks))
