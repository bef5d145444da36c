"""Factorizations: cholesky, qr, lu (lu_factor, lu, lu_unpack), ldl, householder_product,
and the determinants (det, slogdet, logdet).  The operators they call are declared in
ember.ops.linalg.decompositions."""
from .._core.dispatch import apply, overridable
from ..ops import _return_types as _rt
from ..ops.blas import matmul
from ..ops.creation import eye, zeros
from ..ops.linalg.decompositions import (CHOL, DET, LDL, LDL_SOLVE, LU, QR, SLOGDET, perm_matrix,
                                         unpack_lu)
from ..ops.linalg.solve import CHOL_SOLVE
from ..ops.shape import tril
from ._common import (check_float, check_matrix, check_same_dtype, check_square, raise_info,
                      write_outs)
from .solve import _out

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


# ---- cholesky ---------------------------------------------------------------------------

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
    eye_ = eye(L.shape[-1], dtype=L.dtype, device=L.device)
    return _out(apply(CHOL_SOLVE, (eye_, L), {"upper": upper}), out)


# ---- qr ---------------------------------------------------------------------------------

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
        l, u = unpack_lu(LU_data)
    else:
        l = u = zeros(0, dtype=LU_data.dtype, device=LU_data.device)
    p = perm_matrix(LU_data, LU_pivots) if unpack_pivots else \
        zeros(0, dtype=LU_data.dtype, device=LU_data.device)
    return write_outs("lu_unpack", 4, out, (p, l, u), lu_unpack_t)


@overridable
def lu(A, *, pivot=True, out=None):
    """Computes the LU decomposition with partial pivoting of a matrix: A = P L U."""
    lu_, piv, _ = _lu_factor("linalg.lu", A, pivot)
    return write_outs("linalg_lu", 2, out, lu_unpack(lu_, piv), lu_t)


# ---- ldl --------------------------------------------------------------------------------

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
                      op="aten::linalg_ldl_factor_ex", differentiable=False)


@overridable
def ldl_factor(A, *, hermitian=False, out=None):
    """Computes a compact representation of the LDL factorization of a symmetric/Hermitian
    matrix."""
    ld, piv, info = ldl_factor_ex(A, hermitian=hermitian)
    raise_info("torch.linalg.ldl_factor", A.shape[:-2], info._data,
               "The factorization could not be completed because the input is singular "
               "(D[{0},{0}] is zero).")
    return write_outs("linalg_ldl_factor", 2, out, (ld, piv), ldl_factor_t,
                      op="aten::linalg_ldl_factor_ex", differentiable=False)


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
    v = tril(A[..., :, :k], -1) + eye(m, k, dtype=A.dtype, device=A.device)
    q = eye(m, n, dtype=A.dtype, device=A.device).expand(*A.shape[:-2], m, n).contiguous()
    for i in range(k - 1, -1, -1):
        vi = v[..., :, i:i + 1]
        q = q - tau[..., i:i + 1].unsqueeze(-1) * matmul(vi, matmul(vi.mH, q))
    return _out(q, out)


# ---- determinants -----------------------------------------------------------------------

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


