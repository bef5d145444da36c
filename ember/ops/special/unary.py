"""The one-argument special functions that the core ops do not already define, each one Op
over scipy.special with torch's dtype gating and, where torch has one, its derivative:
the normal distribution (erfcx, ndtr, ndtri, log_ndtr), modified Bessel functions of orders
0 and 1, sinc, entr, and the Bessel family without derivatives (``NONDIFF`` by name).

Integer and bool inputs compute in the default float dtype; complex inputs are rejected
except by sinc; some kernels also reject float16/bfloat16 (torch 2.13 on CPU).
"""
import math

from ..._core import meta as _meta
from ..._core.op import JVP_FROM_VJP
from .._batching import _elementwise_rule
from .._helpers import Op, Tensor, _E, apply, apply_inplace, cj, special, unary_float
from ..pointwise import where
from ._gate import gate

__all__ = ["ERFCX", "NDTR", "NDTRI", "LOG_NDTR", "I0", "I0E", "I1", "I1E", "SINC", "ENTR",
           "NONDIFF"]

_SQRT_2PI = math.sqrt(2 * math.pi)
_INV_SQRT_PI2 = 2 / math.sqrt(math.pi)


def _unary(name, fn, vjp, kname, *, save_output=False, save_inputs=True, method=None, **gating):
    op = Op("special_" + name, gate(unary_float(fn), kname, **gating), vjp,
            shape=_meta.unary_float, save_output=save_output, save_inputs=save_inputs,
            differentiable=vjp is not None, category="unary", batch=_elementwise_rule,
            unsupported={"jvp": JVP_FROM_VJP} if vjp is not None else None)
    if method and not hasattr(Tensor, method):
        setattr(Tensor, method, lambda self: apply(op, (self,), _E))
        setattr(Tensor, method + "_", lambda self: apply_inplace(op, self, (), _E))
    return op


# ---- error functions and the normal distribution ---------------------------------------
ERFCX = _unary("erfcx", lambda xp, x: special(xp).erfcx(x),
               lambda ctx, g, x: g * (2 * x * ctx.out - _INV_SQRT_PI2), "erfcx_cpu",
               save_output=True, half_ok=False)
NDTR = _unary("ndtr", lambda xp, x: special(xp).ndtr(x),
              lambda ctx, g, x: g * (-0.5 * x * x).exp() / _SQRT_2PI, "erf_vml_cpu")
NDTRI = _unary("ndtri", lambda xp, x: special(xp).ndtri(x),
               lambda ctx, g, x: g * _SQRT_2PI * (0.5 * ctx.out * ctx.out).exp(),
               "ndtri_cpu", save_output=True, save_inputs=False, half_ok=False)
LOG_NDTR = _unary("log_ndtr", lambda xp, x: special(xp).log_ndtr(x),
                  lambda ctx, g, x: g * (-0.5 * x * x - ctx.out).exp() / _SQRT_2PI,
                  "log_ndtr_cpu", save_output=True, half_ok=False)


# ---- modified Bessel functions of orders 0 and 1 (torch.special.i0 ...) ----------------
def _i1_vjp(ctx, g, x):
    safe = where(x == 0, 1, x)
    return g * where(x == 0, 0.5, I0(x) - ctx.out / safe)


def _i1e_vjp(ctx, g, x):
    safe = where(x == 0, 1, x)
    return g * where(x == 0, 0.5, I0E(x) - ctx.out * (x.sign() + 1 / safe))


I0 = _unary("i0", lambda xp, x: special(xp).i0(x), lambda ctx, g, x: g * I1(x), "i0_vml_cpu",
            method="i0")
I0E = _unary("i0e", lambda xp, x: special(xp).i0e(x),
             lambda ctx, g, x: g * (I1E(x) - x.sign() * ctx.out), "i0e_cpu", save_output=True)
I1 = _unary("i1", lambda xp, x: special(xp).i1(x), _i1_vjp, "i1_cpu", save_output=True)
I1E = _unary("i1e", lambda xp, x: special(xp).i1e(x), _i1e_vjp, "i1e_cpu", save_output=True)


# ---- sinc, entr -------------------------------------------------------------------------
def _sinc_vjp(ctx, g, x):
    px = x * math.pi
    safe = where(x == 0, 1, x)
    d = where(x == 0, 0, (px.cos() * px - px.sin()) / (px * safe))
    return g * cj(d)


SINC = _unary("sinc", lambda xp, x: xp.sinc(x), _sinc_vjp, "sinc", complex_ok=True,
              method="sinc")
ENTR = _unary("entr", lambda xp, x: special(xp).entr(x),
              lambda ctx, g, x: g * -(1 + x.log()), "entr_cpu")


# ---- Bessel functions without derivatives in torch -------------------------------------
def _nondiff(name, fn):
    return _unary(name, fn, None, f"{name}_cpu", half_ok=False)


NONDIFF = {
    "bessel_j0": _nondiff("bessel_j0", lambda xp, x: special(xp).j0(x)),
    "bessel_j1": _nondiff("bessel_j1", lambda xp, x: special(xp).j1(x)),
    "bessel_y0": _nondiff("bessel_y0", lambda xp, x: special(xp).y0(x)),
    "bessel_y1": _nondiff("bessel_y1", lambda xp, x: special(xp).y1(x)),
    "modified_bessel_i0": _nondiff("modified_bessel_i0", lambda xp, x: special(xp).i0(x)),
    "modified_bessel_i1": _nondiff("modified_bessel_i1", lambda xp, x: special(xp).i1(x)),
    "modified_bessel_k0": _nondiff("modified_bessel_k0", lambda xp, x: special(xp).k0(x)),
    "modified_bessel_k1": _nondiff("modified_bessel_k1", lambda xp, x: special(xp).k1(x)),
    "scaled_modified_bessel_k0": _nondiff("scaled_modified_bessel_k0",
                                          lambda xp, x: special(xp).k0e(x)),
    "scaled_modified_bessel_k1": _nondiff("scaled_modified_bessel_k1",
                                          lambda xp, x: special(xp).k1e(x)),
    "spherical_bessel_j0": _nondiff("spherical_bessel_j0",
                                    lambda xp, x: special(xp).spherical_jn(0, x).astype(x.dtype)),
    "airy_ai": _nondiff("airy_ai", lambda xp, x: special(xp).airy(x)[0]),
}
