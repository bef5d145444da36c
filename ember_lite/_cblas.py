"""BLAS for generated C, from either provider, through one set of row-major helpers.

Generated C declares the function-pointer types and the row-major helpers of `declarations`
and receives the gemm/gemv addresses at run time through ``ember_blas_install``: the
addresses change from process to process and built libraries are cached by source hash, so
they are never baked into the source.  Two providers, the same Fortran calling convention
(every argument by pointer, column-major) and differing only in the integer type:

- ``LP64``: SciPy's ``scipy.linalg.cython_blas`` capsules (32-bit ``int`` sizes), which
  `ember._inductor.extern_blas` reads for ember.compile's C;
- ``ILP64``: the OpenBLAS inside NumPy's own wheel (``numpy.libs/libscipy_openblas64_*``,
  64-bit sizes, routines named ``scipy_sgemm_64_``...), which `numpy_pointers` finds
  without SciPy, for ember_lite.  A NumPy built against another BLAS (Accelerate, MKL, a
  system library) gives None: the caller then runs NumPy, never an error.

Row-major to column-major: a row-major ``R x C`` matrix with row stride ``ld`` is the
column-major ``C x R`` matrix with leading dimension ``ld``.  So the row-major product
``C = op(A) op(B)`` is computed as the column-major ``C^T = op(B)^T op(A)^T``: the operands
swap places, keep their transpose flags, and M and N swap.
"""
import ctypes
import glob
import os

__all__ = ["ROUTINES", "LP64", "ILP64", "declarations", "install", "numpy_pointers"]

ROUTINES = ("sgemm", "dgemm", "sgemv", "dgemv")
LP64, ILP64 = "LP64", "ILP64"
_INT = {LP64: ("int", "INT_MAX"), ILP64: ("int64_t", "INT64_MAX")}

