"""The public functions of torch.special over the operators of ember.ops.special: each
takes ``out=`` and honours ``__ember_function__`` overrides (the operators, their dtype
gating and derivatives are in ember/ops/special)."""
from .._core.dispatch import overridable, write_out
from ..ops._helpers import Tensor, _E, apply
from ..ops.special.binary import GAMMAINC, GAMMAINCC, XLOG1PY, ZETA, check_tensor
from ..ops.special.unary import (ENTR, ERFCX, I0, I0E, I1, I1E, LOG_NDTR, NDTR, NDTRI, NONDIFF,
                                 SINC)


def _public1(name, op):
    def public(input, *, out=None):
        r = apply(op, (input,), _E)
        return r if out is None else write_out(out, r, (input,))
    public.__name__ = public.__qualname__ = name
    public.__doc__ = f"Computes ``{name}`` of each element of ``input``."
    return overridable(public)


def _binary_public(name, op, tensors=0):
    def public(input, other, *, out=None):
        if tensors:
            check_tensor(f"special_{name}", "input", 1, input)
            check_tensor(f"special_{name}", "other", 2, other)
        if not isinstance(input, Tensor) and not isinstance(other, Tensor):
            raise TypeError(f"special_{name}() received an invalid combination of arguments")
        r = apply(op, (input, other), _E)
        return r if out is None else write_out(out, r, (input, other))
    public.__name__ = public.__qualname__ = name
    public.__doc__ = f"Computes ``{name}(input, other)`` elementwise."
    return overridable(public)


erfcx = _public1("erfcx", ERFCX)
ndtr = _public1("ndtr", NDTR)
ndtri = _public1("ndtri", NDTRI)
log_ndtr = _public1("log_ndtr", LOG_NDTR)
i0 = _public1("i0", I0)
i0e = _public1("i0e", I0E)
i1 = _public1("i1", I1)
i1e = _public1("i1e", I1E)
sinc = _public1("sinc", SINC)
entr = _public1("entr", ENTR)
bessel_j0 = _public1("bessel_j0", NONDIFF["bessel_j0"])
bessel_j1 = _public1("bessel_j1", NONDIFF["bessel_j1"])
bessel_y0 = _public1("bessel_y0", NONDIFF["bessel_y0"])
bessel_y1 = _public1("bessel_y1", NONDIFF["bessel_y1"])
modified_bessel_i0 = _public1("modified_bessel_i0", NONDIFF["modified_bessel_i0"])
modified_bessel_i1 = _public1("modified_bessel_i1", NONDIFF["modified_bessel_i1"])
modified_bessel_k0 = _public1("modified_bessel_k0", NONDIFF["modified_bessel_k0"])
modified_bessel_k1 = _public1("modified_bessel_k1", NONDIFF["modified_bessel_k1"])
scaled_modified_bessel_k0 = _public1("scaled_modified_bessel_k0",
                                     NONDIFF["scaled_modified_bessel_k0"])
scaled_modified_bessel_k1 = _public1("scaled_modified_bessel_k1",
                                     NONDIFF["scaled_modified_bessel_k1"])
spherical_bessel_j0 = _public1("spherical_bessel_j0", NONDIFF["spherical_bessel_j0"])
airy_ai = _public1("airy_ai", NONDIFF["airy_ai"])

xlog1py = _binary_public("xlog1py", XLOG1PY)
zeta = _binary_public("zeta", ZETA)
gammainc = _binary_public("gammainc", GAMMAINC, tensors=2)
gammaincc = _binary_public("gammaincc", GAMMAINCC, tensors=2)
