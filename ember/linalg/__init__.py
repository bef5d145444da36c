"""ember.linalg: NumPy/SciPy (LAPACK) kernels in the input's precision, torch's result dtypes,
errors and derivatives (written in ember ops, so higher-order gradients work)."""
from ._common import LinAlgError
from .decompositions import (cholesky, cholesky_ex, cholesky_inverse, det, householder_product,
                             ldl_factor, ldl_factor_ex, ldl_solve, logdet, lu, lu_factor,
                             lu_factor_ex, lu_unpack, qr, slogdet)
from .eig import eig, eigh, eigvals, eigvalsh, svd, svdvals
from .misc import cross, diagonal, matmul, matrix_exp, matrix_power, multi_dot, vander, vecdot
from .norms import cond, matrix_norm, matrix_rank, norm, vector_norm
from .solve import (cholesky_solve, inv, inv_ex, lstsq, lu_solve, pinv, solve, solve_ex,
                    solve_triangular, tensorinv, tensorsolve)
from . import legacy  # noqa: F401  (Tensor methods and torch's top-level functions)

__all__ = ["LinAlgError", "vector_norm", "matrix_norm", "norm", "det", "slogdet", "logdet",
           "inv", "inv_ex", "pinv", "solve", "solve_ex", "solve_triangular", "lstsq",
           "cholesky", "cholesky_ex", "cholesky_inverse", "cholesky_solve", "qr", "lu_factor",
           "lu_factor_ex", "lu", "lu_unpack", "lu_solve", "ldl_factor", "ldl_factor_ex",
           "ldl_solve", "eig", "eigvals", "eigh", "eigvalsh", "svd", "svdvals", "matrix_rank",
           "matrix_power", "matrix_exp", "multi_dot", "cross", "vecdot", "householder_product",
           "tensorinv", "tensorsolve", "vander", "cond", "diagonal", "matmul"]
