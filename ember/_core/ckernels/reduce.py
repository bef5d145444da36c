"""sum (and so mean) of float32/float64 arrays in C: NumPy's values, bit for bit, on any
number of threads.

NumPy sums a contiguous run of elements pairwise (``pairwise_sum`` of its
``loops_utils.h.src``): runs of at most 128 elements with eight accumulators, longer ones
split in two at a multiple of 8 and the halves added.  One chain of dependent vector adds
per 128 elements makes it latency-bound (1024x512 float32: ~85 us for ``sum()`` or
``sum(-1)``, torch ~25).  `ck_sum_*` computes the same tree, operation for operation, so
every value is NumPy's, and gets its speed from evaluating up to eight trees of equal shape
at once (rows of one length, or the equal halves of a node), which keeps as many vector
chains in flight, and from the threads.  The threads never split one sum differently: they
take whole rows, whole columns, or whole subtrees of one tree, and the tree above the
subtrees is added in NumPy's order afterwards, so a value does not depend on the thread
count.

Reduced dims must be one consecutive group; the array is seen as (``P``, ``R``, ``C``) with
``R`` the reduced extent:

* ``C == 1`` (the trailing dims): each of the ``P`` rows is one pairwise sum (``P == 1``:
  all elements, split into subtrees over the threads);
* ``C > 1``: NumPy adds the ``R`` slices one after the other into a zeroed result (its inner
  loop runs along the contiguous ``C``), so each column's sum is sequential from 0; the
  threads take blocks of columns.
"""
import sys

import numpy as np

__all__ = ["render", "sum_", "mean", "extreme"]

