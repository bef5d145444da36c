"""The special functions that ember.ops does not already define, each one Op over
scipy.special, with torch's dtype gating and derivatives where torch has them.

Gating follows torch 2.13 on CPU: integer and bool inputs compute in the default
float dtype; complex inputs are rejected except by sinc; some kernels (erfcx,
ndtri, log_ndtr, zeta, the Bessel family) also reject float16/bfloat16.
"""
import math

import numpy as np

from .._core import meta as _meta
from .._core.dispatch import overridable, write_out
from ..ops._helpers import (Op, Tensor, _E, _HALF, apply, apply_inplace, binary_kernel, cj,
                            not_implemented, special, unary_float)
from ..ops.pointwise import where

_SQRT_2PI = math.sqrt(2 * math.pi)
_INV_SQRT_PI2 = 2 / math.sqrt(math.pi)


def _gate(kernel, kname, *, complex_ok=False, half_ok=True, int_ok=True, n=1):
    """Raise torch's NotImplementedError for the dtypes ``kname`` has no kernel for."""
    def k(xp, *args, **params):
        for a in args[:n]:
            if type(a) is not np.ndarray:
                continue
            dt = a.dtype
            if (dt.kind == "c" and not complex_ok) or (dt in _HALF and not half_ok) or \
                    (dt.kind in "biu" and not int_ok):
                not_implemented(kname, dt)
        return kernel(xp, *args, **params)
    return k


def _public1(name, op, method=None):
    def public(input, *, out=None):
        r = apply(op, (input,), _E)
        return r if out is None else write_out(out, r)
    public.__name__ = public.__qualname__ = name
    public.__doc__ = f"Computes ``{name}`` of each element of ``input``."
    if method and not hasattr(Tensor, method):
        setattr(Tensor, method, lambda self: apply(op, (self,), _E))
        setattr(Tensor, method + "_", lambda self: apply_inplace(op, self, (), _E))
    return overridable(public)


def _unary(name, fn, vjp, kname, *, save_output=False, save_inputs=True, method=None, **gate):
    op = Op("special_" + name, _gate(unary_float(fn), kname, **gate), vjp, shape=_meta.unary_float,
            save_output=save_output, save_inputs=save_inputs,
            differentiable=vjp is not None, category="unary")
    return op, _public1(name, op, method)


# ---- error functions and the normal distribution ---------------------------------------
ERFCX, erfcx = _unary("erfcx", lambda xp, x: special(xp).erfcx(x),
                      lambda ctx, g, x: g * (2 * x * ctx.out - _INV_SQRT_PI2), "erfcx_cpu",
                      save_output=True, half_ok=False)
NDTR, ndtr = _unary("ndtr", lambda xp, x: special(xp).ndtr(x),
                    lambda ctx, g, x: g * (-0.5 * x * x).exp() / _SQRT_2PI, "erf_vml_cpu")
NDTRI, ndtri = _unary("ndtri", lambda xp, x: special(xp).ndtri(x),
                      lambda ctx, g, x: g * _SQRT_2PI * (0.5 * ctx.out * ctx.out).exp(),
                      "ndtri_cpu", save_output=True, save_inputs=False, half_ok=False)
LOG_NDTR, log_ndtr = _unary("log_ndtr", lambda xp, x: special(xp).log_ndtr(x),
                            lambda ctx, g, x: g * (-0.5 * x * x - ctx.out).exp() / _SQRT_2PI,
                            "log_ndtr_cpu", save_output=True, half_ok=False)


# ---- modified Bessel functions of orders 0 and 1 (torch.special.i0 ...) ----------------
def _i1_vjp(ctx, g, x):
    safe = where(x == 0, 1, x)
    return g * where(x == 0, 0.5, i0(x) - ctx.out / safe)


def _i1e_vjp(ctx, g, x):
    safe = where(x == 0, 1, x)
    return g * where(x == 0, 0.5, i0e(x) - ctx.out * (x.sign() + 1 / safe))


I0, i0 = _unary("i0", lambda xp, x: special(xp).i0(x), lambda ctx, g, x: g * i1(x), "i0_vml_cpu",
                method="i0")
I0E, i0e = _unary("i0e", lambda xp, x: special(xp).i0e(x),
                  lambda ctx, g, x: g * (i1e(x) - x.sign() * ctx.out), "i0e_cpu",
                  save_output=True)
I1, i1 = _unary("i1", lambda xp, x: special(xp).i1(x), _i1_vjp, "i1_cpu", save_output=True)
I1E, i1e = _unary("i1e", lambda xp, x: special(xp).i1e(x), _i1e_vjp, "i1e_cpu",
                  save_output=True)


# ---- sinc, entr -------------------------------------------------------------------------
def _sinc_vjp(ctx, g, x):
    px = x * math.pi
    safe = where(x == 0, 1, x)
    d = where(x == 0, 0, (px.cos() * px - px.sin()) / (px * safe))
    return g * cj(d)


SINC, sinc = _unary("sinc", lambda xp, x: xp.sinc(x), _sinc_vjp, "sinc", complex_ok=True,
                    method="sinc")
ENTR, entr = _unary("entr", lambda xp, x: special(xp).entr(x),
                    lambda ctx, g, x: g * -(1 + x.log()), "entr_cpu")


