"""The linear-algebra operators, each defined once: LAPACK kernels (NumPy/SciPy) in the
input's precision, torch's result dtypes, derivatives in ember ops (so higher-order
gradients work), shape rules and batching rules.  The public ``ember.linalg`` functions,
with torch's argument checks and error messages, are built on these in ember/linalg.

Modules: ``solve`` (inverse, solves, pinv, lstsq), ``decompositions`` (Cholesky, QR, LU,
LDL, determinants), ``eig`` (eigen- and singular-value decompositions), ``misc`` (matrix
exponential), ``norms`` (numerical rank); ``_lapack`` and ``_batching`` hold the helpers.
"""
from . import solve, eig, decompositions, misc, norms  # noqa: F401  (registers the operators)
