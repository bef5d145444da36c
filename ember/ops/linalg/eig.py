"""Spectral-decomposition operators: ``linalg_eigh``, ``linalg_eigvalsh``, ``linalg_eig``,
``linalg_eigvals``, ``linalg_svd``, ``linalg_svdvals``, with torch's gauge-aware derivatives
(errors when a loss depends on the phase of complex vectors), shape and batching rules.
The public functions are in ember.linalg.eig."""
import numpy as np

from ..._core.blas_threads import small_lapack
from ..._core.device import namespace_of
from ..._core.dispatch import apply
from ..._core.op import JVP_FROM_VJP, Op, mark_unsupported
from ..._core.tensor import host_tensor
from ..blas import matmul
from ..pointwise import where
from ..views import diag_embed
from ._batching import _linalg_rule
from ._lapack import lapack
from .solve import SOLVE

__all__ = ["EIGH", "EIGVALSH", "EIG", "EIGVALS", "SVD", "SVDVALS", "svd_backward"]

_CPLX = {np.dtype(np.float32): np.dtype(np.complex64), np.dtype(np.float64):
         np.dtype(np.complex128)}


def _eye_mask(n, like):
    return host_tensor(np.eye(n, dtype=bool), like)


def _check_phase(name, imdiag, what):
    xp = namespace_of(imdiag._data)
    a = xp.abs(imdiag._data)
    if a.size and not bool(xp.all(a <= 1e-2)):
        raise RuntimeError(f"{name}: The {what} in the complex case are specified up to "
                           f"multiplication by e^{{i phi}}. The specified loss function depends "
                           f"on this quantity, so it is ill-defined.")


def _eig_backward(gl, gv, l, v, hermitian):
    name = "linalg_eigh_backward" if hermitian else "linalg_eig_backward"
    n = v.shape[-1]
    if gv is None:  # torch's undefined gradient: only the eigenvalues are used
        if hermitian:
            return matmul(v * gl.unsqueeze(-2), v.mH)
        return apply(SOLVE, (v.mH, matmul(diag_embed(gl), v.mH)), {})[0]
    vhgv = matmul(v.mH, gv)
    dg = vhgv.diagonal(0, -2, -1)
    if v.is_complex():
        _check_phase(name, dg.imag, "eigenvectors")
    if hermitian:
        vhgv = 0.5 * (vhgv - vhgv.mH)
    else:
        vhgv = vhgv - matmul(v.mH, v * dg.real.unsqueeze(-2))
    lc = l.conj() if l.is_complex() else l
    e = lc.unsqueeze(-2) - lc.unsqueeze(-1)
    eye = _eye_mask(n, e)
    ret = vhgv / where(eye, 1, e)
    ret = where(eye, diag_embed(gl) if gl is not None else 0, ret)
    if hermitian:
        return matmul(v, matmul(ret, v.mH))
    return apply(SOLVE, (v.mH, matmul(ret, v.mH)), {})[0]


# ---- eigh -------------------------------------------------------------------------------

@small_lapack
def _eigh_kernel(xp, a, uplo):
    n = a.shape[-1]
    if a.size == 0:
        return (xp.zeros(a.shape[:-1], xp.abs(a[..., :0, :0]).dtype),
                xp.zeros(a.shape, a.dtype) + xp.eye(n, dtype=a.dtype))
    if a.ndim == 2:
        # one matrix: LAPACK's divide-and-conquer syevd/heevd directly (faster than NumPy's)
        w, v, info = lapack("heevd" if a.dtype.kind == "c" else "syevd", a.dtype)(
            a, compute_v=1, lower=1 if uplo == "L" else 0)
        if info == 0:
            return w.astype(xp.abs(a[:0, :0]).dtype, copy=False), v
    w, v = xp.linalg.eigh(a, UPLO=uplo)
    return w.astype(xp.abs(a[..., :0, :0]).dtype, copy=False), v.astype(a.dtype, copy=False)


def _eigh_vjp(ctx, g, a, uplo):
    l, v = ctx.out
    return _eig_backward(g[0], g[1], l, v, True)


def _eigvals_shape(a, *args, **params):
    return a.shape[:-1], a.dtype.to_real()


EIGH = Op("linalg_eigh", _eigh_kernel, _eigh_vjp, save_inputs=False, save_output=True, n_out=2,
          category="linalg", batch=_linalg_rule,
          shape=lambda a, uplo: (_eigvals_shape(a), (a.shape, a.dtype)))
EIGVALSH = Op("linalg_eigvalsh", small_lapack(lambda xp, a, uplo: xp.linalg.eigvalsh(
    a, UPLO=uplo).astype(xp.abs(a[..., :0, :0]).dtype, copy=False)), None,
    differentiable=False, category="linalg", batch=_linalg_rule, shape=_eigvals_shape)


# ---- eig --------------------------------------------------------------------------------

def _eig_kernel(xp, a):
    cdt = _CPLX.get(a.dtype, a.dtype)
    if a.size == 0:
        return xp.zeros(a.shape[:-1], cdt), xp.zeros(a.shape, cdt)
    w, v = xp.linalg.eig(a)
    return w.astype(cdt, copy=False), v.astype(cdt, copy=False)


