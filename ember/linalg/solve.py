"""Linear solvers and inverses: inv, solve, solve_triangular, cholesky_solve, lu_solve,
lstsq, pinv, tensorinv, tensorsolve (and their ``_ex`` variants).  The operators they call
are declared in ember.ops.linalg.solve."""
import numpy as np

from .._core.dispatch import apply, overridable
from ..ops import _return_types as _rt
from ..ops._nondiff import refuse_grad
from ..ops.blas import matmul
from ..ops.linalg.decompositions import lu_solve_core
from ..ops.linalg.solve import CHOL_SOLVE, INV, LSTSQ, PINV, SOLVE, TRI
from ._common import (LinAlgError, check_float, check_matrix, check_same_dtype, check_square,
                      raise_info, write_outs)

__all__ = ["inv", "inv_ex", "solve", "solve_ex", "solve_triangular", "cholesky_solve",
           "lu_solve", "lstsq", "pinv", "tensorinv", "tensorsolve", "LinAlgError"]

inv_ex_t = _rt.structseq("linalg_inv_ex", ("inverse", "info"))
solve_ex_t = _rt.structseq("linalg_solve_ex", ("result", "info"))
lstsq_t = _rt.structseq("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))

_SINGULAR_INV = ("The diagonal element {} is zero, the inversion could not be completed because "
                 "the input matrix is singular.")


# ---- inv --------------------------------------------------------------------------------

@overridable
def inv_ex(A, *, check_errors=False, out=None):
    """Inverse of a square matrix, with an ``info`` code instead of an error for singular input."""
    check_square("linalg.inv_ex", A)
    check_float("linalg.inv_ex", A)
    x, info = apply(INV, (A,), {})
    if check_errors:
        raise_info("linalg.inv_ex", A.shape[:-2], info._data, _SINGULAR_INV)
    return write_outs("linalg_inv_ex", 2, out, (x, info), inv_ex_t)


@overridable
def inv(A, *, out=None):
    """Computes the inverse of a square matrix if it exists."""
    check_square("linalg.inv", A)
    check_float("linalg.inv", A)
    x, info = apply(INV, (A,), {})
    raise_info("linalg.inv", A.shape[:-2], info._data, _SINGULAR_INV)
    return _out(x, out)


def _out(r, out):
    if out is None:
        return r
    from .._core.dispatch import write_out
    return write_out(out, r)


# ---- solve ------------------------------------------------------------------------------

def _is_vector_rhs(A, B):
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def _check_rhs(name, A, B, left, vec):
    n = A.shape[-1]
    if vec:
        ok = B.shape[-1] == n
        bshape = f"{B.shape[-1]}x1" if left else f"1x{B.shape[-1]}"
    else:
        ok = (B.shape[-2] if left else B.shape[-1]) == n
        bshape = f"{B.shape[-2]}x{B.shape[-1]}"
    if not ok:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {bshape})")


def _solve(name, A, B, left):
    check_square(name, A)
    check_float(name, A)
    check_same_dtype(name, A, B)
    vec = _is_vector_rhs(A, B)
    _check_rhs(name, A, B, left, vec)
    if vec:
        B = B.unsqueeze(-1) if left else B.unsqueeze(-2)
    if left:
        x, info = apply(SOLVE, (A, B), {})
    else:
        x, info = apply(SOLVE, (A.mT, B.mT), {})
        x = x.mT
    if vec:
        x = x.squeeze(-1) if left else x.squeeze(-2)
    return x, info


@overridable
def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """Solves ``AX = B`` (or ``XA = B``), returning an ``info`` code for singular ``A``."""
    x, info = _solve("linalg.solve_ex", A, B, left)
    if check_errors:
        raise_info("torch.linalg.solve_ex", A.shape[:-2], info._data,
                   "The solver failed because the input matrix is singular.")
    return write_outs("linalg_solve_ex", 4, out, (x, info), solve_ex_t, op="_linalg_solve_ex")


@overridable
def solve(A, B, *, left=True, out=None):
    """Computes the solution of a square system of linear equations with a unique solution."""
    x, info = _solve("linalg.solve", A, B, left)
    raise_info("torch.linalg.solve", A.shape[:-2], info._data,
               "The solver failed because the input matrix is singular.")
    return _out(x, out)


# ---- triangular -------------------------------------------------------------------------

