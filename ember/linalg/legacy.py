"""torch's top-level linear-algebra functions (``torch.det``, ``torch.svd``, ...) and the
matching Tensor methods.  ``ember/__init__.py`` re-exports this module's ``__all__``."""
from .._core.dispatch import overridable
from .._core.tensor import Tensor
from ..ops import _return_types as _rt
from ..ops.blas import _warn_once
from . import decompositions as _dec, misc as _misc
from ._common import write_outs
from .eig import svd_legacy
from .solve import cholesky_solve, inv, pinv, solve_triangular

__all__ = ["vander", "det", "inverse", "svd", "qr", "cholesky", "logdet", "slogdet", "pinverse",
           "matrix_power", "matrix_exp", "lu_unpack", "cholesky_solve", "cholesky_inverse",
           "triangular_solve"]

qr_t = _rt.structseq("qr", ("Q", "R"))
triangular_solve_t = _rt.structseq("triangular_solve", ("solution", "cloned_coefficient"))

det = _dec.det
logdet = _dec.logdet
lu_unpack = _dec.lu_unpack
cholesky_inverse = _dec.cholesky_inverse
matrix_exp = _misc.matrix_exp
svd = svd_legacy


@overridable
def inverse(input, *, out=None):
    """Alias for ``torch.linalg.inv``."""
    return inv(input, out=out)


@overridable
def qr(input, some=True, *, out=None):
    """QR decomposition (reduced if ``some``, else complete)."""
    _warn_once("qr", "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a "
               "future PyTorch release.\nThe boolean parameter 'some' has been replaced with a "
               "string parameter 'mode'.\nQ, R = torch.qr(A, some)\nshould be replaced with\n"
               "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete')")
    return write_outs("qr", 2, out, _dec.qr(input, "reduced" if some else "complete"), qr_t,
                      op="linalg_qr")


@overridable
def cholesky(input, upper=False, *, out=None):
    """Cholesky factor of a Hermitian positive-definite matrix (deprecated in torch)."""
    _warn_once("cholesky", "torch.cholesky is deprecated in favor of torch.linalg.cholesky and "
               "will be removed in a future PyTorch release.\nL = torch.cholesky(A)\nshould be "
               "replaced with\nL = torch.linalg.cholesky(A)\nand\nU = torch.cholesky(A, "
               "upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\nThis "
               "transform will produce equivalent results for all valid (symmetric positive "
               "definite) inputs.")
    return _dec.cholesky(input, upper=upper, out=out)


@overridable
def slogdet(input, *, out=None):
    """Sign and log of the absolute value of the determinant."""
    return write_outs("slogdet", 1, out, _dec.slogdet(input), _dec.slogdet_legacy_t,
                      op="_linalg_slogdet")


@overridable
def pinverse(input, rcond=1e-15):
    """Pseudoinverse, with singular values below ``rcond`` times the largest dropped."""
    return pinv(input, rtol=rcond)


@overridable
def matrix_power(input, n):
    """The n-th power of a square matrix."""
    return _misc.matrix_power(input, n)


@overridable
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """Solves ``AX = b`` (or ``A^T X = b``) for triangular ``A``; returns X and a copy of A."""
    _warn_once("triangular_solve", "torch.triangular_solve is deprecated in favor of "
               "torch.linalg.solve_triangularand will be removed in a future PyTorch release.\n"
               "torch.linalg.solve_triangular has its arguments reversed and does not return a "
               "copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\nshould "
               "be replaced with\nX = torch.linalg.solve_triangular(A, B).")
    a = A.mT if transpose else A
    x = solve_triangular(a, b, upper=upper != transpose, unitriangular=unitriangular)
    return write_outs("triangular_solve", 5, out, (x, A.clone()), triangular_solve_t)


Tensor.det = det
Tensor.logdet = logdet
Tensor.slogdet = slogdet
Tensor.inverse = inverse
Tensor.cholesky = cholesky
Tensor.cholesky_solve = cholesky_solve
Tensor.cholesky_inverse = cholesky_inverse
Tensor.pinverse = pinverse
Tensor.matrix_power = matrix_power
Tensor.matrix_exp = matrix_exp
Tensor.svd = svd
Tensor.qr = qr
Tensor.triangular_solve = triangular_solve


@overridable
def vander(x, N=None, increasing=False):
    """Generates a Vandermonde matrix (``torch.vander``): columns are powers of ``x``,
    decreasing unless ``increasing=True``."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    if N is not None and N < 0:
        raise RuntimeError("N must be non-negative.")
    n = x.shape[0] if N is None else N
    if not (x.is_floating_point() or x.is_complex()):
        x = x.long()  # integer powers are computed in int64, as torch does
    if n == 0:
        return x.new_empty((x.shape[0], 0))
    v = _misc.vander(x, N=n)
    return v if increasing else v.flip(-1)
