"""Binary and ternary entries of the scalar-function table (see the package docstring).

Operands of the NumPy forms may be Python scalars (torch's weak scalars) as well as arrays;
derivatives receive Tensors or Python scalars and are only called for the inputs whose
gradient is wanted.
"""
import cmath
import math

from ..tensor import Tensor
from ._record import define
from ._unary import cj, special


def binary(name, numpy, c=None, *, rule="promote", kinds="fc", d=None, saves="inputs",
           reads=None, c_int=None, c_helper="", doc="", arity=2):
    return define(name, arity, numpy, c, c_int=c_int, c_helper=c_helper, rule=rule,
                  kinds=kinds, d=d, saves=saves, reads=reads, doc=doc)


def _zeros(g, a, b, out):
    return g * 0


# ---- arithmetic --------------------------------------------------------------------------
binary("add", lambda xp, a, b: xp.add(a, b), "($0 + $1)", kinds="biufc",
       c_int={"b": "($0 || $1)", "i": "($0 + $1)"},
       d=(lambda g, a, b, out: g, lambda g, a, b, out: g), saves="none",
       doc="alpha=1 (the op scales other by alpha first); bool: logical or")
binary("sub", lambda xp, a, b: xp.subtract(a, b), "($0 - $1)", kinds="iufc", c_int="($0 - $1)",
       d=(lambda g, a, b, out: g, lambda g, a, b, out: -g), saves="none")
binary("mul", lambda xp, a, b: xp.multiply(a, b), "($0 * $1)", kinds="biufc",
       c_int={"b": "($0 && $1)", "i": "($0 * $1)"},
       d=(lambda g, a, b, out: g * cj(b), lambda g, a, b, out: g * cj(a)), reads=((1,), (0,)),
       doc="bool: logical and")
binary("div", lambda xp, a, b: xp.true_divide(a, b), "($0 / $1)", rule="promote_float",
       kinds="biufc",
       d=(lambda g, a, b, out: g / cj(b), lambda g, a, b, out: -g * cj(a / (b * b))),
       reads=((1,), (0, 1)))


def _floor_divide(xp, a, b):
    if getattr(a, "dtype", None) is not None and a.dtype.kind in "biu" and (
            type(b) is int or getattr(b, "dtype", None) is not None and b.dtype.kind in "biu"):
        return xp.floor_divide(a, b)
    # torch's div_floor for floats: through fmod, so inf // x is NaN, -1 // inf is -1 and
    # 1 // 0.1 is 9 (floor(a / b) gives 10, NumPy's floor_divide gives -0 for -1 // inf)
    mod = xp.fmod(a, b)
    div = (a - mod) / b
    div = div - ((mod != 0) & ((b < 0) != (mod < 0)))
    fl = xp.floor(div)
    fl = fl + (div - fl > 0.5)
    q = xp.true_divide(a, b)
    return xp.where(b == 0, q, xp.where(div != 0, fl, xp.copysign(0 * q, q)))


binary("floor_divide", _floor_divide, "sf_floor_divide_$S($0, $1)", kinds="iuf", d=(
    _zeros, _zeros), saves="none", c_helper="""
static inline $T sf_floor_divide_$S($T a, $T b) {
    $T mod = $fmod(a, b);
    $T div = (a - mod) / b;
    div = div - ($T)((mod != 0) & ((b < 0) != (mod < 0)));
    $T fl = $floor(div);
    fl = fl + ($T)(div - fl > ($T)0.5);
    $T q = a / b;
    return b == 0 ? q : (div != 0 ? fl : $copysign(($T)0 * q, q));
}""", doc="torch's div(rounding_mode='floor')")


def _trunc_divide(xp, a, b):
    q = xp.true_divide(a, b)
    if getattr(a, "dtype", None) is not None and a.dtype.kind in "biu" and (
            type(b) is int or getattr(b, "dtype", None) is not None and b.dtype.kind in "biu"):
        # C-style truncation of integer quotients
        fq = xp.floor_divide(a, b)
        return xp.where((q < 0) & (fq * b != a), fq + 1, fq)
    return xp.trunc(q)


binary("trunc_divide", _trunc_divide, "$trunc($0 / $1)", kinds="iuf", d=(_zeros, _zeros),
       saves="none", doc="torch's div(rounding_mode='trunc')")
binary("remainder", lambda xp, a, b: xp.remainder(a, b), "sf_remainder_$S($0, $1)",
       kinds="iuf", d=(lambda g, a, b, out: g, lambda g, a, b, out: -g * (a / b).floor()),
       c_helper="""
static inline $T sf_remainder_$S($T a, $T b) {
    $T m = $fmod(a, b);
    $T r = (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
    return m == 0 ? $copysign(($T)0, b) : r;
}""", doc="Python's modulo: the sign of the divisor")
binary("fmod", lambda xp, a, b: xp.fmod(a, b), "$fmod($0, $1)", kinds="iuf",
       d=(lambda g, a, b, out: g, lambda g, a, b, out: -g * (a / b).trunc()))


