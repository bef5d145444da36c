"""Convolution in C: the direct stride-1 convolution and its weight gradient, and the
window copies im2col / col2im that the column (GEMM) route uses for everything else.

Direct (`direct_conv`, `direct_weight_grad`; 1-d and 2-d windows of stride 1, any padding,
dilation and groups): the input is copied once into zero-padded planes and read flattened,
so that output position ``p = oh * Wp + ow`` (Wp the padded width) reads input position
``p + kh * DH * Wp + kw * DW``: a run of positions is one unit-stride vector load per kernel
offset, whatever the image width (the positions past each output row are computed and
dropped).  The forward keeps a block of output channels x positions in vector registers
(8 x 48 floats with AVX-512) and does one FMA per weight and vector, with no column buffer
and no GEMM call; the weight gradient keeps output channels x kernel columns of vector
accumulators over the positions, summed over chunks of the batch, the chunks added in a
fixed order and each vector reduced once.  The input gradient of a stride-1 convolution is
a direct convolution too (the caller flips and transposes the kernel).  Vectors are GCC
vector types of the build's width (the CPU capability level's flags).

Threads: OpenMP, as many as ``ember.set_num_threads``, over many small work items taken
dynamically (guided or dynamic schedules, never static): on a loaded machine a thread may
start late, and the others then take its share instead of waiting for it.  Every item
writes its own outputs (or its own partial sums, from a split fixed by the geometry), so
the results' bits do not depend on the thread count nor on which thread ran what.

Column buffer (strided windows): NumPy builds it with one strided slab copy per kernel
offset (plus a padded copy of the input); `im2col` writes the whole buffer in one pass,
zeros where the window reaches into the padding, and `col2im` adds it back the same way.
Two layouts of the column buffer:

* ``wide=False``: (B, C, kh, kw, OH, OW), one GEMM per example (large images);
* ``wide=True``: (C, kh, kw, B, OH, OW), one GEMM over the whole batch (small images,
  where per-example GEMMs are too small to be efficient).

The same library holds `channel_affine` (``x * scale[c] + shift[c]`` in one pass: batch
norm's evaluation, which follows most convolutions).

Its own library (``ember_conv``), built and cached like the eager one (`build.py`); every
entry returns None when it cannot be had or the arrays do not fit (the caller then runs
its NumPy/GEMM code, which computes the same thing).  float32 and float64, C-contiguous
inputs.
"""
import ctypes
import os
import re

import numpy as np

from .. import blas_threads as _blas_threads
from . import build as _build

__all__ = ["im2col", "col2im", "direct_conv", "direct_weight_grad",
           "direct_fits", "waste", "MAX_WASTE", "channel_affine", "available"]

ABI_VERSION = 5
ENABLED = os.environ.get("EMBER_CKERNELS", "1") != "0"

_C = r"""
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
int ckc_abi(void) { return @ABI@; }

#if defined(_OPENMP)
#define CKC_PRAGMA(x) _Pragma(#x)
#else
#define CKC_PRAGMA(x)
#endif

/* direct convolution's register block: CKD_OB output channels x CKD_NV vectors of CKD_VB
   bytes (AVX-512: 8 x 2 zmm accumulators of 32 registers; AVX2/SSE: 4 x 3 of 16) */
#if defined(__AVX512F__)
#define CKD_VB 64
#define CKD_OB 8
#define CKD_NV 3
#elif defined(__AVX__)
#define CKD_VB 32
#define CKD_OB 4
#define CKD_NV 3
#else
#define CKD_VB 16
#define CKD_OB 4
#define CKD_NV 3
#endif
#define CKD_KWB 3   /* kernel columns per weight-gradient block */
/* keeps a loaded vector in a register: without it GCC folds the load into each of the
   FMAs that use it (three loads instead of one, which made the weight gradient
   load-bound) */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define CKD_IN_REGISTER(v) __asm__("" : "+x"(v))
#else
#define CKD_IN_REGISTER(v) (void)0
#endif
/* 0: CKD_OB, 1: CKD_NV, 2: CKD_KWB, 3: CKD_VB */
int ckc_direct_block(int which) {
    return which == 0 ? CKD_OB : which == 1 ? CKD_NV : which == 2 ? CKD_KWB : CKD_VB;
}
"""

