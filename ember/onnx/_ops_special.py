"""ONNX lowerings of the special functions that have short, accurate formulas in elementwise
operators: ``lgamma`` (Lanczos, with the reflection formula below 1/2), ``digamma`` (the
recurrence up to 6 and the asymptotic series) and ``erfinv`` (Giles' approximation, refined
by a Newton step).  Accurate to about float32 precision (a few units in the last place);
float64 tensors are computed in float64 where ONNX Runtime has the kernels, and erfinv's
Newton step (which needs Erf, float32 only in ONNX Runtime) in float32.
"""
import math

import numpy as np

from .._core import dtype as _dt
from ._ops_elementwise import operand
from ._registry import lowers

__all__ = []

_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)


class _Math:
    """Elementwise arithmetic on value names of one dtype, to write formulas readably."""

    def __init__(self, b, dtype):
        self.b, self.dt = b, dtype

    def c(self, v):
        return self.b.scalar(v, self.dt)

    def __getattr__(self, kind):   # m.Add(a, b), m.Log(a), ...
        return lambda *xs: self.b.op(kind, [x if isinstance(x, str) else self.c(x)
                                            for x in xs])

    def poly(self, coeffs, w):
        """coeffs[0] + w * (coeffs[1] + w * (...)), Horner's rule."""
        p = self.c(coeffs[-1])
        for k in reversed(coeffs[:-1]):
            p = self.Add(self.Mul(p, w), k)
        return p


def _pi_frac(m, x):
    """pi * (x - round(x)): the same sin/tan up to sign as pi * x, exactly reduced, so the
    reflection formulas keep their precision far from 0."""
    return m.Mul(m.Sub(x, m.Round(x)), math.pi)


def _nonpositive_integer(m, x):
    return m.b.op("And", [m.LessOrEqual(x, 0), m.Equal(x, m.Floor(x))])


def _lgamma_positive(m, z):
    """lgamma(z) for z >= 1/2 (Lanczos, g = 7)."""
    z1 = m.Sub(z, 1.0)
    a = m.c(_LANCZOS[0])
    for i, p in enumerate(_LANCZOS[1:], 1):
        a = m.Add(a, m.Div(p, m.Add(z1, float(i))))
    t = m.Add(z1, _LANCZOS_G + 0.5)
    return m.Add(m.Sub(m.Add(0.5 * math.log(2 * math.pi), m.Mul(m.Add(z1, 0.5), m.Log(t))), t),
                 m.Log(a))


@lowers("lgamma")
def _lgamma(b, ctx, x):
    dt = ctx.out.dtype
    m = _Math(b, dt)
    v = operand(b, x, dt)
    small = m.Less(v, 0.5)
    z = b.op("Where", [small, m.Sub(1.0, v), v])
    big = _lgamma_positive(m, z)
    # reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)
    reflected = m.Sub(m.Sub(math.log(math.pi), m.Log(m.Abs(m.Sin(_pi_frac(m, v))))), big)
    r = b.op("Where", [small, reflected, big])
    return b.op("Where", [_nonpositive_integer(m, v), m.c(np.inf), r])  # the poles


_ASYMPTOTIC = (-1 / 12, 1 / 120, -1 / 252, 1 / 240, -1 / 132)  # in 1 / w**2


@lowers("digamma")
def _digamma(b, ctx, x):
    dt = ctx.out.dtype
    m = _Math(b, dt)
    v = operand(b, x, dt)
    small = m.Less(v, 0.5)
    z = b.op("Where", [small, m.Sub(1.0, v), v])
    shift = m.c(0.0)
    for k in range(6):  # psi(z) = psi(z + 6) - sum 1/(z + k)
        shift = m.Add(shift, m.Div(1.0, m.Add(z, float(k))))
    w = m.Add(z, 6.0)
    inv2 = m.Div(1.0, m.Mul(w, w))
    series = m.Mul(inv2, m.poly(_ASYMPTOTIC, inv2))
    psi = m.Sub(m.Add(m.Sub(m.Log(w), m.Div(0.5, w)), series), shift)
    # reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
    r = _pi_frac(m, v)  # tan has period pi; as Sin/Cos (ONNX Runtime has no double Tan)
    reflected = m.Sub(psi, m.Div(m.Mul(math.pi, m.Cos(r)), m.Sin(r)))
    r = b.op("Where", [small, reflected, psi])
    # torch: -inf at 0, nan at the negative integers
    r = b.op("Where", [_nonpositive_integer(m, v), m.c(np.nan), r])
    return b.op("Where", [m.Equal(v, 0.0), m.c(-np.inf), r])


_GILES_CENTRAL = (1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087,
                  -4.39150654e-06, -3.5233877e-06, 3.43273939e-07, 2.81022636e-08)
_GILES_TAIL = (2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773,
               -0.00367342844, 0.00134934322, 0.000100950558, -0.000200214257)


@lowers("erfinv")
def _erfinv(b, ctx, x):
    dt = ctx.out.dtype
    f32 = _dt.float32
    m = _Math(b, f32)
    v = operand(b, x, f32)
    w = m.Neg(m.Log(m.Mul(m.Sub(1.0, v), m.Add(1.0, v))))
    central = m.poly(_GILES_CENTRAL, m.Sub(w, 2.5))
    tail = m.poly(_GILES_TAIL, m.Sub(m.Sqrt(w), 3.0))
    y = m.Mul(b.op("Where", [m.Less(w, 5.0), central, tail]), v)
    # one Newton step on erf(y) = x
    step = m.Div(m.Sub(m.Erf(y), v), m.Mul(2 / math.sqrt(math.pi), m.Exp(m.Neg(m.Mul(y, y)))))
    inside = m.Less(m.Abs(v), 0.999)
    y = b.op("Where", [inside, m.Sub(y, step), y])
    y = b.op("Where", [m.Equal(m.Abs(v), 1.0), m.Mul(v, np.inf), y])   # +-1 -> +-inf
    return b.cast(y, dt, f32)
