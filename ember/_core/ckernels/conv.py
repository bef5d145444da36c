"""Convolution's window copies in C: im2col and its adjoint col2im for 1-d and 2-d windows.

NumPy builds a column buffer with one strided slab copy per kernel offset (25 calls for a
5x5 kernel, each paying NumPy's per-call cost, plus a padded copy of the input); this
kernel writes the whole buffer in one pass, zeros where the window reaches into the
padding, and col2im adds it back the same way.  Two layouts of the column buffer:

* ``wide=False``: (B, C, kh, kw, OH, OW), one GEMM per example (large images);
* ``wide=True``: (C, kh, kw, B, OH, OW), one GEMM over the whole batch (small images,
  where per-example GEMMs are too small to be efficient).

Its own library (``ember_conv``), built and cached like the eager one (`build.py`);
`im2col` / `col2im` return None when it cannot be had or the arrays do not fit (the
caller then runs its NumPy code, which computes the same thing).  float32 and float64,
C-contiguous inputs.
"""
import ctypes
import os
import re

import numpy as np

from . import build as _build

__all__ = ["im2col", "col2im", "winograd_conv3x3", "available"]

ABI_VERSION = 1
ENABLED = os.environ.get("EMBER_CKERNELS", "1") != "0"

_C = r"""
#include <stddef.h>
#include <string.h>
int ckc_abi(void) { return @ABI@; }
"""

