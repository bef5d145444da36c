"""Unary entries of the scalar-function table (see the package docstring).

C templates: ``$0`` is the operand (already parenthesised), ``$T`` the C type, ``$S`` the
suffix of per-type helpers (f32/f64), ``$exp``/``$sin``/... the type's math function (the
vectorised polynomials of `_cmath` for float exp/log/tanh/erf/sigmoid, the C library's
``sinf``/``sin``... otherwise), ``$max``/``$min`` the NaN-propagating helpers.  An operand
used more than once goes through a ``c_helper`` function, so that an expression the
compiler passes in is evaluated once.
"""
import math

import numpy as np

from ..tensor import Tensor
from ._record import define

_LN2, _LN10 = math.log(2.0), math.log(10.0)
_SQRT_PI = math.sqrt(math.pi)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_K = math.sqrt(2.0 / math.pi)  # gelu's tanh approximation: tanh(K (x + 0.044715 x^3))


def special(xp):
    """The special-functions namespace for ``xp`` (scipy.special for NumPy)."""
    if xp is np:
        import scipy.special
        return scipy.special
    return xp.special


def cj(t):
    """conj(t) for complex tensors/numbers, t itself otherwise (torch's Wirtinger formulas)."""
    tt = type(t)
    if tt is float or tt is int:  # the commonest: a scalar operand in every ``g * cj(b)``
        return t
    if isinstance(t, Tensor):
        # (the dtype's flag, not the routed Tensor.is_complex method: ~0.15 us per backward op)
        return t.conj() if t.dtype.is_complex else t
    return t.conjugate() if tt is complex or isinstance(t, complex) else t


def _zero(g, x, out):
    return g * 0


def _fused(op_name):
    """A derivative that is one fused operator of ``ember.ops`` (``tanh_backward``: one
    kernel and one temporary instead of three dispatched ops), found by name at call time
    because the ops are declared above this layer."""
    from ..op import REGISTRY, apply
    op = None

    def d(g, x, out):
        nonlocal op
        if op is None:
            op = REGISTRY[op_name]
        return apply(op, (g, out), {})  # op(g, out) without Op.__call__'s frame
    return d


def unary(name, numpy, c=None, *, rule="float", kinds="fc", d=None, saves="inputs",
          c_int=None, c_grad=None, c_helper="", doc=""):
    return define(name, 1, numpy, c, c_int=c_int, c_grad=c_grad, c_helper=c_helper,
                  rule=rule, kinds=kinds, d=d, saves=saves, doc=doc)


# ---- sign, magnitude, rounding (dtype kept; integers pass through) -----------------------
unary("neg", lambda xp, x: xp.negative(x), "(-$0)", rule="same", kinds="iufc",
      c_int="(-$0)", d=lambda g, x, out: -g, saves="none")
unary("abs", lambda xp, x: xp.abs(x), "$fabs($0)", rule="same", kinds="iufc",
      c_int="($0 < 0 ? -$0 : $0)", d=lambda g, x, out: g * x.sgn())


def _sign(xp, x):
    r = xp.sign(x)
    if x.dtype.kind == "f":
        r = xp.where(r != r, 0, r).astype(x.dtype, copy=False)  # torch: sign(nan) == 0
    return r


unary("sign", _sign, "($T)(($0 > 0) - ($0 < 0))", rule="same", kinds="iuf",
      c_int="(($0 > 0) - ($0 < 0))", d=_zero, saves="none")
unary("floor", lambda xp, x: xp.floor(x), "$floor($0)", rule="same", kinds="iuf",
      c_int="$0", d=_zero, saves="none")
unary("ceil", lambda xp, x: xp.ceil(x), "$ceil($0)", rule="same", kinds="iuf", c_int="$0",
      d=_zero, saves="none")
unary("trunc", lambda xp, x: xp.trunc(x), "$trunc($0)", rule="same", kinds="iuf", c_int="$0",
      d=_zero, saves="none")
# half to even, as torch and NumPy round; rint follows the default rounding mode
unary("round", lambda xp, x: xp.round(x), "$rint($0)", rule="same", kinds="iuf", c_int="$0",
      d=_zero, saves="none")
unary("frac", lambda xp, x: x - xp.trunc(x), "($0 - $trunc($0))", rule="same", kinds="f",
      d=lambda g, x, out: g, saves="none")

