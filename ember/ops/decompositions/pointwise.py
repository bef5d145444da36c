"""Pointwise composites: short formulas of the elementwise primitives.

Each fuses, after decomposition, into the same loop as its operands, so none needs a C
lowering of its own.  Where a formula differs from the kernel's only by rounding, the
test's tolerance covers it; special values (NaN, infinities, zeros) follow the kernel.
"""
import math

import numpy as np

from ..._core import dtype as _dt
from . import decomposes
from ._util import cast, float_of, full, is_tensor, np_dtype, prim

INF = math.inf


def _float(x):
    return cast(x, float_of(x)) if is_tensor(x) else x


@decomposes("reciprocal")
def _reciprocal(x):
    return prim.div(1, x)


@decomposes("rsqrt")
def _rsqrt(x):
    return prim.div(1, prim.sqrt(x))


@decomposes("frac")
def _frac(x):
    return prim.sub(x, prim.trunc(x))


@decomposes("deg2rad")
def _deg2rad(x):
    return prim.mul(_float(x), math.pi / 180.0)


@decomposes("rad2deg")
def _rad2deg(x):
    return prim.mul(_float(x), 180.0 / math.pi)


@decomposes("logit")
def _logit(x, eps=None):
    x = _float(x)
    if eps is not None:
        x = prim.minimum(prim.maximum(x, eps), 1 - eps)
    return prim.log(prim.div(x, prim.sub(1, x)))


@decomposes("sgn")
def _sgn(x):
    if not x.dtype.is_complex:
        return prim.sign(x)
    a = prim.abs(x)
    zero = prim.eq(a, 0)
    return prim.where(zero, 0, prim.div(x, prim.where(zero, 1, a)))


@decomposes("angle")
def _angle(x):
    if x.dtype.is_complex:
        return prim.atan2(prim.imag(x), prim.real(x))
    xf = _float(x)
    r = prim.where(prim.lt(xf, 0), math.pi, prim.mul(xf, 0))
    return prim.where(prim.isnan(xf), math.nan, r)


def _all(x, value):
    return full(x.shape, value, np.bool_)


@decomposes("isinf")
def _isinf(x):
    if x.dtype.is_complex:
        return prim.logical_or(_isinf(prim.real(x)), _isinf(prim.imag(x)))
    if not x.dtype.is_floating_point:
        return _all(x, False)
    return prim.eq(prim.abs(x), INF)


@decomposes("isposinf")
def _isposinf(x):
    return prim.eq(x, INF) if x.dtype.is_floating_point else _all(x, False)


@decomposes("isneginf")
def _isneginf(x):
    return prim.eq(x, -INF) if x.dtype.is_floating_point else _all(x, False)


@decomposes("isfinite")
def _isfinite(x):
    if x.dtype.is_complex:
        return prim.logical_and(_isfinite(prim.real(x)), _isfinite(prim.imag(x)))
    if not x.dtype.is_floating_point:
        return _all(x, True)
    # x - x is 0 for finite x, NaN for NaN and the infinities
    return prim.eq(prim.sub(x, x), 0)


@decomposes("isreal")
def _isreal(x):
    if not x.dtype.is_complex:
        return _all(x, True)
    return prim.eq(prim.imag(x), 0)


@decomposes("nan_to_num")
def _nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        return prim._to_copy(x, dtype=x.dtype.np)
    if x.dtype.is_complex:
        return prim.complex(_nan_to_num(prim.real(x), nan, posinf, neginf),
                            _nan_to_num(prim.imag(x), nan, posinf, neginf))
    big = float(np.finfo(np_dtype(x.dtype)).max) if x.dtype.np.kind == "f" else \
        float(__import__("ml_dtypes").finfo(x.dtype.np).max)
    hi = big if posinf is None else posinf
    lo = -big if neginf is None else neginf
    r = prim.where(prim.isnan(x), nan, x)
    r = prim.where(prim.eq(x, INF), hi, r)
    return prim.where(prim.eq(x, -INF), lo, r)


def _fminmax(takes_first):
    def decomp(a, b):
        # a selection, as the kernel's derivative: ties and a NaN second operand take the
        # first (fmax(1, NaN) = 1), a NaN first operand fails every comparison (b wins)
        first = takes_first(a, b)
        if is_tensor(b) and _is_float(b):
            first = prim.logical_or(first, prim.isnan(b))
        return prim.where(first, a, b)
    return decomp


def _is_float(x):
    return x.dtype.is_floating_point


decomposes("fmax")(_fminmax(lambda a, b: prim.ge(a, b)))
decomposes("fmin")(_fminmax(lambda a, b: prim.le(a, b)))


@decomposes("logaddexp")
def _logaddexp(a, b):
    if (is_tensor(a) and a.dtype.is_complex) or (is_tensor(b) and b.dtype.is_complex):
        m = prim.where(prim.ge(prim.real(a), prim.real(b)), a, b)
        return prim.add(m, prim.log1p(prim.exp(prim.sub(prim.sub(prim.add(a, b), m), m))))
    a, b = _float(a), _float(b)
    m = prim.maximum(a, b)
    d = prim.neg(prim.abs(prim.sub(a, b)))
    r = prim.add(m, prim.log1p(prim.exp(d)))
    # equal infinities: a - b is NaN, the answer is the infinity itself
    return prim.where(prim.eq(a, b), prim.add(a, math.log(2.0)), r)


