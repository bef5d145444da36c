"""Factorization operators: Cholesky, QR, LU (with the pivots-to-permutation helper), LDL
and the determinants (``linalg_cholesky_ex``, ``linalg_qr``, ``linalg_lu_factor_ex``,
``_lu_pivots_to_perm``, ``linalg_ldl_factor_ex``, ``linalg_ldl_solve``, ``linalg_det``,
``linalg_slogdet``), each with its kernel, derivative in ember ops, shape rule and batching
rule; also the LU solve that several derivatives and ``linalg.lu_solve`` share.  The public
functions are in ember.linalg.decompositions."""
import numpy as np

from ..._core import dtype as _dt
from ..._core import meta as _meta
from ..._core.dispatch import apply
from ..._core.op import JVP_FROM_VJP, Op, mark_unsupported
from ..._core.tensor import host_tensor
from .._helpers import no_derivative
from ..blas import matmul
from ..creation import zeros_like
from ..shape import cat, tril, triu
from ..views import diag_embed
from ..decomposition_vjp import vjp_from_decomposition
from ..nn._rules import leading_rule
from ._batching import _linalg_rule, _vector_args_rule
from ._lapack import batched, lapack
from .eig import SVD
from .solve import INV, TRI, _batched_rhs, _with_info

__all__ = ["CHOL", "QR", "LU", "PERM", "LDL", "LDL_SOLVE", "DET", "SLOGDET", "lu_backward",
           "lu_solve_core", "perm_matrix", "unpack_lu"]


def _tri_solve(a, b, upper, left=True):
    if left:
        return apply(TRI, (a, b), {"upper": upper, "unit": False})
    return apply(TRI, (a.mT, b.mT), {"upper": not upper, "unit": False}).mT

# ---- cholesky ---------------------------------------------------------------------------

def _chol_kernel(xp, a, upper):
    # upper: factor A^H (read A's upper triangle); the lower factor is returned either way
    if upper:
        a = xp.conj(xp.swapaxes(a, -1, -2))
    info = xp.zeros(a.shape[:-2], np.int32)
    try:
        return xp.linalg.cholesky(a).astype(a.dtype, copy=False), info
    except np.linalg.LinAlgError:
        f = lapack("potrf", a.dtype)
        l, info = batched(lambda m: f(m, lower=1, clean=1)[:2], a)
        return xp.tril(l), info.astype(np.int32)


def _chol_vjp(ctx, g, a, upper):
    l = ctx.out[0]
    p = tril(matmul(l.mH, g[0]))
    phi = 0.5 * (p + tril(p, -1).mH)
    ga = _tri_solve(l.mH, phi, True)
    return _tri_solve(l, ga, False, left=False)


CHOL = Op("linalg_cholesky_ex", _chol_kernel, _chol_vjp, save_inputs=False, save_output=True,
          n_out=2, nondiff_outputs=(1,), category="linalg", batch=_linalg_rule,
          shape=lambda a, upper: _with_info(a, a.shape, a.dtype))

# ---- qr ---------------------------------------------------------------------------------

def _qr_kernel(xp, a, mode):
    m, n = a.shape[-2:]
    if a.size == 0:
        k = m if mode == "complete" else min(m, n)
        q = xp.zeros(a.shape[:-2] + ((m, k) if mode != "r" else (0,)), a.dtype)
        if mode != "r" and k:
            q[...] = xp.eye(m, k, dtype=a.dtype)
        return q, xp.zeros(a.shape[:-2] + (k if mode != "r" else min(m, n), n), a.dtype)
    if mode == "r":
        return xp.zeros((0,), a.dtype), xp.linalg.qr(a, mode="r").astype(a.dtype, copy=False)
    q, r = xp.linalg.qr(a, mode=mode)
    return q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)


def _copyutl(m):
    # triu(M) with a real diagonal, mirrored to the strictly lower part as M^H
    d = m.diagonal(0, -2, -1)
    d = d.real if d.is_complex() else d
    up = triu(m, 1)
    r = up + up.mH + diag_embed(d)
    return r


def _qr_square_bw(gq, gr, q, r):
    # A = QR with m >= n (reduced): gA = [gQ + Q copyutl(gR R^H - Q^H gQ)] R^{-H};
    # a gradient that is None (its output received none) leaves its terms out
    m = None if gr is None else matmul(gr, r.mH)
    if gq is not None:
        qhgq = matmul(q.mH, gq)
        m = -qhgq if m is None else m - qhgq
    b = matmul(q, _copyutl(m))
    if gq is not None:
        b = gq + b
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
    y = a[..., :, m:]
    if gr is None:  # only Q is used: Y does not move it
        return cat([_qr_square_bw(gq, None, q, r1), zeros_like(y)], -1)
    gr1, gr2 = gr[..., :, :m], gr[..., :, m:]
    gy = matmul(q, gr2)
    gq = matmul(y, gr2.mH) if gq is None else gq + matmul(y, gr2.mH)
    gx = _qr_square_bw(gq, gr1, q, r1)
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
        category="linalg", shape=_qr_shape, batch=_linalg_rule)