# ---- powers, exponentials, logarithms ----------------------------------------------------
def _reciprocal(xp, x):
    # NumPy's complex reciprocal gives NaN for 0 and -0.0 imaginary parts for reals; its
    # complex division gives torch's (and C's) 1 / z: inf+nanj for 0, +0.0 imaginary parts
    return 1 / x if x.dtype.kind == "c" else xp.reciprocal(x)


unary("reciprocal", _reciprocal, "(($T)1 / $0)",
      d=lambda g, x, out: -g * cj(out * out), saves="output")
unary("sqrt", lambda xp, x: xp.sqrt(x), "$sqrt($0)", d=lambda g, x, out: g / (2 * cj(out)),
      saves="output")
unary("rsqrt", lambda xp, x: 1 / xp.sqrt(x), "(($T)1 / $sqrt($0))",
      d=lambda g, x, out: -0.5 * g * cj(out ** 3), saves="output")
unary("square", lambda xp, x: x * x, "($0 * $0)", rule="same", kinds="iufc", c_int="($0 * $0)",
      d=lambda g, x, out: g * 2 * cj(x))
unary("exp", lambda xp, x: xp.exp(x), "$exp($0)", d=lambda g, x, out: g * cj(out),
      saves="output", c_grad="$exp($0)")
unary("exp2", lambda xp, x: xp.exp2(x), "$exp2($0)",
      d=lambda g, x, out: g * cj(out) * _LN2, saves="output")
unary("expm1", lambda xp, x: xp.expm1(x), "$expm1($0)", d=lambda g, x, out: g * (cj(out) + 1),
      saves="output")
unary("log", lambda xp, x: xp.log(x), "$log($0)", d=lambda g, x, out: g / cj(x),
      c_grad="(($T)1 / $0)")
unary("log2", lambda xp, x: xp.log2(x), "$log2($0)",
      d=lambda g, x, out: g / (cj(x) * _LN2))
unary("log10", lambda xp, x: xp.log10(x), "$log10($0)",
      d=lambda g, x, out: g / (cj(x) * _LN10))
unary("log1p", lambda xp, x: xp.log1p(x), "$log1p($0)", d=lambda g, x, out: g / (cj(x) + 1))

# ---- trigonometric and hyperbolic --------------------------------------------------------
unary("sin", lambda xp, x: xp.sin(x), "$sin($0)", d=lambda g, x, out: g * cj(x.cos()))
unary("cos", lambda xp, x: xp.cos(x), "$cos($0)", d=lambda g, x, out: -g * cj(x.sin()))
unary("tan", lambda xp, x: xp.tan(x), "$tan($0)", d=lambda g, x, out: g * cj(1 + out * out),
      saves="output")
unary("asin", lambda xp, x: xp.arcsin(x), "$asin($0)",
      d=lambda g, x, out: g * cj((1 - x * x).rsqrt()))
unary("acos", lambda xp, x: xp.arccos(x), "$acos($0)",
      d=lambda g, x, out: -g * cj((1 - x * x).rsqrt()))
unary("atan", lambda xp, x: xp.arctan(x), "$atan($0)", d=lambda g, x, out: g / cj(1 + x * x))
unary("sinh", lambda xp, x: xp.sinh(x), "$sinh($0)", d=lambda g, x, out: g * cj(x.cosh()))
unary("cosh", lambda xp, x: xp.cosh(x), "$cosh($0)", d=lambda g, x, out: g * cj(x.sinh()))
unary("tanh", lambda xp, x: xp.tanh(x), "$tanh($0)",
      d=_fused("tanh_backward"), saves="output",  # g * conj(1 - out * out)
      c_helper="static inline $T sf_tanh_grad_$S($T v) { $T t = $tanh(v); return ($T)1 - t * t; }",
      c_grad="sf_tanh_grad_$S($0)")
unary("asinh", lambda xp, x: xp.arcsinh(x), "$asinh($0)",
      d=lambda g, x, out: g * cj((x * x + 1).rsqrt()))
unary("acosh", lambda xp, x: xp.arccosh(x), "$acosh($0)",
      d=lambda g, x, out: g * cj((x * x - 1).rsqrt()))