_C = r"""
/* NumPy's pairwise sum of K runs of n elements, the k-th at a + k * stride, into out[k].
   Runs of at most 128 elements: eight accumulators, added as NumPy adds them; K trees of
   one shape are evaluated together (independent chains).  Equal halves of adjacent runs
   (stride == n) double K up to 8. */
static inline __attribute__((always_inline)) void ck_pw_leaf_S(const T *restrict a,
        ptrdiff_t stride, ptrdiff_t n, int K, T *restrict out) {
    if (n < 8) {
        for (int k = 0; k < K; k++) {
            T res = 0;
            for (ptrdiff_t i = 0; i < n; i++) res += a[k * stride + i];
            out[k] = res;
        }
        return;
    }
    /* one vector of the eight accumulators per run: lane j is NumPy's r[j] */
    V r[8];
    for (int k = 0; k < K; k++) __builtin_memcpy(&r[k], a + k * stride, sizeof(V));
    const ptrdiff_t m = n - (n % 8);
    for (ptrdiff_t i = 8; i < m; i += 8) {
        for (int k = 0; k < K; k++) {
            V v;
            __builtin_memcpy(&v, a + k * stride + i, sizeof(V));
            r[k] += v;
        }
    }
    for (int k = 0; k < K; k++) {
        T res = ((r[k][0] + r[k][1]) + (r[k][2] + r[k][3])) +
                ((r[k][4] + r[k][5]) + (r[k][6] + r[k][7]));
        for (ptrdiff_t i = m; i < n; i++) res += a[k * stride + i];
        out[k] = res;
    }
}

static void ck_pw_S(const T *restrict a, ptrdiff_t stride, ptrdiff_t n, int K,
                    T *restrict out) {
    if (n <= 128) {
        if (K == 8) ck_pw_leaf_S(a, stride, n, 8, out);
        else if (K == 4) ck_pw_leaf_S(a, stride, n, 4, out);
        else if (K == 2) ck_pw_leaf_S(a, stride, n, 2, out);
        else ck_pw_leaf_S(a, stride, n, 1, out);
        return;
    }
    ptrdiff_t n2 = n / 2;
    n2 -= n2 % 8;
    if (K < 8 && stride == n && n2 * 2 == n) {
        /* the 2K halves are K * 2 adjacent runs of n2 */
        T h[8];
        ck_pw_S(a, n2, n2, 2 * K, h);
        for (int k = 0; k < K; k++) out[k] = h[2 * k] + h[2 * k + 1];
        return;
    }
    T lo[8], hi[8];
    ck_pw_S(a, stride, n2, K, lo);
    ck_pw_S(a + n2, stride, n - n2, K, hi);
    for (int k = 0; k < K; k++) out[k] = lo[k] + hi[k];
}

/* the sum of each of `rows` rows of n elements (groups of 8 rows at once), added to 0 as
   NumPy adds it to its identity (a sum of negative zeros is +0) */
static void ck_sum_rows_block_S(const T *restrict x, T *restrict y, ptrdiff_t g,
                                ptrdiff_t rows, ptrdiff_t n) {
    const ptrdiff_t r0 = g * 8, left = rows - r0;
    T out[8];
    if (left >= 8) {
        ck_pw_S(x + r0 * n, n, n, 8, out);
        for (int k = 0; k < 8; k++) y[r0 + k] = (T)0 + out[k];
    } else {
        for (ptrdiff_t r = r0; r < rows; r++) {
            ck_pw_S(x + r * n, n, n, 1, out);
            y[r] = (T)0 + out[0];
        }
    }
}

/* the node sizes of NumPy's tree down to subtrees of at most `task` elements, in order:
   the subtrees' offsets and sizes go to off/len (up to `cap`), the count is returned */
static ptrdiff_t ck_pw_tasks_S(ptrdiff_t base, ptrdiff_t n, ptrdiff_t task, ptrdiff_t *off,
                               ptrdiff_t *len, ptrdiff_t cnt) {
    if (n <= task || n <= 128) { off[cnt] = base; len[cnt] = n; return cnt + 1; }
    ptrdiff_t n2 = n / 2;
    n2 -= n2 % 8;
    cnt = ck_pw_tasks_S(base, n2, task, off, len, cnt);
    return ck_pw_tasks_S(base + n2, n - n2, task, off, len, cnt);
}

/* the tree above the subtrees, added in NumPy's order from their sums v (in order) */
static T ck_pw_join_S(ptrdiff_t n, ptrdiff_t task, const T *v, ptrdiff_t *at) {
    if (n <= task || n <= 128) return v[(*at)++];
    ptrdiff_t n2 = n / 2;
    n2 -= n2 % 8;
    T lo = ck_pw_join_S(n2, task, v, at);
    T hi = ck_pw_join_S(n - n2, task, v, at);
    return lo + hi;
}

#define CK_SUM_TASKS 256

/* y[p] = sum of row p (P rows of R elements); P == 1: one sum of R elements, its subtrees
   over the threads */
void ck_sum_rows_S(const T *restrict x, T *restrict y, ptrdiff_t P, ptrdiff_t R, int nt) {
    if (P == 1) {
        /* subtrees of at most max(R / 64, 8192) elements: each of them holds more than
           half of that less 8, so there are fewer than CK_SUM_TASKS of them */
        ptrdiff_t task = R / 64;
        if (task < 8192) task = 8192;
        ptrdiff_t off[CK_SUM_TASKS], len[CK_SUM_TASKS];
        T v[CK_SUM_TASKS];
        const ptrdiff_t cnt = ck_pw_tasks_S(0, R, task, off, len, 0);
        if (nt > 1 && cnt > 1) {
            CK_PRAGMA(omp parallel for num_threads(nt) schedule(dynamic))
            for (ptrdiff_t t = 0; t < cnt; t++) ck_pw_S(x + off[t], len[t], len[t], 1, v + t);
        } else {
            for (ptrdiff_t t = 0; t < cnt; t++) ck_pw_S(x + off[t], len[t], len[t], 1, v + t);
        }
        ptrdiff_t at = 0;
        y[0] = (T)0 + ck_pw_join_S(R, task, v, &at);
        return;
    }
    const ptrdiff_t ng = (P + 7) / 8;
    if (nt > 1) {
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
        for (ptrdiff_t g = 0; g < ng; g++) ck_sum_rows_block_S(x, y, g, P, R);
    } else {
        for (ptrdiff_t g = 0; g < ng; g++) ck_sum_rows_block_S(x, y, g, P, R);
    }
}

#define CK_SUM_COLS 512

/* y[p, c] = sum over r of x[p, r, c], each added in order from 0 (NumPy's order when the
   reduced dims are not the trailing ones); threads take blocks of CK_SUM_COLS columns */
static void ck_sum_cols_block_S(const T *restrict x, T *restrict y, ptrdiff_t t,
                                ptrdiff_t nc, ptrdiff_t R, ptrdiff_t C) {
    const ptrdiff_t p = t / nc, c0 = (t % nc) * CK_SUM_COLS;
    const ptrdiff_t w = C - c0 < CK_SUM_COLS ? C - c0 : CK_SUM_COLS;
    T *restrict o = y + p * C + c0;
    const T *restrict xp = x + p * R * C + c0;
    for (ptrdiff_t c = 0; c < w; c++) o[c] = 0;
    for (ptrdiff_t r = 0; r < R; r++) {
        const T *restrict xr = xp + r * C;
        CK_PRAGMA(omp simd)
        for (ptrdiff_t c = 0; c < w; c++) o[c] += xr[c];
    }
}

void ck_sum_cols_S(const T *restrict x, T *restrict y, ptrdiff_t P, ptrdiff_t R, ptrdiff_t C,
                   int nt) {
    const ptrdiff_t nc = (C + CK_SUM_COLS - 1) / CK_SUM_COLS, nb = P * nc;
    if (nt > 1 && nb > 1) {
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
        for (ptrdiff_t t = 0; t < nb; t++) ck_sum_cols_block_S(x, y, t, nc, R, C);
    } else {
        for (ptrdiff_t t = 0; t < nb; t++) ck_sum_cols_block_S(x, y, t, nc, R, C);
    }
}

/* amax (mx) or amin of each of P rows of R elements: NaN when the row holds one */
static inline T ck_ext_row_S(const T *restrict a, ptrdiff_t n, int mx) {
    T m = a[0];
    int bad = 0;
    if (mx) {
        CK_PRAGMA(omp simd reduction(max:m) reduction(|:bad))
        for (ptrdiff_t i = 0; i < n; i++) { m = a[i] > m ? a[i] : m; bad |= a[i] != a[i]; }
    } else {
        CK_PRAGMA(omp simd reduction(min:m) reduction(|:bad))
        for (ptrdiff_t i = 0; i < n; i++) { m = a[i] < m ? a[i] : m; bad |= a[i] != a[i]; }
    }
    return bad ? (T)NAN : m;
}

void ck_ext_rows_S(const T *restrict x, T *restrict y, ptrdiff_t P, ptrdiff_t R, int mx,
                   int nt) {
    if (nt > 1) {
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
        for (ptrdiff_t p = 0; p < P; p++) y[p] = ck_ext_row_S(x + p * R, R, mx);
    } else {
        for (ptrdiff_t p = 0; p < P; p++) y[p] = ck_ext_row_S(x + p * R, R, mx);
    }
}

/* amax/amin over r of x[p, r, c]: a NaN sticks (neither comparison replaces it) */
static void ck_ext_cols_block_S(const T *restrict x, T *restrict y, ptrdiff_t t,
                                ptrdiff_t nc, ptrdiff_t R, ptrdiff_t C, int mx) {
    const ptrdiff_t p = t / nc, c0 = (t % nc) * CK_SUM_COLS;
    const ptrdiff_t w = C - c0 < CK_SUM_COLS ? C - c0 : CK_SUM_COLS;
    T *restrict o = y + p * C + c0;
    const T *restrict xp = x + p * R * C + c0;
    for (ptrdiff_t c = 0; c < w; c++) o[c] = xp[c];
    for (ptrdiff_t r = 1; r < R; r++) {
        const T *restrict xr = xp + r * C;
        if (mx) {
            CK_PRAGMA(omp simd)
            for (ptrdiff_t c = 0; c < w; c++)
                o[c] = (xr[c] > o[c] || xr[c] != xr[c]) && o[c] == o[c] ? xr[c] : o[c];
        } else {
            CK_PRAGMA(omp simd)
            for (ptrdiff_t c = 0; c < w; c++)
                o[c] = (xr[c] < o[c] || xr[c] != xr[c]) && o[c] == o[c] ? xr[c] : o[c];
        }
    }
}

void ck_ext_cols_S(const T *restrict x, T *restrict y, ptrdiff_t P, ptrdiff_t R, ptrdiff_t C,
                   int mx, int nt) {
    const ptrdiff_t nc = (C + CK_SUM_COLS - 1) / CK_SUM_COLS, nb = P * nc;
    if (nt > 1 && nb > 1) {
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
        for (ptrdiff_t t = 0; t < nb; t++) ck_ext_cols_block_S(x, y, t, nc, R, C, mx);
    } else {
        for (ptrdiff_t t = 0; t < nb; t++) ck_ext_cols_block_S(x, y, t, nc, R, C, mx);
    }
}
"""

