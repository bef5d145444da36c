"""The orthogonal polynomials of torch.special: ``chebyshev_polynomial_t(input, n)`` and
friends, over the operators of ember.ops.special.polynomials (which say how they are
evaluated).  The result dtype is the promoted floating dtype of ``input`` and ``n``."""
from .._core import dtype as _dt
from .._core.dispatch import overridable, write_out
from ..ops._helpers import Tensor, apply
from ..ops.special.polynomials import POLYNOMIALS

__all__ = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"]


def _make(name):
    op = POLYNOMIALS[name]

    def public(input, n, *, out=None):
        if not isinstance(input, Tensor) and not isinstance(n, Tensor):
            raise TypeError(f"special_{name}() received an invalid combination of arguments: "
                            f"one of input and n must be a Tensor")
        dt = _dt.result_type(input, n)
        if not dt.is_floating_point and not dt.is_complex:  # complex: the op refuses it
            dt = _dt.get_default_dtype()
        r = apply(op, (input, n), {"dtype": dt.np})
        return r if out is None else write_out(out, r)
    public.__name__ = public.__qualname__ = name
    public.__doc__ = f"Computes ``{name}`` of ``input`` of degree ``n`` elementwise."
    return overridable(public)


for _name in __all__:
    globals()[_name] = _make(_name)
del _name
