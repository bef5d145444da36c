"""layer_norm with weight and bias as one C pass each way (torch's native_layer_norm and its
backward), for C-contiguous float32/float64 arrays.

Forward, per row: mean and 1/sqrt(var + eps) by the library's normalize statistics
(``ck_norm_stats``, accumulated in double), then ``y = b + (x - mean) * rstd * w``, each
product and sum rounded as the composite's ``normalize`` + ``addcmul`` round them (FMA
contraction off).  Backward, per row: ``gx`` is normalize's closed-form gradient of
``g * w`` (xhat recomputed from x, mean and rstd), and ``g * xhat`` and ``g`` are added into
the column sums of the weight's and bias's gradients.  Those sums run over fixed blocks of ``_BLOCK`` rows in double, one block
at a time per thread, and the blocks are summed in order afterwards, so no value depends
on the thread count.  Threads (OpenMP, the library's count) take rows (forward) or blocks
(backward).  Without a compiler the functions return None and the callers keep the
composite.
"""
import sys

import numpy as np

__all__ = ["render", "forward", "backward"]

_BLOCK = 64  # rows per partial sum of the weight/bias gradients (LN_BLOCK in the C)

_C = r"""
#define LN_NOCONTRACT __attribute__((optimize("fp-contract=off")))
#define LN_BLOCK 64  /* _BLOCK */

static LN_NOCONTRACT void ln_row_S(const T *restrict x, const T *restrict w,
                                   const T *restrict b, T *restrict y, T *mean, T *rstd,
                                   ptrdiff_t n, double eps) {
    T m, r;
    ck_norm_stats_S(x, n, eps, &m, &r);  /* the library's normalize statistics */
    CK_PRAGMA(omp simd)
    for (ptrdiff_t i = 0; i < n; i++) { T p = ((x[i] - m) * r) * w[i]; y[i] = b[i] + p; }
    *mean = m;
    *rstd = r;
}

void ln_forward_S(const T *restrict x, const T *restrict w, const T *restrict b,
                  T *restrict y, T *restrict mean, T *restrict rstd, ptrdiff_t rows,
                  ptrdiff_t n, double eps, int nt) {
    if (nt > 1) {
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
        for (ptrdiff_t r = 0; r < rows; r++)
            ln_row_S(x + r * n, w, b, y + r * n, mean + r, rstd + r, n, eps);
    } else {
        for (ptrdiff_t r = 0; r < rows; r++)
            ln_row_S(x + r * n, w, b, y + r * n, mean + r, rstd + r, n, eps);
    }
}

/* one row: gx = ((gh - mean(gh)) - xh * mean(gh * xh)) * r with gh = g * w (when gx),
   and g * xh, g added to the block's column sums pw, pb (when given) */
static LN_NOCONTRACT void ln_backward_row_S(const T *restrict g, const T *restrict x,
        const T *restrict w, T m, T r, T *restrict gx, A *restrict pw, A *restrict pb,
        ptrdiff_t n) {
    if (pw && pb) {
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = 0; i < n; i++) {
            pw[i] += (A)(g[i] * ((x[i] - m) * r));
            pb[i] += (A)g[i];
        }
    } else if (pw) {
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = 0; i < n; i++) pw[i] += (A)(g[i] * ((x[i] - m) * r));
    } else if (pb) {
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = 0; i < n; i++) pb[i] += (A)g[i];
    }
    if (!gx) return;
    A s = 0, p = 0;
    CK_PRAGMA(omp simd reduction(+:s) reduction(+:p))
    for (ptrdiff_t i = 0; i < n; i++) {
        T gh = g[i] * w[i];
        s += gh;
        p += (A)gh * (A)((x[i] - m) * r);
    }
    T mg = (T)(s / (A)n), mgx = (T)(p / (A)n);
    CK_PRAGMA(omp simd)
    for (ptrdiff_t i = 0; i < n; i++) {
        T gh = g[i] * w[i], xh = (x[i] - m) * r;
        gx[i] = ((gh - mg) - xh * mgx) * r;
    }
}

static void ln_backward_block_S(const T *g, const T *x, const T *w, const T *mean,
        const T *rstd, T *gx, A *pw, A *pb, ptrdiff_t blk, ptrdiff_t rows, ptrdiff_t n) {
    ptrdiff_t lo = blk * LN_BLOCK, hi = lo + LN_BLOCK < rows ? lo + LN_BLOCK : rows;
    A *bw = pw ? pw + blk * n : 0, *bb = pb ? pb + blk * n : 0;
    for (ptrdiff_t i = 0; i < n; i++) { if (bw) bw[i] = 0; if (bb) bb[i] = 0; }
    for (ptrdiff_t r = lo; r < hi; r++)
        ln_backward_row_S(g + r * n, x + r * n, w, mean[r], rstd[r], gx ? gx + r * n : 0,
                          bw, bb, n);
}

/* pw, pb: (blocks, n) partial sums, or NULL when that gradient is not wanted; gx NULL
   likewise */
void ln_backward_S(const T *restrict g, const T *restrict x, const T *restrict w,
                   const T *restrict mean, const T *restrict rstd, T *gx, A *pw, A *pb,
                   ptrdiff_t rows, ptrdiff_t n, int nt) {
    ptrdiff_t blocks = (rows + LN_BLOCK - 1) / LN_BLOCK;
    if (nt > 1) {
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
        for (ptrdiff_t k = 0; k < blocks; k++)
            ln_backward_block_S(g, x, w, mean, rstd, gx, pw, pb, k, rows, n);
    } else {
        for (ptrdiff_t k = 0; k < blocks; k++)
            ln_backward_block_S(g, x, w, mean, rstd, gx, pw, pb, k, rows, n);
    }
}
"""

