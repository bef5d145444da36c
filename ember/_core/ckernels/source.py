"""C source of the eager kernels, rendered for float and double.

The elementwise kernels are not written here: each is one vectorised loop around the
expression of its entry in the scalar-function table (`ember._core.scalar_functions`:
``c_expr`` forward, ``c_grad_expr`` times the incoming gradient backward), after the
table's ``c_prelude`` (the branch-free float32 polynomials for exp/log/tanh/erf/sigmoid and
the helpers of every entry).  `EAGER` lists the functions that get a kernel, with the
dtypes where it measured faster than NumPy (the ops take the C path only for those).
What stays hand-written below are the row kernels (softmax/log_softmax, normalize,
cross_entropy, and their backward): they are reductions over a row, not elementwise
formulas, done by explicit vector lanes (see ``ROWS``).

Every kernel takes raw pointers to C-contiguous buffers plus an ``nt`` thread count; with
``nt == 1`` it runs a plain loop that never touches the OpenMP runtime (libgomp's pool is
not fork-safe, and DataLoader workers fork).  Threads take rows (or blocks of elements)
with a guided schedule: one that loses its core to another process leaves its share to the
others instead of holding the whole call (softmax 256x1024 on 2 threads beside a load of 9:
median 0.97 ms against 1.07 static, worst 1.19 against 1.46); a row or block is computed
the same on any thread, so values do not depend on the thread count.  No -ffast-math: it
would let the compiler reorder sums and drop NaN/inf handling.
"""
from .. import scalar_functions as _sf
from . import attention as _attention
from . import binary as _binary
from . import depthwise as _depthwise
from . import indexing as _indexing
from . import layer_norm as _layer_norm
from . import pooling as _pooling
from . import reduce as _reduce
from . import selection as _selection
from . import ternary as _ternary

# function -> the dtypes its compiled kernel is used for: float64 exp/log/sigmoid/erf/tanh
# and float32 tanh measured slower than NumPy's own SIMD loops, float64 gelu faster
EAGER = {"exp": ("f32",), "log": ("f32",), "tanh": (), "sigmoid": ("f32",), "erf": ("f32",),
         "silu": ("f32",), "gelu": ("f32", "f64"), "gelu_tanh": ("f32",)}
ABI_VERSION = 18

HEADER = r"""
#if defined(_OPENMP)
#define CK_PRAGMA(x) _Pragma(#x)
#else
#define CK_PRAGMA(x)
#endif

#define CK_BLOCK 4096

int ck_abi(void) { return ABI_VERSION; }
#if defined(_OPENMP)
int ck_openmp(void) { return 1; }
#else
int ck_openmp(void) { return 0; }
#endif
"""

# Blocks of CK_BLOCK elements, each one vectorised loop, dealt out to the threads whole: an
# element's value never depends on the thread count (a loop's scalar remainder can round
# differently from its vector body, so splitting it anywhere else could change a value).
_LOOP = """
static inline void {sym}_block({args}, ptrdiff_t b, ptrdiff_t n) {{
    const ptrdiff_t lo = b * CK_BLOCK, hi = n - lo < CK_BLOCK ? n : lo + CK_BLOCK;
    CK_PRAGMA(omp simd)
    for (ptrdiff_t i = lo; i < hi; i++) {{ {body} }}
}}

void {sym}({args}, ptrdiff_t n, int nt) {{
    const ptrdiff_t nb = (n + CK_BLOCK - 1) / CK_BLOCK;
    if (nt > 1) {{
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
        for (ptrdiff_t b = 0; b < nb; b++) {sym}_block({names}, b, n);
    }} else {{
        for (ptrdiff_t b = 0; b < nb; b++) {sym}_block({names}, b, n);
    }}
}}
"""
_CTYPE = {"f32": "float", "f64": "double"}
_DTYPE = {"f32": "float32", "f64": "float64"}