# ---- lu ---------------------------------------------------------------------------------

def _lu_kernel(xp, a):
    m, n = a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        return (a.copy(), xp.broadcast_to(xp.arange(1, k + 1, dtype=np.int32),
                                          a.shape[:-2] + (k,)).copy(),
                xp.zeros(a.shape[:-2], np.int32))
    f = lapack("getrf", a.dtype)
    lu_, piv, info = batched(lambda x: f(x), a)
    return lu_.astype(a.dtype, copy=False), (piv + 1).astype(np.int32), info.astype(np.int32)


def unpack_lu(lu_):
    m, n = lu_.shape[-2:]
    k = min(m, n)
    eye = host_tensor(np.eye(m, k, dtype=lu_.dtype.np), lu_)
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
    l, u = unpack_lu(lu_)
    p = perm_matrix(lu_, piv)
    k = min(lu_.shape[-2:])
    return lu_backward(tril(glu[..., :, :k], -1), triu(glu[..., :k, :]), p, l, u)


def _lu_shape(a):
    k = min(a.shape[-2], a.shape[-1])
    return (a.shape, a.dtype), (a.shape[:-2] + (k,), _dt.int32), (a.shape[:-2], _dt.int32)


LU = Op("linalg_lu_factor_ex", _lu_kernel, _lu_vjp, save_inputs=False, save_output=True, n_out=3,
        nondiff_outputs=(1, 2), category="linalg", shape=_lu_shape, batch=_linalg_rule)


def _perm_kernel(xp, piv, m, dtype):
    bs = piv.shape[:-1]
    pf = piv.reshape(-1, piv.shape[-1]) - 1
    out = xp.zeros((pf.shape[0], m, m), dtype)
    for b in range(pf.shape[0]):
        perm = xp.arange(m)
        for i, j in enumerate(pf[b]):
            perm[i], perm[j] = perm[j], perm[i]
        out[b, perm, xp.arange(m)] = 1
    return out.reshape(bs + (m, m))


PERM = Op("_lu_pivots_to_perm", _perm_kernel, None, differentiable=False, category="linalg",
           batch=_vector_args_rule(0),
          shape=lambda piv, m, dtype: (piv.shape[:-1] + (m, m), _meta.as_dtype(dtype)))


def perm_matrix(lu_, pivots):
    return apply(PERM, (pivots,), {"m": lu_.shape[-2], "dtype": lu_.dtype.np})


def lu_solve_core(LU, pivots, B, left, adjoint):
    """Solve ``A X = B`` (``X A = B`` unless ``left``; with ``A^H`` if ``adjoint``) given the
    packed LU factor and pivots of ``A``, in ember ops (so it is differentiable)."""
    P = perm_matrix(LU, pivots)

    def lsolve(M, X, upper, unit, herm):
        # M^{-1} X (left) using the packed factor M, conjugate-transposed if herm
        if herm:
            return apply(TRI, (M.mH, X), {"upper": not upper, "unit": unit})
        return apply(TRI, (M, X), {"upper": upper, "unit": unit})
    if left and not adjoint:      # X = U^-1 L^-1 P^T B
        y = matmul(P.mT, B)
        y = lsolve(LU, y, False, True, False)
        return lsolve(LU, y, True, False, False)
    if left:                      # A^H X = B: X = P L^-H U^-H B
        y = lsolve(LU, B, True, False, True)
        y = lsolve(LU, y, False, True, True)
        return matmul(P, y)
    if not adjoint:               # X A = B: X^T = A^-T B^T, A^T = U^T L^T P^T
        # X P L U = B  ->  X = B U^-1 L^-1 P^T, solved transposed: L^-T U^-T B^T
        yt = lsolve(LU.mT, B.mT, False, False, False)
        yt = lsolve(LU.mT, yt, True, True, False)      # L^-T
        return matmul(yt.mT, P.mT)
    # X A^H = B, A^H = U^H L^H P^T: X = B P L^-H U^-H
    z = lsolve(LU, matmul(B, P).mH, False, True, False)
    return lsolve(LU, z, True, False, False).mH


# ---- ldl --------------------------------------------------------------------------------

def _ldl_kernel(xp, a, hermitian):
    n = a.shape[-1]
    if a.size == 0:
        return a.copy(), xp.zeros(a.shape[:-1], np.int32), xp.zeros(a.shape[:-2], np.int32)
    f = lapack("hetrf" if hermitian and a.dtype.kind == "c" else "sytrf", a.dtype)
    ld, piv, info = batched(lambda x: f(x, lower=1, lwork=max(64 * n, 1)), a)
    return xp.tril(ld).astype(a.dtype, copy=False), piv.astype(np.int32), info.astype(np.int32)


LDL = Op("linalg_ldl_factor_ex", _ldl_kernel,
         **no_derivative("linalg_ldl_factor_ex", aten=True), n_out=3, nondiff_outputs=(1, 2),
         save_inputs=False,
         category="linalg", batch=_linalg_rule, shape=lambda a, hermitian: (
             (a.shape, a.dtype), (a.shape[:-1], _dt.int32), (a.shape[:-2], _dt.int32)))