def _pow_da(g, a, b, out):
    if not isinstance(b, Tensor):
        return g * 0 if b == 0 else g * cj(b * a ** (b - 1))
    r = g * cj(b * a ** (b - 1))
    return r if b.is_complex() else r.where(b != 0, 0)


def _pow_db(g, a, b, out):
    if isinstance(a, Tensor):
        r = g * cj(out * a.log())
        return r if a.is_complex() else r.where(~((a == 0) & (b >= 0)), 0)
    if isinstance(a, complex) or a < 0 and b.is_complex():
        la = cmath.log(a)
    else:
        la = math.log(a) if a > 0 else -math.inf if a == 0 else math.nan
    r = g * cj(out * la)
    return r.where(b < 0, 0) if a == 0 else r


binary("pow", lambda xp, a, b: xp.power(a, b), "$pow($0, $1)", kinds="iufc",
       d=(_pow_da, _pow_db), saves="both",
       doc="the op adds torch's integer rules (negative exponents, bool operands)")


def _ties(pick):
    """d/da and d/db of a selection: the picked operand gets g, ties split it evenly."""
    def da(g, a, b, out):
        return (g / 2).where(a == b, g.where(pick(a, b), 0))

    def db(g, a, b, out):
        return (g / 2).where(a == b, g.where(~pick(a, b), 0))
    return da, db


binary("maximum", lambda xp, a, b: xp.maximum(a, b), "$max($0, $1)", kinds="biuf",
       c_int="($0 > $1 ? $0 : $1)", d=_ties(lambda a, b: a > b), doc="NaN from either side")
binary("minimum", lambda xp, a, b: xp.minimum(a, b), "$min($0, $1)", kinds="biuf",
       c_int="($0 < $1 ? $0 : $1)", d=_ties(lambda a, b: a < b), doc="NaN from either side")


def _first(pick):
    """d/da and d/db of a selection where ties go to the first operand (torch's fmax/fmin)."""
    def da(g, a, b, out):
        return g.where(pick(a, b), 0)

    def db(g, a, b, out):
        return g.where(~pick(a, b), 0)
    return da, db


binary("fmax", lambda xp, a, b: xp.fmax(a, b), "$fmax($0, $1)", kinds="biuf",
       c_int="($0 > $1 ? $0 : $1)", d=_first(lambda a, b: (a >= b) | b.isnan()),
       doc="NaN only when both are")
binary("fmin", lambda xp, a, b: xp.fmin(a, b), "$fmin($0, $1)", kinds="biuf",
       c_int="($0 < $1 ? $0 : $1)", d=_first(lambda a, b: (a <= b) | b.isnan()),
       doc="NaN only when both are")
binary("atan2", lambda xp, a, b: xp.arctan2(a, b), "$atan2($0, $1)", rule="promote_float",
       kinds="biuf", d=(lambda g, a, b, out: g * b / (a * a + b * b),
                        lambda g, a, b, out: -g * a / (a * a + b * b)))
binary("hypot", lambda xp, a, b: xp.hypot(a, b), "$hypot($0, $1)", rule="promote_float",
       kinds="f", d=(lambda g, a, b, out: g * a / out, lambda g, a, b, out: g * b / out),
       saves="both")
binary("copysign", lambda xp, a, b: xp.copysign(a, b), "$copysign($0, $1)",
       rule="promote_float", kinds="biuf",
       d=(lambda g, a, b, out: g * (out / a).nan_to_num(0.0), _zeros), saves="both")


def _xlogy_da(g, a, b, out):
    # torch: log(b), also where a == 0, masked to 0 only where a == 0 and b <= 0
    logb = b.log() if isinstance(b, Tensor) else (
        math.log(b) if b > 0 else -math.inf if b == 0 else math.nan)
    return (g * logb).where(~((a == 0) & (b <= 0)), 0)


binary("xlogy", lambda xp, a, b: special(xp).xlogy(a, b), "sf_xlogy_$S($0, $1)",
       rule="promote_float", kinds="biuf", d=(_xlogy_da, lambda g, a, b, out: g * a / b),
       c_helper="static inline $T sf_xlogy_$S($T a, $T b) { "
                "return (a == 0 && b == b) ? ($T)0 : a * $log(b); }")
binary("logaddexp", lambda xp, a, b: xp.logaddexp(a, b), "sf_logaddexp_$S($0, $1)", kinds="f",
       d=(lambda g, a, b, out: g * cj((a - out).exp()),
          lambda g, a, b, out: g * cj((b - out).exp())), saves="both", c_helper="""
static inline $T sf_logaddexp_$S($T a, $T b) {
    $T d = a - b;
    $T r = d > 0 ? a + $log1p($exp(-d)) : b + $log1p($exp(d));
    return a == b ? a + ($T)0.6931471805599453 : (d != d ? d : r);
}""", doc="equal operands (infinities included) give a + log 2")
binary("logaddexp2", lambda xp, a, b: xp.logaddexp2(a, b), "sf_logaddexp2_$S($0, $1)",
       kinds="f", d=(lambda g, a, b, out: g * (a - out).exp2(),
                     lambda g, a, b, out: g * (b - out).exp2()), saves="both", c_helper="""
static inline $T sf_logaddexp2_$S($T a, $T b) {
    $T d = a - b;
    $T r = d > 0 ? a + $log1p($exp2(-d)) * ($T)1.4426950408889634
                 : b + $log1p($exp2(d)) * ($T)1.4426950408889634;
    return a == b ? a + ($T)1 : (d != d ? d : r);
}""")


