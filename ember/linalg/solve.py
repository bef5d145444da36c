"""Linear solvers and inverses: inv, solve, solve_triangular, cholesky_solve, lu_solve,
lstsq, pinv, tensorinv, tensorsolve (and their ``_ex`` variants)."""
import numpy as np

from .._core import dtype as _dt
from .._core import meta as _meta
from .._core.dispatch import apply, overridable
from .._core.op import Op
from .._core.tensor import Tensor
from ..ops import _return_types as _rt
from ..ops.blas import matmul
from ..ops.shape import tril, triu
from ._common import (LinAlgError, batched, check_float, check_matrix, check_same_dtype,
                      check_square, getrf_info, lapack, raise_info, write_outs)

__all__ = ["inv", "inv_ex", "solve", "solve_ex", "solve_triangular", "cholesky_solve",
           "lu_solve", "lstsq", "pinv", "tensorinv", "tensorsolve", "LinAlgError"]

inv_ex_t = _rt.structseq("linalg_inv_ex", ("inverse", "info"))
solve_ex_t = _rt.structseq("linalg_solve_ex", ("result", "info"))
lstsq_t = _rt.structseq("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))

_SINGULAR_INV = ("The diagonal element {} is zero, the inversion could not be completed because "
                 "the input matrix is singular.")


# ---- inv --------------------------------------------------------------------------------

def _nan_fill(fn, a, info, *rest):
    """Evaluate ``fn`` matrix by matrix, leaving NaN where ``info`` flags a failure."""
    out = None
    flat_info = info.reshape(-1)
    af = a.reshape((-1,) + a.shape[-2:])
    rs = [r.reshape((-1,) + r.shape[-2:]) for r in rest]
    for i in range(af.shape[0]):
        r = np.full(fn(np.eye(af.shape[-1], dtype=a.dtype), *[x[i] for x in rs]).shape, np.nan,
                    dtype=a.dtype) if flat_info[i] else fn(af[i], *[x[i] for x in rs])
        if out is None:
            out = np.empty((af.shape[0],) + r.shape, dtype=a.dtype)
        out[i] = r
    return out


def _inv_kernel(xp, a):
    info = np.zeros(a.shape[:-2], np.int32)
    try:
        r = np.linalg.inv(a)
    except np.linalg.LinAlgError:
        info = getrf_info(a).astype(np.int32)
        r = _nan_fill(np.linalg.inv, a, info).reshape(a.shape)
    return r.astype(a.dtype, copy=False), info


def _inv_vjp(ctx, g, a):
    x = ctx.out[0]
    return -matmul(x.mH, matmul(g[0], x.mH))


def _with_info(a, shape, dtype):
    """Rule of a factorization/solve returning (result, info over A's batch)."""
    return (shape, dtype), (a.shape[:-2], _dt.int32)


INV = Op("linalg_inv_ex", _inv_kernel, _inv_vjp, save_inputs=False, save_output=True, n_out=2,
         nondiff_outputs=(1,), category="linalg",
         shape=lambda a: _with_info(a, a.shape, a.dtype))


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

def _solve_kernel(xp, a, b):
    # torch reports info over A's batch (B may broadcast it further)
    info = np.zeros(a.shape[:-2], np.int32)
    if a.ndim == 2 and b.ndim == 2 and a.size and b.size:
        # one system: LAPACK gesv directly (NumPy's gufunc path is ~2x slower here)
        _, _, x, inf = lapack("gesv", a.dtype)(a, b)
        if inf == 0:
            return x, info
    try:
        r = np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        bs = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        info = getrf_info(a).astype(np.int32)
        ab = np.broadcast_to(a, bs + a.shape[-2:])
        bb = np.broadcast_to(b, bs + b.shape[-2:])
        r = _nan_fill(np.linalg.solve, ab, np.broadcast_to(info, bs), bb).reshape(
            bs + b.shape[-2:])
    return r.astype(a.dtype, copy=False), info


def _solve_vjp(ctx, g, a, b):
    x = ctx.out[0]
    gb = apply(SOLVE, (a.mH, g[0]), {})[0]
    ga = -matmul(gb, x.mH) if ctx.needs_input_grad[0] else None
    return ga, gb


def _batched_rhs(a, b):
    """Shape of X in A X = B: the broadcast batch, then B's matrix dims."""
    return _meta.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:]


