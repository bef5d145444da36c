"""Spectral decompositions: eigh, eigvalsh, eig, eigvals, svd, svdvals, with torch's
gauge-aware derivatives (errors when a loss depends on the phase of complex vectors)."""
import numpy as np

from .._core.dispatch import apply, overridable
from .._core.op import Op
from .._core.state import STATE
from .._core.tensor import wrap
from ..ops import _return_types as _rt
from ..ops.blas import matmul
from ..ops.views import diag_embed
from ..ops.pointwise import where
from ._common import check_float, check_matrix, check_square, lapack, write_outs
from .solve import SOLVE

__all__ = ["eigh", "eigvalsh", "eig", "eigvals", "svd", "svdvals"]

eigh_t = _rt.structseq("linalg_eigh", ("eigenvalues", "eigenvectors"))
eig_t = _rt.structseq("linalg_eig", ("eigenvalues", "eigenvectors"))
svd_t = _rt.structseq("linalg_svd", ("U", "S", "Vh"))
svd_legacy_t = _rt.structseq("svd", ("U", "S", "V"))

_CPLX = {np.dtype(np.float32): np.dtype(np.complex64), np.dtype(np.float64):
         np.dtype(np.complex128)}


def _wants_grad(A):
    # the differentiable path is needed for reverse mode, and for forward mode (a tangent on A,
    # or any active level: A may be a batched or intermediate tensor) and transforms
    return (A.requires_grad and STATE.grad_enabled) or A._fw_tangent is not None or \
        STATE.forward > 0


def _is_zero(g):
    return not np.any(g._data)


def _eye_mask(n):
    return wrap(np.eye(n, dtype=bool))


def _check_phase(name, imdiag, what):
    a = np.abs(imdiag._data)
    if a.size and not np.all(a <= 1e-2):
        raise RuntimeError(f"{name}: The {what} in the complex case are specified up to "
                           f"multiplication by e^{{i phi}}. The specified loss function depends "
                           f"on this quantity, so it is ill-defined.")


def _eig_backward(gl, gv, l, v, hermitian):
    name = "linalg_eigh_backward" if hermitian else "linalg_eig_backward"
    n = v.shape[-1]
    if gv is None or _is_zero(gv):
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
    eye = _eye_mask(n)
    ret = vhgv / where(eye, 1, e)
    ret = where(eye, diag_embed(gl) if gl is not None else 0, ret)
    if hermitian:
        return matmul(v, matmul(ret, v.mH))
    return apply(SOLVE, (v.mH, matmul(ret, v.mH)), {})[0]


# ---- eigh -------------------------------------------------------------------------------

def _eigh_kernel(xp, a, uplo):
    n = a.shape[-1]
    if a.size == 0:
        return (np.zeros(a.shape[:-1], np.abs(a[..., :0, :0]).dtype),
                np.zeros(a.shape, a.dtype) + np.eye(n, dtype=a.dtype))
    if a.ndim == 2:
        # one matrix: LAPACK's divide-and-conquer syevd/heevd directly (faster than NumPy's)
        w, v, info = lapack("heevd" if a.dtype.kind == "c" else "syevd", a.dtype)(
            a, compute_v=1, lower=1 if uplo == "L" else 0)
        if info == 0:
            return w.astype(np.abs(a[:0, :0]).dtype, copy=False), v
    w, v = np.linalg.eigh(a, UPLO=uplo)
    return w.astype(np.abs(a[..., :0, :0]).dtype, copy=False), v.astype(a.dtype, copy=False)


def _eigh_vjp(ctx, g, a, uplo):
    l, v = ctx.out
    return _eig_backward(g[0], g[1], l, v, True)


def _eigvals_shape(a, *args, **params):
    return a.shape[:-1], a.dtype.to_real()


EIGH = Op("linalg_eigh", _eigh_kernel, _eigh_vjp, save_inputs=False, save_output=True, n_out=2,
          category="linalg", shape=lambda a, uplo: (_eigvals_shape(a), (a.shape, a.dtype)))
