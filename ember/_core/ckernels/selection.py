"""relu and its backward, gather, scatter_add, topk, a last-dimension flip and mse_loss's two
elementwise passes in C.

NumPy's kernels for these pay for generality: ``np.maximum(x, 0)`` propagates NaN through a
loop four times slower than an add on this NumPy; gather and scatter_add build a flat intp
index (a copy, a multiply and an add over the whole index) before ``take``/``np.add.at``;
topk sorts (or partitions and sorts) every row; ``np.flip(x, -1).copy()`` is a strided copy
loop.  These loops do one pass each.

Semantics, as torch's CPU kernels:

* relu: ``x < 0 ? 0 : x`` (NaN and -0.0 pass through); its backward (``threshold_backward``
  on the output) ``y <= 0 ? 0 : g``, a select, so a NaN/inf gradient at a zero is dropped.
* gather/scatter_add: the index visited in C order; scatter_add adds each fibre's values in
  increasing index position, as torch's loop does, so the sums round the same way.  An
  index out of ``[0, size)`` stops the loop and returns its flat position (the caller
  raises torch's error; scatter_add has then written only into its own fresh copy).
* topk: the ``k`` first elements of each row in the order (value descending for largest,
  ascending otherwise; NaN counts as the largest value), ties by lower index.  torch's CPU
  kernel leaves the order of equal values to its C++ library's unstable
  ``std::partial_sort``/``std::nth_element``; this keeps one fixed, documented order.  Each
  element becomes one integer key (its value's bits made monotone, its index below), so
  every comparison is one integer compare: a bounded heap for few ``k``, else a quickselect
  and a sort of the ``k``.

gather and flip move elements without looking at them, so one loop per element size serves
every dtype.  Single-threaded: scatter_add's rows can repeat (threads would race), and the
others are memory-bound at the sizes where they are called.
"""
import numpy as np

from ..dtype import NP_HALVES as _HALVES  # bfloat16 joins when ml_dtypes loads

__all__ = ["render", "relu", "relu_backward", "gather", "scatter_add", "topk", "flip_last",
           "mse", "mse_backward"]

_MOVE = {1: "uint8_t", 2: "uint16_t", 4: "uint32_t", 8: "uint64_t", 16: "ck_u128"}
_ADD = {"f32": "float", "f64": "double", "i64": "int64_t", "i32": "int32_t"}
_ADD_DT = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
           np.dtype(np.int64): "i64", np.dtype(np.int32): "i32"}
# topk's compared types; narrower ints and halves are widened exactly to one of these
_TOPK_DT = _ADD_DT

_HEAD = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
typedef struct { uint64_t lo, hi; } ck_u128;
#define CK_MAXDIM 64

/* the x/idx walk shared by gather and scatter_add: rows of the index's last dimension, with
   the offsets of a C-contiguous array of shape `s` for the current row (dimension `dim`
   excluded when `skip`) kept in `base` */
static inline void ck_sel_strides(const ptrdiff_t *s, int nd, ptrdiff_t *st) {
    ptrdiff_t m = 1;
    for (int k = nd - 1; k >= 0; k--) { st[k] = m; m *= s[k]; }
}
"""

_RELU = r"""
void ck_relu_@S(const @T *restrict x, @T *restrict y, ptrdiff_t n) {
    CK_PRAGMA(omp simd)
    for (ptrdiff_t i = 0; i < n; i++) { @T v = x[i]; y[i] = v < 0 ? (@T)0 : v; }
}
"""

# mse_loss: (x - y)^2, and torch's gradient alpha * (x - y) * g (g one value or one per
# element): the same IEEE operations as NumPy's passes, in one
_MSE = r"""
void ck_mse_@S(const @T *restrict x, const @T *restrict y, @T *restrict d, ptrdiff_t n) {
    CK_PRAGMA(omp simd)
    for (ptrdiff_t i = 0; i < n; i++) { @T v = x[i] - y[i]; d[i] = v * v; }
}

void ck_mse_backward_@S(const @T *restrict x, const @T *restrict y, const @T *restrict g,
                        @T *restrict gx, ptrdiff_t n, @T alpha, int g_one) {
    if (g_one) {
        const @T g0 = g[0];
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = 0; i < n; i++) gx[i] = (alpha * (x[i] - y[i])) * g0;
    } else {
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = 0; i < n; i++) gx[i] = (alpha * (x[i] - y[i])) * g[i];
    }
}
"""

_RELU_BACKWARD = r"""