def _solve_shape(a, b):
    if len(b.shape) == 1:
        return _with_info(a, a.shape[:-1], a.dtype)
    return _with_info(a, _batched_rhs(a, b), a.dtype)


SOLVE = Op("linalg_solve_ex", _solve_kernel, _solve_vjp, save_inputs=(0,), save_output=True,
           n_out=2, nondiff_outputs=(1,), category="linalg", shape=_solve_shape)


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

def _trsm(a, b, upper, unit):
    from scipy.linalg import blas
    c = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}[a.dtype.name]
    f = getattr(blas, c + "trsm")
    bs = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    ab = np.broadcast_to(a, bs + a.shape[-2:]).reshape((-1,) + a.shape[-2:])
    bb = np.broadcast_to(b, bs + b.shape[-2:]).reshape((-1,) + b.shape[-2:])
    out = np.empty(bb.shape, dtype=a.dtype)
    for i in range(bb.shape[0]):
        out[i] = f(1.0, ab[i], bb[i], lower=0 if upper else 1, diag=1 if unit else 0)
    return out.reshape(bs + b.shape[-2:])


def _tri_kernel(xp, a, b, upper, unit):
    if a.shape[-1] == 0 or b.size == 0:
        bs = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        return np.zeros(bs + b.shape[-2:], dtype=a.dtype)
    return _trsm(a, b, upper, unit)


def _tri_vjp(ctx, g, a, b, upper, unit):
    x = ctx.out
    gb = apply(TRI, (a.mH, g), {"upper": not upper, "unit": unit})
    ga = None
    if ctx.needs_input_grad[0]:
        ga = -matmul(gb, x.mH)
        off = 1 if unit else 0
        ga = triu(ga, off) if upper else tril(ga, -off)
    return ga, gb


TRI = Op("linalg_solve_triangular", _tri_kernel, _tri_vjp, save_inputs=(0,), save_output=True,
         category="linalg", shape=lambda a, b, upper, unit: (_batched_rhs(a, b), a.dtype))


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

def _chol_solve_kernel(xp, b, l, upper):
    if b.size == 0 or l.shape[-1] == 0:
        bs = np.broadcast_shapes(b.shape[:-2], l.shape[:-2])
        return np.zeros(bs + b.shape[-2:], dtype=b.dtype)
    if upper:   # A = U^H U
        y = _trsm(np.conj(np.swapaxes(l, -1, -2)), b, False, False)
        return _trsm(l, y, True, False)
    y = _trsm(l, b, False, False)
    return _trsm(np.conj(np.swapaxes(l, -1, -2)), y, True, False)


def _chol_solve_vjp(ctx, g, b, l, upper):
    x = ctx.out
    gb = apply(CHOL_SOLVE, (g, l), {"upper": upper})
    gl = None
    if ctx.needs_input_grad[1]:
        c = matmul(gb, x.mH)
        c = c + c.mH
        gl = -matmul(l, c) if upper else -matmul(c, l)
    return gb, gl