EIGVALSH = Op("linalg_eigvalsh", lambda xp, a, uplo: np.linalg.eigvalsh(a, UPLO=uplo).astype(
    np.abs(a[..., :0, :0]).dtype, copy=False), None, differentiable=False, category="linalg",
    shape=_eigvals_shape)


def _uplo(name, UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO


@overridable
def eigh(A, UPLO="L", *, out=None):
    """Computes the eigenvalue decomposition of a complex Hermitian or real symmetric matrix."""
    check_square("linalg.eigh", A)
    check_float("linalg.eigh", A)
    return write_outs("linalg_eigh", 2, out,
                      apply(EIGH, (A,), {"uplo": _uplo("linalg.eigh", UPLO)}), eigh_t,
                      op="_linalg_eigh")


@overridable
def eigvalsh(A, UPLO="L", *, out=None):
    """Computes the eigenvalues of a complex Hermitian or real symmetric matrix."""
    check_square("linalg.eigvalsh", A)
    check_float("linalg.eigvalsh", A)
    u = _uplo("linalg.eigvalsh", UPLO)
    if _wants_grad(A) or A.numel() == 0:
        r = apply(EIGH, (A,), {"uplo": u})[0]
    else:
        r = apply(EIGVALSH, (A,), {"uplo": u})
    from .solve import _out
    return _out(r, out)


# ---- eig --------------------------------------------------------------------------------

def _eig_kernel(xp, a):
    cdt = _CPLX.get(a.dtype, a.dtype)
    if a.size == 0:
        return np.zeros(a.shape[:-1], cdt), np.zeros(a.shape, cdt)
    w, v = np.linalg.eig(a)
    return w.astype(cdt, copy=False), v.astype(cdt, copy=False)


def _eig_vjp(ctx, g, a):
    l, v = ctx.out
    return _eig_backward(g[0], g[1], l, v, False)


EIG = Op("linalg_eig", _eig_kernel, _eig_vjp, save_inputs=False, save_output=True, n_out=2,
         category="linalg", shape=lambda a: (
             (a.shape[:-1], a.dtype.to_complex()), (a.shape, a.dtype.to_complex())))
EIGVALS = Op("linalg_eigvals", lambda xp, a: np.linalg.eigvals(a).astype(
    _CPLX.get(a.dtype, a.dtype), copy=False), None, differentiable=False, category="linalg",
    shape=lambda a: (a.shape[:-1], a.dtype.to_complex()))


@overridable
def eig(A, *, out=None):
    """Computes the eigenvalue decomposition of a square matrix if it exists."""
    check_square("linalg.eig", A)
    check_float("linalg.eig", A)
    return write_outs("linalg_eig", 1, out, apply(EIG, (A,), {}), eig_t, "castable",
                      ("eigenvalues", "eigenvectors"))


@overridable
def eigvals(A, *, out=None):
    """Computes the eigenvalues of a square matrix."""
    check_square("linalg.eigvals", A)
    check_float("linalg.eigvals", A)
    if _wants_grad(A) or A.numel() == 0:
        r = apply(EIG, (A,), {})[0]
    else:
        r = apply(EIGVALS, (A,), {})
    from .solve import _out
    return _out(r, out)


# ---- svd --------------------------------------------------------------------------------

def _svd_kernel(xp, a, full_matrices):
    m, n = a.shape[-2:]
    k = min(m, n)
    rdt = np.abs(a[..., :0, :0]).dtype
    if a.size == 0:
        um, vn = (m, n) if full_matrices else (k, k)
        return (np.zeros(a.shape[:-2] + (m, um), a.dtype) + np.eye(m, um, dtype=a.dtype),
                np.zeros(a.shape[:-2] + (k,), rdt),
                np.zeros(a.shape[:-2] + (vn, n), a.dtype) + np.eye(vn, n, dtype=a.dtype))
    if a.ndim == 2:
        import scipy.linalg as sl
        try:
            u, s, vh = sl.svd(a, full_matrices=full_matrices, check_finite=False,
                              lapack_driver="gesdd")
            return u, s.astype(rdt, copy=False), vh
        except (np.linalg.LinAlgError, ValueError):
            pass
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return u.astype(a.dtype, copy=False), s.astype(rdt, copy=False), vh.astype(a.dtype,
                                                                               copy=False)


def svd_backward(gu, gs, gvh, u, s, vh):
    """Gradient of A = U diag(S) Vh (reduced) in ember ops, following torch's conventions."""
    m, n = u.shape[-2], vh.shape[-1]
    no_u = gu is None or _is_zero(gu)
    no_v = gvh is None or _is_zero(gvh)
    if no_u and no_v:
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
        if not np.all(np.abs(np.asarray(a - b)) <= 1e-2 + 1e-2 * np.abs(b)):
            raise RuntimeError("svd_backward: The singular vectors in the complex case are "
                               "specified up to multiplication by e^{i phi}. The specified loss "
                               "function depends on this phase term, making it ill-defined.")
    s2 = s * s
    e = s2.unsqueeze(-2) - s2.unsqueeze(-1)
    eye = _eye_mask(k)
    e = where(eye, 1, e)
    if not no_u and not no_v:
        ret = (uhgu * s.unsqueeze(-2) + s.unsqueeze(-1) * vhgv) / e
    elif not no_u:
        ret = (uhgu / e) * s.unsqueeze(-2)
    else:
        ret = s.unsqueeze(-1) * (vhgv / e)
    ret = where(eye, 0, ret) + diag_embed(gs)
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
        u, vh, gu, gvh = u[..., :, :k], vh[..., :k, :], gu[..., :, :k], gvh[..., :k, :]
    return svd_backward(gu, gs, gvh, u, s, vh)


def _svd_shape(a, full_matrices):
    bs, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    um, vn = (m, n) if full_matrices else (k, k)
    return ((bs + (m, um), a.dtype), (bs + (k,), a.dtype.to_real()),
            (bs + (vn, n), a.dtype))


SVD = Op("linalg_svd", _svd_kernel, _svd_vjp, save_inputs=False, save_output=True, n_out=3,
         category="linalg", shape=_svd_shape)
SVDVALS = Op("linalg_svdvals", lambda xp, a: np.linalg.svd(a, compute_uv=False).astype(
    np.abs(a[..., :0, :0]).dtype, copy=False), None, differentiable=False, category="linalg",
    shape=lambda a: (a.shape[:-2] + (min(a.shape[-2], a.shape[-1]),), a.dtype.to_real()))


@overridable
def svd(A, full_matrices=True, *, driver=None, out=None):
    """Computes the singular value decomposition (SVD) of a matrix."""
    check_matrix("linalg.svd", A)
    check_float("linalg.svd", A)
    return write_outs("linalg_svd", 3, out, apply(SVD, (A,), {"full_matrices": full_matrices}),
                      svd_t, op="_linalg_svd")


@overridable
def svdvals(A, *, driver=None, out=None):
    """Computes the singular values of a matrix."""
    check_matrix("linalg.svdvals", A)
    check_float("linalg.svdvals", A)
    if _wants_grad(A) or A.numel() == 0:
        r = apply(SVD, (A,), {"full_matrices": False})[1]
    else:
        r = apply(SVDVALS, (A,), {})
    from .solve import _out
    return _out(r, out)


@overridable
def svd_legacy(input, some=True, compute_uv=True, *, out=None):
    """torch.svd: U, S, V with ``V`` (not ``Vh``); zero U, V when ``compute_uv=False``."""
    check_matrix("linalg.svd", input)
    check_float("linalg.svd", input)
    if not compute_uv:
        s = svdvals(input)
        m, n = input.shape[-2:]
        dt = input._data.dtype
        bs = tuple(input.shape[:-2])
        return write_outs("svd", 3, out, (wrap(np.zeros(bs + (m, m), dt)), s,
                                            wrap(np.zeros(bs + (n, n), dt))), svd_legacy_t,
                          op="_linalg_svd")
    u, s, vh = apply(SVD, (input,), {"full_matrices": not some})
    return write_outs("svd", 3, out, (u, s, vh.mH), svd_legacy_t, op="_linalg_svd")
