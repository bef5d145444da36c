"""``index_add`` along one dimension in C: embedding's backward and every scatter of slices.

NumPy's ``np.add.at`` with a row index walks the result one element at a time (an embedding
gradient of 4096 rows of 128 floats: 5.3 ms against torch's 0.47); this loop adds each
source slice into its row with one vectorised inner loop.  The slices are added in index
order, as ``np.add.at`` and torch's CPU kernel add them, so the sums round the same way.

The arrays are seen as (``outer``, rows, ``inner``): the result has ``n`` rows, the source
``m``, and ``idx`` (``m`` intp values, already checked to lie in ``[0, n)``) says which row
each source slice goes to.  Single-threaded: a row can repeat, so splitting the slices over
threads would race, and splitting the columns pays only for rows far wider than an
embedding's.
"""
import numpy as np

__all__ = ["render", "index_add"]

_C = r"""
void ck_index_add_@S(const @T *src, const ptrdiff_t *idx, @T *out, ptrdiff_t outer,
                     ptrdiff_t n, ptrdiff_t m, ptrdiff_t inner) {
    for (ptrdiff_t o = 0; o < outer; o++) {
        const @T *s = src + o * m * inner;
        @T *base = out + o * n * inner;
        for (ptrdiff_t i = 0; i < m; i++) {
            @T *d = base + idx[i] * inner;
            const @T *si = s + i * inner;
            CK_PRAGMA(omp simd)
            for (ptrdiff_t j = 0; j < inner; j++) d[j] += si[j];
        }
    }
}
"""

MIN_SIZE = 1024  # source elements from which the ctypes call costs less than it saves


def render():
    """The kernels' C source for the eager library (after its header's CK_PRAGMA)."""
    return "".join(_C.replace("@S", s).replace("@T", t)
                   for s, t in (("f32", "float"), ("f64", "double")))


def index_add(out, dim, idx, src):
    """Adds the slices of ``src`` along ``dim`` into ``out`` at rows ``idx`` in place and
    returns True, or returns False when the arrays do not fit (then nothing was written)."""
    from . import _SUFFIX, _fn, _ndarray, _types, ENABLED
    if not (ENABLED and type(out) is _ndarray and type(src) is _ndarray
            and src.size >= MIN_SIZE and out.dtype == src.dtype and out.dtype in _SUFFIX
            and out.flags.c_contiguous and idx.ndim == 1
            and src.ndim == out.ndim and src.shape[dim] == idx.shape[0]
            and src.shape[:dim] == out.shape[:dim] and src.shape[dim + 1:] == out.shape[dim + 1:]):
        return False
    f = _fn(f"ck_index_add_{_SUFFIX[out.dtype]}", _types(*["c_void_p"] * 3 + ["c_ssize_t"] * 4))
    if f is None:
        return False
    idx = np.ascontiguousarray(idx, dtype=np.intp)
    src = np.ascontiguousarray(src)  # a broadcast gradient (sum's backward) is copied once
    outer = int(np.prod(out.shape[:dim], dtype=np.int64))
    inner = int(np.prod(out.shape[dim + 1:], dtype=np.int64))
    f(src.ctypes.data, idx.ctypes.data, out.ctypes.data, outer, out.shape[dim], idx.shape[0],
      inner)
    return True