def _ldl_solve_kernel(xp, ld, piv, b, hermitian):
    f = lapack("hetrs" if hermitian and ld.dtype.kind == "c" else "sytrs", ld.dtype)
    bs = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    if b.size == 0 or ld.shape[-1] == 0:
        return xp.zeros(bs + b.shape[-2:], b.dtype)
    ldb = xp.broadcast_to(ld, bs + ld.shape[-2:])
    pb = xp.broadcast_to(piv, bs + piv.shape[-1:])
    bb = xp.broadcast_to(b, bs + b.shape[-2:])
    out = xp.empty(bs + b.shape[-2:], b.dtype).reshape((-1,) + b.shape[-2:])
    lf = ldb.reshape((-1,) + ld.shape[-2:])
    pf = pb.reshape((-1, piv.shape[-1]))
    bf = bb.reshape((-1,) + b.shape[-2:])
    for i in range(out.shape[0]):
        out[i] = f(lf[i], pf[i], bf[i], lower=1)[0]
    return out.reshape(bs + b.shape[-2:])


LDL_SOLVE = Op("linalg_ldl_solve", _ldl_solve_kernel,
               **no_derivative("linalg_ldl_solve", aten=True), save_inputs=False,
               category="linalg", batch=_vector_args_rule(1),
               shape=lambda ld, piv, b, hermitian: (_batched_rhs(ld, b), b.dtype))


# ---- determinants -----------------------------------------------------------------------

def _det_kernel(xp, a):
    return xp.asarray(xp.linalg.det(a)).astype(a.dtype, copy=False)


def _det_vjp(ctx, g, a):
    return apply(DET_BACKWARD, (g, a, ctx.out), {})


def _det_backward_kernel(xp, g, a, det):
    """torch's linalg_det_backward, d det / dA = conj(det) A^{-H}, finite at singular A:
    for a (near-)singular matrix the SVD formula (the product of the other singular values)
    instead, the path picked per matrix by its value (inside a kernel: a trace records the
    operator, whose value does not depend on the path)."""
    n = a.shape[-1]
    eye = xp.eye(n, dtype=a.dtype)
    mag = xp.abs(det)
    sing = mag < 100 * np.finfo(mag.dtype).eps
    inv = xp.linalg.inv(xp.where(sing[..., None, None], eye, a))
    r = (g * xp.conj(det))[..., None, None] * xp.conj(xp.swapaxes(inv, -1, -2))
    if sing.any():
        u, s_, vh = xp.linalg.svd(a[sing], full_matrices=False)
        alpha = xp.conj(xp.linalg.det(u) * xp.linalg.det(vh))
        ones = xp.ones(s_.shape[:-1] + (1,), s_.dtype)
        before = xp.cumprod(xp.concatenate((ones, s_[..., :-1]), -1), -1)
        after = xp.cumprod(xp.concatenate((ones, s_[..., :0:-1]), -1), -1)[..., ::-1]
        dd = (g[sing] * alpha)[..., None] * (before * after)
        r[sing] = xp.matmul(u * dd[..., None, :], vh)
    return r.astype(a.dtype, copy=False)


DET = Op("linalg_det", _det_kernel, _det_vjp, save_output=True, category="linalg",
         batch=_linalg_rule,
         shape=lambda a: (a.shape[:-2], a.dtype))
# its derivative (double backward, forward AD over a gradient) is its decomposition's
DET_BACKWARD = Op("_linalg_det_backward", _det_backward_kernel,
                  vjp_from_decomposition("_linalg_det_backward"), category="linalg",
                  batch=leading_rule, shape=lambda g, a, det: (a.shape, a.dtype))


def _slogdet_kernel(xp, a):
    s, l_ = xp.linalg.slogdet(a)
    return xp.asarray(s).astype(a.dtype, copy=False), \
        xp.asarray(l_).astype(xp.abs(a[..., :0, :0]).dtype, copy=False)


def _slogdet_vjp(ctx, g, a):
    sign, _ = ctx.out
    gs, gl = g
    c = gl
    if a.is_complex() and gs is not None:
        cs = (gs * sign.conj()).imag * 1j
        c = cs if gl is None else gl + cs
    if c is None:  # a real sign is piecewise constant: no gradient, as torch
        return None
    ainv = apply(INV, (a,), {})[0]
    return c.unsqueeze(-1).unsqueeze(-1) * ainv.mH


SLOGDET = Op("linalg_slogdet", _slogdet_kernel, _slogdet_vjp, save_output=True, n_out=2,
             category="linalg", batch=_linalg_rule, shape=lambda a: (
                 (a.shape[:-2], a.dtype), (a.shape[:-2], a.dtype.to_real())))


# forward AD derives these operators' tangents from their vjps (no jvp rule written yet)
mark_unsupported("jvp", JVP_FROM_VJP, CHOL, QR, LU, DET, DET_BACKWARD, SLOGDET)
