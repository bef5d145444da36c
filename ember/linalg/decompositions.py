"""Factorizations: cholesky, qr, lu (lu_factor, lu, lu_unpack), ldl, householder_product,
and the determinants (det, slogdet, logdet)."""
import numpy as np

from .._core import dtype as _dt
from .._core import meta as _meta
from .._core.dispatch import apply, overridable
from .._core.op import Op
from .._core.tensor import wrap
from ..ops import _return_types as _rt
from ..ops.blas import matmul
from ..ops.shape import cat, tril, triu
from ._common import (batched, check_float, check_matrix, check_same_dtype, check_square,
                      lapack, raise_info, write_outs)
from .solve import CHOL_SOLVE, INV, TRI, _batched_rhs, _out, _with_info

__all__ = ["cholesky", "cholesky_ex", "cholesky_inverse", "qr", "lu_factor", "lu_factor_ex",
           "lu", "lu_unpack", "ldl_factor", "ldl_factor_ex", "ldl_solve", "householder_product",
           "det", "slogdet", "logdet"]

cholesky_ex_t = _rt.structseq("linalg_cholesky_ex", ("L", "info"))
qr_t = _rt.structseq("linalg_qr", ("Q", "R"))
lu_factor_t = _rt.structseq("linalg_lu_factor", ("LU", "pivots"))
lu_factor_ex_t = _rt.structseq("linalg_lu_factor_ex", ("LU", "pivots", "info"))
lu_t = _rt.structseq("linalg_lu", ("P", "L", "U"))
lu_unpack_t = _rt.structseq("lu_unpack", ("P", "L", "U"))
ldl_factor_t = _rt.structseq("linalg_ldl_factor", ("LD", "pivots"))
ldl_factor_ex_t = _rt.structseq("linalg_ldl_factor_ex", ("LD", "pivots", "info"))
slogdet_t = _rt.structseq("linalg_slogdet", ("sign", "logabsdet"))
slogdet_legacy_t = _rt.structseq("slogdet", ("sign", "logabsdet"))

_NOT_PD = ("The factorization could not be completed because the input is not positive-definite "
           "(the leading minor of order {} is not positive-definite).")


def _tri_solve(a, b, upper, left=True):
    if left:
        return apply(TRI, (a, b), {"upper": upper, "unit": False})
    return apply(TRI, (a.mT, b.mT), {"upper": not upper, "unit": False}).mT


# ---- cholesky ---------------------------------------------------------------------------

def _chol_kernel(xp, a, upper):
    # upper: factor A^H (read A's upper triangle); the lower factor is returned either way
    if upper:
        a = np.conj(np.swapaxes(a, -1, -2))
    info = np.zeros(a.shape[:-2], np.int32)
    try:
        return np.linalg.cholesky(a).astype(a.dtype, copy=False), info
    except np.linalg.LinAlgError:
        f = lapack("potrf", a.dtype)
        l, info = batched(lambda m: f(m, lower=1, clean=1)[:2], a)
        return np.tril(l), info.astype(np.int32)


def _chol_vjp(ctx, g, a, upper):
    l = ctx.out[0]
    p = tril(matmul(l.mH, g[0]))
    phi = 0.5 * (p + tril(p, -1).mH)
    ga = _tri_solve(l.mH, phi, True)
    return _tri_solve(l, ga, False, left=False)


CHOL = Op("linalg_cholesky_ex", _chol_kernel, _chol_vjp, save_inputs=False, save_output=True,
          n_out=2, nondiff_outputs=(1,), category="linalg",
          shape=lambda a, upper: _with_info(a, a.shape, a.dtype))


def _cholesky(name, A, upper):
    check_square(name, A)
    check_float(name, A)
    l, info = apply(CHOL, (A,), {"upper": upper})
    return (l.mH if upper else l), info