def elementwise(symbol, name, suffix, *, backward=False, out_type=None):
    """One loop kernel ``symbol(x0, ..., [g,] y, n, nt)`` computing table function
    ``name`` (or ``g * d name/dx`` with ``backward``) on ``suffix`` (f32/f64) elements;
    ``out_type`` is the C type of ``y`` (the input type unless given)."""
    t = _CTYPE[suffix]
    arity = 1 if backward else _sf.get(name).arity
    ins = [f"x{k}" for k in range(arity)]
    args = [f"const {t} *restrict {a}" for a in ins]
    loads = " ".join(f"{t} v{k} = x{k}[i];" for k in range(arity))
    if backward:
        args.insert(0, f"const {t} *restrict g")
        expr = f"g[i] * ({_sf.c_grad_expr(name, _DTYPE[suffix], 'v0')})"
    else:
        expr = _sf.c_expr(name, _DTYPE[suffix], *[f"v{k}" for k in range(arity)])
    out = out_type or t
    args.append(f"{out} *restrict y")
    names = ", ".join(a.rsplit(" ", 1)[1] for a in args)
    return _LOOP.format(sym=symbol, args=", ".join(args), names=names,
                        body=f"{loads} y[i] = ({out})({expr});")


# one copy per dtype: T = float/double, S = f32/f64, A = accumulator type, EXP_LE0 = exp of
# arguments <= 0 (or NaN)
ROWS = r"""
/* Row reductions by lanes: L = one 64-byte vector of T, kept in arrays that GCC maps onto
   vector registers (its `omp simd reduction` forms cost 2-3x more on short rows: 1024 rows of
   65 floats, max 19.5 -> 8.3 us).  A row's last partial vector is the row's last L elements,
   its lanes already seen masked out of the sums (a scalar loop over the rest costs as much
   as the whole row on short rows); rows shorter than L run scalar.  Sums are added per lane
   in T over blocks of 4 vectors, each block's lane sums into A lanes, which are summed in
   order at the end: float32 converts to double once per block instead of once per element
   (that conversion had cost a third of softmax's time), and a lane's float sum has at most
   five terms, so the total stays within a few ulps of the double sum.  A row is reduced on
   one thread: no value depends on the thread count. */
#define CK_LANES (64 / (int)sizeof(T))

/* the lanes' block sums acc added into the A lanes sa, and acc cleared */
static inline void ck_lanes_flush_S(A *restrict sa, T *restrict acc) {
    CK_PRAGMA(omp simd)  /* without it GCC adds the lanes one by one: 1.5x the time */
    for (int l = 0; l < CK_LANES; l++) { sa[l] += acc[l]; acc[l] = 0; }
}

/* the sum of lanes sa and acc, in lane order */
static inline A ck_lanes_total_S(const A *restrict sa, const T *restrict acc) {
    A s = 0;
    for (int l = 0; l < CK_LANES; l++) s += sa[l] + (A)acc[l];
    return s;
}

/* the maximum of a row, NaN when it holds one */
static inline T ck_row_max_S(const T *restrict x, ptrdiff_t n) {
    enum { L = CK_LANES };
    T m = -INFINITY;
    int bad = 0;
    if (n < L) {
        for (ptrdiff_t i = 0; i < n; i++) { m = x[i] > m ? x[i] : m; bad |= x[i] != x[i]; }
        return bad ? (T)NAN : m;
    }
    T mx[L];
    int bd[L];
    for (int l = 0; l < L; l++) { mx[l] = -INFINITY; bd[l] = 0; }
    for (ptrdiff_t i = 0;; i += L) {
        if (i + L > n) i = n - L;  /* the last L elements (the max does not mind repeats) */
        CK_PRAGMA(omp simd)
        for (int l = 0; l < L; l++) {
            T v = x[i + l];
            mx[l] = v > mx[l] ? v : mx[l];
            bd[l] |= v != v;
        }
        if (i + L == n) break;
    }
    for (int l = 0; l < L; l++) { m = mx[l] > m ? mx[l] : m; bad |= bd[l]; }
    return bad ? (T)NAN : m;
}

/* sum of e_i = exp(x_i - m) over a row (x_i - m <= 0, or NaN that then propagates), each
   e_i stored in y unless y is NULL */
static inline A ck_exp_sum_S(const T *restrict x, T m, T *restrict y, ptrdiff_t n) {
    enum { L = CK_LANES };
    if (n < L) {
        A s = 0;
        for (ptrdiff_t i = 0; i < n; i++) { T e = EXP_LE0(x[i] - m); if (y) y[i] = e; s += e; }
        return s;
    }
    A sa[L];
    T acc[L];
    for (int l = 0; l < L; l++) { sa[l] = 0; acc[l] = 0; }
    ptrdiff_t i = 0;
    int k = 0;
    for (; i + L <= n; i += L) {
        CK_PRAGMA(omp simd)
        for (int l = 0; l < L; l++) {
            T e = EXP_LE0(x[i + l] - m);
            if (y) y[i + l] = e;
            acc[l] += e;
        }
        if (++k == 4) { k = 0; ck_lanes_flush_S(sa, acc); }
    }
    if (n - i <= L / 4) {  /* a few left: scalar exps cost less than one more vector */
        A s = ck_lanes_total_S(sa, acc);
        for (; i < n; i++) { T e = EXP_LE0(x[i] - m); if (y) y[i] = e; s += e; }
        return s;
    }
    {  /* the last L elements; lanes below `seen` were summed already */
        const ptrdiff_t seen = i - (n - L);
        i = n - L;
        CK_PRAGMA(omp simd)
        for (int l = 0; l < L; l++) {
            T e = EXP_LE0(x[i + l] - m);
            if (y) y[i + l] = e;  /* the same value again where seen */
            acc[l] += l < seen ? (T)0 : e;
        }
    }
    return ck_lanes_total_S(sa, acc);
}

/* sum over a row of a_i * b_i (of a_i when b is NULL), each product rounded to T */
static inline A ck_dot_S(const T *restrict a, const T *restrict b, ptrdiff_t n) {
    enum { L = CK_LANES };
    if (n < L) {
        A s = 0;
        for (ptrdiff_t i = 0; i < n; i++) s += b ? a[i] * b[i] : a[i];
        return s;
    }
    A sa[L];
    T acc[L];
    for (int l = 0; l < L; l++) { sa[l] = 0; acc[l] = 0; }
    ptrdiff_t i = 0;
    int k = 0;
    for (; i + L <= n; i += L) {
        CK_PRAGMA(omp simd)
        for (int l = 0; l < L; l++) acc[l] += b ? a[i + l] * b[i + l] : a[i + l];
        if (++k == 4) { k = 0; ck_lanes_flush_S(sa, acc); }
    }
    if (i < n) {
        const ptrdiff_t seen = i - (n - L);
        i = n - L;
        CK_PRAGMA(omp simd)
        for (int l = 0; l < L; l++) {
            T v = b ? a[i + l] * b[i + l] : a[i + l];
            acc[l] += l < seen ? (T)0 : v;
        }
    }
    return ck_lanes_total_S(sa, acc);
}

/* a row whose max m is NaN or infinite (a NaN, all -inf, a +inf): NumPy's formula */
static inline void ck_softmax_special_S(const T *restrict x, T *restrict y, ptrdiff_t n,
                                        int lg, T m) {
    A s = 0;
    for (ptrdiff_t i = 0; i < n; i++) { T e = EXP(x[i] - m); s += e; y[i] = lg ? x[i] - m : e; }
    if (lg) { T l = LOG((T)s); for (ptrdiff_t i = 0; i < n; i++) y[i] -= l; }
    else { for (ptrdiff_t i = 0; i < n; i++) y[i] /= (T)s; }
}

/* rows per chunk of ck_softmax_rows_S: their logs (or reciprocals) are one vector loop,
   always over CK_ROWS lanes, so a row's value does not depend on how rows are chunked */
#define CK_ROWS 16

/* softmax / log_softmax of rows [r0, r1) (at most CK_ROWS): per row the max, then exp and
   sum; for the chunk at once log(sum) (a scalar log per row had cost 14% of log_softmax on
   rows of 65) or the reciprocal of the sum; then per row y scaled by it (as torch's
   kernel; a division costs four times the product), or x - max - log(sum). */
static inline void ck_softmax_rows_S(const T *restrict x, T *restrict y, ptrdiff_t r0,
                                     ptrdiff_t r1, ptrdiff_t n, int lg) {
    T m[CK_ROWS], f[CK_ROWS];
    A s[CK_ROWS];
    const int k = (int)(r1 - r0);
    for (int j = 0; j < CK_ROWS; j++) { m[j] = 0; s[j] = 1; }
    for (int j = 0; j < k; j++) {
        const T *xr = x + (r0 + j) * n;
        T *yr = y + (r0 + j) * n;
        const T mj = ck_row_max_S(xr, n);
        if (mj != mj || mj == -INFINITY || mj == INFINITY) {
            ck_softmax_special_S(xr, yr, n, lg, mj);
            m[j] = NAN;  /* done */
            continue;
        }
        m[j] = mj;
        s[j] = ck_exp_sum_S(xr, mj, lg ? 0 : yr, n);
    }
    if (lg) {
        CK_PRAGMA(omp simd)
        for (int j = 0; j < CK_ROWS; j++) f[j] = LOG((T)s[j]);
    } else {
        CK_PRAGMA(omp simd)
        for (int j = 0; j < CK_ROWS; j++) f[j] = (T)((A)1 / s[j]);
    }
    for (int j = 0; j < k; j++) {
        const T mj = m[j], fj = f[j];
        if (mj != mj) continue;
        const T *xr = x + (r0 + j) * n;
        T *yr = y + (r0 + j) * n;
        if (lg) {
            CK_PRAGMA(omp simd)
            for (ptrdiff_t i = 0; i < n; i++) yr[i] = (xr[i] - mj) - fj;
        } else {
            CK_PRAGMA(omp simd)
            for (ptrdiff_t i = 0; i < n; i++) yr[i] = yr[i] * fj;
        }
    }
}

void ck_softmax_S(const T *restrict x, T *restrict y, ptrdiff_t rows, ptrdiff_t n, int lg,
                  int nt) {
    if (nt > 1) {
        /* chunks small enough that every thread gets several */
        ptrdiff_t ch = rows / (4 * nt);
        ch = ch < 1 ? 1 : ch > CK_ROWS ? CK_ROWS : ch;
        const ptrdiff_t nc = (rows + ch - 1) / ch;
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
        for (ptrdiff_t c = 0; c < nc; c++)
            ck_softmax_rows_S(x, y, c * ch, c * ch + ch < rows ? c * ch + ch : rows, n, lg);
    } else {
        for (ptrdiff_t r = 0; r < rows; r += CK_ROWS)
            ck_softmax_rows_S(x, y, r, r + CK_ROWS < rows ? r + CK_ROWS : rows, n, lg);
    }
}

/* the input gradient of softmax from its output y: y * (g - sum(g * y)); of log_softmax:
   g - exp(y) * sum(g) (one row; the sums as ck_dot_S; y <= 0 or NaN, as log_softmax's
   output is: a positive y, which no output has, would count as 0). */
static inline void ck_softmax_backward_row_S(const T *restrict g, const T *restrict y,
                                             T *restrict gx, ptrdiff_t n, int lg) {
    if (lg) {
        T t = (T)ck_dot_S(g, 0, n);
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = 0; i < n; i++) gx[i] = g[i] - EXP_LE0(y[i] > 0 ? (T)0 : y[i]) * t;
    } else {
        T t = (T)ck_dot_S(g, y, n);
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = 0; i < n; i++) gx[i] = y[i] * (g[i] - t);
    }
}

void ck_softmax_backward_S(const T *restrict g, const T *restrict y, T *restrict gx,
                           ptrdiff_t rows, ptrdiff_t n, int lg, int nt) {
    if (nt > 1) {
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
        for (ptrdiff_t r = 0; r < rows; r++)
            ck_softmax_backward_row_S(g + r * n, y + r * n, gx + r * n, n, lg);
    } else {
        for (ptrdiff_t r = 0; r < rows; r++)
            ck_softmax_backward_row_S(g + r * n, y + r * n, gx + r * n, n, lg);
    }
}

/* the mean and 1/sqrt(var + eps) of a row (two passes, accumulated in A): normalize's and
   layer_norm's (ckernels/layer_norm.py) statistics */
static inline void ck_norm_stats_S(const T *restrict x, ptrdiff_t n, double eps, T *mu, T *r) {
    A s = 0;
    CK_PRAGMA(omp simd reduction(+:s))
    for (ptrdiff_t i = 0; i < n; i++) s += x[i];
    T m = (T)(s / (A)n);
    A q = 0;
    CK_PRAGMA(omp simd reduction(+:q))
    for (ptrdiff_t i = 0; i < n; i++) { A d = (A)(x[i] - m); q += d * d; }
    T var = (T)(q / (A)n);
    *mu = m;
    *r = (T)1 / SQRT(var + (T)eps);
}

/* (x - mean) * rstd of one row, its mean and rstd */
static inline void ck_normalize_row_S(const T *restrict x, T *restrict y, T *restrict mean,
                                      T *restrict rstd, ptrdiff_t n, double eps) {
    T mu, r;
    ck_norm_stats_S(x, n, eps, &mu, &r);
    CK_PRAGMA(omp simd)
    for (ptrdiff_t i = 0; i < n; i++) y[i] = (x[i] - mu) * r;
    *mean = mu;
    *rstd = r;
}

void ck_normalize_S(const T *restrict x, T *restrict y, T *restrict mean, T *restrict rstd,
                    ptrdiff_t rows, ptrdiff_t n, double eps, int nt) {
    if (nt > 1) {
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
        for (ptrdiff_t r = 0; r < rows; r++)
            ck_normalize_row_S(x + r * n, y + r * n, mean + r, rstd + r, n, eps);
    } else {
        for (ptrdiff_t r = 0; r < rows; r++)
            ck_normalize_row_S(x + r * n, y + r * n, mean + r, rstd + r, n, eps);
    }
}
/* gradient of normalize for one row: (g - mean(g) - xh * mean(g * xh)) * r, then the
   statistics' terms + gm / n and - xh * (gr * r * r / n) when given (has_gm, has_gr). */
static inline void ck_normalize_backward_row_S(const T *restrict g, const T *restrict xh,
                                               T *restrict gx, T r, T gmn, T grn, int has_gm,
                                               int has_gr, ptrdiff_t n) {
    A s = 0, p = 0;
    CK_PRAGMA(omp simd reduction(+:s) reduction(+:p))
    for (ptrdiff_t i = 0; i < n; i++) { s += g[i]; p += (A)g[i] * (A)xh[i]; }
    T mg = (T)(s / (A)n), mgx = (T)(p / (A)n);
    CK_PRAGMA(omp simd)
    for (ptrdiff_t i = 0; i < n; i++) gx[i] = ((g[i] - mg) - xh[i] * mgx) * r;
    if (has_gm) {
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = 0; i < n; i++) gx[i] += gmn;
    }
    if (has_gr) {
        T d = grn * r * r / (T)n;
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = 0; i < n; i++) gx[i] -= xh[i] * d;
    }
}

/* gm, gr: one value per row, or NULL when that gradient is absent */
void ck_normalize_backward_S(const T *restrict g, const T *restrict xh, const T *restrict rstd,
                             const T *restrict gm, const T *restrict gr, T *restrict gx,
                             ptrdiff_t rows, ptrdiff_t n, int nt) {
    if (nt > 1) {
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
        for (ptrdiff_t r = 0; r < rows; r++)
            ck_normalize_backward_row_S(g + r * n, xh + r * n, gx + r * n, rstd[r],
                                        gm ? gm[r] / (T)n : 0, gr ? gr[r] : 0, gm != 0, gr != 0,
                                        n);
    } else {
        for (ptrdiff_t r = 0; r < rows; r++)
            ck_normalize_backward_row_S(g + r * n, xh + r * n, gx + r * n, rstd[r],
                                        gm ? gm[r] / (T)n : 0, gr ? gr[r] : 0, gm != 0, gr != 0,
                                        n);
    }
}

/* cross entropy of rows [r0, r1) (at most CK_ROWS) of logits x (C classes) against
   targets t, the log-softmax computed as NumPy's (x - max) - log(sum(exp(x - max))), the
   chunk's logs as one vector loop (as ck_softmax_rows_S): per row the target's weighted
   nll, the label-smoothing term -sum_c w_c logp_c (when smooth) and the target's weight,
   all 0 for an ignored row.  Returns the first row whose target is out of range (nothing
   is written for it), or -1. */
static inline ptrdiff_t ck_ce_rows_S(const T *restrict x, const int64_t *restrict t,
                                     const T *restrict w, int64_t ignore, int smooth,
                                     ptrdiff_t r0, ptrdiff_t r1, ptrdiff_t C, T *restrict nll,
                                     T *restrict sm, T *restrict wt) {
    T m[CK_ROWS], l[CK_ROWS];
    A s[CK_ROWS];
    ptrdiff_t bad = -1;
    const int k = (int)(r1 - r0);
    for (int j = 0; j < CK_ROWS; j++) { m[j] = 0; s[j] = 1; }
    for (int j = 0; j < k; j++) {
        const ptrdiff_t r = r0 + j;
        if (t[r] == ignore || t[r] < 0 || t[r] >= C) continue;
        m[j] = ck_row_max_S(x + r * C, C);
        s[j] = ck_exp_sum_S(x + r * C, m[j], 0, C);  /* NaN, +-inf rows: NaN through */
    }
    CK_PRAGMA(omp simd)
    for (int j = 0; j < CK_ROWS; j++) l[j] = LOG((T)s[j]);
    for (int j = 0; j < k; j++) {
        const ptrdiff_t r = r0 + j;
        const int64_t tr = t[r];
        if (tr == ignore) { nll[r] = 0; sm[r] = 0; wt[r] = 0; continue; }
        if (tr < 0 || tr >= C) { if (bad < 0) bad = r; continue; }
        const T *xr = x + r * C;
        const T mj = m[j], lj = l[j], w_t = w ? w[tr] : (T)1;
        wt[r] = w_t;
        nll[r] = -((xr[tr] - mj) - lj) * w_t;
        if (smooth) {
            A q = 0;
            CK_PRAGMA(omp simd reduction(+:q))
            for (ptrdiff_t i = 0; i < C; i++) q += (A)(((xr[i] - mj) - lj) * (w ? w[i] : (T)1));
            sm[r] = -(T)q;
        }
    }
    return bad;
}

/* rows of (N, C) logits; returns the first row whose target is out of range, or -1 */
ptrdiff_t ck_ce_S(const T *restrict x, const int64_t *restrict t, const T *restrict w,
                  int64_t ignore, int smooth, T *restrict nll, T *restrict sm, T *restrict wt,
                  ptrdiff_t N, ptrdiff_t C, int nt) {
    if (nt > 1) {
        ptrdiff_t ch = N / (4 * nt);
        ch = ch < 1 ? 1 : ch > CK_ROWS ? CK_ROWS : ch;
        const ptrdiff_t nc = (N + ch - 1) / ch;
        ptrdiff_t bad = N;
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(guided) reduction(min:bad))
        for (ptrdiff_t c = 0; c < nc; c++) {
            ptrdiff_t b = ck_ce_rows_S(x, t, w, ignore, smooth, c * ch,
                                       c * ch + ch < N ? c * ch + ch : N, C, nll, sm, wt);
            if (b >= 0 && b < bad) bad = b;
        }
        return bad < N ? bad : -1;
    }
    for (ptrdiff_t r = 0; r < N; r += CK_ROWS) {
        ptrdiff_t b = ck_ce_rows_S(x, t, w, ignore, smooth, r, r + CK_ROWS < N ? r + CK_ROWS : N,
                                   C, nll, sm, wt);
        if (b >= 0) return b;
    }
    return -1;
}

/* one row of ck_ce_grad_S: logits xr, gradient o, target tr, the loss's gradient gl */
static inline void ck_ce_grad_row_S(const T *restrict xr, T *restrict o, int64_t tr,
                                    const T *restrict w, int64_t ignore, double smoothing,
                                    T gl, T lead, T sk, ptrdiff_t C) {
    int valid = tr != ignore;
    int64_t tc = valid ? tr : 0;
    T w_t = valid ? (w ? w[tc] : (T)1) : (T)0;
    T coef = lead * gl * w_t;
    T m = ck_row_max_S(xr, C);
    A s = ck_exp_sum_S(xr, m, o, C);
    const T inv = (T)((A)1 / s);
    if (smoothing == 0.0) {
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = 0; i < C; i++) o[i] = (o[i] * inv) * -coef;
    } else {
        T sv = gl * (T)valid * sk;
        if (w) {
            A q = 0;
            CK_PRAGMA(omp simd reduction(+:q))
            for (ptrdiff_t i = 0; i < C; i++) q += (A)(sv * w[i]);
            T S = (T)q;
            CK_PRAGMA(omp simd)
            for (ptrdiff_t i = 0; i < C; i++) {
                T p = o[i] * inv;
                o[i] = p * -coef + (sv * w[i] - p * S);
            }
        } else {
            T S = sv * (T)C;
            CK_PRAGMA(omp simd)
            for (ptrdiff_t i = 0; i < C; i++) {
                T p = o[i] * inv;
                o[i] = p * -coef + (sv - p * S);
            }
        }
    }
    o[tc] = o[tc] + coef;
}

/* d loss / d logits of cross entropy as NumPy's formula: p = exp(logp), r = p * -coef with
   coef = -(1 - smoothing) * g * w_t added at the target, then the smoothing term
   s_c = g * (-smoothing / C) * w_c: r += s - p * sum(s).  g: one per row (g_rows), else
   one value, divided by the sum of the targets' weights when mean.  Returns the first row
   whose target is out of range (nothing written then), or -1. */
ptrdiff_t ck_ce_grad_S(const T *restrict x, const int64_t *restrict t, const T *restrict w,
                       int64_t ignore, double smoothing, const T *restrict g, int g_rows,
                       int mean, T *restrict out, ptrdiff_t N, ptrdiff_t C, int nt) {
    A den = 0;
    for (ptrdiff_t r = 0; r < N; r++) {
        if (t[r] == ignore) continue;
        if (t[r] < 0 || t[r] >= C) return r;
        den += w ? (A)w[t[r]] : (A)1;
    }
    T g0 = mean ? g[0] / (T)den : g[0];
    const T lead = (T)(-(1.0 - smoothing)), sk = (T)(-smoothing / (double)C);
    if (nt > 1) {
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
        for (ptrdiff_t r = 0; r < N; r++)
            ck_ce_grad_row_S(x + r * C, out + r * C, t[r], w, ignore, smoothing,
                             g_rows ? g[r] : g0, lead, sk, C);
    } else {
        for (ptrdiff_t r = 0; r < N; r++)
            ck_ce_grad_row_S(x + r * C, out + r * C, t[r], w, ignore, smoothing,
                             g_rows ? g[r] : g0, lead, sk, C);
    }
    return -1;
}
"""