_DECLARATIONS = r"""
/* ---- BLAS through function pointers (ember_lite._cblas: $ABI) ---- */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
typedef $INT ember_blas_int;
#define EMBER_BLAS_INT_MAX $MAX

/* the Fortran ABI: everything by pointer, column-major, ember_blas_int sizes */
typedef void (*ember_sgemm_t)(char *transa, char *transb, ember_blas_int *m,
                              ember_blas_int *n, ember_blas_int *k, float *alpha, float *a,
                              ember_blas_int *lda, float *b, ember_blas_int *ldb,
                              float *beta, float *c, ember_blas_int *ldc);
typedef void (*ember_dgemm_t)(char *transa, char *transb, ember_blas_int *m,
                              ember_blas_int *n, ember_blas_int *k, double *alpha, double *a,
                              ember_blas_int *lda, double *b, ember_blas_int *ldb,
                              double *beta, double *c, ember_blas_int *ldc);
typedef void (*ember_sgemv_t)(char *trans, ember_blas_int *m, ember_blas_int *n,
                              float *alpha, float *a, ember_blas_int *lda, float *x,
                              ember_blas_int *incx, float *beta, float *y,
                              ember_blas_int *incy);
typedef void (*ember_dgemv_t)(char *trans, ember_blas_int *m, ember_blas_int *n,
                              double *alpha, double *a, ember_blas_int *lda, double *x,
                              ember_blas_int *incx, double *beta, double *y,
                              ember_blas_int *incy);

/* the pointers ember_blas_install received (NULL until then) */
static struct { ember_sgemm_t sgemm; ember_dgemm_t dgemm; ember_sgemv_t sgemv;
                ember_dgemv_t dgemv; } ember_blas;

void ember_blas_install(void *sgemm, void *dgemm, void *sgemv, void *dgemv) {
    ember_blas.sgemm = (ember_sgemm_t)sgemm;
    ember_blas.dgemm = (ember_dgemm_t)dgemm;
    ember_blas.sgemv = (ember_sgemv_t)sgemv;
    ember_blas.dgemv = (ember_dgemv_t)dgemv;
}

/* The leading dimension BLAS is given for a row-major rows x cols operand with row stride
   ld: ld itself, or -- when there is at most one row or no column, so ld is never used --
   the smallest value BLAS accepts (a NumPy stride of a one-row or empty array can be
   anything).  -1 when ld is too small for a real matrix or does not fit BLAS's integer. */
static inline ember_blas_int ember_blas_ld(ptrdiff_t rows, ptrdiff_t cols, ptrdiff_t ld) {
    ptrdiff_t need = cols > 1 ? cols : 1;
    if ((rows <= 1 || cols <= 0) && ld < need) ld = need;
    if (ld < need || ld > EMBER_BLAS_INT_MAX || rows > EMBER_BLAS_INT_MAX) return -1;
    return (ember_blas_int)ld;
}

/* C = alpha op(A) op(B) + beta C for row-major matrices: op(A) is M x K (A is stored M x K,
   or K x M when transa), op(B) is K x N (B stored K x N, or N x K when transb), C is M x N;
   lda/ldb/ldc are row strides in elements.  With beta == 0, C is not read (NaNs in it do
   not propagate), as BLAS specifies.  Returns 0, or -1 when a size or stride does not fit
   BLAS (the caller then computes the product another way). */
#define EMBER_GEMM(NAME, T, FN_T)                                                          \
static inline int NAME(int transa, int transb, ptrdiff_t M, ptrdiff_t N, ptrdiff_t K,       \
                       T alpha, const T *A, ptrdiff_t lda, const T *B, ptrdiff_t ldb,       \
                       T beta, T *C, ptrdiff_t ldc, FN_T gemm) {                            \
    if (M > EMBER_BLAS_INT_MAX || N > EMBER_BLAS_INT_MAX || K > EMBER_BLAS_INT_MAX)          \
        return -1;                                                                          \
    if (M <= 0 || N <= 0) return 0;                                                         \
    ember_blas_int la = transa ? ember_blas_ld(K, M, lda) : ember_blas_ld(M, K, lda);       \
    ember_blas_int lb = transb ? ember_blas_ld(N, K, ldb) : ember_blas_ld(K, N, ldb);       \
    ember_blas_int lc = ember_blas_ld(M, N, ldc);                                           \
    if (la < 0 || lb < 0 || lc < 0) return -1;                                              \
    /* column-major C^T = op(B)^T op(A)^T: B first, A second, M and N swapped */            \
    char ta = transa ? 'T' : 'N', tb = transb ? 'T' : 'N';                                  \
    ember_blas_int m = N, n = M, k = K;                                                     \
    gemm(&tb, &ta, &m, &n, &k, &alpha, (T *)B, &lb, (T *)A, &la, &beta, C, &lc);            \
    return 0;                                                                               \
}
EMBER_GEMM(ember_gemm_f32, float, ember_sgemm_t)
EMBER_GEMM(ember_gemm_f64, double, ember_dgemm_t)
#undef EMBER_GEMM

/* y = alpha op(A) x + beta y for a row-major A stored M x N (row stride lda): op(A) is A
   (x has N elements, y has M) or, with trans, A^T (x has M, y has N); incx/incy are the
   element strides of x and y (nonzero; negative walks backwards, as in BLAS).  With beta ==
   0, y is not read.  Returns 0, or -1 when a size or stride does not fit BLAS. */
#define EMBER_GEMV(NAME, T, FN_T)                                                          \
static inline int NAME(int trans, ptrdiff_t M, ptrdiff_t N, T alpha, const T *A,            \
                       ptrdiff_t lda, const T *x, ptrdiff_t incx, T beta, T *y,             \
                       ptrdiff_t incy, FN_T gemv) {                                         \
    if (M > EMBER_BLAS_INT_MAX || N > EMBER_BLAS_INT_MAX || incx == 0 || incy == 0          \
        || incx > EMBER_BLAS_INT_MAX || incx < -EMBER_BLAS_INT_MAX                          \
        || incy > EMBER_BLAS_INT_MAX || incy < -EMBER_BLAS_INT_MAX)                         \
        return -1;                                                                          \
    ptrdiff_t ny = trans ? N : M, nx = trans ? M : N;                                       \
    if (ny <= 0) return 0;                                                                  \
    if (nx <= 0) {                                                                          \
        /* an empty sum: BLAS would return without touching y, torch gives beta y */        \
        T *p = incy > 0 ? y : y - (ny - 1) * incy;                                          \
        for (ptrdiff_t i = 0; i < ny; i++)                                                  \
            p[i * incy] = beta == 0 ? (T)0 : beta * p[i * incy];                            \
        return 0;                                                                           \
    }                                                                                       \
    ember_blas_int la = ember_blas_ld(M, N, lda);                                           \
    if (la < 0) return -1;                                                                  \
    /* row-major M x N is column-major N x M: op(A) = A is its transpose */                 \
    char t = trans ? 'N' : 'T';                                                             \
    ember_blas_int m = N, n = M, ix = incx, iy = incy;                                      \
    gemv(&t, &m, &n, &alpha, (T *)A, &la, (T *)x, &ix, &beta, y, &iy);                      \
    return 0;                                                                               \
}
EMBER_GEMV(ember_gemv_f32, float, ember_sgemv_t)
EMBER_GEMV(ember_gemv_f64, double, ember_dgemv_t)
#undef EMBER_GEMV
/* ---- end of BLAS declarations ---- */
"""


