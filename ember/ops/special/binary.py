"""The two-argument special functions: xlog1py, zeta and the regularized incomplete gamma
functions (torch.special.gammainc/gammaincc, torch.igamma/igammac), each one Op over
scipy.special with torch's dtype gating and derivatives (torch has none for zeta's and the
incomplete gammas' first argument: those raise NotImplementedError when needed)."""
from ..._core import meta as _meta
from ..._core.op import JVP_FROM_VJP
from .._batching import _elementwise_rule
from .._helpers import (Op, Tensor, _E, apply, apply_inplace, binary_kernel,  # noqa: F401
                       check_tensor, special)  # check_tensor: re-exported
from ._gate import gate

__all__ = ["XLOG1PY", "ZETA", "GAMMAINC", "GAMMAINCC", "check_tensor"]


def _no_derivative(what):
    raise NotImplementedError(f"the derivative for '{what}' is not implemented.")


def _xlog1py_vjp(ctx, g, x, y):
    need = ctx.needs_input_grad
    gx = gy = None
    if need[0]:
        nz = (x != 0).to(g.dtype)
        gx = g * XLOG1PY(nz, y)
    if need[1]:
        gy = g * x / (y + 1)
    return gx, gy


def _zeta_vjp(ctx, g, x, q):
    need = ctx.needs_input_grad
    if need[0]:
        _no_derivative("zeta")
    return None, (g * -x * ZETA(x + 1, q) if need[1] else None)


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


def _binop(name, fn, vjp, kname, **gating):
    return Op("special_" + name, gate(binary_kernel(fn, kind="float"), kname, n=2, **gating),
              vjp, shape=_meta.broadcast_float, category="binary", batch=_elementwise_rule,
              unsupported={"jvp": JVP_FROM_VJP})


XLOG1PY = _binop("xlog1py", lambda xp, a, b: special(xp).xlog1py(a, b), _xlog1py_vjp,
                 "xlog1py_cpu")
ZETA = _binop("zeta", lambda xp, a, b: special(xp).zeta(a, b), _zeta_vjp, "zeta_cpu",
              half_ok=False)
GAMMAINC = _binop("gammainc", lambda xp, a, b: special(xp).gammainc(a, b), _gammainc_vjp,
                  "igamma_cpu", int_ok=False)
GAMMAINCC = _binop("gammaincc", lambda xp, a, b: special(xp).gammaincc(a, b), _gammaincc_vjp,
                   "igammac_cpu", int_ok=False)


for _m, _op in (("igamma", GAMMAINC), ("igammac", GAMMAINCC)):
    if not hasattr(Tensor, _m):
        setattr(Tensor, _m, (lambda op: lambda self, other: apply(op, (self, other), _E))(_op))
        setattr(Tensor, _m + "_", (lambda op: lambda self, other: apply_inplace(
            op, self, (other,), _E))(_op))
del _m, _op
