"""BLAS for generated C: the gemm/gemv that SciPy already ships, called through pointers.

SciPy exports its BLAS as Cython C-API capsules (``scipy.linalg.cython_blas.__pyx_capi__``),
one per routine, with the Fortran calling convention (every argument by pointer, column-major,
32-bit ``int`` sizes).  `blas_pointers` reads the function addresses out of those capsules;
generated C declares the function-pointer types and row-major helpers from
`blas_declarations` and receives the addresses at run time, as arguments or once through
``ember_blas_install`` (`install`).  The addresses are never baked into the source: they
change from process to process, and the built library is cached on disk by source hash.
No new dependency: SciPy is one of ember's already.

Row-major to column-major: a row-major ``R x C`` matrix with row stride ``ld`` is the
column-major ``C x R`` matrix with leading dimension ``ld``.  So the row-major product
``C = op(A) op(B)`` is computed as the column-major ``C^T = op(B)^T op(A)^T``: the operands
swap places, keep their transpose flags, and M and N swap.

Threading: SciPy's OpenBLAS is a separate library from NumPy's, with a pool of its own;
``ember.set_num_threads`` (threadpoolctl) limits it only if it is loaded by then, which
importing this module's pointers does.  Calling it from inside an OpenMP parallel region
would nest its threads in OpenMP's: generated code calls it from serial code.
"""
import ctypes
import functools

__all__ = ["ROUTINES", "BlasUnavailable", "blas_pointers", "blas_declarations", "install",
           "available"]

ROUTINES = ("sgemm", "dgemm", "sgemv", "dgemv")

# the start of each capsule's C signature: the argument list the declarations assume
# (LP64 BLAS: 32-bit int sizes; a future ILP64 SciPy would show `long` or int64 here)
_SIGNATURE = {
    "sgemm": "void (char *, char *, int *, int *, int *, ",
    "dgemm": "void (char *, char *, int *, int *, int *, ",
    "sgemv": "void (char *, int *, int *, ",
    "dgemv": "void (char *, int *, int *, ",
}


class BlasUnavailable(RuntimeError):
    """SciPy's BLAS capsules are missing or do not have the expected signature."""


def _capsule_api():
    api = ctypes.pythonapi
    get_name = api.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = api.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                                  ctypes.c_char_p]
    return get_name, get_pointer


@functools.lru_cache(maxsize=None)
def _pointers():
    try:
        from scipy.linalg import cython_blas
        capi = cython_blas.__pyx_capi__
    except (ImportError, AttributeError) as e:
        raise BlasUnavailable(f"scipy.linalg.cython_blas exports no C API: {e}") from None
    get_name, get_pointer = _capsule_api()
    out = {}
    for routine in ROUTINES:
        capsule = capi.get(routine)
        if capsule is None:
            raise BlasUnavailable(f"scipy.linalg.cython_blas does not export {routine}")
        # the capsule's name is its C signature, and GetPointer wants that exact name
        name = get_name(capsule)
        text = (name or b"").decode("ascii", "replace")
        if not text.startswith(_SIGNATURE[routine]):
            raise BlasUnavailable(f"scipy's {routine} has signature {text!r}, not the "
                                  f"LP64 Fortran one ({_SIGNATURE[routine]}...)")
        address = get_pointer(capsule, name)
        if not address:
            raise BlasUnavailable(f"no function pointer in scipy's {routine} capsule")
        out[routine] = int(address)
    return out


def blas_pointers():
    """``{routine: address}`` of SciPy's sgemm, dgemm, sgemv and dgemv (ints, valid for
    the life of this process); raises `BlasUnavailable` when SciPy does not export them
    as expected."""
    return dict(_pointers())


def available():
    """Whether `blas_pointers` works here (the caller otherwise lowers matmul to NumPy)."""
    try:
        _pointers()
    except BlasUnavailable:
        return False
    return True


