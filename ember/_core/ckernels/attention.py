"""Flash attention in C: the kernels of ``_flash_attention`` and its backward.

``render()`` gives the C (part of the eager library, `source.render`); `forward` and
`backward` call it on NumPy arrays, or return None when the arrays do not fit (the op then
runs its NumPy kernel, which computes the same thing).

Forward (FlashAttention): a block of ``BQ`` query rows against blocks of ``BK`` keys,
with a running row maximum, row sum and float accumulator (online softmax), so memory is
O(L * d) and the block stays in cache; it returns the row log-sum-exp.  Backward
(FlashAttention-2): per block of keys, every query block's probabilities are recomputed
from the saved log-sum-exp, ``D = rowsum(dO * O) - dlse``, ``dS = P * (dO V^T - D)``,
and dQ, dK, dV accumulate block by block.  The block products go through one
register-blocked kernel (``fa_gemm``: 4 rows x 4 vectors of accumulators on AVX512, 4 x 2
below, GCC vector extensions, so it vectorises at every CPU capability level; it reads its
left operand through two strides, so P^T and dS^T need no copies); the row softmax uses
the scalar-function table's vectorised exp (`ember._core.scalar_functions`).

Leading (batch) dims broadcast: each operand comes with one element offset per batch
entry, so expanded and strided operands need no copy.  Work is split over batch x query
blocks (forward) or batch entries (backward) with OpenMP, ``nt`` threads; ``nt == 1``
never touches the OpenMP runtime.  float32 and float64; half types are computed in float32
by the caller.
"""
import ctypes

import numpy as np

__all__ = ["render", "forward", "backward", "pointer"]

BQ, BK = 64, 256          # forward: query rows x keys per block
BQ_BWD, BK_BWD = 64, 128  # backward

_C = r"""
/* ---- flash attention (ember/_core/ckernels/attention.py) ---- */
#include <stdlib.h>
#if defined(__AVX512F__)
#define FA_VEC_BYTES 64
#elif defined(__AVX__)
#define FA_VEC_BYTES 32
#else
#define FA_VEC_BYTES 16
#endif
#define FA_BQ @BQ@
#define FA_BK @BK@
#define FA_BQB @BQB@
#define FA_BKB @BKB@
"""