unary("atanh", lambda xp, x: xp.arctanh(x), "$atanh($0)", d=lambda g, x, out: g / cj(1 - x * x))
unary("deg2rad", lambda xp, x: x * (math.pi / 180.0), "($0 * ($T)0.017453292519943295)",
      kinds="f", d=lambda g, x, out: g * (math.pi / 180.0), saves="none")
unary("rad2deg", lambda xp, x: x * (180.0 / math.pi), "($0 * ($T)57.29577951308232)",
      kinds="f", d=lambda g, x, out: g * (180.0 / math.pi), saves="none")

# ---- special functions -------------------------------------------------------------------
unary("sigmoid", lambda xp, x: special(xp).expit(x), "$sigmoid($0)",
      d=_fused("sigmoid_backward"), saves="output",  # g * conj(out * (1 - out))
      c_helper="static inline $T sf_sigmoid_grad_$S($T v) { $T s = $sigmoid(v); "
               "return s * (($T)1 - s); }",
      c_grad="sf_sigmoid_grad_$S($0)")
unary("erf", lambda xp, x: special(xp).erf(x), "$erf($0)", kinds="f",
      d=lambda g, x, out: g * (2 / _SQRT_PI) * (-x * x).exp(),
      c_grad="(($T)1.1283791670955126 * $exp(-$0 * $0))")
unary("erfc", lambda xp, x: special(xp).erfc(x), "$erfc($0)", kinds="f",
      d=lambda g, x, out: g * (-2 / _SQRT_PI) * (-x * x).exp())
unary("erfinv", lambda xp, x: special(xp).erfinv(x), None, kinds="f",
      d=lambda g, x, out: g * (_SQRT_PI / 2) * (out * out).exp(), saves="output",
      doc="no C form: the C library has no erfinv")
def _lgamma(xp, x):
    # scipy's gammaln gives -inf at -inf and overflows for subnormal doubles, where C's
    # lgamma (torch's, and ember's C kernels) gives +inf and -log|x| (744.4 at 5e-324)
    r = special(xp).gammaln(x)
    sub = (xp.abs(x) < 1e-300) & (x != 0)
    if sub.any():
        r = xp.where(sub, -xp.log(xp.where(sub, xp.abs(x), 1)), r)
    return xp.where(x == -math.inf, math.inf, r)


unary("lgamma", _lgamma, "$lgamma($0)", kinds="f",
      d=lambda g, x, out: g * x.digamma())
unary("digamma", lambda xp, x: special(xp).psi(x), None, kinds="f",
      d=lambda g, x, out: g * x.polygamma(1), doc="no C form: the C library has no digamma")

# ---- activations -------------------------------------------------------------------------
unary("relu", lambda xp, x: xp.maximum(x, 0), "$max($0, ($T)0)", rule="same", kinds="iuf",
      c_int="($0 > 0 ? $0 : 0)", d=lambda g, x, out: g.where(out > 0, 0), saves="output",
      c_grad="($T)($0 > 0)")


def _gelu(xp, x):
    return 0.5 * x * (1 + special(xp).erf(x * _INV_SQRT2))


def _gelu_d(g, x, out):
    cdf = 0.5 * (1 + (x * _INV_SQRT2).erf())
    pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
    return g * (cdf + x * pdf)


unary("gelu", _gelu, "sf_gelu_$S($0)", kinds="f", d=_gelu_d, c_grad="sf_gelu_grad_$S($0)",
      c_helper="""
/* h + h erf rather than 0.5 v (1 + erf): one rounding of h (1 + erf) where contracted */
static inline $T sf_gelu_$S($T v) { $T h = ($T)0.5 * v; return h + h * $erf(v * ($T)0.7071067811865476); }
static inline $T sf_gelu_grad_$S($T v) {
    $T cdf = ($T)0.5 * (($T)1 + $erf(v * ($T)0.7071067811865476));
    $T pdf = $exp_le0(v * v * ($T)-0.5) * ($T)0.3989422804014327;
    return cdf + v * pdf;
}""", doc="exact gelu, x Phi(x)")


def _gelu_tanh(xp, x):
    return 0.5 * x * (1 + xp.tanh(_K * (x + 0.044715 * x * x * x)))