# one copy per dtype (T, _S); geometry: g[0..13] = B C H W KH KW SH SW PH PW DH DW OH OW
_TYPED = r"""
/* the output columns [*lo, *hi) whose input column iw = ow*SW - PW + kw*DW is inside [0, W) */
static inline void ckc_range_S(ptrdiff_t OW, ptrdiff_t W, ptrdiff_t SW, ptrdiff_t off,
                               ptrdiff_t *lo, ptrdiff_t *hi) {
    ptrdiff_t a = 0, b = OW;
    while (a < b && a * SW + off < 0) a++;
    while (b > a && (b - 1) * SW + off >= W) b--;
    *lo = a; *hi = b;
}

__attribute__((optimize("no-tree-loop-distribute-patterns")))
void ckc_im2col_S(const T *restrict x, T *restrict cols, const ptrdiff_t *g, int wide) {
    const ptrdiff_t B = g[0], C = g[1], H = g[2], W = g[3], KH = g[4], KW = g[5];
    const ptrdiff_t SH = g[6], SW = g[7], PH = g[8], PW = g[9], DH = g[10], DW = g[11];
    const ptrdiff_t OH = g[12], OW = g[13], L = OH * OW;
    for (ptrdiff_t b = 0; b < B; b++)
        for (ptrdiff_t c = 0; c < C; c++) {
            const T *src = x + (b * C + c) * H * W;
            for (ptrdiff_t kh = 0; kh < KH; kh++)
                for (ptrdiff_t kw = 0; kw < KW; kw++) {
                    const ptrdiff_t k = (c * KH + kh) * KW + kw;
                    T *dst = wide ? cols + (k * B + b) * L : cols + (b * C * KH * KW + k) * L;
                    ptrdiff_t lo, hi;
                    const ptrdiff_t woff = kw * DW - PW;
                    ckc_range_S(OW, W, SW, woff, &lo, &hi);
                    for (ptrdiff_t oh = 0; oh < OH; oh++) {
                        T *d = dst + oh * OW;
                        const ptrdiff_t ih = oh * SH - PH + kh * DH;
                        if (ih < 0 || ih >= H || lo >= hi) {
                            for (ptrdiff_t ow = 0; ow < OW; ow++) d[ow] = 0;
                            continue;
                        }
                        const T *s = src + ih * W + woff;
                        for (ptrdiff_t ow = 0; ow < lo; ow++) d[ow] = 0;
                        if (SW == 1) {
                            /* rows are short (often < 32): an inline vector loop, not memcpy */
                            for (ptrdiff_t ow = lo; ow < hi; ow++) d[ow] = s[ow];
                        } else {
                            for (ptrdiff_t ow = lo; ow < hi; ow++) d[ow] = s[ow * SW];
                        }
                        for (ptrdiff_t ow = hi; ow < OW; ow++) d[ow] = 0;
                    }
                }
        }
}

/* Winograd F(2x2, 3x3), input side: every 4x4 tile (stride 2, zero outside the image) of
   x (B, C, H, W) as B^T d B into V (16, C, T), T = B * TH * TW tiles; g[4] is the padding,
   g[7] the distance between V's 16 planes */
void ckc_wino_in_S(const T *restrict x, T *restrict V, const ptrdiff_t *g, int unused) {
    const ptrdiff_t B = g[0], C = g[1], H = g[2], W = g[3], P = g[4], TH = g[5], TW = g[6];
    const ptrdiff_t T_ = B * TH * TW, K = g[7], RW = 2 * TW + 2;
    (void)unused;
    T rows[4][RW];  /* the tile row band, zero-padded: the tile loop has no bounds checks */
    for (ptrdiff_t b = 0; b < B; b++)
        for (ptrdiff_t c = 0; c < C; c++) {
            const T *src = x + (b * C + c) * H * W;
            for (ptrdiff_t ty = 0; ty < TH; ty++) {
                for (int i = 0; i < 4; i++) {
                    const ptrdiff_t yy = 2 * ty - P + i;
                    for (ptrdiff_t j = 0; j < RW; j++) {
                        const ptrdiff_t xx = j - P;
                        rows[i][j] = (yy >= 0 && yy < H && xx >= 0 && xx < W)
                                     ? src[yy * W + xx] : (T)0;
                    }
                }
                T *v = V + c * T_ + (b * TH + ty) * TW;
                for (ptrdiff_t tx = 0; tx < TW; tx++) {
                    T r[4][4];
                    const ptrdiff_t j0 = 2 * tx;
                    for (int j = 0; j < 4; j++) {
                        const T d0 = rows[0][j0 + j], d1 = rows[1][j0 + j],
                                d2 = rows[2][j0 + j], d3 = rows[3][j0 + j];
                        r[0][j] = d0 - d2;
                        r[1][j] = d1 + d2;
                        r[2][j] = d2 - d1;
                        r[3][j] = d1 - d3;
                    }
                    for (int i = 0; i < 4; i++) {
                        v[(4 * i + 0) * K + tx] = r[i][0] - r[i][2];
                        v[(4 * i + 1) * K + tx] = r[i][1] + r[i][2];
                        v[(4 * i + 2) * K + tx] = r[i][2] - r[i][1];
                        v[(4 * i + 3) * K + tx] = r[i][1] - r[i][3];
                    }
                }
            }
        }
}

/* output side: M (16, O, T) as A^T m A into y (B, O, OH, OW), plus bias (or NULL) */
void ckc_wino_out_S(const T *restrict M, T *restrict y, const ptrdiff_t *g,
                    const T *restrict bias) {
    const ptrdiff_t B = g[0], O = g[1], OH = g[2], OW = g[3], TH = g[5], TW = g[6];
    const ptrdiff_t T_ = B * TH * TW, K = g[7];
    for (ptrdiff_t b = 0; b < B; b++)
        for (ptrdiff_t o = 0; o < O; o++) {
            T *dst = y + (b * O + o) * OH * OW;
            const T bo = bias ? bias[o] : (T)0;
            for (ptrdiff_t ty = 0; ty < TH; ty++)
                for (ptrdiff_t tx = 0; tx < TW; tx++) {
                    const T *m = M + o * T_ + (b * TH + ty) * TW + tx;
                    T s[2][4];
                    for (int j = 0; j < 4; j++) {
                        const T m0 = m[j * K], m1 = m[(4 + j) * K], m2 = m[(8 + j) * K],
                                m3 = m[(12 + j) * K];
                        s[0][j] = m0 + m1 + m2;
                        s[1][j] = m1 - m2 - m3;
                    }
                    for (int i = 0; i < 2; i++) {
                        const ptrdiff_t yy = 2 * ty + i;
                        if (yy >= OH) break;
                        const T v0 = s[i][0] + s[i][1] + s[i][2] + bo;
                        const T v1 = s[i][1] - s[i][2] - s[i][3] + bo;
                        dst[yy * OW + 2 * tx] = v0;
                        if (2 * tx + 1 < OW) dst[yy * OW + 2 * tx + 1] = v1;
                    }
                }
        }
}

void ckc_col2im_S(const T *restrict cols, T *restrict x, const ptrdiff_t *g, int wide) {
    const ptrdiff_t B = g[0], C = g[1], H = g[2], W = g[3], KH = g[4], KW = g[5];
    const ptrdiff_t SH = g[6], SW = g[7], PH = g[8], PW = g[9], DH = g[10], DW = g[11];
    const ptrdiff_t OH = g[12], OW = g[13], L = OH * OW;
    memset(x, 0, sizeof(T) * B * C * H * W);
    for (ptrdiff_t b = 0; b < B; b++)
        for (ptrdiff_t c = 0; c < C; c++) {
            T *dst = x + (b * C + c) * H * W;
            for (ptrdiff_t kh = 0; kh < KH; kh++)
                for (ptrdiff_t kw = 0; kw < KW; kw++) {
                    const ptrdiff_t k = (c * KH + kh) * KW + kw;
                    const T *src = wide ? cols + (k * B + b) * L
                                        : cols + (b * C * KH * KW + k) * L;
                    ptrdiff_t lo, hi;
                    const ptrdiff_t woff = kw * DW - PW;
                    ckc_range_S(OW, W, SW, woff, &lo, &hi);
                    for (ptrdiff_t oh = 0; oh < OH; oh++) {
                        const ptrdiff_t ih = oh * SH - PH + kh * DH;
                        if (ih < 0 || ih >= H) continue;
                        const T *s = src + oh * OW;
                        T *d = dst + ih * W + woff;
                        if (SW == 1) {
                            for (ptrdiff_t ow = lo; ow < hi; ow++) d[ow] += s[ow];
                        } else {
                            for (ptrdiff_t ow = lo; ow < hi; ow++) d[ow * SW] += s[ow];
                        }
                    }
                }
        }
}
"""

