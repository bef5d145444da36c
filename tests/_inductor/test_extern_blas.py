"""BLAS for generated C (ember._inductor.extern_blas, ember_lite._cblas): SciPy's gemm/gemv
pointers read from their capsules (LP64) and NumPy's own OpenBLAS routines (ILP64), and the
row-major helpers compiled for each into a tiny library with the kernel builder, called
through those pointers and checked against NumPy matmul for many shapes (M/N/K of 1 and 0),
transposed layouts, padded row strides and alpha/beta."""
import ctypes
import itertools
import os

import numpy as np
import pytest

from ember._core.ckernels import build as ckbuild
from ember._inductor import extern_blas as eb
from ember_lite import _cblas

needs_cc = pytest.mark.skipif(ckbuild.find_compiler() is None and not os.environ.get("CI"),
                              reason="no C compiler")

# exported wrappers around the static inline helpers, one taking the pointer as an argument
# and one using the table ember_blas_install filled
_TEST_SOURCE = r"""
int tb_abi(void) { return 11; }
#define WRAP(S, T, P)                                                                        \
int tb_gemm_##S(int ta, int tb, ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, double alpha,        \
                const T *A, ptrdiff_t lda, const T *B, ptrdiff_t ldb, double beta, T *C,      \
                ptrdiff_t ldc, void *fn) {                                                   \
    return ember_gemm_##S(ta, tb, M, N, K, (T)alpha, A, lda, B, ldb, (T)beta, C, ldc,       \
                          fn ? (ember_##P##gemm_t)fn : ember_blas.P##gemm);                \
}                                                                                           \
int tb_gemv_##S(int tr, ptrdiff_t M, ptrdiff_t N, double alpha, const T *A, ptrdiff_t lda,  \
                const T *x, ptrdiff_t incx, double beta, T *y, ptrdiff_t incy, void *fn) {   \
    return ember_gemv_##S(tr, M, N, (T)alpha, A, lda, x, incx, (T)beta, y, incy,            \
                          fn ? (ember_##P##gemv_t)fn : ember_blas.P##gemv);                \
}
WRAP(f32, float, s)
WRAP(f64, double, d)
"""

_DT = {np.float32: "f32", np.float64: "f64"}
_TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


@pytest.fixture(scope="module", params=[_cblas.LP64, _cblas.ILP64])
def lib(request):
    # the real component: generated C really calls SciPy's BLAS, and NumPy's (gcc is a
    # project requirement)
    assert ckbuild.find_compiler() is not None, "no C compiler found"
    abi = request.param
    head = eb.blas_declarations() if abi == _cblas.LP64 else _cblas.declarations(abi)
    lib, _ = ckbuild.build("ember_test_extern_blas", head + _TEST_SOURCE,
                           lambda l: l.tb_abi() == 11)
    lib.abi = abi
    lib.ptrs = eb.blas_pointers() if abi == _cblas.LP64 else _cblas.numpy_pointers()
    assert set(lib.ptrs) == set(_cblas.ROUTINES)
    P, N, D = ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_double
    for s in ("f32", "f64"):
        g = getattr(lib, f"tb_gemm_{s}")
        g.restype, g.argtypes = ctypes.c_int, [ctypes.c_int, ctypes.c_int, N, N, N, D, P, N,
                                               P, N, D, P, N, P]
        v = getattr(lib, f"tb_gemv_{s}")
        v.restype, v.argtypes = ctypes.c_int, [ctypes.c_int, N, N, D, P, N, P, N, D, P, N, P]
    return lib


def _stored(rng, rows, cols, dtype, pad):
    """A ``rows x cols`` row-major view of a buffer whose rows are ``cols + pad`` long, and
    its row stride in elements."""
    buf = rng.standard_normal((max(rows, 1), cols + pad)).astype(dtype)
    return buf[:rows, :cols], buf.shape[1]