def _eig_vjp(ctx, g, a):
    l, v = ctx.out
    return _eig_backward(g[0], g[1], l, v, False)


EIG = Op("linalg_eig", _eig_kernel, _eig_vjp, save_inputs=False, save_output=True, n_out=2,
         category="linalg", batch=_linalg_rule, shape=lambda a: (
             (a.shape[:-1], a.dtype.to_complex()), (a.shape, a.dtype.to_complex())))
EIGVALS = Op("linalg_eigvals", lambda xp, a: xp.linalg.eigvals(a).astype(
    _CPLX.get(a.dtype, a.dtype), copy=False), None, differentiable=False, category="linalg",
    batch=_linalg_rule, shape=lambda a: (a.shape[:-1], a.dtype.to_complex()))


# ---- svd --------------------------------------------------------------------------------

@small_lapack
def _svd_kernel(xp, a, full_matrices):
    m, n = a.shape[-2:]
    k = min(m, n)
    rdt = xp.abs(a[..., :0, :0]).dtype
    if a.size and not xp.isfinite(a).all():
        # LAPACK's gesdd can loop forever on NaN/inf: those matrices get NaN factors instead
        bad = ~xp.isfinite(a).all(axis=(-2, -1))
        u, s, vh = _svd_kernel(xp, xp.where(bad[..., None, None], 0, a), full_matrices)
        return (xp.where(bad[..., None, None], np.nan, u), xp.where(bad[..., None], np.nan, s),
                xp.where(bad[..., None, None], np.nan, vh))
    if a.size == 0:
        um, vn = (m, n) if full_matrices else (k, k)
        return (xp.zeros(a.shape[:-2] + (m, um), a.dtype) + xp.eye(m, um, dtype=a.dtype),
                xp.zeros(a.shape[:-2] + (k,), rdt),
                xp.zeros(a.shape[:-2] + (vn, n), a.dtype) + xp.eye(vn, n, dtype=a.dtype))
    if xp is np and n >= int(m * 11 / 6) > 1:
        r = _svd_wide(a, m, n, full_matrices, rdt)
        if r is not None:
            return r
    if xp is np and n >= 2 and 3 * n // 2 <= m < int(n * 11 / 6):
        return _svd_tall_qr(a, n, full_matrices, rdt)
    return _gesdd(xp, a, full_matrices, rdt)


def _svd_tall_qr(a, n, full_matrices, rdt):
    """A tall ``a`` with 3n/2 <= m < 11n/6: MKL's gesdd (torch's) already goes through QR
    there, reference gesdd only from 11n/6 rows, and their signs differ; the QR path done
    by hand (``a = QR``, the SVD of R, ``U = Q Ur``) gives MKL's factors."""
    q, r = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    ur, s, vh = _gesdd(np, np.ascontiguousarray(r[..., :n, :]), False, rdt)
    if full_matrices:
        u = q.copy()
        u[..., :, :n] = np.matmul(q[..., :, :n], ur)
    else:
        u = np.matmul(q, ur)
    return u.astype(a.dtype, copy=False), s, vh


def _gesdd(xp, a, full_matrices, rdt):
    if a.ndim == 2:
        import scipy.linalg as sl
        try:
            u, s, vh = sl.svd(a, full_matrices=full_matrices, check_finite=False,
                              lapack_driver="gesdd")
            return u, s.astype(rdt, copy=False), vh
        except (xp.linalg.LinAlgError, ValueError):
            pass
    u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return u.astype(a.dtype, copy=False), s.astype(rdt, copy=False), vh.astype(a.dtype,
                                                                               copy=False)