_SUFFIX = {np.dtype(np.float32): ("float", "f32"), np.dtype(np.float64): ("double", "f64")}
_lib = None
_tried = False
_reason = None
_fns = {}


def render():
    src = _C.replace("@ABI@", str(ABI_VERSION))
    for t, s in _SUFFIX.values():
        src += re.sub(r"\bT\b", t, _TYPED.replace("_S(", f"_{s}("))
    return src


def _load():
    global _lib, _tried, _reason
    _tried = True
    _lib, _, _reason = _build.try_build("ember_conv", render(),
                                        lambda lib: lib.ckc_abi() == ABI_VERSION)
    return _lib


def available():
    """Whether the compiled window kernels are in use (builds them on first call)."""
    if not ENABLED:
        return False
    return (_lib if _tried else _load()) is not None


def _fn(name, dtype):
    key = (name, dtype)
    f = _fns.get(key)
    if f is None:
        if not available():
            return None
        f = getattr(_lib, f"ckc_{name}_{_SUFFIX[dtype][1]}")
        f.restype = None
        last = ctypes.c_void_p if name == "wino_out" else ctypes.c_int  # bias, or wide
        f.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, last)
        _fns[key] = f
    return f


def _geometry(B, C, spatial, ks, stride, pad, dilation, lo):
    """The 14 sizes the kernels take; 1-d windows as 2-d ones of height 1."""
    if len(ks) == 1:
        spatial, ks, stride, dilation, lo = ((1,) + tuple(spatial), (1,) + tuple(ks),
                                             (1,) + tuple(stride), (1,) + tuple(dilation),
                                             (1,) + tuple(lo))
        pad = ((0, 0),) + tuple(pad)
    (H, W), (KH, KW), (SH, SW), (DH, DW), (OH, OW) = spatial, ks, stride, dilation, lo
    return np.array([B, C, H, W, KH, KW, SH, SW, pad[0][0], pad[1][0], DH, DW, OH, OW],
                    dtype=np.intp)