_ROW_NAMES = {
    "f32": dict(T="float", A="double", EXP="ck_expf", EXP_LE0="ck_expf_le0", LOG="ck_logf",
                SQRT="sqrtf"),
    "f64": dict(T="double", A="double", EXP="exp", EXP_LE0="exp", LOG="log", SQRT="sqrt"),
}


def render():
    """The whole translation unit."""
    parts = [f"#define ABI_VERSION {ABI_VERSION}\n", _sf.c_prelude(), HEADER]
    for suffix, names in _ROW_NAMES.items():
        for name in EAGER:
            parts.append(elementwise(f"ck_{name}_{suffix}", name, suffix))
            if _sf.get(name).c_grad is not None:
                parts.append(elementwise(f"ck_{name}_backward_{suffix}", name, suffix,
                                         backward=True))
        defs = "".join(f"#define {k} {v}\n" for k, v in names.items())
        undefs = "".join(f"#undef {k}\n" for k in names)
        parts.append(defs + ROWS.replace("_S(", f"_{suffix}(") + undefs)
    parts.append(_attention.render())
    parts.append(_binary.render())
    parts.append(_reduce.render())
    parts.append(_ternary.render())
    parts.append(_pooling.render())
    parts.append(_depthwise.render())
    parts.append(_indexing.render())
    parts.append(_selection.render())
    parts.append(_layer_norm.render())
    return "".join(parts)