# one copy per dtype (T, _S); geometry: g[0..14] = B C H W KH KW SH SW PH PW DH DW OH OW wide;
# OpenMP threads over the (example, channel) planes
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
void ckc_im2col_S(const T *restrict x, T *restrict cols, const ptrdiff_t *g, int nt) {
    const ptrdiff_t B = g[0], C = g[1], H = g[2], W = g[3], KH = g[4], KW = g[5];
    const ptrdiff_t SH = g[6], SW = g[7], PH = g[8], PW = g[9], DH = g[10], DW = g[11];
    const ptrdiff_t OH = g[12], OW = g[13], L = OH * OW, wide = g[14];
    CKC_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
    for (ptrdiff_t bc = 0; bc < B * C; bc++) {
        const ptrdiff_t b = bc / C, c = bc % C;
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

void ckc_col2im_S(const T *restrict cols, T *restrict x, const ptrdiff_t *g, int nt) {
    const ptrdiff_t B = g[0], C = g[1], H = g[2], W = g[3], KH = g[4], KW = g[5];
    const ptrdiff_t SH = g[6], SW = g[7], PH = g[8], PW = g[9], DH = g[10], DW = g[11];
    const ptrdiff_t OH = g[12], OW = g[13], L = OH * OW, wide = g[14];
    CKC_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
    for (ptrdiff_t bc = 0; bc < B * C; bc++) {
        const ptrdiff_t b = bc / C, c = bc % C;
        T *dst = x + (b * C + c) * H * W;
        memset(dst, 0, sizeof(T) * H * W);
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

# direct stride-1 convolution, one copy per dtype (T, _S).  The padded input planes are read
# flattened: with Wp the padded width, output position p = oh * Wp + ow reads input position
# p + kh * DH * Wp + kw * DW, so a run of positions is one unit-stride vector load per kernel
# offset, whatever the image width; positions with ow >= OW are computed and dropped.
_DIRECT = r"""
typedef T ckd_v_S __attribute__((vector_size(CKD_VB)));
typedef T ckd_vu_S __attribute__((vector_size(CKD_VB), aligned(sizeof(T)), may_alias));

/* x (n planes of H x W) into xp (planes of Hp x Wp, PL apart) at row ph, column pw, zeros
   around; g: n H W Hp Wp ph pw PL check.  With check, returns 0 when a value copied is inf
   or NaN (the weight gradient multiplies values no output reads by zero: NaN there) */
int ckc_pad_S(const T *restrict x, T *restrict xp, const ptrdiff_t *g, int nt) {
    const ptrdiff_t n = g[0], H = g[1], W = g[2], Hp = g[3], Wp = g[4], ph = g[5], pw = g[6];
    const ptrdiff_t PL = g[7], check = g[8];
    int bad = 0;
    CKC_PRAGMA(omp parallel for num_threads(nt) schedule(guided) reduction(|:bad))
    for (ptrdiff_t i = 0; i < n; i++) {
        const T *s = x + i * H * W;
        T *d = xp + i * PL;
        memset(d, 0, sizeof(T) * Wp * ph);
        for (ptrdiff_t r = 0; r < H; r++) {
            T *dr = d + (ph + r) * Wp;
            for (ptrdiff_t c = 0; c < pw; c++) dr[c] = 0;
            memcpy(dr + pw, s + r * W, sizeof(T) * W);
            for (ptrdiff_t c = pw + W; c < Wp; c++) dr[c] = 0;
        }
        /* one pass over the plane (in cache): inf - inf and NaN - NaN are NaN */
        if (check)
            for (ptrdiff_t k = 0; k < H * W; k++) bad |= s[k] - s[k] != 0;
        memset(d + (ph + H) * Wp, 0, sizeof(T) * (PL - (ph + H) * Wp));
    }
    return !bad;
}

/* one register block of `ckc_direct_fwd`: OB output channels x nv vectors of positions
   (nv a constant at each call: the accumulators stay in registers) into tile */
static inline __attribute__((always_inline)) void ckd_tile_S(
        const T *restrict xb, const T *restrict wb, ptrdiff_t Cg, ptrdiff_t PL, ptrdiff_t KH,
        ptrdiff_t KW, ptrdiff_t RS, ptrdiff_t DW,
        T (*restrict tile)[CKD_NV * (CKD_VB / sizeof(T))],
        const int nv) {
    enum { N = CKD_VB / sizeof(T), NV = CKD_NV, OB = CKD_OB };
    const ptrdiff_t KK = KH * KW;
    ckd_v_S acc[OB][NV];
    for (int i = 0; i < OB; i++)
        for (int j = 0; j < nv; j++) acc[i][j] = (ckd_v_S){0};
    for (ptrdiff_t c = 0; c < Cg; c++) {
        const T *xc = xb + c * PL, *wc = wb + c * KK * OB;
        for (ptrdiff_t kh = 0; kh < KH; kh++) {
            const T *xr = xc + kh * RS;
            const T *wr = wc + kh * KW * OB;
            for (ptrdiff_t kw = 0; kw < KW; kw++) {
                ckd_v_S xv[NV];
                for (int j = 0; j < nv; j++)
                    xv[j] = *(const ckd_vu_S *)(xr + kw * DW + j * N);
                const T *wk = wr + kw * OB;
                for (int i = 0; i < OB; i++) {
                    const T wv = wk[i];
                    for (int j = 0; j < nv; j++) acc[i][j] += wv * xv[j];
                }
            }
        }
    }
    for (int i = 0; i < OB; i++)
        for (int j = 0; j < nv; j++) *(ckd_vu_S *)(tile[i] + j * N) = acc[i][j];
}

/* y (B, G*Og, OH, OW) = stride-1 convolution of the padded planes xp (B, G*Cg planes, PL
   apart, rows Wp wide) with the packed weights wp (G, nob, Cg, KH*KW, CKD_OB), plus bias
   (G*Og, or NULL); g: B G Cg Og OH OW Wp PL KH KW DH DW */
void ckc_direct_fwd_S(const T *restrict xp, const T *restrict wp, const T *restrict bias,
                      T *restrict y, const ptrdiff_t *g, int nt) {
    enum { N = CKD_VB / sizeof(T), NV = CKD_NV, OB = CKD_OB, NVV = CKD_NV * N };
    const ptrdiff_t B = g[0], G = g[1], Cg = g[2], Og = g[3], OH = g[4], OW = g[5];
    const ptrdiff_t Wp = g[6], PL = g[7], KH = g[8], KW = g[9], DH = g[10], DW = g[11];
    const ptrdiff_t KK = KH * KW, P = (OH - 1) * Wp + OW, ntile = (P + NVV - 1) / NVV;
    const ptrdiff_t nob = (Og + OB - 1) / OB, items = B * G * nob * ntile;
    CKC_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
    for (ptrdiff_t it = 0; it < items; it++) {
        const ptrdiff_t t = it % ntile, r = it / ntile, ob = r % nob, bg = r / nob;
        const ptrdiff_t gg = bg % G, p0 = t * NVV;
        const T *xb = xp + bg * Cg * PL + p0;
        const T *wb = wp + (gg * nob + ob) * Cg * KK * OB;
        T tile[OB][NVV] __attribute__((aligned(64)));
        /* the last tile of a plane: as few vectors as its positions need */
        const ptrdiff_t nv = (P - p0 + N - 1) / N;
        if (nv >= NV)
            ckd_tile_S(xb, wb, Cg, PL, KH, KW, DH * Wp, DW, tile, NV);
        else if (nv == 2)
            ckd_tile_S(xb, wb, Cg, PL, KH, KW, DH * Wp, DW, tile, 2);
        else
            ckd_tile_S(xb, wb, Cg, PL, KH, KW, DH * Wp, DW, tile, 1);
        const ptrdiff_t end = p0 + NVV < P ? p0 + NVV : P;
        for (int i = 0; i < OB && ob * OB + i < Og; i++) {
            const ptrdiff_t o = gg * Og + ob * OB + i;
            const T bo = bias ? bias[o] : (T)0;
            T *yo = y + ((bg / G) * G * Og + o) * OH * OW;
            for (ptrdiff_t p = p0; p < end;) {
                const ptrdiff_t row = p / Wp, col = p - row * Wp;
                ptrdiff_t n = Wp - col < end - p ? Wp - col : end - p;
                const ptrdiff_t m = col < OW ? (OW - col < n ? OW - col : n) : 0;
                const T *s = tile[i] + (p - p0);
                T *d = yo + row * OW + col;
                for (ptrdiff_t q = 0; q < m; q++) d[q] = s[q] + bo;
                p += n;
            }
        }
    }
}

/* gw (G*Og, Cg, KH, KW) = sum over the batch of the correlation of gyp (B, G*Og planes, GP
   apart, gy in rows Wp wide, zero past each output row and up to Pv vectors) with the
   padded input planes xp (as `ckc_direct_fwd`).  Work items: (group, block of OB output
   channels, chunk of CC input channels, chunk of BC examples), taken dynamically by the
   threads; an item's vector accumulators (OB output channels x KB kernel columns, per input
   channel and kernel row) sum its examples.  With VEC they stay in its chunk's part of one
   buffer, and once all items are done the chunks' vectors are added in chunk order and
   each then summed across its lanes; without (large layers, whose buffer would be big),
   they are a thread's own, summed across lanes at the item's end into its chunk's partial
   gradient, and the partial gradients are added in chunk order.  Either way the result
   depends on the chunking and VEC (the caller's, from the geometry alone), never on which
   thread took which item.  Examples in blocks of NB per accumulator pass.
   g: B G Cg Og Wp PL KH KW DH DW Pv GP CC NB BC VEC */
int ckc_direct_wgt_S(const T *restrict xp, const T *restrict gyp, T *restrict gw,
                     const ptrdiff_t *g, int nt) {
    enum { N = CKD_VB / sizeof(T), OB = CKD_OB, KB = CKD_KWB, V = CKD_OB * CKD_KWB };
    const ptrdiff_t B = g[0], G = g[1], Cg = g[2], Og = g[3], Wp = g[4], PL = g[5];
    const ptrdiff_t KH = g[6], KW = g[7], DH = g[8], DW = g[9], Pv = g[10], GP = g[11];
    const ptrdiff_t CC = g[12], ncc = (Cg + CC - 1) / CC, NB = g[13], BC = g[14];
    const int vec = g[15] != 0;
    const ptrdiff_t NBK = (B + BC - 1) / BC, GW = G * Og * Cg * KH * KW;
    const ptrdiff_t nob = (Og + OB - 1) / OB, nkb = (KW + KB - 1) / KB;
    const ptrdiff_t blocks = G * nob * Cg * KH * nkb;  /* accumulator blocks of V vectors */
    const ptrdiff_t items = G * nob * ncc * NBK;
    ckd_v_S *part = vec ? aligned_alloc(CKD_VB, sizeof(ckd_v_S) * V * blocks * NBK) : NULL;
    T *spart = !vec && NBK > 1 ? malloc(sizeof(T) * GW * NBK) : NULL;
    if (vec ? !part : NBK > 1 && !spart) return 0;
    int ok = 1;
    CKC_PRAGMA(omp parallel num_threads(nt) reduction(&&:ok))
    {
        ckd_v_S *own = vec ? NULL : aligned_alloc(CKD_VB, sizeof(ckd_v_S) * CC * KH * nkb * V);
        ok = vec || own;
        CKC_PRAGMA(omp for schedule(dynamic, 1))
        for (ptrdiff_t it = 0; it < items; it++) {
            if (!ok) continue;
            const ptrdiff_t bk = it % NBK, r0 = it / NBK, cc = r0 % ncc, r = r0 / ncc;
            const ptrdiff_t ob = r % nob, gg = r / nob;
            const ptrdiff_t c0 = cc * CC, c1 = c0 + CC < Cg ? c0 + CC : Cg;
            const ptrdiff_t bb0 = bk * BC, bb1 = bb0 + BC < B ? bb0 + BC : B;
            const ptrdiff_t rows = Og - ob * OB < OB ? Og - ob * OB : OB;
            /* the accumulators of input channel c at pb + (c - cb) * KH * nkb * V */
            ckd_v_S *pb = vec ? part + (bk * blocks + (gg * nob + ob) * Cg * KH * nkb) * V : own;
            const ptrdiff_t cb = vec ? 0 : c0;
            const T *gyr[OB];  /* the block's gy rows in example 0 */
            for (int i = 0; i < OB; i++)  /* rows past Og repeat the last: dropped */
                gyr[i] = gyp + (gg * Og + ob * OB + (i < rows ? i : rows - 1)) * GP;
            /* NB examples at a time, each accumulator block loaded and stored once per
               batch block (small planes: the loads would rival the products) */
            for (ptrdiff_t b0 = bb0; b0 < bb1; b0 += NB) {
                const ptrdiff_t b1 = b0 + NB < bb1 ? b0 + NB : bb1;
                for (ptrdiff_t c = c0; c < c1; c++)
                    for (ptrdiff_t kh = 0; kh < KH; kh++)
                        for (ptrdiff_t kb = 0; kb < nkb; kb++) {
                            ptrdiff_t ko[KB];  /* columns past KW repeat the last: dropped */
                            for (int k = 0; k < KB; k++)
                                ko[k] = (kb * KB + k < KW ? kb * KB + k : KW - 1) * DW;
                            ckd_v_S *pa = pb + (((c - cb) * KH + kh) * nkb + kb) * V;
                            ckd_v_S acc[OB][KB];
                            for (int i = 0; i < OB; i++)
                                for (int k = 0; k < KB; k++)
                                    acc[i][k] = b0 == bb0 ? (ckd_v_S){0} : pa[i * KB + k];
                            for (ptrdiff_t b = b0; b < b1; b++) {
                                const T *xs = xp + ((b * G + gg) * Cg + c) * PL + kh * DH * Wp;
                                const ptrdiff_t gb = b * G * Og * GP;
                                for (ptrdiff_t v = 0; v < Pv; v++) {
                                    ckd_v_S xv[KB];
                                    for (int k = 0; k < KB; k++)
                                        xv[k] = *(const ckd_vu_S *)(xs + v * N + ko[k]);
                                    for (int i = 0; i < OB; i++) {
                                        ckd_v_S gv = *(const ckd_vu_S *)(gyr[i] + gb + v * N);
                                        CKD_IN_REGISTER(gv);
                                        for (int k = 0; k < KB; k++) acc[i][k] += gv * xv[k];
                                    }
                                }
                            }
                            for (int i = 0; i < OB; i++)
                                for (int k = 0; k < KB; k++) pa[i * KB + k] = acc[i][k];
                        }
            }
            if (vec) continue;
            T *dst = NBK > 1 ? spart + bk * GW : gw;
            for (ptrdiff_t c = c0; c < c1; c++)
                for (ptrdiff_t kh = 0; kh < KH; kh++)
                    for (ptrdiff_t kw = 0; kw < KW; kw++)
                        for (ptrdiff_t i = 0; i < rows; i++) {
                            const ckd_v_S a = own[(((c - c0) * KH + kh) * nkb + kw / KB) * V
                                                  + i * KB + kw % KB];
                            T s = 0;
                            for (int l = 0; l < N; l++) s += a[l];
                            dst[(((gg * Og + ob * OB + i) * Cg + c) * KH + kh) * KW + kw] = s;
                        }
        }
        free(own);
        /* the chunks added in chunk order (the loop's barrier has passed) */
        if (vec) {
            /* a block: (group, output block, input channel, kernel row, column block) */
            CKC_PRAGMA(omp for schedule(guided))
            for (ptrdiff_t q = 0; q < blocks; q++) {
                const ptrdiff_t kb = q % nkb, kh = q / nkb % KH, c = q / (nkb * KH) % Cg;
                const ptrdiff_t r = q / (nkb * KH * Cg), ob = r % nob, gg = r / nob;
                const ptrdiff_t rows = Og - ob * OB < OB ? Og - ob * OB : OB;
                for (int i = 0; i < rows; i++)
                    for (int k = 0; k < KB && kb * KB + k < KW; k++) {
                        ckd_v_S a = part[q * V + i * KB + k];
                        for (ptrdiff_t bk = 1; bk < NBK; bk++)
                            a += part[(bk * blocks + q) * V + i * KB + k];
                        T s = 0;
                        for (int l = 0; l < N; l++) s += a[l];
                        gw[(((gg * Og + ob * OB + i) * Cg + c) * KH + kh) * KW + kb * KB + k] =
                            s;
                    }
            }
        } else if (NBK > 1) {
            CKC_PRAGMA(omp for schedule(guided))
            for (ptrdiff_t e = 0; e < GW; e++) {
                T s = spart[e];
                for (ptrdiff_t bk = 1; bk < NBK; bk++) s += spart[bk * GW + e];
                gw[e] = s;
            }
        }
    }
    free(part);
    free(spart);
    return ok;
}
"""

# per-channel affine map, one copy per dtype (T, _S): batch norm's evaluation
_AFFINE = r"""
/* y = x * scale[c] + shift[c] over n planes of L elements, c = plane % C, in chunks of
   CKA_CHUNK per work item (few large planes still split over the threads); y may be x;
   g: n C L */
#define CKA_CHUNK 16384
void ckc_channel_affine_S(const T *x, const T *restrict scale, const T *restrict shift, T *y,
                          const ptrdiff_t *g, int nt) {
    const ptrdiff_t n = g[0], C = g[1], L = g[2], nch = (L + CKA_CHUNK - 1) / CKA_CHUNK;
    CKC_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
    for (ptrdiff_t it = 0; it < n * nch; it++) {
        const ptrdiff_t i = it / nch, lo = (it % nch) * CKA_CHUNK;
        const ptrdiff_t hi = lo + CKA_CHUNK < L ? lo + CKA_CHUNK : L;
        const T a = scale[i % C], b = shift[i % C];
        const T *xi = x + i * L;
        T *yi = y + i * L;
        for (ptrdiff_t l = lo; l < hi; l++) yi[l] = xi[l] * a + b;
    }
}
"""

_SUFFIX = {np.dtype(np.float32): ("float", "f32"), np.dtype(np.float64): ("double", "f64")}
_lib = None
_tried = False
_reason = None
_info = {}
_fns = {}


def render():
    src = _C.replace("@ABI@", str(ABI_VERSION))
    for t, s in _SUFFIX.values():
        src += re.sub(r"\bT\b", t, _TYPED.replace("_S(", f"_{s}("))
        src += re.sub(r"\bT\b", t, re.sub(r"_S\b", f"_{s}", _DIRECT))
        src += re.sub(r"\bT\b", t, _AFFINE.replace("_S(", f"_{s}("))
    return src


def _load():
    global _lib, _tried, _reason, _info
    _tried = True
    _lib, _info, _reason = _build.try_build("ember_conv", render(),
                                        lambda lib: lib.ckc_abi() == ABI_VERSION)
    return _lib


def available():
    """Whether the compiled window kernels are in use (builds them on first call)."""
    if not ENABLED:
        return False
    return (_lib if _tried else _load()) is not None


# kernel -> number of arguments (pointers, then the int thread count) and return type
_ARGS = {"im2col": 4, "col2im": 4, "pad": 4, "direct_fwd": 6, "direct_wgt": 5,
         "channel_affine": 6}
_RESTYPE = {"direct_wgt": ctypes.c_int, "pad": ctypes.c_int}


def _fn(name, dtype):
    key = (name, dtype)
    f = _fns.get(key)
    if f is None:
        if not available():
            return None
        f = getattr(_lib, f"ckc_{name}_{_SUFFIX[dtype][1]}")
        f.restype = _RESTYPE.get(name)
        f.argtypes = [ctypes.c_void_p] * (_ARGS[name] - 1) + [ctypes.c_int]
        _fns[key] = f
    return f


def _geometry(B, C, spatial, ks, stride, pad, dilation, lo, wide):
    """The 15 sizes the window kernels take; 1-d windows as 2-d ones of height 1."""
    if len(ks) == 1:
        spatial, ks, stride, dilation, lo = ((1,) + tuple(spatial), (1,) + tuple(ks),
                                             (1,) + tuple(stride), (1,) + tuple(dilation),
                                             (1,) + tuple(lo))
        pad = ((0, 0),) + tuple(pad)
    (H, W), (KH, KW), (SH, SW), (DH, DW), (OH, OW) = spatial, ks, stride, dilation, lo
    return np.array([B, C, H, W, KH, KW, SH, SW, pad[0][0], pad[1][0], DH, DW, OH, OW, wide],
                    dtype=np.intp)


def _fits(a, ks):
    return ENABLED and type(a) is np.ndarray and a.dtype in _SUFFIX and a.flags.c_contiguous and \
        len(ks) in (1, 2)


def im2col(x, ks, stride, pad, dilation, lo, wide, out):
    """The column buffer of ``x`` (B, C, *L) (see the module docstring) written into
    ``out`` (C-contiguous, of the layout's size), or None.  Large buffers are filled by
    the OpenMP threads, a plane of ``x`` each (the column GEMMs are threaded by BLAS)."""
    if not _fits(x, ks):
        return None
    f = _fn("im2col", x.dtype)
    if f is None:
        return None
    B, C = x.shape[:2]
    cols = out
    g = _geometry(B, C, x.shape[2:], ks, stride, pad, dilation, lo, int(wide))
    f(x.ctypes.data, cols.ctypes.data, g.ctypes.data, _threads(4 * cols.size))
    return cols


def col2im(cols, B, C, spatial, ks, stride, pad, dilation, lo, wide):
    """Columns in the layout of `im2col` summed back into (B, C, *spatial), or None."""
    if not _fits(cols, ks):
        return None
    f = _fn("col2im", cols.dtype)
    if f is None:
        return None
    out = np.empty((B, C) + tuple(spatial), dtype=cols.dtype)
    g = _geometry(B, C, spatial, ks, stride, pad, dilation, lo, int(wide))
    f(cols.ctypes.data, out.ctypes.data, g.ctypes.data, _threads(4 * cols.size))
    return out


# ---- direct stride-1 convolution -----------------------------------------------------------

PARALLEL_MACS = 1 << 20  # multiply-adds from which the direct kernels use OpenMP threads


def _blocks():
    """(output channels per block, vectors per position block, kernel columns per
    weight-gradient block, vector bytes) of the library's build."""
    b = _fns.get("blocks")
    if b is None:
        f = _lib.ckc_direct_block
        f.restype, f.argtypes = ctypes.c_int, [ctypes.c_int]
        b = _fns["blocks"] = tuple(f(i) for i in range(4))
    return b


def _threads(macs):
    """OpenMP threads for ``macs`` multiply-adds: ember's thread count (the BLAS pool's, so
    the two never oversubscribe the cores), one for small work, a forked child or a
    library built without OpenMP."""
    if macs < PARALLEL_MACS or not _info.get("openmp"):
        return 1
    return _blas_threads.openmp_threads()


def _as_2d(shape, ks, pad, dilation):
    """1-d geometry as 2-d of height 1: (H, W), (KH, KW), ((lo, hi), (lo, hi)), (DH, DW)."""
    if len(ks) == 1:
        return (1,) + tuple(shape), (1,) + tuple(ks), ((0, 0),) + tuple(pad), \
            (1,) + tuple(dilation)
    return tuple(shape), tuple(ks), tuple(pad), tuple(dilation)


WGRAD_BLOCK_BYTES = 1 << 15  # examples per weight-gradient accumulator pass: about L1's


def _row_width(W, pw, reach):
    """The padded planes' row width for a row of ``W`` with padding ``pw`` (lo, hi) and a
    kernel reaching ``reach`` = DW * (KW - 1) columns: ``W + lo + hi``, or ``W + lo`` when
    ``hi <= lo`` and ``hi <= reach``: an output column then still fits a row, and its reads
    past the row's end land in the next row's left padding (zeros: the next plane's first
    row, or the slack, for the last row), so the right padding need not be stored, nor its
    positions computed (a 3x3 'same' layer on 28-wide planes: 29 positions a row, not 30;
    the input gradient of a 5x5 'valid' one on 10x10: 14, not 18)."""
    lo, hi = pw
    return W + lo if hi <= lo and hi <= reach else W + lo + hi


def _padded_planes(x, HW, pad, Wp, scratch, check=False):
    """x (B, C, *HW) into the direct kernels' zero-padded planes of rows ``Wp`` wide (see
    `_row_width`), in ``scratch``'s buffer with zeroed slack after the last plane for the
    kernels' overreads: ``(buffer, PL, finite)``, the distance between planes and
    (``check``) whether every value of ``x`` is finite."""
    (H, W), ((ph0, ph1), (pw0, pw1)) = HW, pad
    Hp = H + ph0 + ph1
    n = x.shape[0] * x.shape[1]
    _, NV, _, VB = _blocks()
    slack = ((NV + 2) * VB) // x.itemsize + pw1
    PL = Hp * Wp
    g = np.array([n, H, W, Hp, Wp, ph0, pw0, PL, check], dtype=np.intp)
    buf = scratch("direct_in", (n * PL + slack,), x.dtype)
    finite = _fn("pad", x.dtype)(x.ctypes.data, buf.ctypes.data, g.ctypes.data,
                                 _threads(n * PL * 8))
    buf[n * PL:] = 0
    return buf, PL, bool(finite)


# multiply-adds the direct kernels spend per one a GEMM over columns would do (`waste`),
# above which that column route is faster, per kernel.  The kernels compute whole vectors of
# positions (rows Wp wide, so also the positions past each output row) for blocks of CKD_OB
# output channels.  The forward's and the weight gradient's GEMMs have the output channels
# as rows, and run as badly on a few (their micro-tiles are rounded up too): their waste
# counts positions only; the input gradient's GEMM rows are input channels x kernel offsets,
# so its waste counts the channel blocks too.  1 thread, CPU time, float32, direct / column
# (LeNet-sized batches of 32-64): forward 0.22-0.85 up to a waste of 2 (3x3 'same' on 4x4
# planes 0.85; 4 output channels of a 5x5 layer on 14x14 0.22, 0.63 vs 2.82 ms), 0.69-1.15
# at 4 (2x2 outputs); weight gradient 0.21-0.68 up to 1.44, 1.09 at 1.78 (3x3 'same' on
# 3x3), 0.92-1.13 at 2, 1.6-2.0 at 4; input gradient 0.58-0.84 up to 1.93, 1.0-1.05 at
# 2-3.5 (LeNet's second layer, 2.77: 0.89 vs 0.88 ms), 1.17 at 4, and far beyond for
# dcgan's ConvTranspose 1x1 -> 4x4 (32x: 9.1 vs 1.5 ms).  Near parity the direct kernels
# are preferred: they run on ember's OpenMP threads, the column route on OpenBLAS's pool
# (whose spinning threads, next to OpenMP's, cost 10x the CPU time at 2 threads on a busy
# machine: the input gradient of LeNet's second layer 1.4 -> 16 ms).
MAX_WASTE = {"forward": 3.0, "input": 2.8, "weight": 1.6}


def waste(itemsize, Og, OH, OW, Wp, useful, channels=True):
    """The direct kernels' multiply-adds per useful one: positions ``(OH - 1) * Wp + OW``
    rounded up to whole vectors, against ``useful`` positions (what the column route
    multiplies), and with ``channels`` the output channels rounded up to the register
    block; inf without the library."""
    if not available():
        return float("inf")
    OB, _, _, VB = _blocks()
    N = VB // itemsize
    P = (OH - 1) * Wp + OW
    ch = -(-Og // OB) * OB / Og if channels else 1.0
    return ch * (-(-P // N) * N) / max(useful, 1)


def direct_fits(x, w, stride, pad):
    """Whether `direct_conv` takes these operands: float32/float64, C-contiguous input, 1-d
    or 2-d windows of stride 1, padding (lo, hi) pairs not negative."""
    ks = w.shape[2:]
    return _fits(x, ks) and w.dtype == x.dtype and all(s == 1 for s in stride) and \
        all(p >= 0 for pr in pad for p in pr) and available()


def direct_conv(x, w, b, pad, dilation, groups, scratch, useful=None):
    """The stride-1 convolution of ``x`` (B, C, *L) with ``w`` (O, C/groups, *ks) (1-d or
    2-d), plus ``b`` (O,) or None, by a register-blocked direct kernel (no column buffer):
    output channels x positions in vector registers, one FMA per weight and vector of
    positions.  ``pad`` (lo, hi) pairs; ``scratch(slot, shape, dtype)`` a reusable work
    array.  None when it does not apply (see `direct_fits`) or would waste more than
    ``MAX_WASTE["forward"]``, or with ``useful`` positions per plane given (an input
    gradient: its output gradient's), ``MAX_WASTE["input"]``."""
    if not direct_fits(x, w, (1,) * len(w.shape[2:]), pad):
        return None
    f = _fn("direct_fwd", x.dtype)
    B, C = x.shape[:2]
    O, Cg = w.shape[:2]
    (H, W), (KH, KW), pad2, (DH, DW) = _as_2d(x.shape[2:], w.shape[2:], pad, dilation)
    OH = H + pad2[0][0] + pad2[0][1] - DH * (KH - 1)
    OW = W + pad2[1][0] + pad2[1][1] - DW * (KW - 1)
    if OH <= 0 or OW <= 0 or B == 0 or O == 0:
        return None
    G, Og = groups, O // groups
    Wp = _row_width(W, pad2[1], DW * (KW - 1))
    kind = "forward" if useful is None else "input"
    if waste(x.itemsize, Og, OH, OW, Wp, OH * OW if useful is None else useful,
             channels=useful is not None) > MAX_WASTE[kind]:
        return None
    OB = _blocks()[0]
    nob = -(-Og // OB)
    xpad, PL, _ = _padded_planes(x, (H, W), pad2, Wp, scratch)
    # weights as (G, nob, Cg, KH*KW, OB): a block's OB weights per offset side by side
    wp = np.zeros((G, nob * OB, Cg, KH * KW), dtype=x.dtype)
    wp[:, :Og] = w.reshape(G, Og, Cg, KH * KW)
    wp = np.ascontiguousarray(wp.reshape(G, nob, OB, Cg, KH * KW).transpose(0, 1, 3, 4, 2))
    bias = None if b is None else np.ascontiguousarray(b, dtype=x.dtype)
    out_sp = (OH, OW) if len(w.shape) == 4 else (OW,)
    y = np.empty((B, O) + out_sp, dtype=x.dtype)
    g = np.array([B, G, Cg, Og, OH, OW, Wp, PL, KH, KW, DH, DW], dtype=np.intp)
    f(xpad.ctypes.data, wp.ctypes.data, None if bias is None else bias.ctypes.data,
      y.ctypes.data, g.ctypes.data, _threads(B * O * OH * OW * Cg * KH * KW))
    return y


WGRAD_ITEMS = 16  # work items of a weight gradient large enough for threads
WGRAD_VEC_BYTES = 1 << 22  # the chunks' vector accumulators kept up to this size


def _wgrad_chunks(B, blocks, Cg, macs):
    """(examples, input channels) per work item of the direct weight gradient: with
    ``blocks`` (group, output-channel block) pairs, the batch and then the input channels
    are cut until there are about `WGRAD_ITEMS` items, from `PARALLEL_MACS` multiply-adds
    on.  From the geometry alone, never the thread count: the partial sums, and so the
    result's bits, are the same at any number of threads."""
    if macs < PARALLEL_MACS:
        return B, Cg
    BC = -(-B // min(B, -(-WGRAD_ITEMS // blocks)))
    ncc = min(Cg, -(-WGRAD_ITEMS // (blocks * -(-B // BC))))
    return BC, -(-Cg // ncc)


def direct_weight_grad(x, gy, ks, pad, dilation, groups, scratch):
    """The weight gradient (O, C/groups, *ks) of the stride-1 convolution of ``x`` whose
    output gradient is ``gy`` (B, O, *Lo), by a direct kernel (output channels x kernel
    columns of vector accumulators over the positions), or None (see `direct_fits`; also
    when ``x`` holds an inf or NaN, or the kernel would waste more than
    ``MAX_WASTE["weight"]``)."""
    if not (_fits(gy, ks) and gy.dtype == x.dtype and _fits(x, ks) and available()
            and all(p >= 0 for pr in pad for p in pr)):
        return None
    f = _fn("direct_wgt", x.dtype)
    B, C = x.shape[:2]
    O = gy.shape[1]
    (H, W), (KH, KW), pad2, (DH, DW) = _as_2d(x.shape[2:], ks, pad, dilation)
    (OH, OW), _, _, _ = _as_2d(gy.shape[2:], ks, pad, dilation)
    if OH != H + pad2[0][0] + pad2[0][1] - DH * (KH - 1) or \
            OW != W + pad2[1][0] + pad2[1][1] - DW * (KW - 1) or B == 0 or O == 0 or C == 0:
        return None
    G, Cg, Og = groups, C // groups, O // groups
    Wp = _row_width(W, pad2[1], DW * (KW - 1))
    if waste(x.itemsize, Og, OH, OW, Wp, OH * OW, channels=False) > MAX_WASTE["weight"]:
        return None
    OB, _, KB, VB = _blocks()
    N = VB // x.itemsize
    xpad, PL, finite = _padded_planes(x, (H, W), pad2, Wp, scratch, check=True)
    if not finite:
        # the kernel multiplies input values that no output reads (past each output row,
        # dilation's gaps) by zero gradients: an inf or NaN there would give NaN where the
        # convolution's gradient is finite; the column route reads the windows only
        return None
    P = (OH - 1) * Wp + OW
    Pv = -(-P // N)
    GP = max(Pv * N, OH * Wp)
    gyp = scratch("direct_gy", (B * O * GP,), x.dtype)
    g = np.array([B * O, OH, OW, OH, Wp, 0, 0, GP, 0], dtype=np.intp)
    _fn("pad", x.dtype)(gy.ctypes.data, gyp.ctypes.data, g.ctypes.data,
                               _threads(B * O * GP * 8))
    macs = B * O * OH * OW * Cg * KH * KW
    blocks = G * -(-Og // OB)
    BC, CC = _wgrad_chunks(B, blocks, Cg, macs)
    # the chunks' vector accumulators, if they fit WGRAD_VEC_BYTES
    vec = -(-B // BC) * blocks * Cg * KH * -(-KW // KB) * OB * KB * VB <= WGRAD_VEC_BYTES
    gw = np.empty((O, Cg) + tuple(ks), dtype=x.dtype)
    # examples per accumulator pass: their gy rows and an input plane about L1's size
    NB = max(1, min(BC, WGRAD_BLOCK_BYTES // ((OB * GP + PL) * x.itemsize)))
    g = np.array([B, G, Cg, Og, Wp, PL, KH, KW, DH, DW, Pv, GP, CC, NB, BC, vec],
                 dtype=np.intp)
    if not f(xpad.ctypes.data, gyp.ctypes.data, gw.ctypes.data, g.ctypes.data, _threads(macs)):
        return None
    return gw


# ---- per-channel affine map ----------------------------------------------------------------

AFFINE_MIN_PLANE = 16  # shorter planes (few or no spatial positions): NumPy's broadcast


def channel_affine(x, scale, shift, out=None):
    """``x * scale[c] + shift[c]`` for ``x`` (B, C, *spatial) in one pass, into ``out`` (a
    new array when None; ``x`` itself allowed): batch norm's evaluation, its scale and
    shift precomputed per channel.  None when it does not apply: float32/float64
    C-contiguous arrays of one dtype, planes of at least `AFFINE_MIN_PLANE` elements."""
    if not (ENABLED and type(x) is np.ndarray and x.dtype in _SUFFIX and x.ndim > 2
            and x.flags.c_contiguous and scale.dtype == shift.dtype == x.dtype
            and scale.flags.c_contiguous and shift.flags.c_contiguous):
        return None
    n, C = x.shape[0] * x.shape[1], x.shape[1]
    if n == 0 or x.size // n < AFFINE_MIN_PLANE:
        return None
    f = _fn("channel_affine", x.dtype)
    if f is None:
        return None
    if out is None:
        out = np.empty(x.shape, dtype=x.dtype)
    elif not (out.flags.c_contiguous and out.dtype == x.dtype and out.shape == x.shape):
        return None
    g = np.array([n, C, x.size // n], dtype=np.intp)
    f(x.ctypes.data, scale.ctypes.data, shift.ctypes.data, out.ctypes.data, g.ctypes.data,
      _threads(4 * x.size))
    return out