_CTYPE = {"f32": "float", "f64": "double"}


def render():
    """The eager library's sum kernels ``ck_sum_rows_<f32|f64>``/``ck_sum_cols_...``."""
    parts = ["\n/* ---- sums (ember/_core/ckernels/reduce.py) ---- */\n"]
    for s, t in _CTYPE.items():
        parts.append(f"#define T {t}\ntypedef {t} ck_v8_{s} __attribute__((vector_size("
                     f"{8 * (4 if s == 'f32' else 8)})));\n#define V ck_v8_{s}\n"
                     + _C.replace("_S(", f"_{s}(") + "#undef V\n#undef T\n")
    return "".join(parts)




_ck = sys.modules[__name__.rpartition(".")[0]]  # the package (it imports this module)
_ndarray = np.ndarray


def _plan(x, dims):
    """``(P, R, C)`` of ``x`` summed over ``dims`` (sorted, non-negative), or None when the
    dims are not one consecutive group (or there are none)."""
    if not dims or dims[-1] - dims[0] != len(dims) - 1:
        return None
    shape = x.shape
    P = R = C = 1
    for i, s in enumerate(shape):
        if i < dims[0]:
            P *= s
        elif i <= dims[-1]:
            R *= s
        else:
            C *= s
    return P, R, C