# ---- Bessel functions without derivatives in torch -------------------------------------
def _nondiff(name, fn):
    return _unary(name, fn, None, f"{name}_cpu", half_ok=False)[1]


bessel_j0 = _nondiff("bessel_j0", lambda xp, x: special(xp).j0(x))
bessel_j1 = _nondiff("bessel_j1", lambda xp, x: special(xp).j1(x))
bessel_y0 = _nondiff("bessel_y0", lambda xp, x: special(xp).y0(x))
bessel_y1 = _nondiff("bessel_y1", lambda xp, x: special(xp).y1(x))
modified_bessel_i0 = _nondiff("modified_bessel_i0", lambda xp, x: special(xp).i0(x))
modified_bessel_i1 = _nondiff("modified_bessel_i1", lambda xp, x: special(xp).i1(x))
modified_bessel_k0 = _nondiff("modified_bessel_k0", lambda xp, x: special(xp).k0(x))
modified_bessel_k1 = _nondiff("modified_bessel_k1", lambda xp, x: special(xp).k1(x))
scaled_modified_bessel_k0 = _nondiff("scaled_modified_bessel_k0",
                                     lambda xp, x: special(xp).k0e(x))
scaled_modified_bessel_k1 = _nondiff("scaled_modified_bessel_k1",
                                     lambda xp, x: special(xp).k1e(x))
spherical_bessel_j0 = _nondiff("spherical_bessel_j0",
                               lambda xp, x: special(xp).spherical_jn(0, x).astype(x.dtype))
airy_ai = _nondiff("airy_ai", lambda xp, x: special(xp).airy(x)[0])


# ---- binary: xlog1py, zeta, gammainc, gammaincc ------------------------------------------
def _no_derivative(what):
    raise NotImplementedError(f"the derivative for '{what}' is not implemented.")


def _log1p(y):
    return y.log1p() if isinstance(y, Tensor) else math.log1p(y)


def _xlog1py_vjp(ctx, g, x, y):
    need = ctx.needs_input_grad
    gx = gy = None
    if need[0]:
        nz = (x != 0).to(g.dtype)
        gx = g * xlog1py(nz, y)
    if need[1]:
        gy = g * x / (y + 1)
    return gx, gy


def _zeta_vjp(ctx, g, x, q):
    need = ctx.needs_input_grad
    if need[0]:
        _no_derivative("zeta")
    return None, (g * -x * zeta(x + 1, q) if need[1] else None)


def _igamma_grad(g, a, x, sign):
    # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a)
    return sign * g * ((a - 1) * x.log() - x - a.lgamma()).exp()


def _gammainc_vjp(ctx, g, a, x):
    if ctx.needs_input_grad[0]:
        _no_derivative("igamma: input")
    return None, _igamma_grad(g, a, x, 1) if ctx.needs_input_grad[1] else None


def _gammaincc_vjp(ctx, g, a, x):
    if ctx.needs_input_grad[0]:
        _no_derivative("igammac: input")
    return None, _igamma_grad(g, a, x, -1) if ctx.needs_input_grad[1] else None


def _binop(name, fn, vjp, kname, **gate):
    return Op("special_" + name, _gate(binary_kernel(fn, kind="float"), kname, n=2, **gate), vjp,
              shape=_meta.broadcast_float, category="binary")


XLOG1PY = _binop("xlog1py", lambda xp, a, b: special(xp).xlog1py(a, b), _xlog1py_vjp,
                 "xlog1py_cpu")
ZETA = _binop("zeta", lambda xp, a, b: special(xp).zeta(a, b), _zeta_vjp, "zeta_cpu",
              half_ok=False)
GAMMAINC = _binop("gammainc", lambda xp, a, b: special(xp).gammainc(a, b), _gammainc_vjp,
                  "igamma_cpu", int_ok=False)
GAMMAINCC = _binop("gammaincc", lambda xp, a, b: special(xp).gammaincc(a, b), _gammaincc_vjp,
                   "igammac_cpu", int_ok=False)


def _check_tensor(fn, name, pos, v):
    if not isinstance(v, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(v).__name__}")


def _binary_public(name, op, tensors=0):
    def public(input, other, *, out=None):
        if tensors:
            _check_tensor(f"special_{name}", "input", 1, input)
            _check_tensor(f"special_{name}", "other", 2, other)
        if not isinstance(input, Tensor) and not isinstance(other, Tensor):
            raise TypeError(f"special_{name}() received an invalid combination of arguments")
        r = apply(op, (input, other), _E)
        return r if out is None else write_out(out, r)
    public.__name__ = public.__qualname__ = name
    public.__doc__ = f"Computes ``{name}(input, other)`` elementwise."
    return overridable(public)


xlog1py = _binary_public("xlog1py", XLOG1PY)
zeta = _binary_public("zeta", ZETA)
gammainc = _binary_public("gammainc", GAMMAINC, tensors=2)
gammaincc = _binary_public("gammaincc", GAMMAINCC, tensors=2)
for _m, _op in (("igamma", GAMMAINC), ("igammac", GAMMAINCC)):
    if not hasattr(Tensor, _m):
        setattr(Tensor, _m, (lambda op: lambda self, other: apply(op, (self, other), _E))(_op))
        setattr(Tensor, _m + "_", (lambda op: lambda self, other: apply_inplace(
            op, self, (other,), _E))(_op))
