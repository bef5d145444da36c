"""ember.special: special functions with torch.special's names, dtypes and gradients.

Functions that ember.ops already defines (erf, digamma, sigmoid, ...) are the same
operators here; the public functions of the rest are in ``_ops`` and ``_polynomials``, over
the operators of ember.ops.special (scipy.special kernels).
"""

from .._core.dispatch import overridable as _overridable
from ..ops import pointwise as _pw
from ..ops.softmax import log_softmax as _log_softmax, softmax as _softmax
from ._ops import (airy_ai, bessel_j0, bessel_j1, bessel_y0, bessel_y1, entr, erfcx,  # noqa
                   gammainc, gammaincc, i0, i0e, i1, i1e, log_ndtr, modified_bessel_i0,
                   modified_bessel_i1, modified_bessel_k0, modified_bessel_k1, ndtr, ndtri,
                   scaled_modified_bessel_k0, scaled_modified_bessel_k1, sinc,
                   spherical_bessel_j0, xlog1py, zeta)

from ._polynomials import *  # noqa: E402,F401,F403
from ._polynomials import __all__ as _POLYNOMIALS

erf = _pw.erf
erfc = _pw.erfc
erfinv = _pw.erfinv
expit = _pw.sigmoid
logit = _pw.logit
exp2 = _pw.exp2
expm1 = _pw.expm1
log1p = _pw.log1p
xlogy = _pw.xlogy
gammaln = _pw.lgamma
digamma = psi = _pw.digamma
polygamma = _pw.polygamma


@_overridable
def round(input, *, decimals=0, out=None):
    """Alias for ``ember.round()``."""
    if not input.dtype.is_floating_point:  # bool, integer and complex
        from ..ops._helpers import not_implemented
        not_implemented("round_vml_cpu", input.dtype)
    return _pw.round(input, decimals=decimals, out=out)


@_overridable
def softmax(input, dim, *, dtype=None):
    """Computes the softmax function along ``dim``."""
    return _softmax(input, dim, dtype)


@_overridable
def log_softmax(input, dim, *, dtype=None):
    """Computes softmax followed by a logarithm along ``dim``."""
    return _log_softmax(input, dim, dtype)


@_overridable
def multigammaln(input, p, *, out=None):
    """Computes the multivariate log-gamma function with dimension ``p`` element-wise
    (``torch.mvlgamma``)."""
    from ..ops.surface_extras import mvlgamma
    return mvlgamma(input, p, out=out)


__all__ = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "digamma", "entr",
           "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc",
           "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit",
           "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
           "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "sinc", "softmax",
           "spherical_bessel_j0", "xlog1py", "xlogy", "zeta", "logsumexp"] + _POLYNOMIALS


@_overridable
def logsumexp(input, dim, keepdim=False, *, out=None):
    """Alias for ``ember.logsumexp()``."""
    from ..ops import logsumexp as _lse
    r = _lse(input, dim, keepdim)
    return r if out is None else out.copy_(r)