/* relu's gradient from its output y (>= 0, -0.0 or NaN): y <= 0 is y == +-0, all bits but
   the sign zero, so one loop per element size serves every float dtype.  g_one: g is one
   value for every element (the gradient of a sum) */
void ck_relu_backward_@S(const @T *restrict g, const @T *restrict y, @T *restrict gx,
                         ptrdiff_t n, int g_one) {
    const @T mag = (@T)~((@T)1 << (sizeof(@T) * 8 - 1));
    if (g_one) {
        const @T g0 = g[0];
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = 0; i < n; i++) gx[i] = (y[i] & mag) == 0 ? (@T)0 : g0;
    } else {
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = 0; i < n; i++) gx[i] = (y[i] & mag) == 0 ? (@T)0 : g[i];
    }
}
"""

# one walk for both: `out` of the index's shape (gather) or `src` read at the index's
# coordinates (scatter_add); `a` is the indexed array (x for gather, the result for scatter)
_WALK = r"""
    ptrdiff_t ast[CK_MAXDIM] = {0}, bst[CK_MAXDIM] = {0}, c[CK_MAXDIM];
    ck_sel_strides(as, nd, ast);
    ck_sel_strides(bs, nd, bst);
    const ptrdiff_t last = is[nd - 1], n = as[dim], sd = ast[dim];
    const ptrdiff_t sl = dim == nd - 1 ? 0 : 1;
    ptrdiff_t rows = 1;
    for (int k = 0; k < nd - 1; k++) { rows *= is[k]; c[k] = 0; }
    if (last == 0) return -1;
    ptrdiff_t p = 0, abase = 0, bbase = 0;
    for (ptrdiff_t r = 0; r < rows; r++) {
        const int64_t *restrict ir = idx + p;
        BODY
        p += last;
        for (int k = nd - 2; k >= 0; k--) {
            if (++c[k] < is[k]) {
                if (k != dim) abase += ast[k];
                bbase += bst[k];
                break;
            }
            if (k != dim) abase -= (is[k] - 1) * ast[k];
            bbase -= (is[k] - 1) * bst[k];
            c[k] = 0;
        }
    }
    return -1;
"""

_GATHER_BODY = r"""
        @T *restrict o = b + p;
        for (ptrdiff_t j = 0; j < last; j++) {
            const int64_t v = ir[j];
            if ((uint64_t)v >= (uint64_t)n) return p + j;
            o[j] = a[abase + v * sd + j * sl];
        }
"""

_SCATTER_BODY = r"""
        const @T *restrict s = b + bbase;
        for (ptrdiff_t j = 0; j < last; j++) {
            const int64_t v = ir[j];
            if ((uint64_t)v >= (uint64_t)n) return p + j;
            a[abase + v * sd + j * sl] += s[j];
        }
