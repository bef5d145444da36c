"""The orthogonal polynomials of torch.special as operators, evaluated by their three-term
recurrences (as torch evaluates them): ``special_chebyshev_polynomial_t(input, n)`` and
friends, keyed by torch's name in ``POLYNOMIALS``.

``n`` is truncated to an integer per element, and a negative ``n`` gives 0.  Like
torch's, these have no derivative (their results do not require grad).
"""
import numpy as np

from ..._core import meta as _meta
from .._batching import _elementwise_rule
from .._helpers import _HALF, Op, not_implemented

__all__ = ["POLYNOMIALS"]

# (p1(x), step(k, x, p_k, p_km1) -> p_{k+1})
_CHEB = lambda k, x, p, q: 2 * x * p - q  # noqa: E731
_FAMILIES = {
    "chebyshev_polynomial_t": (lambda x: x, _CHEB),
    "chebyshev_polynomial_u": (lambda x: 2 * x, _CHEB),
    "chebyshev_polynomial_v": (lambda x: 2 * x - 1, _CHEB),
    "chebyshev_polynomial_w": (lambda x: 2 * x + 1, _CHEB),
    "hermite_polynomial_h": (lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - 2 * k * q),
    "hermite_polynomial_he": (lambda x: x, lambda k, x, p, q: x * p - k * q),
    "laguerre_polynomial_l": (lambda x: 1 - x,
                              lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1)),
    "legendre_polynomial_p": (lambda x: x,
                              lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1)),
}
_NAMES = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
          "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
          "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
          "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
          "laguerre_polynomial_l", "legendre_polynomial_p"]


def _evaluate(xp, x, n, dtype, first, step, shifted, name):
    dtype = np.dtype(dtype)
    if dtype.kind == "c" or dtype in _HALF:  # torch's kernels are float32/float64 only
        not_implemented(f"{name}_cpu", dtype)
    x = xp.asarray(x).astype(dtype, copy=False)
    if shifted:
        x = 2 * x - 1
    n = xp.trunc(xp.asarray(n, dtype=np.float64)).astype(np.int64)
    x, n = xp.broadcast_arrays(x, n)
    out = xp.zeros(x.shape, dtype=dtype)
    out[n == 0] = 1
    if x.size and n.max() >= 1:
        q, p = xp.ones_like(x), first(x).astype(dtype, copy=False)
        out[n == 1] = p[n == 1]
        for k in range(1, int(n.max())):
            q, p = p, step(k, x, p, q).astype(dtype, copy=False)
            sel = n == k + 1
            out[sel] = p[sel]
    return out


def _shape(x, n, dtype):
    shapes = [getattr(a, "shape", ()) for a in (x, n)]
    return _meta.broadcast_shapes(*shapes), _meta.as_dtype(dtype)


def _make(name):
    first, step = _FAMILIES[name.replace("shifted_", "")]
    shifted = name.startswith("shifted_")
    return Op("special_" + name,
              lambda xp, x, n, dtype: _evaluate(xp, x, n, dtype, first, step, shifted, name),
              None,
              shape=_shape, category="binary", differentiable=False, batch=_elementwise_rule)


POLYNOMIALS = {name: _make(name) for name in _NAMES}