@overridable
def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """Cholesky decomposition with an ``info`` code instead of an error."""
    l, info = _cholesky("linalg.cholesky_ex", A, upper)
    if check_errors:
        raise_info("linalg.cholesky_ex", A.shape[:-2], info._data, _NOT_PD)
    return write_outs("linalg_cholesky_ex", 3, out, (l, info), cholesky_ex_t)


@overridable
def cholesky(A, *, upper=False, out=None):
    """Computes the Cholesky decomposition of a complex Hermitian or real symmetric
    positive-definite matrix."""
    l, info = _cholesky("linalg.cholesky", A, upper)
    raise_info("linalg.cholesky", A.shape[:-2], info._data, _NOT_PD)
    return _out(l, out)


@overridable
def cholesky_inverse(L, upper=False, *, out=None):
    """Inverse of a Hermitian positive-definite matrix given its Cholesky factor."""
    check_square("cholesky_inverse", L, "input")
    check_float("cholesky_inverse", L)
    eye = wrap(np.eye(L.shape[-1], dtype=L._data.dtype))
    return _out(apply(CHOL_SOLVE, (eye, L), {"upper": upper}), out)


# ---- qr ---------------------------------------------------------------------------------

def _qr_kernel(xp, a, mode):
    m, n = a.shape[-2:]
    if a.size == 0:
        k = m if mode == "complete" else min(m, n)
        q = np.zeros(a.shape[:-2] + ((m, k) if mode != "r" else (0,)), a.dtype)
        if mode != "r" and k:
            q[...] = np.eye(m, k, dtype=a.dtype)
        return q, np.zeros(a.shape[:-2] + (k if mode != "r" else min(m, n), n), a.dtype)
    if mode == "r":
        return np.zeros((0,), a.dtype), np.linalg.qr(a, mode="r").astype(a.dtype, copy=False)
    q, r = np.linalg.qr(a, mode=mode)
    return q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)


def _copyutl(m):
    # triu(M) with a real diagonal, mirrored to the strictly lower part as M^H
    d = m.diagonal(0, -2, -1)
    d = d.real if d.is_complex() else d
    from ..ops import diag_embed
    up = triu(m, 1)
    r = up + up.mH + diag_embed(d)
    return r


def _qr_square_bw(gq, gr, q, r):
    # A = QR with m >= n (reduced): gA = [gQ + Q copyutl(gR R^H - Q^H gQ)] R^{-H}
    m = matmul(gr, r.mH) - matmul(q.mH, gq)
    b = gq + matmul(q, _copyutl(m))
    return _tri_solve(r.mH, b, False, left=False)


def _qr_vjp(ctx, g, a, mode):
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                           "differentiate through linalg.qr.")
    q, r = ctx.out
    gq, gr = g
    m, n = q.shape[-2], r.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    if m >= n:
        return _qr_square_bw(gq, gr, q, r)
    # wide: A = Q [R1 R2]; Y = Q R2 is a plain product
    r1 = r[..., :, :m]
    gr1, gr2 = gr[..., :, :m], gr[..., :, m:]
    gy = matmul(q, gr2)
    gx = _qr_square_bw(gq + matmul(a[..., :, m:], gr2.mH), gr1, q, r1)
    return cat([gx, gy], -1)


def _qr_shape(a, mode):
    bs, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    if mode == "r":
        return ((0,), a.dtype), (bs + (k, n), a.dtype)
    if mode == "complete":
        return (bs + (m, m), a.dtype), (bs + (m, n), a.dtype)
    return (bs + (m, k), a.dtype), (bs + (k, n), a.dtype)


QR = Op("linalg_qr", _qr_kernel, _qr_vjp, save_inputs=True, save_output=True, n_out=2,
        category="linalg", shape=_qr_shape)


