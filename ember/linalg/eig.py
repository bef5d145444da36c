"""Spectral decompositions: eigh, eigvalsh, eig, eigvals, svd, svdvals (the operators and
their gauge-aware derivatives are in ember.ops.linalg.eig)."""
from .._core.dispatch import apply, overridable
from .._core.state import STATE
from ..ops import _return_types as _rt
from ..ops.creation import zeros
from ..ops.linalg.eig import EIG, EIGH, EIGVALS, EIGVALSH, SVD, SVDVALS
from ._common import check_float, check_matrix, check_square, write_outs
from .solve import _out

__all__ = ["eigh", "eigvalsh", "eig", "eigvals", "svd", "svdvals"]

eigh_t = _rt.structseq("linalg_eigh", ("eigenvalues", "eigenvectors"))
eig_t = _rt.structseq("linalg_eig", ("eigenvalues", "eigenvectors"))
svd_t = _rt.structseq("linalg_svd", ("U", "S", "Vh"))
svd_legacy_t = _rt.structseq("svd", ("U", "S", "V"))


def _wants_grad(A):
    # the differentiable path is needed for reverse mode, and for forward mode (a tangent on A,
    # or any active level: A may be a batched or intermediate tensor) and transforms
    return (A.requires_grad and STATE.grad_enabled) or A._fw_tangent is not None or \
        STATE.forward > 0


# ---- eigh -------------------------------------------------------------------------------

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
    return _out(r, out)


# ---- eig --------------------------------------------------------------------------------

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
    return _out(r, out)


# ---- svd --------------------------------------------------------------------------------

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
    return _out(r, out)


@overridable
def svd_legacy(input, some=True, compute_uv=True, *, out=None):
    """torch.svd: U, S, V with ``V`` (not ``Vh``); zero U, V when ``compute_uv=False``."""
    check_matrix("linalg.svd", input)
    check_float("linalg.svd", input)
    if not compute_uv:
        s = svdvals(input)
        m, n = input.shape[-2:]
        bs = tuple(input.shape[:-2])
        like = {"dtype": input.dtype, "device": input.device}
        return write_outs("svd", 3, out, (zeros(bs + (m, m), **like), s,
                                            zeros(bs + (n, n), **like)),
                          svd_legacy_t,
                          op="_linalg_svd")
    u, s, vh = apply(SVD, (input,), {"full_matrices": not some})
    return write_outs("svd", 3, out, (u, s, vh.mH), svd_legacy_t, op="_linalg_svd")