def _gemm(lib, dtype, ta, tb, M, N, K, alpha=1.0, beta=0.0, pad=0, installed=False, seed=0):
    rng = np.random.default_rng(seed)
    A, lda = _stored(rng, *((K, M) if ta else (M, K)), dtype, pad)
    B, ldb = _stored(rng, *((N, K) if tb else (K, N)), dtype, pad)
    C, ldc = _stored(rng, M, N, dtype, pad)
    if beta == 0 and C.size:
        C[...] = np.nan  # with beta == 0 the output is not read: no NaN may survive
    C0 = C.copy()
    opA, opB = (A.T if ta else A), (B.T if tb else B)
    want = alpha * (opA.astype(np.float64) @ opB.astype(np.float64))
    if beta != 0:
        want = want + beta * C0.astype(np.float64)
    fn = None if installed else lib.ptrs[f"{'s' if dtype == np.float32 else 'd'}gemm"]
    rc = getattr(lib, f"tb_gemm_{_DT[dtype]}")(
        ta, tb, M, N, K, alpha, A.ctypes.data, lda, B.ctypes.data, ldb, beta, C.ctypes.data,
        ldc, fn)
    return rc, C, want


SHAPES = [(1, 1, 1), (1, 7, 5), (6, 1, 5), (6, 7, 1), (1, 1, 9), (1, 9, 1), (9, 1, 1),
          (3, 4, 5), (17, 33, 65), (64, 48, 96), (130, 3, 257)]


@needs_cc
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta, tb", list(itertools.product((0, 1), repeat=2)))
@pytest.mark.parametrize("M, N, K", SHAPES)
def test_gemm_matches_numpy(lib, dtype, ta, tb, M, N, K):
    rc, C, want = _gemm(lib, dtype, ta, tb, M, N, K)
    assert rc == 0
    np.testing.assert_allclose(C, want, **_TOL[dtype])


@needs_cc
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta, tb", list(itertools.product((0, 1), repeat=2)))
def test_gemm_padded_rows_alpha_beta_and_installed_table(lib, dtype, ta, tb):
    # row strides longer than the rows (views into wider buffers), alpha/beta != 1/0,
    # and the pointer table filled by install() instead of a pointer argument
    if lib.abi == _cblas.LP64:
        eb.install(lib)
    else:
        _cblas.install(lib, lib.ptrs)
    for (M, N, K), (alpha, beta) in itertools.product(
            [(5, 6, 7), (1, 6, 7), (5, 1, 7), (5, 6, 1), (33, 20, 40)],
            [(1.0, 0.0), (0.5, 1.0), (-2.0, 0.25), (0.0, 3.0)]):
        for installed in (False, True):
            rc, C, want = _gemm(lib, dtype, ta, tb, M, N, K, alpha, beta, pad=3,
                                installed=installed, seed=M * 100 + N)
            assert rc == 0
            np.testing.assert_allclose(C, want, **_TOL[dtype])
            assert not np.isnan(C).any()


@needs_cc
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("M, N, K", [(0, 4, 3), (4, 0, 3), (4, 5, 0), (1, 1, 0), (0, 0, 0)])
def test_gemm_empty_sizes(lib, dtype, M, N, K):
    # K == 0 is an empty sum: C becomes beta C (zeros for beta 0), as torch.addmm gives
    for beta in (0.0, 2.0):
        rc, C, want = _gemm(lib, dtype, 0, 0, M, N, K, beta=beta)
        assert rc == 0
        np.testing.assert_array_equal(C, want)


@needs_cc
def test_gemm_refuses_what_blas_cannot_take(lib):
    A = np.ones((4, 4), np.float32)
    p = lib.ptrs["sgemm"]
    # a row stride shorter than the row of a real (multi-row) matrix
    assert lib.tb_gemm_f32(0, 0, 4, 4, 4, 1.0, A.ctypes.data, 2, A.ctypes.data, 4, 0.0,
                           A.ctypes.data, 4, p) == -1
    if lib.abi == _cblas.LP64:  # sizes past BLAS's 32-bit int (ILP64 would take them)
        assert lib.tb_gemm_f32(0, 0, 1 << 31, 4, 4, 1.0, A.ctypes.data, 4, A.ctypes.data, 4,
                               0.0, A.ctypes.data, 4, p) == -1


def _logical(buf, n, inc):
    v = buf[::abs(inc)][:n]
    return v if inc > 0 else v[::-1]