# one copy per dtype: T = float/double, _S = _f32/_f64, EXP/LOG the table's vectorised ones
_TYPED = r"""
typedef T fa_v_S __attribute__((vector_size(FA_VEC_BYTES)));
#define FA_W_S ((ptrdiff_t)(FA_VEC_BYTES / sizeof(T)))

static inline fa_v_S fa_ld_S(const T *p) { fa_v_S v; memcpy(&v, p, sizeof v); return v; }
static inline void fa_st_S(T *p, fa_v_S v) { memcpy(p, &v, sizeof v); }

/* C[0:4, 0:2W] (+)= A[0:4, 0:kk] B[0:kk, 0:2W]: 8 vector accumulators held in registers */
static inline void fa_tile_S(ptrdiff_t kk, const T *restrict A, ptrdiff_t ars,
                             ptrdiff_t acs, const T *restrict B, ptrdiff_t ldb,
                             T *restrict C, ptrdiff_t ldc, int acc) {
    const ptrdiff_t W = FA_W_S;
    fa_v_S c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0},
           c31 = {0};
    const T *a0 = A, *a1 = A + ars, *a2 = A + 2 * ars, *a3 = A + 3 * ars;
    for (ptrdiff_t p = 0; p < kk; p++) {
        fa_v_S b0 = fa_ld_S(B + p * ldb), b1 = fa_ld_S(B + p * ldb + W);
        T x0 = a0[p * acs], x1 = a1[p * acs], x2 = a2[p * acs], x3 = a3[p * acs];
        c00 += b0 * x0; c01 += b1 * x0;
        c10 += b0 * x1; c11 += b1 * x1;
        c20 += b0 * x2; c21 += b1 * x2;
        c30 += b0 * x3; c31 += b1 * x3;
    }
    if (acc) {
        c00 += fa_ld_S(C); c01 += fa_ld_S(C + W);
        c10 += fa_ld_S(C + ldc); c11 += fa_ld_S(C + ldc + W);
        c20 += fa_ld_S(C + 2 * ldc); c21 += fa_ld_S(C + 2 * ldc + W);
        c30 += fa_ld_S(C + 3 * ldc); c31 += fa_ld_S(C + 3 * ldc + W);
    }
    fa_st_S(C, c00); fa_st_S(C + W, c01);
    fa_st_S(C + ldc, c10); fa_st_S(C + ldc + W, c11);
    fa_st_S(C + 2 * ldc, c20); fa_st_S(C + 2 * ldc + W, c21);
    fa_st_S(C + 3 * ldc, c30); fa_st_S(C + 3 * ldc + W, c31);
}

#if FA_VEC_BYTES == 64
/* C[0:4, 0:4W] (+)= A[0:4, 0:kk] B[0:kk, 0:4W]: 16 accumulators (AVX512 has 32 registers) */
static inline void fa_tile4_S(ptrdiff_t kk, const T *restrict A, ptrdiff_t ars,
                              ptrdiff_t acs, const T *restrict B, ptrdiff_t ldb,
                              T *restrict C, ptrdiff_t ldc, int acc) {
    const ptrdiff_t W = FA_W_S;
    fa_v_S c[4][4] = {{{0}}};
    const T *a0 = A, *a1 = A + ars, *a2 = A + 2 * ars, *a3 = A + 3 * ars;
    for (ptrdiff_t p = 0; p < kk; p++) {
        const T *b = B + p * ldb;
        fa_v_S b0 = fa_ld_S(b), b1 = fa_ld_S(b + W), b2 = fa_ld_S(b + 2 * W),
               b3 = fa_ld_S(b + 3 * W);
        T x0 = a0[p * acs], x1 = a1[p * acs], x2 = a2[p * acs], x3 = a3[p * acs];
        c[0][0] += b0 * x0; c[0][1] += b1 * x0; c[0][2] += b2 * x0; c[0][3] += b3 * x0;
        c[1][0] += b0 * x1; c[1][1] += b1 * x1; c[1][2] += b2 * x1; c[1][3] += b3 * x1;
        c[2][0] += b0 * x2; c[2][1] += b1 * x2; c[2][2] += b2 * x2; c[2][3] += b3 * x2;
        c[3][0] += b0 * x3; c[3][1] += b1 * x3; c[3][2] += b2 * x3; c[3][3] += b3 * x3;
    }
    for (int r = 0; r < 4; r++)
        for (int v = 0; v < 4; v++) {
            T *dst = C + r * ldc + v * W;
            fa_st_S(dst, acc ? c[r][v] + fa_ld_S(dst) : c[r][v]);
        }
}
#endif

/* one row, columns j0..j1 (any width): the edges of fa_gemm */
static inline void fa_row_S(ptrdiff_t kk, const T *restrict a, ptrdiff_t acs,
                            const T *restrict B, ptrdiff_t ldb, T *restrict c, ptrdiff_t j0,
                            ptrdiff_t j1, int acc) {
    if (!acc)
        for (ptrdiff_t j = j0; j < j1; j++) c[j] = 0;
    for (ptrdiff_t p = 0; p < kk; p++) {
        const T x = a[p * acs];
        const T *b = B + p * ldb;
        CK_PRAGMA(omp simd)
        for (ptrdiff_t j = j0; j < j1; j++) c[j] += x * b[j];
    }
}

/* C[m x n] (+)= A[m x kk] B[kk x n]: A's element (i, p) at A[i * ars + p * acs] (so A may
   be read transposed), B and C row-major with leading dims ldb, ldc.  Not inlined: a copy
   at each call site made the library take 15x longer to compile. */
__attribute__((noinline))
static void fa_gemm_S(ptrdiff_t m, ptrdiff_t n, ptrdiff_t kk, const T *restrict A,
                      ptrdiff_t ars, ptrdiff_t acs, const T *restrict B, ptrdiff_t ldb,
                      T *restrict C, ptrdiff_t ldc, int acc) {
    const ptrdiff_t NR = 2 * FA_W_S;
    const ptrdiff_t nfull = n - n % NR;
    ptrdiff_t i = 0;
    for (; i + 4 <= m; i += 4) {
        ptrdiff_t j = 0;
#if FA_VEC_BYTES == 64
        for (; j + 2 * NR <= nfull; j += 2 * NR)
            fa_tile4_S(kk, A + i * ars, ars, acs, B + j, ldb, C + i * ldc + j, ldc, acc);
#endif
        for (; j < nfull; j += NR)
            fa_tile_S(kk, A + i * ars, ars, acs, B + j, ldb, C + i * ldc + j, ldc, acc);
        if (nfull < n)
            for (ptrdiff_t r = i; r < i + 4; r++)
                fa_row_S(kk, A + r * ars, acs, B, ldb, C + r * ldc, nfull, n, acc);
    }
    for (; i < m; i++) fa_row_S(kk, A + i * ars, acs, B, ldb, C + i * ldc, 0, n, acc);
}

/* dst[c x r] (leading dim ldd) = src[r x c]^T (leading dim lds) */
static void fa_transpose_S(ptrdiff_t r, ptrdiff_t c, const T *restrict src, ptrdiff_t lds,
                           T *restrict dst, ptrdiff_t ldd) {
    for (ptrdiff_t i0 = 0; i0 < r; i0 += 16)
        for (ptrdiff_t j = 0; j < c; j++) {
            ptrdiff_t i1 = i0 + 16 < r ? i0 + 16 : r;
            for (ptrdiff_t i = i0; i < i1; i++) dst[j * ldd + i] = src[i * lds + j];
        }
}

typedef struct {
    const T *q, *k, *v; const void *mask; int mkind;   /* 0 none, 1 bool, 2 additive */
    const int64_t *qo, *ko, *vo, *mo;                  /* element offset per batch entry */
    ptrdiff_t L, S, E, Ev, qrs, krs, vrs, mrs, mcs;    /* row strides; mask col stride */
    T scale; int causal;
} fa_args_S;

/* the mask and the causal rule on the score rows i0..i0+mn x keys j0..j0+kn (ld lds) */
static void fa_mask_S(const fa_args_S *a, ptrdiff_t b, ptrdiff_t i0, ptrdiff_t mn,
                      ptrdiff_t j0, ptrdiff_t kn, T *restrict s, ptrdiff_t lds) {
    if (a->mkind) {
        for (ptrdiff_t r = 0; r < mn; r++) {
            T *restrict row = s + r * lds;
            const ptrdiff_t base = a->mo[b] + (i0 + r) * a->mrs + j0 * a->mcs;
            const ptrdiff_t mcs = a->mcs;
            if (a->mkind == 1) {
                const unsigned char *restrict mb = (const unsigned char *)a->mask + base;
                CK_PRAGMA(omp simd)
                for (ptrdiff_t c = 0; c < kn; c++) row[c] = mb[c * mcs] ? row[c] : -INFINITY;
            } else {
                const T *restrict mf = (const T *)a->mask + base;
                CK_PRAGMA(omp simd)
                for (ptrdiff_t c = 0; c < kn; c++) row[c] += mf[c * mcs];
            }
        }
    }
    if (a->causal && j0 + kn - 1 > i0) {
        for (ptrdiff_t r = 0; r < mn; r++) {
            ptrdiff_t first = i0 + r + 1 - j0;   /* keys after query i0 + r */
            if (first < 0) first = 0;
            for (ptrdiff_t c = first; c < kn; c++) s[r * lds + c] = -INFINITY;
        }
    }
}

/* scaled query rows i0..i0+mn of batch entry b into qs (mn x E, contiguous) */
static void fa_scale_q_S(const fa_args_S *a, ptrdiff_t b, ptrdiff_t i0, ptrdiff_t mn,
                         T *restrict qs) {
    const ptrdiff_t E = a->E;
    for (ptrdiff_t r = 0; r < mn; r++) {
        const T *restrict src = a->q + a->qo[b] + (i0 + r) * a->qrs;
        CK_PRAGMA(omp simd)
        for (ptrdiff_t e = 0; e < E; e++) qs[r * E + e] = src[e] * a->scale;
    }
}

/* kt holds K^T of batch entry `kt_b` (E x S, leading dim ldkt: padded, so that its rows
   do not all fall in the same cache sets when S is a power of two) */
typedef struct { T *qs, *kt, *s, *acc, *m, *l; ptrdiff_t kt_b, ldkt; } fa_fwd_buf_S;

static int fa_fwd_alloc_S(const fa_args_S *a, fa_fwd_buf_S *w) {
    w->ldkt = (a->S + 15) / 16 * 16 + 16;
    w->kt_b = -1;
    w->qs = malloc(sizeof(T) * (FA_BQ * a->E + a->E * w->ldkt + FA_BQ * FA_BK + FA_BQ * a->Ev
                                + 2 * FA_BQ + 1));
    if (!w->qs) return 0;
    w->kt = w->qs + FA_BQ * a->E;
    w->s = w->kt + a->E * w->ldkt;
    w->acc = w->s + FA_BQ * FA_BK;
    w->m = w->acc + FA_BQ * a->Ev;
    w->l = w->m + FA_BQ;
    return 1;
}

/* query block `blk` of batch entry b: out rows and their log-sum-exp */
__attribute__((noinline))
static void fa_fwd_block_S(const fa_args_S *a, fa_fwd_buf_S *w, ptrdiff_t b, ptrdiff_t blk,
                           T *restrict out, T *restrict lse) {
    const ptrdiff_t E = a->E, Ev = a->Ev, i0 = blk * FA_BQ;
    const ptrdiff_t mn = a->L - i0 < FA_BQ ? a->L - i0 : FA_BQ;
    const ptrdiff_t kend = a->causal && i0 + mn < a->S ? i0 + mn : a->S;
    const T *kb = a->k + a->ko[b], *vb = a->v + a->vo[b];
    fa_scale_q_S(a, b, i0, mn, w->qs);
    if (w->kt_b != b) {  /* consecutive tasks mostly share b: transpose K once for them */
        fa_transpose_S(a->S, E, kb, a->krs, w->kt, w->ldkt);
        w->kt_b = b;
    }
    for (ptrdiff_t r = 0; r < mn; r++) { w->m[r] = -INFINITY; w->l[r] = 0; }
    memset(w->acc, 0, sizeof(T) * mn * Ev);
    for (ptrdiff_t j0 = 0; j0 < kend; j0 += FA_BK) {
        const ptrdiff_t kn = kend - j0 < FA_BK ? kend - j0 : FA_BK;
        fa_gemm_S(mn, kn, E, w->qs, E, 1, w->kt + j0, w->ldkt, w->s, FA_BK, 0);
        fa_mask_S(a, b, i0, mn, j0, kn, w->s, FA_BK);
        for (ptrdiff_t r = 0; r < mn; r++) {
            T *restrict s = w->s + r * FA_BK;
            T mx = -INFINITY;
            CK_PRAGMA(omp simd reduction(max:mx))
            for (ptrdiff_t c = 0; c < kn; c++) mx = s[c] > mx ? s[c] : mx;
            const T mold = w->m[r];
            const T mnew = mold > mx ? mold : mx;
            const T msafe = mnew == -INFINITY ? (T)0 : mnew;
            T sum = 0;
            CK_PRAGMA(omp simd reduction(+:sum))
            for (ptrdiff_t c = 0; c < kn; c++) { T e = EXP(s[c] - msafe); s[c] = e; sum += e; }
            const T alpha = EXP(mold - msafe);
            if (alpha != (T)1) {
                T *restrict acc = w->acc + r * Ev;
                CK_PRAGMA(omp simd)
                for (ptrdiff_t e = 0; e < Ev; e++) acc[e] *= alpha;
            }
            w->l[r] = w->l[r] * alpha + sum;
            w->m[r] = mnew;
        }
        fa_gemm_S(mn, Ev, kn, w->s, FA_BK, 1, vb + j0 * a->vrs, a->vrs, w->acc, Ev, 1);
    }
    for (ptrdiff_t r = 0; r < mn; r++) {
        const T l = w->l[r], msafe = w->m[r] == -INFINITY ? (T)0 : w->m[r];
        const int empty = l == 0;
        const T d = empty ? (T)1 : l;
        T *restrict o = out + r * Ev;
        const T *restrict acc = w->acc + r * Ev;
        CK_PRAGMA(omp simd)
        for (ptrdiff_t e = 0; e < Ev; e++) o[e] = acc[e] / d;
        lse[r] = empty ? (T)INFINITY : msafe + LOG(l);
    }
}

/* out (B x L x Ev) and lse (B x L), both contiguous; returns 0 when out of memory */
int ck_flash_fwd_S(const T *q, const T *k, const T *v, const void *mask, int mkind,
                   const int64_t *qo, const int64_t *ko, const int64_t *vo, const int64_t *mo,
                   ptrdiff_t B, ptrdiff_t L, ptrdiff_t S, ptrdiff_t E, ptrdiff_t Ev,
                   ptrdiff_t qrs, ptrdiff_t krs, ptrdiff_t vrs, ptrdiff_t mrs, ptrdiff_t mcs,
                   double scale, int causal, T *out, T *lse, int nt) {
    fa_args_S a = {q, k, v, mask, mkind, qo, ko, vo, mo, L, S, E, Ev, qrs, krs, vrs, mrs, mcs,
                   (T)scale, causal};
    const ptrdiff_t nb = (L + FA_BQ - 1) / FA_BQ, tasks = B * nb;
    int ok = 1;
    if (nt > 1) {
        CK_PRAGMA(omp parallel num_threads(nt) reduction(&&:ok))
        {
            fa_fwd_buf_S w;
            if (!fa_fwd_alloc_S(&a, &w)) ok = 0;
            /* later causal blocks cost more: hand blocks out one at a time */
            CK_PRAGMA(omp for schedule(dynamic, 1))
            for (ptrdiff_t t = 0; t < tasks; t++) {
                if (!w.qs) continue;
                ptrdiff_t b = t / nb, blk = t % nb;
                fa_fwd_block_S(&a, &w, b, blk, out + (b * L + blk * FA_BQ) * Ev,
                               lse + b * L + blk * FA_BQ);
            }
            free(w.qs);
        }
    } else {
        fa_fwd_buf_S w;
        if (!fa_fwd_alloc_S(&a, &w)) return 0;
        for (ptrdiff_t t = 0; t < tasks; t++) {
            ptrdiff_t b = t / nb, blk = t % nb;
            fa_fwd_block_S(&a, &w, b, blk, out + (b * L + blk * FA_BQ) * Ev,
                           lse + b * L + blk * FA_BQ);
        }
        free(w.qs);
    }
    return ok;
}

typedef struct { T *qs, *dlt, *kt, *vt, *p, *dp, *dk, *dv; } fa_bwd_buf_S;

static int fa_bwd_alloc_S(const fa_args_S *a, fa_bwd_buf_S *w) {
    const ptrdiff_t L = a->L, E = a->E, Ev = a->Ev;
    w->qs = malloc(sizeof(T) * (L * E + L + E * FA_BKB + Ev * FA_BKB + 2 * FA_BQB * FA_BKB
                                + FA_BKB * E + FA_BKB * Ev + 1));
    if (!w->qs) return 0;
    w->dlt = w->qs + L * E;
    w->kt = w->dlt + L;
    w->vt = w->kt + E * FA_BKB;
    w->p = w->vt + Ev * FA_BKB;
    w->dp = w->p + FA_BQB * FA_BKB;
    w->dk = w->dp + FA_BQB * FA_BKB;
    w->dv = w->dk + FA_BKB * E;
    return 1;
}

/* batch entry b, key blocks jb0, jb0 + jstep, ...: their dk, dv (and score gradient ds,
   when wanted), and their part of dq / scale added into dq */
__attribute__((noinline))
static void fa_bwd_entry_S(const fa_args_S *a, fa_bwd_buf_S *w, ptrdiff_t b, ptrdiff_t jb0,
                           ptrdiff_t jstep, const T *restrict go, const T *restrict o,
                           const T *restrict lse, const T *restrict glse, T *restrict dq,
                           T *restrict dk, T *restrict dv, T *restrict ds) {
    const ptrdiff_t L = a->L, S = a->S, E = a->E, Ev = a->Ev;
    const T *kb = a->k + a->ko[b], *vb = a->v + a->vo[b];
    fa_scale_q_S(a, b, 0, L, w->qs);
    for (ptrdiff_t i = 0; i < L; i++) {
        T d = 0;
        CK_PRAGMA(omp simd reduction(+:d))
        for (ptrdiff_t e = 0; e < Ev; e++) d += go[i * Ev + e] * o[i * Ev + e];
        w->dlt[i] = glse ? d - glse[i] : d;
    }
    for (ptrdiff_t j0 = jb0 * FA_BKB; j0 < S; j0 += jstep * FA_BKB) {
        const ptrdiff_t kn = S - j0 < FA_BKB ? S - j0 : FA_BKB;
        fa_transpose_S(kn, E, kb + j0 * a->krs, a->krs, w->kt, FA_BKB);
        fa_transpose_S(kn, Ev, vb + j0 * a->vrs, a->vrs, w->vt, FA_BKB);
        memset(w->dk, 0, sizeof(T) * kn * E);
        memset(w->dv, 0, sizeof(T) * kn * Ev);
        /* causal: query rows before j0 see none of these keys */
        ptrdiff_t istart = a->causal ? (j0 / FA_BQB) * FA_BQB : 0;
        if (istart > L) istart = L;
        for (ptrdiff_t i0 = istart; i0 < L; i0 += FA_BQB) {
            const ptrdiff_t mn = L - i0 < FA_BQB ? L - i0 : FA_BQB;
            T *restrict p = w->p, *restrict dp = w->dp;
            fa_gemm_S(mn, kn, E, w->qs + i0 * E, E, 1, w->kt, FA_BKB, p, FA_BKB, 0);
            fa_mask_S(a, b, i0, mn, j0, kn, p, FA_BKB);
            for (ptrdiff_t r = 0; r < mn; r++) {
                const T m = lse[i0 + r];
                T *restrict row = p + r * FA_BKB;
                CK_PRAGMA(omp simd)
                for (ptrdiff_t c = 0; c < kn; c++) row[c] = EXP(row[c] - m);
            }
            /* dV += P^T dO, dP = dO V^T */
            fa_gemm_S(kn, Ev, mn, p, 1, FA_BKB, go + i0 * Ev, Ev, w->dv, Ev, 1);
            fa_gemm_S(mn, kn, Ev, go + i0 * Ev, Ev, 1, w->vt, FA_BKB, dp, FA_BKB, 0);
            for (ptrdiff_t r = 0; r < mn; r++) {
                const T d = w->dlt[i0 + r];
                T *restrict x = dp + r * FA_BKB;
                const T *restrict pr = p + r * FA_BKB;
                CK_PRAGMA(omp simd)
                for (ptrdiff_t c = 0; c < kn; c++) x[c] = (x[c] - d) * pr[c];
                if (ds) memcpy(ds + (i0 + r) * S + j0, x, sizeof(T) * kn);
            }
            /* dQ += dS K, dK += dS^T (Q scale) */
            fa_gemm_S(mn, E, kn, dp, FA_BKB, 1, kb + j0 * a->krs, a->krs, dq + i0 * E, E, 1);
            fa_gemm_S(kn, E, mn, dp, 1, FA_BKB, w->qs + i0 * E, E, w->dk, E, 1);
        }
        /* causal rows skipped above: their ds entries are zero */
        if (ds)
            for (ptrdiff_t i = 0; i < istart; i++) memset(ds + i * S + j0, 0, sizeof(T) * kn);
        memcpy(dk + j0 * E, w->dk, sizeof(T) * kn * E);
        memcpy(dv + j0 * Ev, w->dv, sizeof(T) * kn * Ev);
    }
}

/* go, o: B x L x Ev; lse, glse (or NULL): B x L; dq: B x L x E, dk: B x S x E, dv: B x S x Ev,
   ds (or NULL): B x L x S, all contiguous; returns 0 when out of memory.  Threads take batch
   entries; with fewer entries than threads, each entry's key blocks are dealt out to
   `split` threads too (interleaved: causal blocks differ in cost), each adding its part of
   dq into a buffer of its own, summed at the end. */
int ck_flash_bwd_S(const T *q, const T *k, const T *v, const void *mask, int mkind,
                   const int64_t *qo, const int64_t *ko, const int64_t *vo, const int64_t *mo,
                   ptrdiff_t B, ptrdiff_t L, ptrdiff_t S, ptrdiff_t E, ptrdiff_t Ev,
                   ptrdiff_t qrs, ptrdiff_t krs, ptrdiff_t vrs, ptrdiff_t mrs, ptrdiff_t mcs,
                   double scale, int causal, const T *go, const T *o, const T *lse,
                   const T *glse, T *dq, T *dk, T *dv, T *ds, int nt) {
    fa_args_S a = {q, k, v, mask, mkind, qo, ko, vo, mo, L, S, E, Ev, qrs, krs, vrs, mrs, mcs,
                   (T)scale, causal};
    const ptrdiff_t nkb = (S + FA_BKB - 1) / FA_BKB;
    ptrdiff_t split = 1;
    if (nt > 1 && B < nt) split = (nt + B - 1) / B < nkb ? (nt + B - 1) / B : nkb;
    T *parts = NULL;
    if (split > 1 && !(parts = calloc((size_t)(B * split * L * E) + 1, sizeof(T)))) split = 1;
    if (split == 1) memset(dq, 0, sizeof(T) * B * L * E);
    const ptrdiff_t tasks = B * split;
    int ok = 1;
#define FA_BWD_TASK(w, t) do { ptrdiff_t b_ = (t) / split, c_ = (t) % split; \
        fa_bwd_entry_S(&a, &w, b_, c_, split, go + b_ * L * Ev, o + b_ * L * Ev, lse + b_ * L, \
                       glse ? glse + b_ * L : NULL, \
                       split > 1 ? parts + (t) * L * E : dq + b_ * L * E, dk + b_ * S * E, \
                       dv + b_ * S * Ev, ds ? ds + b_ * L * S : NULL); } while (0)
    if (nt > 1) {
        CK_PRAGMA(omp parallel num_threads(nt) reduction(&&:ok))
        {
            fa_bwd_buf_S w;
            if (!fa_bwd_alloc_S(&a, &w)) ok = 0;
            CK_PRAGMA(omp for schedule(dynamic, 1))
            for (ptrdiff_t t = 0; t < tasks; t++)
                if (w.qs) FA_BWD_TASK(w, t);
            free(w.qs);
        }
    } else {
        fa_bwd_buf_S w;
        if (!fa_bwd_alloc_S(&a, &w)) return 0;
        for (ptrdiff_t t = 0; t < tasks; t++) FA_BWD_TASK(w, t);
        free(w.qs);
    }
#undef FA_BWD_TASK
    const T sc = (T)scale;
    for (ptrdiff_t b = 0; b < B; b++) {
        T *restrict d = dq + b * L * E;
        if (parts) {
            memcpy(d, parts + b * split * L * E, sizeof(T) * L * E);
            for (ptrdiff_t c = 1; c < split; c++) {
                const T *restrict pc = parts + (b * split + c) * L * E;
                CK_PRAGMA(omp simd)
                for (ptrdiff_t i = 0; i < L * E; i++) d[i] += pc[i];
            }
        }
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = 0; i < L * E; i++) d[i] *= sc;
    }
    free(parts);
    return ok;
}
"""