"""

# gather: a = x (shape as), b = out (C-contiguous, the index's shape is: bs == is)
_GATHER = ("""
ptrdiff_t ck_gather_@S(const @T *restrict a, const int64_t *restrict idx, @T *restrict b,
                       const ptrdiff_t *as, const ptrdiff_t *is, const ptrdiff_t *bs, int nd,
                       int dim) {""" + _WALK.replace("BODY", _GATHER_BODY) + "}\n")

# scatter_add: a = result (shape as, updated in place), b = src (shape bs >= is)
_SCATTER = ("""
ptrdiff_t ck_scatter_add_@S(@T *restrict a, const int64_t *restrict idx, const @T *restrict b,
                            const ptrdiff_t *as, const ptrdiff_t *is, const ptrdiff_t *bs,
                            int nd, int dim) {""" + _WALK.replace("BODY", _SCATTER_BODY) + "}\n")

# topk on keys: each element of a row becomes one unsigned integer (@K) ordered as topk's
# order -- the value's bits made monotone (NaN above +inf, -0.0 as 0.0), complemented for
# largest -- with the element's index in the low bits, so ties order by index and every
# comparison is one integer compare.  Few k: a bounded max-heap (one compare per element);
# more: quickselect of the k smallest keys, then a sort of those.
_TOPK_SORT = r"""
static inline void ck_tk_swap_@K(@KT *a, @KT *b) { @KT t = *a; *a = *b; *b = t; }

static void ck_tk_isort_@K(@KT *a, ptrdiff_t n) {
    for (ptrdiff_t i = 1; i < n; i++) {
        @KT v = a[i];
        ptrdiff_t j = i;
        while (j > 0 && a[j - 1] > v) { a[j] = a[j - 1]; j--; }
        a[j] = v;
    }
}

/* median of three to a[lo], then a Hoare partition of distinct keys around it; returns the
   pivot's final place */
static ptrdiff_t ck_tk_part_@K(@KT *a, ptrdiff_t lo, ptrdiff_t hi) {
    ptrdiff_t mid = lo + (hi - lo) / 2;
    if (a[mid] < a[lo]) ck_tk_swap_@K(&a[mid], &a[lo]);
    if (a[hi] < a[lo]) ck_tk_swap_@K(&a[hi], &a[lo]);
    if (a[hi] < a[mid]) ck_tk_swap_@K(&a[hi], &a[mid]);
    ck_tk_swap_@K(&a[lo], &a[mid]);
    const @KT p = a[lo];
    ptrdiff_t i = lo, j = hi + 1;
    for (;;) {
        do i++; while (i <= hi && a[i] < p);
        do j--; while (a[j] > p);
        if (i >= j) break;
        ck_tk_swap_@K(&a[i], &a[j]);
    }
    ck_tk_swap_@K(&a[lo], &a[j]);
    return j;
}

/* sift h[i] down the max-heap h[0..m) */
static inline void ck_tk_sift_at_@K(@KT *h, ptrdiff_t i, ptrdiff_t m) {
    const @KT v = h[i];
    for (;;) {
        ptrdiff_t c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && h[c + 1] > h[c]) c++;
        if (h[c] <= v) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
}

static void ck_tk_heapify_@K(@KT *h, ptrdiff_t m) {
    for (ptrdiff_t s = m / 2 - 1; s >= 0; s--) ck_tk_sift_at_@K(h, s, m);
}

static void ck_tk_heapsort_@K(@KT *a, ptrdiff_t n) {
    ck_tk_heapify_@K(a, n);
    for (ptrdiff_t m = n - 1; m > 0; m--) {
        ck_tk_swap_@K(&a[0], &a[m]);
        ck_tk_sift_at_@K(a, 0, m);
    }
}

/* the k smallest of a[0..n) to a[0..k) by a bounded heap (O(n log k) at worst) */
static void ck_tk_heapselect_@K(@KT *a, ptrdiff_t n, ptrdiff_t k) {
    ck_tk_heapify_@K(a, k);
    for (ptrdiff_t j = k; j < n; j++)
        if (a[j] < a[0]) { a[0] = a[j]; ck_tk_sift_at_@K(a, 0, k); }
}

/* quicksort with a depth budget: past it (a pathological pivot run) the rest is heapsorted */
static void ck_tk_qsort_@K(@KT *a, ptrdiff_t lo, ptrdiff_t hi, int depth) {
    while (hi - lo > 16) {
        if (depth-- <= 0) { ck_tk_heapsort_@K(a + lo, hi - lo + 1); return; }
        ptrdiff_t m = ck_tk_part_@K(a, lo, hi);
        if (m - lo < hi - m) { ck_tk_qsort_@K(a, lo, m - 1, depth); lo = m + 1; }
        else { ck_tk_qsort_@K(a, m + 1, hi, depth); hi = m - 1; }
    }
    ck_tk_isort_@K(a + lo, hi - lo + 1);
}

static int ck_tk_depth_@K(ptrdiff_t n) {
    int d = 0;
    while (n > 1) { n >>= 1; d++; }
    return 2 * d + 4;
}

/* the k smallest keys to a[0..k) (any order); past the depth budget, a heap select */
static void ck_tk_select_@K(@KT *a, ptrdiff_t n, ptrdiff_t k) {
    ptrdiff_t lo = 0, hi = n - 1;
    int depth = ck_tk_depth_@K(n);
    while (hi - lo > 16) {
        if (depth-- <= 0) {
            ck_tk_heapselect_@K(a + lo, hi - lo + 1, k - lo);
            return;
        }
        ptrdiff_t m = ck_tk_part_@K(a, lo, hi);
        if (m == k - 1) return;
        if (m < k - 1) lo = m + 1; else hi = m - 1;
    }
    ck_tk_isort_@K(a + lo, hi - lo + 1);
}

/* the k first keys of a[0..n) sorted into a[0..k) */
static void ck_tk_first_@K(@KT *a, ptrdiff_t n, ptrdiff_t k) {
    if (k * 16 <= n) ck_tk_heapselect_@K(a, n, k);
    else if (k < n) ck_tk_select_@K(a, n, k);
    ck_tk_qsort_@K(a, 0, k - 1, ck_tk_depth_@K(k));
}
"""

_TOPK = r"""
static inline @KT ck_tk_key_@S(@T v, ptrdiff_t j, int largest) {
    @UT u = @MONO;
    if (largest) u = ~u;
    return ((@KT)u << @BITS) | (@KT)j;
}

/* x seen as (outer, n, inner) C-contiguous; values/indices (outer, k, inner).  Returns 0,
   or -1 when the key buffer could not be allocated. */
int ck_topk_@S(const @T *restrict x, @T *restrict vals, int64_t *restrict inds,
               ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner, ptrdiff_t k, int largest) {
    if (k == 0) return 0;
    @KT *a = (@KT *)malloc(n * sizeof(@KT));
    if (!a) return -1;
    const @KT low = ((@KT)1 << @BITS) - 1;
    for (ptrdiff_t o = 0; o < outer; o++) {
        for (ptrdiff_t q = 0; q < inner; q++) {
            const @T *restrict xr = x + o * n * inner + q;
            for (ptrdiff_t j = 0; j < n; j++) a[j] = ck_tk_key_@S(xr[j * inner], j, largest);
            ck_tk_first_@K(a, n, k);
            @T *restrict vo = vals + o * k * inner + q;
            int64_t *restrict io = inds + o * k * inner + q;
            for (ptrdiff_t m = 0; m < k; m++) {
                const ptrdiff_t j = (ptrdiff_t)(a[m] & low);
                vo[m * inner] = xr[j * inner];
                io[m * inner] = j;
            }
        }
    }
    free(a);
    return 0;
}
"""

# per compared type: (C type, key word, unsigned of the value's width, monotone bits of v)
_TOPK_TYPES = {
    "f32": ("float", "k64", "uint32_t",
            "({ float w = v + 0.0f; uint32_t b; memcpy(&b, &w, 4); v != v ? 0xFFFFFFFFu : "
            "(b >> 31) ? ~b : (b | 0x80000000u); })"),
    "f64": ("double", "k128", "uint64_t",
            "({ double w = v + 0.0; uint64_t b; memcpy(&b, &w, 8); v != v ? ~(uint64_t)0 : "
            "(b >> 63) ? ~b : (b | ((uint64_t)1 << 63)); })"),
    "i32": ("int32_t", "k64", "uint32_t", "((uint32_t)v ^ 0x80000000u)"),
    "i64": ("int64_t", "k128", "uint64_t", "((uint64_t)v ^ ((uint64_t)1 << 63))"),
}
_KEYS = {"k64": ("uint64_t", "32"), "k128": ("unsigned __int128", "64")}


_FLIP = r"""
void ck_flip_last_@S(const @T *restrict x, @T *restrict y, ptrdiff_t rows, ptrdiff_t n) {
    for (ptrdiff_t r = 0; r < rows; r++) {
        const @T *restrict xr = x + r * n;
        @T *restrict yr = y + r * n;
        for (ptrdiff_t j = 0; j < n; j++) yr[j] = xr[n - 1 - j];
    }
}
"""


def _sub(text, s, t):
    return text.replace("@S", s).replace("@T", t)


def render():
    """The kernels' C source for the eager library (after its header's CK_PRAGMA)."""
    parts = ["\n/* ---- selection (ember/_core/ckernels/selection.py) ---- */\n", _HEAD]
    for s, t in (("f32", "float"), ("f64", "double")):
        parts.append(_sub(_RELU, s, t))
        parts.append(_sub(_MSE, s, t))
    for size in (2, 4, 8):
        parts.append(_sub(_RELU_BACKWARD, f"m{size}", _MOVE[size]))
    for size, t in _MOVE.items():
        parts.append(_sub(_GATHER, f"m{size}", t))
        parts.append(_sub(_FLIP, f"m{size}", t))
    for s, t in _ADD.items():
        parts.append(_sub(_SCATTER, s, t))
    for key, (kt, _) in _KEYS.items():
        parts.append(_TOPK_SORT.replace("@KT", kt).replace("@K", key))
    for s, (t, key, ut, mono) in _TOPK_TYPES.items():
        kt, shift = _KEYS[key]
        parts.append(_sub(_TOPK.replace("@BITS", shift), s, t).replace("@KT", kt).replace(
            "@K", key).replace("@UT", ut).replace("@MONO", mono))
    return "".join(parts)


_ndarray = np.ndarray
_P, _N, _I = "c_void_p", "c_ssize_t", "c_int"
_I64 = np.dtype(np.int64)
_RELU_DT = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
MIN_SIZE = 1024  # elements from which the ctypes call costs less than it saves


def _ck():
    from .. import ckernels
    return ckernels


def relu(x):
    """relu of a float32/float64 ndarray (any layout: a copy makes it contiguous), or None when
    ``x`` does not fit (the caller then uses NumPy)."""
    ck = _ck()
    s = _RELU_DT.get(x.dtype) if type(x) is _ndarray else None
    if s is None or not ck.ENABLED or x.size < MIN_SIZE:
        return None
    f = ck._fn(f"ck_relu_{s}", ck._types(_P, _P, _N))
    if f is None:
        return None
    x = np.ascontiguousarray(x)
    y = np.empty_like(x)
    f(x.ctypes.data, y.ctypes.data, x.size)
    return y


def relu_backward(g, y):
    """``y <= 0 ? 0 : g`` from relu's output ``y`` (any float dtype, halves included: a select
    on the bits), or None when the arrays do not fit."""
    ck = _ck()
    if (not ck.ENABLED or type(y) is not _ndarray or type(g) is not _ndarray
            or y.dtype.kind not in "fV" or g.dtype != y.dtype or y.itemsize not in (2, 4, 8)
            or y.size < MIN_SIZE or g.shape != y.shape):
        return None
    f = ck._fn(f"ck_relu_backward_m{y.itemsize}", ck._types(_P, _P, _P, _N, _I))
    if f is None:
        return None
    one = not any(g.strides)  # one value broadcast (a sum's gradient)
    if not one:
        g = np.ascontiguousarray(g)
    y = np.ascontiguousarray(y)
    gx = np.empty_like(y)
    f(g.ctypes.data, y.ctypes.data, gx.ctypes.data, y.size, int(one))
    return gx


def _shape_arg(shape):
    return np.array(shape, dtype=np.intp)


def _index(idx):
    return np.ascontiguousarray(idx, dtype=np.int64)


def _within(idx, x, dim, src=None):
    # the walk reads x (and src) at the index's coordinates: the index must be no larger
    return (idx.ndim == x.ndim and all(i <= n for k, (i, n) in enumerate(zip(idx.shape, x.shape))
                                       if k != dim)
            and (src is None or (src.ndim == x.ndim
                                 and all(i <= n for i, n in zip(idx.shape, src.shape)))))


def gather(x, idx, dim):
    """``x`` gathered along ``dim`` at ``idx`` (same ndim >= 1, idx no larger than x apart
    from ``dim``), or None when the arrays do not fit; raises torch's error for an index out
    of range."""
    ck = _ck()
    if (not ck.ENABLED or type(x) is not _ndarray or type(idx) is not _ndarray
            or x.itemsize not in _MOVE or x.ndim > 64 or x.ndim == 0
            or x.dtype.hasobject or idx.dtype.kind not in "iu" or not _within(idx, x, dim)):
        return None
    f = ck._fn(f"ck_gather_m{x.itemsize}", ck._types(_P, _P, _P, _P, _P, _P, _I, _I), _N)
    if f is None:
        return None
    x = np.ascontiguousarray(x)
    idx = _index(idx)
    out = np.empty(idx.shape, x.dtype)
    xs, ishape = _shape_arg(x.shape), _shape_arg(idx.shape)  # held through the call
    bad = f(x.ctypes.data, idx.ctypes.data, out.ctypes.data, xs.ctypes.data,
            ishape.ctypes.data, ishape.ctypes.data, x.ndim, dim)
    if bad >= 0:
        _out_of_range(idx, bad, x.shape[dim], dim)
    return out


def _out_of_range(idx, bad, n, dim):
    raise RuntimeError(f"index {int(idx.reshape(-1)[bad])} is out of bounds for dimension "
                       f"{dim} with size {n}")


def scatter_add(x, idx, src, dim):
    """A copy of ``x`` with ``src``'s values at ``idx``'s coordinates added along ``dim``, or
    None when the arrays do not fit; raises torch's error for an index out of range."""
    ck = _ck()
    half = type(x) is _ndarray and x.dtype in _HALVES
    s = "f32" if half else _ADD_DT.get(x.dtype) if type(x) is _ndarray else None
    if (s is None or not ck.ENABLED or type(idx) is not _ndarray or type(src) is not _ndarray
            or src.dtype != x.dtype or x.ndim > 64 or x.ndim == 0
            or idx.dtype.kind not in "iu" or not _within(idx, x, dim, src)):
        return None
    f = ck._fn(f"ck_scatter_add_{s}", ck._types(_P, _P, _P, _P, _P, _P, _I, _I), _N)
    if f is None:
        return None
    # halves accumulate in float32, rounded once at the end (torch's values)
    out = x.astype(np.float32, order="C") if half else np.array(x, order="C", copy=True)
    src = np.ascontiguousarray(src, dtype=np.float32 if half else None)
    idx = _index(idx)
    shapes = [_shape_arg(a.shape) for a in (x, idx, src)]  # held through the call
    bad = f(out.ctypes.data, idx.ctypes.data, src.ctypes.data,
            *(a.ctypes.data for a in shapes), x.ndim, dim)
    if bad >= 0:
        _out_of_range(idx, bad, x.shape[dim], dim)
    return out.astype(x.dtype) if half else out


