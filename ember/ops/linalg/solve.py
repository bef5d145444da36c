"""Linear-solve operators: inverse, solve, triangular and Cholesky solves, pseudoinverse and
least squares (``linalg_inv_ex``, ``linalg_solve_ex``, ``linalg_solve_triangular``,
``cholesky_solve``, ``linalg_pinv``, ``linalg_lstsq``), each with its LAPACK kernel,
derivative in ember ops, shape rule and batching rule.  The public functions with torch's
argument checks are in ember.linalg.solve."""
import numpy as np

from ..._core import dtype as _dt
from ..._core import meta as _meta
from ..._core.blas_threads import small_lapack
from ..._core.device import namespace_of
from ..._core.dispatch import apply
from ..._core.op import JVP_FROM_VJP, Op, mark_unsupported
from ..blas import matmul
from ..shape import tril, triu
from ._batching import _linalg_rule, _solve_rule
from ._lapack import batched, getrf_info, lapack

__all__ = ["INV", "SOLVE", "TRI", "CHOL_SOLVE", "PINV", "LSTSQ"]


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
    info = xp.zeros(a.shape[:-2], np.int32)
    try:
        r = xp.linalg.inv(a)
    except np.linalg.LinAlgError:
        info = getrf_info(a).astype(np.int32)
        r = _nan_fill(xp.linalg.inv, a, info).reshape(a.shape)
    return r.astype(a.dtype, copy=False), info


def _inv_vjp(ctx, g, a):
    x = ctx.out[0]
    return -matmul(x.mH, matmul(g[0], x.mH))


def _with_info(a, shape, dtype):
    """Rule of a factorization/solve returning (result, info over A's batch)."""
    return (shape, dtype), (a.shape[:-2], _dt.int32)


INV = Op("linalg_inv_ex", _inv_kernel, _inv_vjp, save_inputs=False, save_output=True, n_out=2,
         nondiff_outputs=(1,), category="linalg", batch=_linalg_rule,
         shape=lambda a: _with_info(a, a.shape, a.dtype))



# ---- solve ------------------------------------------------------------------------------

def _solve_kernel(xp, a, b):
    # torch reports info over A's batch (B may broadcast it further)
    info = xp.zeros(a.shape[:-2], np.int32)
    if a.ndim == 2 and b.ndim == 2 and a.size and b.size:
        # one system: LAPACK gesv directly (NumPy's gufunc path is ~2x slower here)
        _, _, x, inf = lapack("gesv", a.dtype)(a, b)
        if inf == 0:
            return x, info
    try:
        r = xp.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        bs = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        info = getrf_info(a).astype(np.int32)
        ab = xp.broadcast_to(a, bs + a.shape[-2:])
        bb = xp.broadcast_to(b, bs + b.shape[-2:])
        r = _nan_fill(xp.linalg.solve, ab, xp.broadcast_to(info, bs), bb).reshape(
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
           n_out=2, nondiff_outputs=(1,), category="linalg", shape=_solve_shape,
           batch=_solve_rule)



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
        return xp.zeros(bs + b.shape[-2:], dtype=a.dtype)
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
         category="linalg", batch=_linalg_rule,
         shape=lambda a, b, upper, unit: (_batched_rhs(a, b), a.dtype))



# ---- cholesky_solve ---------------------------------------------------------------------

def _chol_solve_kernel(xp, b, l, upper):
    if b.size == 0 or l.shape[-1] == 0:
        bs = np.broadcast_shapes(b.shape[:-2], l.shape[:-2])
        return xp.zeros(bs + b.shape[-2:], dtype=b.dtype)
    if upper:   # A = U^H U
        y = _trsm(xp.conj(xp.swapaxes(l, -1, -2)), b, False, False)
        return _trsm(l, y, True, False)
    y = _trsm(l, b, False, False)
    return _trsm(xp.conj(xp.swapaxes(l, -1, -2)), y, True, False)


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
                save_output=True, category="linalg", batch=_linalg_rule,
                shape=lambda b, l, upper: (_batched_rhs(l, b), b.dtype))



# ---- pinv -------------------------------------------------------------------------------

def _tols(a, s_max, atol, rtol):
    xp = namespace_of(a)
    if rtol is None:
        rtol = np.finfo(xp.abs(a[..., :0, :0]).dtype).eps * max(a.shape[-2:])
        if atol is not None:
            rtol = xp.where(xp.asarray(atol) > 0, 0.0, rtol)
    at = 0.0 if atol is None else xp.asarray(atol)
    return xp.maximum(at, xp.asarray(rtol) * s_max)


@small_lapack
def _pinv_kernel(xp, a, atol, rtol, hermitian):
    m, n = a.shape[-2:]
    if a.size == 0:
        return xp.zeros(a.shape[:-2] + (n, m), dtype=a.dtype)
    if hermitian:
        w, v = xp.linalg.eigh(a)
        aw = xp.abs(w)
        cut = _tols(a, aw.max(-1), atol, rtol)[..., None]
        winv = xp.where(aw > cut, 1 / xp.where(aw > cut, w, 1), 0).astype(v.dtype)
        return ((v * winv[..., None, :]) @ xp.conj(xp.swapaxes(v, -1, -2))).astype(a.dtype)
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    cut = _tols(a, s[..., 0], atol, rtol)[..., None]
    sinv = xp.where(s > cut, 1 / xp.where(s > cut, s, 1), 0).astype(s.dtype)
    r = xp.conj(xp.swapaxes(vh, -1, -2)) * sinv[..., None, :]
    return (r @ xp.conj(xp.swapaxes(u, -1, -2))).astype(a.dtype, copy=False)


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
          category="linalg", batch=_linalg_rule, shape=lambda a, atol, rtol, hermitian: (
              a.shape[:-2] + (a.shape[-1], a.shape[-2]), a.dtype))



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


@small_lapack
def _lstsq_kernel(xp, a, b, rcond, driver):
    m, n = a.shape[-2:]
    k = b.shape[-1]
    bs = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    ab = xp.broadcast_to(a, bs + a.shape[-2:])
    bb = xp.broadcast_to(b, bs + b.shape[-2:])
    rdt = xp.abs(a[..., :0, :0]).dtype
    if rcond is None:
        rcond = float(np.finfo(rdt).eps) * max(m, n)
    res = batched(_lstsq_one(driver, rcond), xp.ascontiguousarray(ab), xp.ascontiguousarray(bb))
    if res is None or min(m, n) == 0:
        x = xp.zeros(bs + (n, k), a.dtype)
        rank = xp.zeros(bs, np.int64)
        sv = xp.zeros(bs + (min(m, n),), rdt)
    else:
        x, rank, sv = res
    x = x.astype(a.dtype, copy=False)
    full = driver == "gels" or bool(xp.all(rank == n))
    if m > n and driver != "gelsy" and full:
        resid = (xp.abs(ab @ x - bb) ** 2).sum(-2).astype(rdt)
    else:
        resid = xp.zeros((0,), rdt)
    if driver == "gels":
        rank = xp.zeros((0,), np.int64)
    if driver not in ("gelsd", "gelss"):
        sv = xp.zeros((0,), rdt)
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
           category="linalg", shape=_lstsq_shape, batch=_linalg_rule)


# forward AD derives these operators' tangents from their vjps (no jvp rule written yet)
mark_unsupported("jvp", JVP_FROM_VJP, INV, SOLVE, TRI, CHOL_SOLVE, PINV, LSTSQ)