_NAMES = {"f32": dict(T="float", EXP="ck_expf", LOG="ck_logf"),
          "f64": dict(T="double", EXP="exp", LOG="log")}


def render():
    """The C of both kernels, for float and double (after the table's prelude)."""
    parts = [_C.replace("@BQ@", str(BQ)).replace("@BK@", str(BK))
             .replace("@BQB@", str(BQ_BWD)).replace("@BKB@", str(BK_BWD))]
    for suffix, names in _NAMES.items():
        defs = "".join(f"#define {k} {v}\n" for k, v in names.items())
        undefs = "".join(f"#undef {k}\n" for k in names)
        parts.append(defs + _TYPED.replace("_S", f"_{suffix}") + undefs)
    return "".join(parts)


# ---- calling it ------------------------------------------------------------------------------

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_P, _N, _I, _D = ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_double
_COMMON = [_P, _P, _P, _P, _I, _P, _P, _P, _P] + [_N] * 10 + [_D, _I]


def _fn(name, argtypes):
    from . import _fn as lookup
    f = lookup(name, argtypes)
    if f is not None:
        f.restype = ctypes.c_int
    return f


def pointer(name):
    """The address of kernel ``name`` (``ck_flash_fwd_f32``, ``ck_flash_bwd_f64``, ...) in
    the loaded library, for generated C that calls it through a pointer (the library is
    loaded privately: its symbols do not link); None when the compiled kernels are off."""
    from . import ENABLED
    f = _fn(name, _COMMON + ([_P, _P, _I] if "_fwd_" in name else [_P] * 8 + [_I])) \
        if ENABLED else None
    return None if f is None else ctypes.cast(f, ctypes.c_void_p).value