CHOL_SOLVE = Op("cholesky_solve", _chol_solve_kernel, _chol_solve_vjp, save_inputs=(1,),
                save_output=True, category="linalg",
                shape=lambda b, l, upper: (_batched_rhs(l, b), b.dtype))


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
    from .decompositions import _perm_matrix
    name = "linalg.lu_solve"
    check_square(name, LU, "LU")
    check_matrix(name, B, "B")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    P = _perm_matrix(LU, pivots)

    def lsolve(M, X, upper, unit, herm):
        # M^{-1} X (left) using the packed factor M, conjugate-transposed if herm
        if herm:
            return apply(TRI, (M.mH, X), {"upper": not upper, "unit": unit})
        return apply(TRI, (M, X), {"upper": upper, "unit": unit})
    if left and not adjoint:      # X = U^-1 L^-1 P^T B
        y = matmul(P.mT, B)
        y = lsolve(LU, y, False, True, False)
        x = lsolve(LU, y, True, False, False)
    elif left:                    # A^H X = B: X = P L^-H U^-H B
        y = lsolve(LU, B, True, False, True)
        y = lsolve(LU, y, False, True, True)
        x = matmul(P, y)
    elif not adjoint:             # X A = B: X^T = A^-T B^T, A^T = U^T L^T P^T
        # X P L U = B  ->  X = B U^-1 L^-1 P^T, solved transposed: L^-T U^-T B^T
        yt = lsolve(LU.mT, B.mT, False, False, False)
        yt = lsolve(LU.mT, yt, True, True, False)      # L^-T
        x = matmul(yt.mT, P.mT)
    else:                         # X A^H = B, A^H = U^H L^H P^T: X = B P L^-H U^-H
        z = lsolve(LU, matmul(B, P).mH, False, True, False)
        x = lsolve(LU, z, True, False, False).mH
    return _out(x, out)


# ---- pinv -------------------------------------------------------------------------------

def _tols(a, s_max, atol, rtol):
    if rtol is None:
        rtol = np.finfo(np.abs(a[..., :0, :0]).dtype).eps * max(a.shape[-2:])
        if atol is not None:
            rtol = np.where(np.asarray(atol) > 0, 0.0, rtol)
    at = 0.0 if atol is None else np.asarray(atol)
    return np.maximum(at, np.asarray(rtol) * s_max)


def _pinv_kernel(xp, a, atol, rtol, hermitian):
    m, n = a.shape[-2:]
    if a.size == 0:
        return np.zeros(a.shape[:-2] + (n, m), dtype=a.dtype)
    if hermitian:
        w, v = np.linalg.eigh(a)
        aw = np.abs(w)
        cut = _tols(a, aw.max(-1), atol, rtol)[..., None]
        winv = np.where(aw > cut, 1 / np.where(aw > cut, w, 1), 0).astype(v.dtype)
        return ((v * winv[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2))).astype(a.dtype)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    cut = _tols(a, s[..., 0], atol, rtol)[..., None]
    sinv = np.where(s > cut, 1 / np.where(s > cut, s, 1), 0).astype(s.dtype)
    r = np.conj(np.swapaxes(vh, -1, -2)) * sinv[..., None, :]
    return (r @ np.conj(np.swapaxes(u, -1, -2))).astype(a.dtype, copy=False)


def _pinv_bw(gp, a, p):
    """Gradient of pinv at ``a`` (pinv ``p``) for output gradient ``gp``, in ember ops."""
    ph = p.mH
    t1 = -matmul(ph, matmul(gp, ph))
    ap = matmul(a, p)
    pa = matmul(p, a)
    t2 = matmul(gp.mH - matmul(ap, gp.mH), matmul(p, ph))
    t3 = matmul(matmul(ph, p), gp.mH - matmul(gp.mH, pa))
    return t1 + t2 + t3


def _pinv_vjp(ctx, g, a, atol, rtol, hermitian):
    return _pinv_bw(g, a, ctx.out), None, None


PINV = Op("linalg_pinv", _pinv_kernel, _pinv_vjp, save_inputs=(0,), save_output=True,
          category="linalg", shape=lambda a, atol, rtol, hermitian: (
              a.shape[:-2] + (a.shape[-1], a.shape[-2]), a.dtype))


def _tol_arg(t):
    return t._data if isinstance(t, Tensor) else t