def _gelu_tanh_d(g, x, out):
    x2 = x * x
    t = ((x + 0.044715 * x2 * x) * _K).tanh()
    return g * (0.5 * (1 + t) + (0.5 * _K) * x * (1 - t * t) * (1 + 0.134145 * x2))


unary("gelu_tanh", _gelu_tanh, "sf_gelu_tanh_$S($0)", kinds="f", d=_gelu_tanh_d,
      c_grad="sf_gelu_tanh_grad_$S($0)", c_helper="""
static inline $T sf_gelu_tanh_$S($T v) {
    $T t = $tanh(($T)0.7978845608028654 * (v + ($T)0.044715 * v * v * v));
    return ($T)0.5 * v * (($T)1 + t);
}
static inline $T sf_gelu_tanh_grad_$S($T v) {
    $T v2 = v * v;
    $T t = $tanh((v + ($T)0.044715 * v2 * v) * ($T)0.7978845608028654);
    return ($T)0.5 * (($T)1 + t) +
           (($T)0.5 * ($T)0.7978845608028654) * v * (($T)1 - t * t) * (($T)1 + ($T)0.134145 * v2);
}""", doc="gelu(approximate='tanh')")


def _silu_d(g, x, out):
    s = x.sigmoid()
    return g * (s * (1 + x * (1 - s)))


unary("silu", lambda xp, x: x * special(xp).expit(x), "sf_silu_$S($0)", kinds="f", d=_silu_d,
      c_grad="sf_silu_grad_$S($0)", c_helper="""
static inline $T sf_silu_$S($T v) { return v * $sigmoid(v); }
static inline $T sf_silu_grad_$S($T v) { $T s = $sigmoid(v); return s * (($T)1 + v * (($T)1 - s)); }""")


def _mish_d(g, x, out):
    t = x.exp().log1p().tanh()
    return g * (t + x * x.sigmoid() * (1 - t * t))


unary("mish", lambda xp, x: x * xp.tanh(xp.logaddexp(0, x)), "sf_mish_$S($0)", kinds="f",
      d=_mish_d, c_helper="static inline $T sf_mish_$S($T v) { "
                          "return v * $tanh($log1p($exp(v))); }")
unary("hardsigmoid", lambda xp, x: xp.minimum(xp.maximum(x + 3, 0), 6) / 6,
      "($min($max($0 + ($T)3, ($T)0), ($T)6) / ($T)6)", kinds="f",
      d=lambda g, x, out: g.where((x > -3) & (x < 3), 0) / 6)
unary("hardswish", lambda xp, x: x * xp.minimum(xp.maximum(x + 3, 0), 6) / 6,
      "sf_hardswish_$S($0)", kinds="f",
      d=lambda g, x, out: g * (x / 3 + 0.5).where(x <= 3, 1).where(x >= -3, 0),
      c_helper="static inline $T sf_hardswish_$S($T v) { "
               "return v * $min($max(v + ($T)3, ($T)0), ($T)6) / ($T)6; }")
unary("logsigmoid", lambda xp, x: xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x))),
      "sf_logsigmoid_$S($0)", kinds="f", d=lambda g, x, out: g * (-x).sigmoid(),
      c_helper="static inline $T sf_logsigmoid_$S($T v) { "
               "return $min(v, ($T)0) - $log1p($exp(-$fabs(v))); }")
unary("softsign", lambda xp, x: x / (1 + xp.abs(x)), "($0 / (($T)1 + $fabs($0)))", kinds="f",
      d=lambda g, x, out: g / (1 + x.abs()) ** 2)

# ---- predicates (bool results, no derivative) --------------------------------------------
unary("isnan", lambda xp, x: xp.isnan(x), "($0 != $0)", rule="predicate", kinds="biuf",
      c_int="0")
unary("isinf", lambda xp, x: xp.isinf(x), "($fabs($0) == ($T)INFINITY)", rule="predicate",
      kinds="biuf", c_int="0")
unary("isfinite", lambda xp, x: xp.isfinite(x), "isfinite($0)", rule="predicate",
      kinds="biuf", c_int="1")
unary("logical_not", lambda xp, x: xp.logical_not(x), "(!$0)", rule="predicate",
      kinds="biufc", c_int="(!$0)")
unary("bitwise_not", lambda xp, x: xp.invert(x), None, rule="integral", kinds="biu",
      c_int={"b": "(!$0)", "i": "(~$0)"})