def _rows(a):
    """``a`` with unit element stride in its last dim (a copy only when it has not)."""
    if a.shape[-1] > 1 and a.strides[-1] != a.itemsize:
        a = np.ascontiguousarray(a)
    return a


def _offsets(a, batch):
    """The element offset of each batch entry of ``a`` (leading dims broadcast to ``batch``)."""
    nb = a.ndim - 2
    off = np.zeros((1,) * nb, np.int64)
    for d in range(nb):
        n = a.shape[d]
        st = a.strides[d] // a.itemsize if n > 1 else 0
        shape = [1] * nb
        shape[d] = n
        off = off + (np.arange(n, dtype=np.int64) * st).reshape(shape)
    return np.ascontiguousarray(np.broadcast_to(off, batch), dtype=np.int64).reshape(-1)


def _stride(a, dim):
    return a.strides[dim] // a.itemsize if a.shape[dim] > 1 else 0


def _prepare(q, k, v, mask):
    """The shared arguments of both kernels, or None when the arrays do not fit."""
    from . import ENABLED
    nd = np.ndarray
    if not (ENABLED and type(q) is nd and type(k) is nd and type(v) is nd
            and q.dtype in _SUFFIX and q.dtype == k.dtype == v.dtype
            and min(q.ndim, k.ndim, v.ndim) >= 2):
        return None
    if mask is None:
        mkind = 0
    elif type(mask) is nd and mask.dtype == np.bool_:
        mkind = 1
    elif type(mask) is nd and mask.dtype == q.dtype:
        mkind = 2
    else:
        return None
    q, k, v = _rows(q), _rows(k), _rows(v)
    shapes = [q.shape[:-2], k.shape[:-2], v.shape[:-2]]
    if mask is not None:
        if mask.ndim < 2:
            mask = mask.reshape((1,) * (2 - mask.ndim) + mask.shape)
        shapes.append(mask.shape[:-2])
    batch = np.broadcast_shapes(*shapes)
    B = int(np.prod(batch))
    L, S, E, Ev = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    offs = [_offsets(a, batch) for a in (q, k, v)]
    if mask is not None:
        offs.append(_offsets(mask, batch))
        mrs, mcs = _stride(mask, -2), _stride(mask, -1)
        mptr = mask.ctypes.data
    else:
        offs.append(np.zeros(max(B, 1), np.int64))
        mrs = mcs = 0
        mptr = None
    args = [q.ctypes.data, k.ctypes.data, v.ctypes.data, mptr, mkind] + \
        [o.ctypes.data for o in offs] + \
        [B, L, S, E, Ev, _stride(q, -2), _stride(k, -2), _stride(v, -2), mrs, mcs]
    # the arrays the pointers point into stay alive with the list
    return args, (q, k, v, mask, offs), batch, B


