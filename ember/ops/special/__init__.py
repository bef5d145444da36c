"""The special-function operators of torch.special that the core ops do not already define
(erf, digamma, lgamma, ... are in ember/ops/pointwise): scipy.special kernels with torch's
dtype gating, derivatives in ember ops, and the orthogonal polynomials.  The public
``ember.special`` functions are built on these in ember/special."""
from . import unary, binary, polynomials  # noqa: F401  (registers the operators)