_TYPES = {"f32": dict(T="float", A="double"), "f64": dict(T="double", A="double")}


def render():
    """The kernels' C source for the eager library (after its header's CK_PRAGMA)."""
    parts = ["\n/* ---- layer_norm (ember/_core/ckernels/layer_norm.py) ---- */\n"]
    for s, names in _TYPES.items():
        parts.append("".join(f"#define {k} {v}\n" for k, v in names.items())
                     + _C.replace("_S(", f"_{s}(")
                     + "".join(f"#undef {k}\n" for k in names))
    return "".join(parts) + "#undef LN_NOCONTRACT\n#undef LN_BLOCK\n"


_ck = sys.modules[__name__.rpartition(".")[0]]  # the package (it imports this module)


def _fits(x, *params):
    """The suffix when ``x`` (rows of ``n``) and ``params`` (``n`` elements each) are
    C-contiguous NumPy arrays of one float32/float64 dtype, else None."""
    # the library's own test, the one the composite's normalize passes: where it declines
    # (below MIN_SIZE) the composite sums in NumPy, and eager must keep the values of
    # compiled and exported graphs (the decomposition)
    if not _ck._fits(x, ("f32", "f64")):
        return None
    for p in params:
        if type(p) is not np.ndarray or p.dtype != x.dtype or not p.flags.c_contiguous:
            return None
    return _ck._SUFFIX[x.dtype]


def forward(x, w, b, k, eps):
    """``(y, mean, rstd)`` of layer_norm over the last ``k`` dims of ``x`` with weight ``w``
    and bias ``b`` (stats keep those dims as 1), or None when the arrays do not fit."""
    sfx = _fits(x, w, b)
    if sfx is None or w.size != b.size or x.ndim < k:
        return None
    f = _ck._fn(f"ln_forward_{sfx}",
                _ck._types(*["c_void_p"] * 6, "c_ssize_t", "c_ssize_t", "c_double", "c_int"))
    if f is None:
        return None
    n = w.size
    rows = x.size // n
    stat_shape = x.shape[:x.ndim - k] + (1,) * k
    y = np.empty_like(x)
    mean = np.empty(stat_shape, x.dtype)
    rstd = np.empty(stat_shape, x.dtype)
    f(x.ctypes.data, w.ctypes.data, b.ctypes.data, y.ctypes.data, mean.ctypes.data,
      rstd.ctypes.data, rows, n, float(eps), _ck._threads(x.size))
    return y, mean, rstd


def backward(g, x, w, mean, rstd, need_x, need_w, need_b):
    """``(gx, gw, gb)`` of layer_norm from its output's gradient ``g`` (None for each one not
    wanted; gw and gb have ``w``'s shape), or None when the arrays do not fit."""
    sfx = _fits(x, w, mean, rstd)
    if sfx is None or type(g) is not np.ndarray or g.shape != x.shape or g.dtype != x.dtype:
        return None
    n = w.size
    rows = x.size // n
    if mean.size != rows or rstd.size != rows:
        return None
    f = _ck._fn(f"ln_backward_{sfx}",
                _ck._types(*["c_void_p"] * 8, "c_ssize_t", "c_ssize_t", "c_int"))
    if f is None:
        return None
    g = np.ascontiguousarray(g)
    gx = np.empty_like(x) if need_x else None
    blocks = -(-rows // _BLOCK)
    pw = np.empty((blocks, n)) if need_w else None
    pb = np.empty((blocks, n)) if need_b else None
    f(g.ctypes.data, x.ctypes.data, w.ctypes.data, mean.ctypes.data, rstd.ctypes.data,
      None if gx is None else gx.ctypes.data, None if pw is None else pw.ctypes.data,
      None if pb is None else pb.ctypes.data, rows, n, _ck._threads(x.size))
    return (gx, None if pw is None else pw.sum(0).astype(x.dtype).reshape(w.shape),
            None if pb is None else pb.sum(0).astype(x.dtype).reshape(w.shape))