@overridable
def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """Computes the solution of a triangular system of linear equations with a unique solution."""
    name = "linalg.solve_triangular"
    check_matrix(name, A)
    check_matrix(name, B, "B")
    check_square(name, A)
    check_float(name, A)
    check_same_dtype(name, A, B)
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    if left:
        r = apply(TRI, (A, B), {"upper": upper, "unit": unitriangular})
    else:
        r = apply(TRI, (A.mT, B.mT), {"upper": not upper, "unit": unitriangular}).mT
    return _out(r, out)


# ---- cholesky_solve ---------------------------------------------------------------------

@overridable
def cholesky_solve(B, L, upper=False, *, out=None):
    """Solves ``AX = B`` given the Cholesky factor ``L`` of ``A``."""
    check_matrix("cholesky_solve", B, "b")
    check_matrix("cholesky_solve", L, "u")
    check_same_dtype("cholesky_solve", B, L, "self", "input2")
    return _out(apply(CHOL_SOLVE, (B, L), {"upper": upper}), out)


# ---- lu_solve ---------------------------------------------------------------------------

@overridable
def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """Solves ``AX = B`` given the LU factorization of ``A`` from ``lu_factor``."""
    name = "linalg.lu_solve"
    check_square(name, LU, "LU")
    check_matrix(name, B, "B")
    check_same_dtype(name, LU, B, "LU", "B")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    return _out(lu_solve_core(LU, pivots, B, left, adjoint), out)


# ---- pinv -------------------------------------------------------------------------------

@overridable
def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """Computes the pseudoinverse (Moore-Penrose inverse) of a matrix."""
    check_matrix("linalg.pinv", A)
    check_float("linalg.pinv", A)
    if hermitian:
        check_square("linalg.pinv(hermitian=True)", A)
    refuse_grad("linalg_pinv", atol=atol, rtol=rtol)
    r = apply(PINV, (A, atol, rtol), {"hermitian": hermitian})
    return _out(r, out)


# ---- lstsq ------------------------------------------------------------------------------

@overridable
def lstsq(A, B, rcond=None, *, driver=None, out=None):
    """Computes a solution to the least squares problem of a system of linear equations."""
    name = "torch.linalg.lstsq"
    check_matrix("linalg.lstsq", A)
    check_float("linalg.lstsq", A)
    check_same_dtype("torch.linalg.lstsq", A, B, "input", "other")
    if driver is None:
        driver = "gelsy"
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"{name}: parameter `driver` should be one of "
                           f"(gels, gelsy, gelsd, gelss)")
    vec = B.ndim == A.ndim - 1
    if vec:
        B = B.unsqueeze(-1)
    if B.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"{name}: input.size(-2) should match other.size(-2)")
    x, resid, rank, sv = apply(LSTSQ, (A, B, rcond), {"driver": driver})
    if resid.numel():
        # torch's residuals are differentiable: recompute them from the solution in ember ops
        resid = (matmul(A, x) - B).abs().pow(2).sum(-2)
    if vec:
        x = x.squeeze(-1)
    return write_outs("linalg_lstsq", 4, out, (x, resid, rank, sv), lstsq_t, "cast")


# ---- tensor inverse / solve -------------------------------------------------------------

@overridable
def tensorinv(A, ind=2, *, out=None):
    """Computes the multiplicative inverse of ``torch.tensordot``."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    outer, inner = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    p, q = int(np.prod(outer)), int(np.prod(inner))
    if p != q:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {q} != {p}")
    r = inv(A.reshape(p, q)).reshape(inner + outer)
    return _out(r, out)


@overridable
def tensorsolve(A, B, dims=None, *, out=None):
    """Computes the solution ``X`` of the system ``torch.tensordot(A, X) = B``."""
    if dims is not None:
        nd = A.ndim
        dl = [d % nd for d in dims]
        rest = [d for d in range(nd) if d not in dl]
        A = A.permute(rest + dl)
    bshape = tuple(B.shape)
    rest = tuple(A.shape[B.ndim:])
    p, q = int(np.prod(bshape)), int(np.prod(rest))
    if tuple(A.shape[:B.ndim]) != bshape or p != q:
        raise RuntimeError(f"Expected self to satisfy the requirement "
                           f"prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), "
                           f"but got {q} != {p}")
    r = solve(A.reshape(p, q), B.reshape(p)).reshape(rest)
    return _out(r, out)