@overridable
def qr(A, mode="reduced", *, out=None):
    """Computes the QR decomposition of a matrix."""
    check_matrix("linalg.qr", A)
    check_float("linalg.qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    return write_outs("linalg_qr", 2, out, apply(QR, (A,), {"mode": mode}), qr_t)


# ---- lu ---------------------------------------------------------------------------------

def _lu_kernel(xp, a):
    m, n = a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        return (a.copy(), np.broadcast_to(np.arange(1, k + 1, dtype=np.int32),
                                          a.shape[:-2] + (k,)).copy(),
                np.zeros(a.shape[:-2], np.int32))
    f = lapack("getrf", a.dtype)
    lu_, piv, info = batched(lambda x: f(x), a)
    return lu_.astype(a.dtype, copy=False), (piv + 1).astype(np.int32), info.astype(np.int32)


def _unpack_lu(lu_):
    m, n = lu_.shape[-2:]
    k = min(m, n)
    eye = wrap(np.eye(m, k, dtype=lu_._data.dtype))
    return tril(lu_[..., :, :k], -1) + eye, triu(lu_[..., :k, :])


def _lu_square_bw(gl, gu, l, u):
    # gA = L^{-H} [tril(L^H gL, -1) + triu(gU U^H)] U^{-H}   (before the permutation)
    phi = tril(matmul(l.mH, gl), -1) + triu(matmul(gu, u.mH))
    x = apply(TRI, (l.mH, phi), {"upper": True, "unit": True})
    return _tri_solve(u.mH, x, False, left=False)


def lu_backward(gl, gu, p, l, u):
    """Gradient of A = P L U for gradients of L and U (any shape), in ember ops."""
    m, n = l.shape[-2], u.shape[-1]
    if m == n:
        ga = _lu_square_bw(gl, gu, l, u)
    elif m < n:
        u1, u2 = u[..., :, :m], u[..., :, m:]
        gu2 = gu[..., :, m:]
        ga2 = apply(TRI, (l.mH, gu2), {"upper": True, "unit": True})
        gl1 = gl - matmul(ga2, u2.mH)
        ga = cat([_lu_square_bw(gl1, gu[..., :, :m], l, u1), ga2], -1)
    else:
        l1, l2 = l[..., :n, :], l[..., n:, :]
        gl2 = gl[..., n:, :]
        ga2 = _tri_solve(u.mH, gl2, False, left=False)
        gu1 = gu - matmul(l2.mH, ga2)
        ga = cat([_lu_square_bw(gl[..., :n, :], gu1, l1, u), ga2], -2)
    return matmul(p, ga)


def _lu_vjp(ctx, g, a):
    lu_, piv, _ = ctx.out
    glu = g[0]
    l, u = _unpack_lu(lu_)
    p = _perm_matrix(lu_, piv)
    k = min(lu_.shape[-2:])
    return lu_backward(tril(glu[..., :, :k], -1), triu(glu[..., :k, :]), p, l, u)


def _lu_shape(a):
    k = min(a.shape[-2], a.shape[-1])
    return (a.shape, a.dtype), (a.shape[:-2] + (k,), _dt.int32), (a.shape[:-2], _dt.int32)


LU = Op("linalg_lu_factor_ex", _lu_kernel, _lu_vjp, save_inputs=False, save_output=True, n_out=3,
        nondiff_outputs=(1, 2), category="linalg", shape=_lu_shape)


def _perm_kernel(xp, piv, m, dtype):
    bs = piv.shape[:-1]
    pf = piv.reshape(-1, piv.shape[-1]) - 1
    out = np.zeros((pf.shape[0], m, m), dtype)
    for b in range(pf.shape[0]):
        perm = np.arange(m)
        for i, j in enumerate(pf[b]):
            perm[i], perm[j] = perm[j], perm[i]
        out[b, perm, np.arange(m)] = 1
    return out.reshape(bs + (m, m))


PERM = Op("_lu_pivots_to_perm", _perm_kernel, None, differentiable=False, category="linalg",
          shape=lambda piv, m, dtype: (piv.shape[:-1] + (m, m), _meta.as_dtype(dtype)))


def _perm_matrix(lu_, pivots):
    return apply(PERM, (pivots,), {"m": lu_.shape[-2], "dtype": lu_._data.dtype})


_ZERO_U = ("U[{0},{0}] is zero and using it on lu_solve would result in a division by zero. If "
           "you still want to perform the factorization, consider calling linalg.lu(A, pivot) or "
           "linalg.lu_factor_ex(A, pivot)")


def _lu_factor(name, A, pivot):
    check_matrix(name, A)
    check_float(name, A)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    return apply(LU, (A,), {})


@overridable
def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """LU factorization with partial pivoting, returning an ``info`` code."""
    lu_, piv, info = _lu_factor("torch.linalg.lu_factor_ex", A, pivot)
    if check_errors:
        raise_info("torch.linalg.lu_factor_ex", A.shape[:-2], info._data, _ZERO_U)
    return write_outs("linalg_lu_factor_ex", 3, out, (lu_, piv, info), lu_factor_ex_t)


@overridable
def lu_factor(A, *, pivot=True, out=None):
    """Computes a compact representation of the LU factorization with partial pivoting."""
    lu_, piv, info = _lu_factor("torch.linalg.lu_factor", A, pivot)
    raise_info("torch.linalg.lu_factor", A.shape[:-2], info._data, _ZERO_U)
    return write_outs("linalg_lu_factor", 2, out, (lu_, piv), lu_factor_t,
                      op="linalg_lu_factor_ex")


@overridable
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """Unpacks the data and pivots of an LU factorization into P, L, U."""
    if unpack_data:
        l, u = _unpack_lu(LU_data)
    else:
        l = u = wrap(np.zeros((0,), LU_data._data.dtype))
    p = _perm_matrix(LU_data, LU_pivots) if unpack_pivots else \
        wrap(np.zeros((0,), LU_data._data.dtype))
    return write_outs("lu_unpack", 4, out, (p, l, u), lu_unpack_t)


@overridable
def lu(A, *, pivot=True, out=None):
    """Computes the LU decomposition with partial pivoting of a matrix: A = P L U."""
    lu_, piv, _ = _lu_factor("linalg.lu", A, pivot)
    return write_outs("linalg_lu", 2, out, lu_unpack(lu_, piv), lu_t)


# ---- ldl --------------------------------------------------------------------------------

def _ldl_kernel(xp, a, hermitian):
    n = a.shape[-1]
    if a.size == 0:
        return a.copy(), np.zeros(a.shape[:-1], np.int32), np.zeros(a.shape[:-2], np.int32)
    f = lapack("hetrf" if hermitian and a.dtype.kind == "c" else "sytrf", a.dtype)
    ld, piv, info = batched(lambda x: f(x, lower=1, lwork=max(64 * n, 1)), a)
    return np.tril(ld).astype(a.dtype, copy=False), piv.astype(np.int32), info.astype(np.int32)


LDL = Op("linalg_ldl_factor_ex", _ldl_kernel, None, n_out=3, differentiable=False,
         category="linalg", shape=lambda a, hermitian: (
             (a.shape, a.dtype), (a.shape[:-1], _dt.int32), (a.shape[:-2], _dt.int32)))


@overridable
def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """LDL factorization (Bunch-Kaufman pivoting) with an ``info`` code."""
    check_square("torch.linalg.ldl_factor_ex", A)
    check_float("torch.linalg.ldl_factor_ex", A)
    ld, piv, info = apply(LDL, (A,), {"hermitian": hermitian})
    if check_errors:
        raise_info("torch.linalg.ldl_factor_ex", A.shape[:-2], info._data,
                   "The factorization could not be completed because the input is singular "
                   "(D[{0},{0}] is zero).")
    return write_outs("linalg_ldl_factor_ex", 3, out, (ld, piv, info), ldl_factor_ex_t,
                      op="aten::linalg_ldl_factor_ex")


@overridable
def ldl_factor(A, *, hermitian=False, out=None):
    """Computes a compact representation of the LDL factorization of a symmetric/Hermitian
    matrix."""
    ld, piv, info = ldl_factor_ex(A, hermitian=hermitian)
    raise_info("torch.linalg.ldl_factor", A.shape[:-2], info._data,
               "The factorization could not be completed because the input is singular "
               "(D[{0},{0}] is zero).")
    return write_outs("linalg_ldl_factor", 2, out, (ld, piv), ldl_factor_t,
                      op="aten::linalg_ldl_factor_ex")


def _ldl_solve_kernel(xp, ld, piv, b, hermitian):
    f = lapack("hetrs" if hermitian and ld.dtype.kind == "c" else "sytrs", ld.dtype)
    bs = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    if b.size == 0 or ld.shape[-1] == 0:
        return np.zeros(bs + b.shape[-2:], b.dtype)
    ldb = np.broadcast_to(ld, bs + ld.shape[-2:])
    pb = np.broadcast_to(piv, bs + piv.shape[-1:])
    bb = np.broadcast_to(b, bs + b.shape[-2:])
    out = np.empty(bs + b.shape[-2:], b.dtype).reshape((-1,) + b.shape[-2:])
    lf = ldb.reshape((-1,) + ld.shape[-2:])
    pf = pb.reshape((-1, piv.shape[-1]))
    bf = bb.reshape((-1,) + b.shape[-2:])
    for i in range(out.shape[0]):
        out[i] = f(lf[i], pf[i], bf[i], lower=1)[0]
    return out.reshape(bs + b.shape[-2:])


LDL_SOLVE = Op("linalg_ldl_solve", _ldl_solve_kernel, None, differentiable=False,
               category="linalg",
               shape=lambda ld, piv, b, hermitian: (_batched_rhs(ld, b), b.dtype))


@overridable
def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """Computes the solution of a system of linear equations using the LDL factorization."""
    check_square("torch.linalg.ldl_solve", LD, "LD")
    check_matrix("torch.linalg.ldl_solve", B, "B")
    check_same_dtype("torch.linalg.ldl_solve", LD, B, "LD", "B")
    return _out(apply(LDL_SOLVE, (LD, pivots, B), {"hermitian": hermitian}), out)


# ---- householder_product ----------------------------------------------------------------

@overridable
def householder_product(A, tau, *, out=None):
    """Computes the first n columns of a product of Householder matrices."""
    name = "torch.linalg.householder_product"
    check_matrix(name, A, "input")
    m, n = A.shape[-2:]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1]")
    k = tau.shape[-1]
    if n < k:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           f"tau.shape[-1]")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {tau.ndim} and input.ndim is equal to "
                           f"{A.ndim}")
    check_same_dtype(name, A, tau, "input", "tau")
    dt = A._data.dtype
    v = tril(A[..., :, :k], -1) + wrap(np.eye(m, k, dtype=dt))
    q = wrap(np.broadcast_to(np.eye(m, n, dtype=dt), tuple(A.shape[:-2]) + (m, n)).copy())
    for i in range(k - 1, -1, -1):
        vi = v[..., :, i:i + 1]
        q = q - tau[..., i:i + 1].unsqueeze(-1) * matmul(vi, matmul(vi.mH, q))
    return _out(q, out)