def _fits(a, ks):
    return ENABLED and type(a) is np.ndarray and a.dtype in _SUFFIX and a.flags.c_contiguous and \
        len(ks) in (1, 2)


def im2col(x, ks, stride, pad, dilation, lo, wide, out):
    """The column buffer of ``x`` (B, C, *L) (see the module docstring) written into
    ``out`` (C-contiguous, of the layout's size), or None."""
    if not _fits(x, ks):
        return None
    f = _fn("im2col", x.dtype)
    if f is None:
        return None
    B, C = x.shape[:2]
    cols = out
    g = _geometry(B, C, x.shape[2:], ks, stride, pad, dilation, lo)
    f(x.ctypes.data, cols.ctypes.data, g.ctypes.data, int(wide))
    return cols


def col2im(cols, B, C, spatial, ks, stride, pad, dilation, lo, wide):
    """Columns in the layout of `im2col` summed back into (B, C, *spatial), or None."""
    if not _fits(cols, ks):
        return None
    f = _fn("col2im", cols.dtype)
    if f is None:
        return None
    out = np.empty((B, C) + tuple(spatial), dtype=cols.dtype)
    g = _geometry(B, C, spatial, ks, stride, pad, dilation, lo)
    f(cols.ctypes.data, out.ctypes.data, g.ctypes.data, int(wide))
    return out


# F(2x2, 3x3) weight transform G g G^T (its G), applied in NumPy: weights are small
_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])


def winograd_conv3x3(x, w, b, pad, gemm, planes):
    """A 3x3, stride-1, undilated, ungrouped 2-d convolution by Winograd's F(2x2, 3x3): 2.25
    times fewer multiplications than the column GEMM, as 16 GEMMs (O, C) @ (C, tiles) between
    the C input and output transforms.  ``pad`` the (symmetric) padding; ``gemm(a, b, out)``
    the product; ``planes(slot, n, dtype)`` a (16, n) work array whose rows lie 64 bytes
    further apart than n (rows a power of two apart would share cache sets, and the
    transforms touch all 16 for each tile).  None when the arrays do not fit."""
    if not (_fits(x, (3, 3)) and w.dtype == x.dtype and w.flags.c_contiguous):
        return None
    f_in, f_out = _fn("wino_in", x.dtype), _fn("wino_out", x.dtype)
    if f_in is None or f_out is None:
        return None
    B, C, H, W = x.shape
    O = w.shape[0]
    OH, OW = H + 2 * pad - 2, W + 2 * pad - 2
    TH, TW = (OH + 1) // 2, (OW + 1) // 2
    T = B * TH * TW
    U = np.einsum("ij,ocjk,lk->iloc", _G, w, _G).reshape(16, O, C).astype(x.dtype)
    V = planes("wino_in", C * T, x.dtype).reshape(16, C, T)
    g_in = _sizes(B, C, H, W, pad, TH, TW, V)  # held: C reads it during the call
    f_in(x.ctypes.data, V.ctypes.data, g_in.ctypes.data, 0)
    M = gemm(U, V, planes("wino_out", O * T, x.dtype).reshape(16, O, T))
    y = np.empty((B, O, OH, OW), dtype=x.dtype)
    bias = None if b is None else np.ascontiguousarray(b, dtype=x.dtype)
    g_out = _sizes(B, O, OH, OW, pad, TH, TW, M)
    f_out(M.ctypes.data, y.ctypes.data, g_out.ctypes.data,
          None if bias is None else bias.ctypes.data)
    return y


def _sizes(B, C, H, W, pad, TH, TW, planes):
    return np.array([B, C, H, W, pad, TH, TW, planes.strides[0] // planes.itemsize],
                    dtype=np.intp)