def _run(kind, x, dims, keepdim, extra=(), whole=True):
    """Runs ``ck_<kind>_rows``/``_cols`` on ``x`` reduced over ``dims`` (``extra``: the int
    arguments before the thread count) into a fresh result, or returns None when the
    kernels do not take ``x`` (small, not a C-contiguous float32/float64 NumPy array, dims
    not one consecutive group, all elements unless ``whole``, no compiler)."""
    if not (type(x) is _ndarray and x.size >= _ck.MIN_SIZE and _ck.ENABLED
            and x.flags.c_contiguous and x.dtype in _ck._SUFFIX):
        return None
    plan = _plan(x, dims)
    if plan is None or not whole and plan[0] == plan[2] == 1:
        return None
    P, R, C = plan
    sizes = (P, R) if C == 1 else (P, R, C)
    args = ("c_void_p", "c_void_p") + ("c_ssize_t",) * len(sizes) + ("c_int",) * (len(extra) + 1)
    f = _ck._fn(f"ck_{kind}_{'rows' if C == 1 else 'cols'}_{_ck._SUFFIX[x.dtype]}",
                _ck._types(*args))
    if f is None:
        return None
    y = np.empty(_out_shape(x.shape, dims, keepdim), x.dtype)
    f(x.ctypes.data, y.ctypes.data, *sizes, *extra, _ck._threads(x.size))
    return y


def sum_(x, dims, keepdim):
    """``x.sum(dims, keepdims=keepdim)`` for a C-contiguous float32/float64 NumPy array, as
    NumPy computes it bit for bit, or None when the kernels do not take it (small, not
    contiguous, dims not one consecutive group, no compiler)."""
    return _run("sum", x, dims, keepdim)


def extreme(x, dims, keepdim, largest):
    """``x.max(dims)`` (``largest``) or ``x.min(dims)`` with keepdims ``keepdim`` for a
    C-contiguous float32/float64 NumPy array, NaN where a reduced slice holds one; None when
    the kernels do not take it (as `sum_`, and a reduction over all elements: NumPy's own
    loop is vectorised there).  The value is NumPy's; the sign of a zero maximum where
    both zeros occur may differ (-0.0 == 0.0)."""
    return _run("ext", x, dims, keepdim, (int(largest),), whole=False)


def _out_shape(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def mean(x, dims, keepdim):
    """``x.mean(dims, keepdims=keepdim)`` as NumPy computes it (the sum divided by the count
    in ``x``'s dtype), or None as `sum_`."""
    y = sum_(x, dims, keepdim)
    if y is None:
        return None
    n = 1
    for d in dims:
        n *= x.shape[d]
    return np.true_divide(y, n, out=y)