def topk(w, k, dim, largest):
    """``(values, indices)`` of the ``k`` first elements along ``dim`` of ``w`` (float32/64,
    int32/64; NaN the largest, ties by lower index), or None when ``w`` does not fit."""
    ck = _ck()
    s = _TOPK_DT.get(w.dtype) if type(w) is _ndarray else None
    if s is None or not ck.ENABLED or w.ndim == 0 or w.shape[dim] >= 1 << 32:
        return None
    f = ck._fn(f"ck_topk_{s}", ck._types(_P, _P, _P, _N, _N, _N, _N, _I), _I)
    if f is None:
        return None
    w = np.ascontiguousarray(w)
    shape = w.shape[:dim] + (k,) + w.shape[dim + 1:]
    vals = np.empty(shape, w.dtype)
    inds = np.empty(shape, np.int64)
    outer = int(np.prod(w.shape[:dim], dtype=np.int64))
    inner = int(np.prod(w.shape[dim + 1:], dtype=np.int64))
    if f(w.ctypes.data, vals.ctypes.data, inds.ctypes.data, outer, w.shape[dim], inner, k,
         int(bool(largest))) != 0:
        return None
    return vals, inds


def flip_last(x):
    """A C-contiguous copy of ``x`` reversed along its last dimension, or None when ``x``
    does not fit."""
    ck = _ck()
    if (not ck.ENABLED or type(x) is not _ndarray or x.ndim == 0 or x.size < MIN_SIZE
            or x.itemsize not in _MOVE or x.dtype.hasobject):
        return None
    f = ck._fn(f"ck_flip_last_m{x.itemsize}", ck._types(_P, _P, _N, _N))
    if f is None:
        return None
    x = np.ascontiguousarray(x)
    y = np.empty_like(x)
    n = x.shape[-1]
    f(x.ctypes.data, y.ctypes.data, x.size // n, n)
    return y


def _mse_fits(x, y):
    return (type(x) is _ndarray and type(y) is _ndarray and x.dtype in _RELU_DT
            and y.dtype == x.dtype and x.shape == y.shape and x.size >= MIN_SIZE)


def mse(x, y):
    """``(x - y) ** 2`` of equal-shaped float32/float64 arrays, or None when they do not
    fit."""
    ck = _ck()
    if not (ck.ENABLED and _mse_fits(x, y)):
        return None
    f = ck._fn(f"ck_mse_{_RELU_DT[x.dtype]}", ck._types(_P, _P, _P, _N))
    if f is None:
        return None
    x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
    d = np.empty_like(x)
    f(x.ctypes.data, y.ctypes.data, d.ctypes.data, x.size)
    return d


def mse_backward(x, y, g, alpha):
    """torch's mse gradient ``alpha * (x - y) * g`` (``alpha`` rounded to the dtype; ``g``
    one value or ``x``'s shape), or None when the arrays do not fit."""
    ck = _ck()
    if not (ck.ENABLED and _mse_fits(x, y) and type(g) is _ndarray and g.dtype == x.dtype
            and (g.size == 1 or g.shape == x.shape)):
        return None
    s = _RELU_DT[x.dtype]
    f = ck._fn(f"ck_mse_backward_{s}", ck._types(_P, _P, _P, _P, _N,
                                                 "c_float" if s == "f32" else "c_double", _I))
    if f is None:
        return None
    one = g.size == 1 or not any(g.strides)
    g = np.ascontiguousarray(g.reshape(-1)[:1] if one else g)
    x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
    gx = np.empty_like(x)
    f(x.ctypes.data, y.ctypes.data, g.ctypes.data, gx.ctypes.data, x.size,
      float(np.asarray(alpha, x.dtype)), int(one))
    return gx
