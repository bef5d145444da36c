"""The sampling operators torch.distributions needs (Gamma and Binomial draws).

``standard_gamma`` draws Gamma(alpha, 1) samples and is differentiable in ``alpha`` by
implicit reparameterisation: with F(x; alpha) the Gamma CDF, a sample x = F^-1(u; alpha)
moves with alpha as dx/dalpha = -(dF/dalpha) / (dF/dx), holding u fixed.  dF/dx is the
density; dF/dalpha has no closed form and is taken by a central difference of the
regularised incomplete gamma function (scipy) in float64, in log space, on whichever of
the lower or upper tail is the smaller so that neither cancels.  ``binomial`` draws
Binomial(count, prob) counts (not differentiable, as in torch).
"""
import numpy as np

from .._core import meta as _meta
from .._core.dispatch import overridable
from .._core.op import JVP_FROM_VJP
from ._batching import _elementwise_rule
from ._helpers import Op, apply, no_derivative, not_implemented, special, type_name
from .random import _gen, _gen_param

__all__ = ["STANDARD_GAMMA", "GAMMA_GRAD", "BINOMIAL", "standard_gamma", "binomial"]


def _standard_gamma_kernel(xp, alpha, generator=None):
    if alpha.dtype.kind != "f":
        raise NotImplementedError(f"\"gamma_cpu\" not implemented for '{alpha.dtype}'")
    a = alpha.astype(np.float64)
    out = _gen(generator).standard_gamma(a)
    # torch never returns an exact zero: the smallest normal number of the dtype instead
    return np.maximum(out, np.finfo(alpha.dtype).tiny).astype(alpha.dtype)


def _gamma_grad_kernel(xp, alpha, x):
    """d x / d alpha of Gamma(alpha, 1) samples ``x`` at fixed CDF value."""
    if x.dtype != alpha.dtype:
        raise RuntimeError(f"Found dtype {type_name(x.dtype)} but expected "
                           f"{type_name(alpha.dtype)}")
    if x.dtype not in (np.float32, np.float64):
        not_implemented("_standard_gamma_grad_cpu", x.dtype)
    sp = special(xp)
    a = alpha.astype(np.float64)
    v = np.maximum(x.astype(np.float64), np.finfo(np.float64).tiny)
    h = 1e-5 * np.maximum(a, 1e-3)
    lower = v < a
    # log of the smaller tail probability, as a function of alpha
    def log_tail(aa):
        p = np.where(lower, sp.gammainc(aa, v), sp.gammaincc(aa, v))
        return np.log(np.maximum(p, 1e-300))
    d_log_tail = (log_tail(a + h) - log_tail(a - h)) / (2 * h)
    log_pdf = (a - 1) * np.log(v) - v - sp.gammaln(a)
    ratio = np.exp(log_tail(a) - log_pdf)  # tail / density
    dF = np.where(lower, ratio * d_log_tail, -ratio * d_log_tail)  # (dF/dalpha) / density
    g = np.where(np.isfinite(dF), -dF, 0.0)
    # torch's edges: no sample at or below 0 moves; NaN for a NaN or infinite argument and
    # for alpha <= 0, where Gamma(alpha) is undefined
    bad = ~np.isfinite(a) | (a <= 0) | np.isnan(x) | (x == np.inf)
    return np.where(x <= 0, 0.0, np.where(bad, np.nan, g)).astype(x.dtype)


GAMMA_GRAD = Op("standard_gamma_grad", _gamma_grad_kernel, **no_derivative("_standard_gamma_grad"),
                save_inputs=False,
                category="distributions", shape=lambda alpha, x: (x.shape, x.dtype),
                batch=_elementwise_rule)


def _standard_gamma_vjp(ctx, g, alpha, **params):
    return (g * apply(GAMMA_GRAD, (alpha.detach(), ctx.out.detach()), {}),)


STANDARD_GAMMA = Op("standard_gamma", _standard_gamma_kernel, _standard_gamma_vjp,
                    save_output=True, category="random", shape=_meta.same,
                    unsupported={"jvp": JVP_FROM_VJP})


def _binomial_kernel(xp, count, prob, generator=None):
    shape = np.broadcast_shapes(count.shape, prob.shape)
    n = np.broadcast_to(count, shape).astype(np.float64)
    p = np.broadcast_to(prob, shape).astype(np.float64)
    # torch's sampler takes any count and probability: none below 0, p clamped to [0, 1],
    # and a NaN probability gives NaN
    nan = np.isnan(p) | np.isnan(n)
    n = np.maximum(np.round(np.where(nan, 0, n)), 0).astype(np.int64)
    out = _gen(generator).binomial(n, np.clip(np.where(nan, 0, p), 0.0, 1.0))
    out = out.astype(np.result_type(count.dtype, prob.dtype))
    out[nan] = np.nan
    return out


BINOMIAL = Op("distributions_binomial", _binomial_kernel, None, differentiable=False,
              category="random", shape=_meta.broadcast)


def standard_gamma(alpha, generator=None):
    """Gamma(alpha, 1) samples, differentiable in ``alpha`` (torch._standard_gamma)."""
    return apply(STANDARD_GAMMA, (alpha,), {"generator": _gen_param(generator)})


@overridable
def binomial(count, prob, generator=None):
    """Binomial(count, prob) samples: the number of successes in ``count`` trials of
    probability ``prob`` (float tensors of one dtype, broadcast together)."""
    for name, t in (("count", count), ("prob", prob)):
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{type_name(t.dtype)}")
    if prob.dtype != count.dtype:
        raise RuntimeError(f"Found dtype {type_name(prob.dtype)} but expected "
                           f"{type_name(count.dtype)}")
    if count.dtype.name in ("float16", "bfloat16"):
        not_implemented("binomial_cpu", count.dtype)
    return apply(BINOMIAL, (count, prob), {"generator": _gen_param(generator)})