# ---- determinants -----------------------------------------------------------------------

def _det_kernel(xp, a):
    return np.asarray(np.linalg.det(a)).astype(a.dtype, copy=False)


def _eps(a):
    return float(np.finfo(np.abs(np.zeros((), a._data.dtype)).dtype).eps)


def _prod_safe_zeros_backward(g, x):
    """Gradient of ``prod(x, -1)`` without dividing by ``x``: products of the elements
    before and after each one (exclusive cumulative products from both ends)."""
    ones = x[..., :1] * 0 + 1
    before = cat((ones, x[..., :-1]), -1).cumprod(-1)
    after = cat((ones, x[..., 1:].flip(-1)), -1).cumprod(-1).flip(-1)
    return g * (before * after).conj()


def _det_vjp(ctx, g, a):
    # torch's linalg_det_backward: d det / dA = conj(det) A^{-H}, finite at singular A
    from ..ops._helpers import cj
    from ..ops.pointwise import where
    from .._core.state import STATE
    n = a.shape[-1]
    gd = (g * cj(ctx.out)).unsqueeze(-1).unsqueeze(-1)
    eye = wrap(np.eye(n, dtype=a._data.dtype))
    if not STATE.grad_enabled:
        # first order only: solve with the LU, its exact zero pivots nudged to eps (for an
        # exactly singular A, det is 0 and so is the gradient, as in torch)
        lu_, piv, _ = lu_factor_ex(a)
        d = lu_.diagonal(0, -2, -1)
        lu_ = lu_ + where(d == 0, _eps(a), 0).diag_embed()
        from .solve import lu_solve
        return gd * lu_solve(lu_, piv, eye, adjoint=True)
    # differentiable again: the SVD formula (prod of the other singular values) for
    # (near-)singular matrices, A^{-H} for the others; each computed on safe stand-ins
    from .eig import svd
    sing = (ctx.out.abs() < 100 * _eps(a)).unsqueeze(-1).unsqueeze(-1)
    regular = gd * apply(INV, (where(sing, eye, a),), {})[0].mH
    spread = wrap(np.diag(np.arange(1, n + 1)).astype(a._data.dtype))
    u, s_, vh = svd(where(sing, a, spread))
    alpha = cj(apply(DET, (u,), {}) * apply(DET, (vh,), {}))
    dd = _prod_safe_zeros_backward((g * alpha).unsqueeze(-1), s_.to(a.dtype))
    return where(sing, matmul(u * dd.unsqueeze(-2), vh), regular)