def _heaviside(xp, x, values):
    # torch: x == 0 -> values, else (x > 0); NaN therefore gives 0
    return xp.where(x == 0, values, x > 0).astype(x.dtype, copy=False)


binary("heaviside", _heaviside, "($0 == 0 ? $1 : ($T)($0 > 0))", kinds="biuf",
       c_int="($0 == 0 ? $1 : ($0 > 0))", doc="no derivative (torch has none)")
binary("gcd", lambda xp, a, b: xp.gcd(a, b), rule="integral", kinds="iu")
binary("lcm", lambda xp, a, b: xp.lcm(a, b), rule="integral", kinds="iu")

# ---- comparisons, logical and bitwise (no derivative) ------------------------------------
for _name, _fn, _op in (("eq", "equal", "=="), ("ne", "not_equal", "!="), ("lt", "less", "<"),
                        ("le", "less_equal", "<="), ("gt", "greater", ">"),
                        ("ge", "greater_equal", ">=")):
    binary(_name, lambda xp, a, b, _f=_fn: getattr(xp, _f)(a, b), f"($0 {_op} $1)",
           c_int=f"($0 {_op} $1)", rule="compare",
           kinds="biufc" if _name in ("eq", "ne") else "biuf")
binary("logical_and", lambda xp, a, b: xp.logical_and(a, b), "(($0 != 0) && ($1 != 0))",
       c_int="(($0 != 0) && ($1 != 0))", rule="compare", kinds="biufc")
binary("logical_or", lambda xp, a, b: xp.logical_or(a, b), "(($0 != 0) || ($1 != 0))",
       c_int="(($0 != 0) || ($1 != 0))", rule="compare", kinds="biufc")
binary("logical_xor", lambda xp, a, b: xp.logical_xor(a, b), "(($0 != 0) != ($1 != 0))",
       c_int="(($0 != 0) != ($1 != 0))", rule="compare", kinds="biufc")
binary("bitwise_and", lambda xp, a, b: xp.bitwise_and(a, b), rule="integral", kinds="biu",
       c_int="($0 & $1)")
binary("bitwise_or", lambda xp, a, b: xp.bitwise_or(a, b), rule="integral", kinds="biu",
       c_int="($0 | $1)")
binary("bitwise_xor", lambda xp, a, b: xp.bitwise_xor(a, b), rule="integral", kinds="biu",
       c_int="($0 ^ $1)")
# no C form: C leaves shifts by the width or more undefined, torch defines them
binary("bitwise_left_shift", lambda xp, a, b: xp.left_shift(a, b), rule="integral", kinds="iu")
binary("bitwise_right_shift", lambda xp, a, b: xp.right_shift(a, b), rule="integral",
       kinds="iu")


# ---- ternary -----------------------------------------------------------------------------
def _where(xp, cond, a, b):
    return xp.where(cond, a, b)


binary("where", _where, "($0 ? $1 : $2)", c_int="($0 ? $1 : $2)", kinds="biufc", arity=3,
       d=(None, lambda g, c, a, b, out: g.where(c, 0),
          lambda g, c, a, b, out: g.where(~c, 0)),
       doc="promotes its last two operands; the condition is bool")


def _clamp_d(i):
    def d(g, x, lo, hi, out):
        if i == 0:
            m = (x >= lo) & (x <= hi)
        elif i == 1:  # with min > max the result is max: the gradient goes to max only
            m = (x < lo) & (lo < hi)
        else:
            m = (x > hi) | (hi < lo)
        return g.where(m, 0)
    return d


binary("clamp", lambda xp, x, lo, hi: xp.minimum(xp.maximum(x, lo), hi), "$min($max($0, $1), $2)",
       c_int="(($0 < $1 ? $1 : $0) > $2 ? $2 : ($0 < $1 ? $1 : $0))", kinds="iuf", arity=3,
       d=(_clamp_d(0), _clamp_d(1), _clamp_d(2)), doc="both bounds given; NaN propagates")


def _lerp(xp, a, b, w):
    # torch's two-sided form: exact at w == 0 and at w == 1
    return xp.where(xp.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))


binary("lerp", _lerp, "sf_lerp_$S($0, $1, $2)", arity=3,
       d=(lambda g, a, b, w, out: g * cj(1 - w), lambda g, a, b, w, out: g * cj(w),
          lambda g, a, b, w, out: g * cj(b - a)), c_helper="""
static inline $T sf_lerp_$S($T a, $T b, $T w) {
    return $fabs(w) < ($T)0.5 ? a + w * (b - a) : b - (b - a) * (($T)1 - w);
}""")