@decomposes("logaddexp2")
def _logaddexp2(a, b):
    a, b = _float(a), _float(b)
    m = prim.maximum(a, b)
    d = prim.neg(prim.abs(prim.sub(a, b)))
    r = prim.add(m, prim.mul(prim.log1p(prim.exp2(d)), 1 / math.log(2.0)))
    return prim.where(prim.eq(a, b), prim.add(a, 1.0), r)


@decomposes("heaviside")
def _heaviside(x, values):
    pos = cast(prim.gt(x, 0), x.dtype)
    return prim.where(prim.eq(x, 0), values, pos)


@decomposes("xlogy")
def _xlogy(x, y):
    r = prim.mul(x, prim.log(y))
    r = prim.where(prim.eq(x, 0), 0, r)
    return prim.where(prim.isnan(y), math.nan, r) if is_tensor(y) else r


@decomposes("special_xlog1py")
def _xlog1py(x, y):
    r = prim.mul(x, prim.log1p(y))
    r = prim.where(prim.eq(x, 0), 0, r)
    return prim.where(prim.isnan(y), math.nan, r) if is_tensor(y) else r


@decomposes("special_entr")
def _entr(x):
    x = _float(x)
    r = prim.neg(prim.mul(x, prim.log(prim.where(prim.gt(x, 0), x, 1))))
    r = prim.where(prim.lt(x, 0), -INF, r)
    return prim.where(prim.isnan(x), math.nan, r)


@decomposes("special_sinc")
def _sinc(x):
    x = _float(x)
    px = prim.mul(x, math.pi)
    zero = prim.eq(x, 0)
    return prim.where(zero, 1.0, prim.div(prim.sin(px), prim.where(zero, 1.0, px)))


@decomposes("special_spherical_bessel_j0")
def _sph_j0(x):
    x = _float(x)
    zero = prim.eq(x, 0)
    r = prim.div(prim.sin(x), prim.where(zero, 1.0, x))
    return prim.where(zero, 1.0, r)


@decomposes("special_ndtr")
def _ndtr(x):
    x = _float(x)
    return prim.mul(prim.erfc(prim.mul(x, -1 / math.sqrt(2.0))), 0.5)


@decomposes("isclose")
def _isclose(a, b, rtol, atol, equal_nan):
    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        a, b = cast(a, np.float64), cast(b, np.float64) if is_tensor(b) else b
    elif a.dtype.name in ("float16", "bfloat16"):
        a, b = cast(a, np.float32), cast(b, np.float32) if is_tensor(b) else b
    diff = prim.abs(prim.sub(a, b))
    tol = prim.add(prim.mul(prim.abs(b), rtol), atol)
    close = prim.le(diff, tol)
    if a.dtype.is_floating_point or a.dtype.is_complex:
        close = prim.logical_or(close, prim.eq(a, b))  # equal infinities
        if equal_nan:
            close = prim.logical_or(close, prim.logical_and(prim.isnan(a), prim.isnan(b)))
    return close


@decomposes("clamp")
def _clamp(x, lo=None, hi=None):
    # wheres, not maximum/minimum: at a bound the gradient passes whole (torch's clamp), and
    # lo > hi gives hi; NaN fails both tests and stays NaN
    r = x
    if lo is not None:
        r = prim.where(prim.lt(r, lo), lo, r)
    if hi is not None:
        r = prim.where(prim.gt(r, hi), hi, r)
    if lo is None and hi is None:
        r = prim._to_copy(x, dtype=x.dtype.np)
    return r


@decomposes("lerp")
def _lerp(a, b, w):
    return prim.add(a, prim.mul(w, prim.sub(b, a)))


@decomposes("addcmul")
def _addcmul(x, t1, t2, value=1):
    return prim.add(x, prim.mul(value, prim.mul(t1, t2)))


@decomposes("addcdiv")
def _addcdiv(x, t1, t2, value=1):
    return prim.add(x, prim.mul(value, prim.div(t1, t2)))


# ---- tanh's and sigmoid's derivatives (the fused eager ops of ember.ops.pointwise_backward) ----
def _grad_times(grad, output, factor):
    """``grad * conj(factor(output))``, halves computed in float32 and rounded once, as the
    fused kernels do."""
    dt = _dt.promote_types(grad.dtype, output.dtype)
    half = dt.name in ("float16", "bfloat16")
    g, o = (cast(grad, _dt.float32), cast(output, _dt.float32)) if half else (grad, output)
    f = factor(o)
    if f.dtype.is_complex:
        f = prim.conj(f)
    return cast(prim.mul(g, f), dt)


@decomposes("tanh_backward")
def _tanh_backward(grad, output):
    return _grad_times(grad, output, lambda o: prim.sub(1, prim.mul(o, o)))


@decomposes("sigmoid_backward")
def _sigmoid_backward(grad, output):
    return _grad_times(grad, output, lambda o: prim.mul(prim.sub(1, o), o))