def declarations(abi):
    """C source to put once at the top of a translation unit that calls BLAS with ``abi``
    (`LP64` or `ILP64`): the function-pointer types ``ember_{s,d}{gemm,gemv}_t``, the
    ``ember_blas`` table and its exported setter ``ember_blas_install(sgemm, dgemm, sgemv,
    dgemv)``, and the row-major helpers

    - ``int ember_gemm_f32(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, fn)``
      (and ``_f64``): ``C = alpha op(A) op(B) + beta C``, A ``M x K``, B ``K x N``, C
      ``M x N``, all row-major with row strides ``ld*``;
    - ``int ember_gemv_f32(trans, M, N, alpha, A, lda, x, incx, beta, y, incy, fn)`` (and
      ``_f64``): ``y = alpha op(A) x + beta y`` for a row-major ``M x N`` A.

    Sizes and strides are ``ptrdiff_t``; the helpers return 0, or -1 when they do not fit
    the BLAS integer.  ``fn`` is the routine's pointer (``ember_blas.sgemm`` after
    `install`)."""
    int_type, int_max = _INT[abi]
    return (_DECLARATIONS.replace("$ABI", abi).replace("$INT", int_type)
            .replace("$MAX", int_max))


def install(lib, pointers):
    """Hand ``pointers`` (``{routine: address}`` for every `ROUTINES` entry) to a loaded
    library built with `declarations` (its ``ember_blas_install``); once per loaded
    library, before its code runs."""
    f = lib.ember_blas_install
    f.restype = None
    f.argtypes = [ctypes.c_void_p] * 4
    f(*(pointers[r] for r in ROUTINES))


# NumPy's wheels name their OpenBLAS's routines with a prefix and an ILP64 suffix; the
# plain ``sgemm_64_`` is OpenBLAS's own ILP64 build (INTERFACE64 with SYMBOLSUFFIX=64_)
_ILP64_NAMES = ("scipy_{}_64_", "{}_64_")
_POINTERS = []


def _numpy_blas_libraries():
    """Paths of the OpenBLAS libraries this process has mapped from NumPy's wheel
    (``numpy.libs`` next to the numpy package); only a library already loaded is
    considered, so this never loads a BLAS NumPy does not use."""
    import numpy
    libs = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(numpy.__file__))),
                        "numpy.libs")
    wheel = {os.path.realpath(p) for p in glob.glob(os.path.join(libs, "*openblas*"))}
    try:
        with open("/proc/self/maps") as f:
            mapped = {line.split(None, 5)[-1].strip() for line in f if "openblas" in line}
    except OSError:   # no /proc (macOS, where NumPy uses Accelerate anyway)
        return []
    return sorted(p for p in mapped if os.path.realpath(p) in wheel)


def numpy_pointers():
    """``{routine: address}`` of sgemm, dgemm, sgemv and dgemv in the ILP64 OpenBLAS that
    NumPy's wheel ships and has loaded (valid for the life of the process), or None when
    NumPy uses another BLAS or the routines are not found."""
    if not _POINTERS:
        _POINTERS.append(_find_numpy_pointers())
    return _POINTERS[0]


def _find_numpy_pointers():
    try:
        paths = _numpy_blas_libraries()
    except Exception:  # noqa: BLE001 - an unusual NumPy layout: no C BLAS, NumPy runs
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)  # already mapped: the loaded copy's handle
        except OSError:
            continue
        for pattern in _ILP64_NAMES:
            fns = [getattr(lib, pattern.format(r), None) for r in ROUTINES]
            if all(f is not None for f in fns):
                return {r: ctypes.cast(f, ctypes.c_void_p).value for r, f in zip(ROUTINES, fns)}
    return None