def _gemv(lib, dtype, trans, M, N, alpha, beta, incx, incy, pad=0, seed=0):
    rng = np.random.default_rng(seed)
    A, lda = _stored(rng, M, N, dtype, pad)
    nx, ny = (M, N) if trans else (N, M)
    xbuf = rng.standard_normal(max(nx, 1) * abs(incx)).astype(dtype)
    ybuf = rng.standard_normal(max(ny, 1) * abs(incy)).astype(dtype)
    # BLAS order: with a negative increment element i sits at buf[(n - 1 - i) * |inc|]
    x = _logical(xbuf, nx, incx)
    ylog = _logical(ybuf, ny, incy)
    if beta == 0 and ny:
        ybuf[...] = np.nan
    y0 = ylog.astype(np.float64)
    want = alpha * ((A.T if trans else A).astype(np.float64) @ x.astype(np.float64))
    if beta != 0:
        want = want + beta * y0
    fn = lib.ptrs[f"{'s' if dtype == np.float32 else 'd'}gemv"]
    rc = getattr(lib, f"tb_gemv_{_DT[dtype]}")(trans, M, N, alpha, A.ctypes.data, lda,
                                               xbuf.ctypes.data, incx, beta,
                                               ybuf.ctypes.data, incy, fn)
    return rc, ylog.copy(), want


@needs_cc
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("trans", [0, 1])
@pytest.mark.parametrize("M, N", [(1, 1), (1, 9), (9, 1), (7, 5), (64, 33), (4, 0), (0, 4)])
def test_gemv_matches_numpy(lib, dtype, trans, M, N):
    for (alpha, beta), (incx, incy), pad in itertools.product(
            [(1.0, 0.0), (-0.5, 2.0)], [(1, 1), (2, 3), (-1, 2), (3, -2)], (0, 2)):
        rc, y, want = _gemv(lib, dtype, trans, M, N, alpha, beta, incx, incy, pad,
                            seed=M * 10 + N)
        assert rc == 0
        np.testing.assert_allclose(y, want, **_TOL[dtype])


def test_blas_pointers_are_scipys_routines():
    p = eb.blas_pointers()
    assert set(p) == set(eb.ROUTINES) and eb.available()
    assert all(isinstance(v, int) and v for v in p.values())
    assert len(set(p.values())) == len(p)
    assert eb.blas_pointers() == p  # stable for the process
    # call SciPy's dgemm straight through its address (Fortran ABI, column-major)
    c_int_p, c_dbl_p = ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_double)
    proto = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_char_p, c_int_p, c_int_p, c_int_p,
                             c_dbl_p, c_dbl_p, c_int_p, c_dbl_p, c_int_p, c_dbl_p, c_dbl_p,
                             c_int_p)
    dgemm = proto(p["dgemm"])
    a = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    b = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    c = np.zeros((2, 4), order="F")
    i = lambda v: ctypes.byref(ctypes.c_int(v))  # noqa: E731
    d = lambda v: ctypes.byref(ctypes.c_double(v))  # noqa: E731
    ptr = lambda arr: arr.ctypes.data_as(c_dbl_p)  # noqa: E731
    dgemm(b"N", b"N", i(2), i(4), i(3), d(1.0), ptr(a), i(2), ptr(b), i(3), d(0.0), ptr(c), i(2))
    np.testing.assert_array_equal(c, a @ b)


def test_unexpected_capsule_signature_is_refused(monkeypatch):
    import scipy.linalg.cython_blas as cb
    fake = dict(cb.__pyx_capi__)
    fake["sgemm"] = cb.__pyx_capi__["sgemv"]  # a capsule whose signature is gemv's
    monkeypatch.setattr(cb, "__pyx_capi__", fake)
    eb._pointers.cache_clear()
    try:
        with pytest.raises(eb.BlasUnavailable, match="sgemm has signature"):
            eb.blas_pointers()
        assert not eb.available()
    finally:
        monkeypatch.undo()
        eb._pointers.cache_clear()
    assert eb.available()


def test_declarations_are_plain_c():
    src = eb.blas_declarations()
    for name in ("ember_sgemm_t", "ember_dgemm_t", "ember_sgemv_t", "ember_dgemv_t",
                 "ember_gemm_f32", "ember_gemm_f64", "ember_gemv_f32", "ember_gemv_f64",
                 "ember_blas_install"):
        assert name in src
    # no process-specific address is baked in: the cached library must serve every process
    assert not any(hex(v) in src or str(v) in src for v in eb.blas_pointers().values())