_DECLARATIONS = r"""
/* ---- BLAS through SciPy's function pointers (ember._inductor.extern_blas) ---- */
#include <limits.h>
#include <stddef.h>

/* the Fortran ABI of SciPy's cython_blas: everything by pointer, column-major, int sizes */
typedef void (*ember_sgemm_t)(char *transa, char *transb, int *m, int *n, int *k,
                              float *alpha, float *a, int *lda, float *b, int *ldb,
                              float *beta, float *c, int *ldc);
typedef void (*ember_dgemm_t)(char *transa, char *transb, int *m, int *n, int *k,
                              double *alpha, double *a, int *lda, double *b, int *ldb,
                              double *beta, double *c, int *ldc);
typedef void (*ember_sgemv_t)(char *trans, int *m, int *n, float *alpha, float *a, int *lda,
                              float *x, int *incx, float *beta, float *y, int *incy);
typedef void (*ember_dgemv_t)(char *trans, int *m, int *n, double *alpha, double *a,
                              int *lda, double *x, int *incx, double *beta, double *y,
                              int *incy);

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
   anything).  -1 when ld is too small for a real matrix or does not fit BLAS's int. */
static inline int ember_blas_ld(ptrdiff_t rows, ptrdiff_t cols, ptrdiff_t ld) {
    ptrdiff_t need = cols > 1 ? cols : 1;
    if ((rows <= 1 || cols <= 0) && ld < need) ld = need;
    if (ld < need || ld > INT_MAX || rows > INT_MAX) return -1;
    return (int)ld;
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
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX) return -1;                               \
    if (M <= 0 || N <= 0) return 0;                                                         \
    int la = transa ? ember_blas_ld(K, M, lda) : ember_blas_ld(M, K, lda);                  \
    int lb = transb ? ember_blas_ld(N, K, ldb) : ember_blas_ld(K, N, ldb);                  \
    int lc = ember_blas_ld(M, N, ldc);                                                      \
    if (la < 0 || lb < 0 || lc < 0) return -1;                                              \
    /* column-major C^T = op(B)^T op(A)^T: B first, A second, M and N swapped */            \
    char ta = transa ? 'T' : 'N', tb = transb ? 'T' : 'N';                                  \
    int m = (int)N, n = (int)M, k = (int)K;                                                 \
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
    if (M > INT_MAX || N > INT_MAX || incx == 0 || incy == 0                                \
        || incx > INT_MAX || incx < -INT_MAX || incy > INT_MAX || incy < -INT_MAX)          \
        return -1;                                                                          \
    ptrdiff_t ny = trans ? N : M, nx = trans ? M : N;                                       \
    if (ny <= 0) return 0;                                                                  \
    if (nx <= 0) {                                                                          \
        /* an empty sum: BLAS would return without touching y, torch gives beta y */        \
        T *p = incy > 0 ? y : y - (ny - 1) * incy;                                          \
        for (ptrdiff_t i = 0; i < ny; i++) p[i * incy] = beta == 0 ? (T)0 : beta * p[i * incy]; \
        return 0;                                                                           \
    }                                                                                       \
    int la = ember_blas_ld(M, N, lda);                                                      \
    if (la < 0) return -1;                                                                  \
    /* row-major M x N is column-major N x M: op(A) = A is its transpose */                 \
    char t = trans ? 'N' : 'T';                                                             \
    int m = (int)N, n = (int)M, ix = (int)incx, iy = (int)incy;                             \
    gemv(&t, &m, &n, &alpha, (T *)A, &la, (T *)x, &ix, &beta, y, &iy);                      \
    return 0;                                                                               \
}
EMBER_GEMV(ember_gemv_f32, float, ember_sgemv_t)
EMBER_GEMV(ember_gemv_f64, double, ember_dgemv_t)
#undef EMBER_GEMV
/* ---- end of BLAS declarations ---- */
"""


def blas_declarations():
    """C source to put once at the top of a generated translation unit: the function-pointer
    types ``ember_{s,d}{gemm,gemv}_t`` of SciPy's Fortran-ABI routines, the ``ember_blas``
    table and its exported setter ``ember_blas_install(sgemm, dgemm, sgemv, dgemv)``, and the
    row-major helpers

    - ``int ember_gemm_f32(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, fn)``
      (and ``_f64``): ``C = alpha op(A) op(B) + beta C``, A ``M x K``, B ``K x N``, C
      ``M x N``, all row-major with row strides ``ld*``;
    - ``int ember_gemv_f32(trans, M, N, alpha, A, lda, x, incx, beta, y, incy, fn)`` (and
      ``_f64``): ``y = alpha op(A) x + beta y`` for a row-major ``M x N`` A.

    Sizes and strides are ``ptrdiff_t``; the helpers return 0, or -1 when they do not fit
    BLAS's 32-bit ints.  ``fn`` is the routine's pointer (`blas_pointers`, or
    ``ember_blas.sgemm`` after `install`)."""
    return _DECLARATIONS


def install(lib):
    """Hand SciPy's BLAS pointers to a loaded library built with `blas_declarations`
    (its ``ember_blas_install``); once per loaded library, before its kernels run."""
    p = _pointers()
    f = lib.ember_blas_install
    f.restype = None
    f.argtypes = [ctypes.c_void_p] * 4
    f(*(p[r] for r in ROUTINES))