def _svd_wide(a, m, n, full_matrices, rdt):
    """The SVD of a wide ``a`` (n >= 11m/6) with torch's singular-vector signs, or None.

    Reference LAPACK's gesdd (NumPy's and SciPy's) factors such a matrix through its LQ
    decomposition first; MKL's (torch's) bidiagonalises it directly, and the two choose
    different signs.  Appending zero rows up to the fewest p with p*11/6 > n (p < n: a
    square one takes yet another path) makes reference gesdd take its direct path, whose factors restricted to the first m rows are MKL's (U, S, Vh; the
    zero rows only add zero singular values after A's).  Done while p x p x n stays small
    next to A's own cost, and only if the added rows stay out of A's singular vectors (a
    rank-deficient A can mix them in): otherwise None, and the LQ path's valid factors."""
    p = max(m + 1, 6 * n // 11)
    while int(p * 11 / 6) <= n:    # the fewest rows that keep gesdd off its LQ path
        p += 1
    if p >= n or p * p * n > max(4 * m * m * n, 1 << 21):
        return None
    ap = np.zeros(a.shape[:-2] + (p, n), a.dtype)
    ap[..., :m, :] = a
    u, s, vh = _gesdd(np, ap, full_matrices, rdt)
    if u[..., m:, :m].size and np.abs(u[..., m:, :m]).max() > np.sqrt(np.finfo(rdt).eps):
        return None
    return (np.ascontiguousarray(u[..., :m, :m]), np.ascontiguousarray(s[..., :m]),
            vh if full_matrices else np.ascontiguousarray(vh[..., :m, :]))


def svd_backward(gu, gs, gvh, u, s, vh):
    """Gradient of A = U diag(S) Vh (reduced) in ember ops, following torch's conventions.
    A gradient that is None (the output received none) leaves its terms out: a test of
    presence, never of values, so traced and eager backward compute the same thing, and
    repeated singular values (where the U/V terms divide by zero) are fine when only S is
    used."""
    m, n = u.shape[-2], vh.shape[-1]
    no_u = gu is None
    no_v = gvh is None
    if no_u and no_v:
        if gs is None:
            return None
        return matmul(u * gs.unsqueeze(-2), vh)
    k = s.shape[-1]
    uhgu = matmul(u.mH, gu) if not no_u else None
    vhgv = matmul(vh, gvh.mH) if not no_v else None
    if not no_u:
        uhgu = uhgu - uhgu.mH
    if not no_v:
        vhgv = vhgv - vhgv.mH
    cplx = u.is_complex()
    if cplx:
        iu = uhgu.diagonal(0, -2, -1).imag if not no_u else None
        iv = vhgv.diagonal(0, -2, -1).imag if not no_v else None
        a = iu._data if iu is not None else 0
        b = -iv._data if iv is not None else 0
        xp = namespace_of(iu._data if iu is not None else iv._data)
        if not bool(xp.all(xp.abs(xp.asarray(a - b)) <= 1e-2 + 1e-2 * xp.abs(b))):
            raise RuntimeError("svd_backward: The singular vectors in the complex case are "
                               "specified up to multiplication by e^{i phi}. The specified loss "
                               "function depends on this phase term, making it ill-defined.")
    s2 = s * s
    e = s2.unsqueeze(-2) - s2.unsqueeze(-1)
    eye = _eye_mask(k, e)
    e = where(eye, 1, e)
    if not no_u and not no_v:
        ret = (uhgu * s.unsqueeze(-2) + s.unsqueeze(-1) * vhgv) / e
    elif not no_u:
        ret = (uhgu / e) * s.unsqueeze(-2)
    else:
        ret = s.unsqueeze(-1) * (vhgv / e)
    ret = where(eye, 0, ret)
    if gs is not None:
        ret = ret + diag_embed(gs)
    if cplx and not no_u:
        ret = ret + diag_embed(uhgu.diagonal(0, -2, -1) / (2 * s))
    if m > k and not no_u:
        ga = matmul(u, ret)
        gus = gu / s.unsqueeze(-2)
        ga = ga + gus - matmul(u, matmul(u.mH, gus))
        return matmul(ga, vh)
    if n > k and not no_v:
        ga = matmul(ret, vh)
        sgv = gvh / s.unsqueeze(-1)
        ga = ga + sgv - matmul(matmul(sgv, vh.mH), vh)
        return matmul(u, ga)
    return matmul(u, matmul(ret, vh))


def _svd_vjp(ctx, g, a, full_matrices):
    u, s, vh = ctx.out
    gu, gs, gvh = g
    if full_matrices:
        k = s.shape[-1]
        u, vh = u[..., :, :k], vh[..., :k, :]
        gu = None if gu is None else gu[..., :, :k]
        gvh = None if gvh is None else gvh[..., :k, :]
    return svd_backward(gu, gs, gvh, u, s, vh)


def _svd_shape(a, full_matrices):
    bs, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    um, vn = (m, n) if full_matrices else (k, k)
    return ((bs + (m, um), a.dtype), (bs + (k,), a.dtype.to_real()),
            (bs + (vn, n), a.dtype))


SVD = Op("linalg_svd", _svd_kernel, _svd_vjp, save_inputs=False, save_output=True, n_out=3,
         category="linalg", shape=_svd_shape, batch=_linalg_rule)


@small_lapack
def _svdvals_kernel(xp, a):
    rdt = xp.abs(a[..., :0, :0]).dtype
    if a.size and not xp.isfinite(a).all():  # NaN values, as _svd_kernel's
        bad = ~xp.isfinite(a).all(axis=(-2, -1))
        s = _svdvals_kernel(xp, xp.where(bad[..., None, None], 0, a))
        return xp.where(bad[..., None], np.nan, s).astype(rdt, copy=False)
    return xp.linalg.svd(a, compute_uv=False).astype(rdt, copy=False)


SVDVALS = Op("linalg_svdvals", _svdvals_kernel, None, differentiable=False, category="linalg",
    batch=_linalg_rule,
    shape=lambda a: (a.shape[:-2] + (min(a.shape[-2], a.shape[-1]),), a.dtype.to_real()))


# forward AD derives these operators' tangents from their vjps (no jvp rule written yet)
mark_unsupported("jvp", JVP_FROM_VJP, EIGH, EIG, SVD)