DET = Op("linalg_det", _det_kernel, _det_vjp, save_output=True, category="linalg",
         shape=lambda a: (a.shape[:-2], a.dtype))


def _slogdet_kernel(xp, a):
    s, l_ = np.linalg.slogdet(a)
    return np.asarray(s).astype(a.dtype, copy=False), \
        np.asarray(l_).astype(np.abs(a[..., :0, :0]).dtype, copy=False)


def _slogdet_vjp(ctx, g, a):
    sign, _ = ctx.out
    gs, gl = g
    c = gl
    if a.is_complex():
        c = gl + (gs * sign.conj()).imag * 1j
    ainv = apply(INV, (a,), {})[0]
    return c.unsqueeze(-1).unsqueeze(-1) * ainv.mH


SLOGDET = Op("linalg_slogdet", _slogdet_kernel, _slogdet_vjp, save_output=True, n_out=2,
             category="linalg", shape=lambda a: (
                 (a.shape[:-2], a.dtype), (a.shape[:-2], a.dtype.to_real())))


@overridable
def det(A, *, out=None):
    """Computes the determinant of a square matrix."""
    check_square("linalg.det", A)
    check_float("linalg.det", A)
    return _out(apply(DET, (A,), {}), out)


@overridable
def slogdet(A, *, out=None):
    """Computes the sign and natural logarithm of the absolute value of the determinant."""
    check_square("linalg.slogdet", A)
    check_float("linalg.slogdet", A)
    return write_outs("linalg_slogdet", 1, out, apply(SLOGDET, (A,), {}), slogdet_t,
                      op="_linalg_slogdet")


@overridable
def logdet(A):
    """Natural log of the determinant (nan for real matrices with a negative determinant)."""
    check_square("logdet", A)
    check_float("logdet", A)
    sign, labs = apply(SLOGDET, (A,), {})
    # log(sign): nan for a negative real determinant, i*angle for complex ones
    return labs + sign.log()