@overridable
def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """Computes the pseudoinverse (Moore-Penrose inverse) of a matrix."""
    check_matrix("linalg.pinv", A)
    check_float("linalg.pinv", A)
    if hermitian:
        check_square("linalg.pinv(hermitian=True)", A)
    r = apply(PINV, (A, _tol_arg(atol), _tol_arg(rtol)), {"hermitian": hermitian})
    return _out(r, out)


# ---- lstsq ------------------------------------------------------------------------------

def _lstsq_one(driver, rcond):
    import scipy.linalg as sl

    def f(a, b):
        m, n = a.shape
        if driver == "gels":
            g = lapack("gels", a.dtype)
            r = g(a, b if m >= n else np.concatenate(
                [b, np.zeros((n - m, b.shape[1]), b.dtype)]))
            x = r[1][:n]
            return x, np.zeros((), np.int64), np.zeros((0,), np.abs(a[:0, :0]).dtype)
        x, _, rank, sv = sl.lstsq(a, b, cond=rcond, lapack_driver=driver, check_finite=False)
        if sv is None:
            sv = np.zeros((0,), np.abs(a[:0, :0]).dtype)
        return x, np.asarray(rank, np.int64), sv
    return f


def _lstsq_kernel(xp, a, b, rcond, driver):
    m, n = a.shape[-2:]
    k = b.shape[-1]
    bs = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    ab = np.broadcast_to(a, bs + a.shape[-2:])
    bb = np.broadcast_to(b, bs + b.shape[-2:])
    rdt = np.abs(a[..., :0, :0]).dtype
    if rcond is None:
        rcond = float(np.finfo(rdt).eps) * max(m, n)
    res = batched(_lstsq_one(driver, rcond), np.ascontiguousarray(ab), np.ascontiguousarray(bb))
    if res is None or min(m, n) == 0:
        x = np.zeros(bs + (n, k), a.dtype)
        rank = np.zeros(bs, np.int64)
        sv = np.zeros(bs + (min(m, n),), rdt)
    else:
        x, rank, sv = res
    x = x.astype(a.dtype, copy=False)
    full = driver == "gels" or bool(np.all(rank == n))
    if m > n and driver != "gelsy" and full:
        resid = (np.abs(ab @ x - bb) ** 2).sum(-2).astype(rdt)
    else:
        resid = np.zeros((0,), rdt)
    if driver == "gels":
        rank = np.zeros((0,), np.int64)
    if driver not in ("gelsd", "gelss"):
        sv = np.zeros((0,), rdt)
    return x, resid, rank, sv.astype(rdt, copy=False)


def _lstsq_vjp(ctx, g, a, b, rcond, driver):
    gx = g[0]
    p = apply(PINV, (a, None, None), {"hermitian": False})
    gb = matmul(p.mH, gx) if ctx.needs_input_grad[1] else None
    ga = _pinv_bw(matmul(gx, b.mH), a, p) if ctx.needs_input_grad[0] else None
    return ga, gb


def _lstsq_shape(a, b, rcond, driver):
    m, n = a.shape[-2:]
    k = b.shape[-1]
    bs = _meta.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    rdt = a.dtype.to_real()
    resid = (0,)
    if m > n and driver != "gelsy":
        if driver != "gels":  # residuals only when the solution has full rank
            raise _meta.DataDependentShape("lstsq residuals depend on the rank of A")
        resid = bs + (k,)
    rank = (0,) if driver == "gels" else bs
    sv = bs + (min(m, n),) if driver in ("gelsd", "gelss") else (0,)
    return (bs + (n, k), a.dtype), (resid, rdt), (rank, _dt.int64), (sv, rdt)


LSTSQ = Op("linalg_lstsq", _lstsq_kernel, _lstsq_vjp, n_out=4, nondiff_outputs=(1, 2, 3),
           category="linalg", shape=_lstsq_shape)


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


