"""Randomized low-rank SVD and PCA (``torch.svd_lowrank``, ``torch.pca_lowrank``;
Halko, Martinsson and Tropp 2009, algorithms 4.4 and 5.1).

A random Gaussian test matrix (drawn with ``randn`` as torch draws it, so a seeded call
gives torch's factors) is multiplied by ``A`` and refined with ``niter`` subspace
iterations, each orthonormalised by QR; the SVD of the small projected matrix gives
the factors.  ``M`` (broadcast to A's shape) is subtracted from ``A`` implicitly, which
is how a sparse ``A`` is centred without densifying it.
"""
from ._core import dtype as _dt
from ._core.dispatch import overridable
from ._core.tensor import Tensor
from .ops import mean, ones, randn

__all__ = ["svd_lowrank", "pca_lowrank"]


def _float_dtype(A):
    return A.dtype if A.dtype.is_floating_point or A.dtype.is_complex else _dt.float32


def _adj(x):
    """The conjugate transpose (spelled so that sparse ``A`` takes it too)."""
    if x is None:
        return None
    t = x.transpose(-2, -1)
    return t.conj() if x.dtype.is_complex else t


def _minus(x, M, other, left):
    """``x - M @ other`` (``left``: ``other @ M``), or ``x`` without M."""
    if M is None:
        return x
    return x - (other @ M if left else M @ other)


def _range_basis(A, q, niter, M):
    """An orthonormal (n x q) basis approximately spanning the range of ``A - M``."""
    from . import linalg
    R = randn(A.shape[-1], q, dtype=_float_dtype(A), device=A.device)
    Q = linalg.qr(_minus(A @ R, M, R, False)).Q
    for _ in range(2 if niter is None else niter):
        Q = linalg.qr(_minus(_adj(A) @ Q, _adj(M), Q, False)).Q
        Q = linalg.qr(_minus(A @ Q, M, Q, False)).Q
    return Q


def _svd_lowrank(A, q=6, niter=2, M=None):
    from . import linalg
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.size())
    wide = m < n
    if wide:        # work on the tall transpose
        A, M = _adj(A), _adj(M)
    Q = _range_basis(A, q, niter, M)
    B = _minus(Q.mH @ A, M, Q.mH, True)
    U, S, Vh = linalg.svd(B, full_matrices=False)
    U, V = Q.matmul(U), Vh.mH
    return (V, S, U) if wide else (U, S, V)


@overridable
def svd_lowrank(A, q=6, niter=2, M=None):
    """An approximate rank-``q`` SVD ``(U, S, V)`` of ``A - M`` (``A ~ U diag(S) V^H``),
    from ``niter`` subspace iterations on a random start."""
    return _svd_lowrank(A, q=q, niter=niter, M=M)


@overridable
def pca_lowrank(A, q=None, center=True, niter=2):
    """The principal components of the rows of ``A``: ``(U, S, V)`` of ``A`` less its
    column means (``center``), V's columns the directions; ``q`` defaults to
    ``min(6, m, n)``."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter=niter, M=None)
    if isinstance(A, Tensor) and A.is_sparse:
        if A.dim() != 2:
            raise ValueError("pca_lowrank input is expected to be 2-dimensional tensor")
        dtype = _float_dtype(A)
        c = A.sum(dim=0).to_dense().to(dtype) / m            # the column means
        M = ones(m, 1, dtype=dtype, device=A.device) @ c.reshape(1, n)
        return _svd_lowrank(A, q, niter=niter, M=M)
    return _svd_lowrank(A - mean(A, dim=(-2,), keepdim=True), q, niter=niter, M=None)