def _nthreads(B, L, S, E):
    from . import _threads
    return _threads(B * L * S * max(E, 1) // 64)


def forward(q, k, v, mask, scale, causal):
    """``(out, lse)`` of ``_flash_attention`` on NumPy float32/float64 arrays, or None when
    they do not fit (the caller then runs the NumPy kernel)."""
    prep = _prepare(q, k, v, mask)
    if prep is None:
        return None
    args, keep, batch, B = prep
    L, S, E, Ev = args[10:14]
    f = _fn(f"ck_flash_fwd_{_SUFFIX[q.dtype]}", _COMMON + [_P, _P, _I])
    if f is None or L == 0 or S == 0:
        return None
    out = np.empty(batch + (L, Ev), q.dtype)
    lse = np.empty(batch + (L,), q.dtype)
    if B and not f(*args, float(scale), int(bool(causal)), out.ctypes.data, lse.ctypes.data,
                   _nthreads(B, L, S, E)):
        raise MemoryError("flash attention: out of memory for its block buffers")
    return out, lse


def backward(q, k, v, mask, g_out, out, lse, g_lse, scale, causal, mask_grad):
    """``(dq, dk, dv, ds)`` of ``_flash_attention_backward`` (``ds`` None unless
    ``mask_grad``), or None when the arrays do not fit."""
    prep = _prepare(q, k, v, mask)
    if prep is None:
        return None
    args, keep, batch, B = prep
    L, S, E, Ev = args[10:14]
    dt = q.dtype
    if lse.dtype != dt or L == 0 or S == 0:
        return None
    f = _fn(f"ck_flash_bwd_{_SUFFIX[dt]}", _COMMON + [_P] * 8 + [_I])
    if f is None:
        return None
    go = np.ascontiguousarray(np.broadcast_to(g_out, batch + (L, Ev)), dtype=dt)
    o = np.ascontiguousarray(np.broadcast_to(out, batch + (L, Ev)), dtype=dt)
    ls = np.ascontiguousarray(np.broadcast_to(lse, batch + (L,)), dtype=dt)
    gl = None if g_lse is None else \
        np.ascontiguousarray(np.broadcast_to(g_lse, batch + (L,)), dtype=dt)
    dq = np.empty(batch + (L, E), dt)
    dk = np.empty(batch + (S, E), dt)
    dv = np.empty(batch + (S, Ev), dt)
    ds = np.empty(batch + (L, S), dt) if mask_grad else None
    if B and not f(*args, float(scale), int(bool(causal)), go.ctypes.data, o.ctypes.data,
                   ls.ctypes.data, None if gl is None else gl.ctypes.data, dq.ctypes.data,
                   dk.ctypes.data, dv.ctypes.data, None if ds is None else ds.ctypes.data,
                   _nthreads(B, L, S, E)):
        raise MemoryError("flash attention backward: out of memory for its block buffers")
    return dq, dk, dv, ds
