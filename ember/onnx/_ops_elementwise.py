"""ONNX lowerings of the elementwise primitives (and the few elementwise composites that
have one ONNX operator, such as ``relu``).

Operands are converted to the op's computation dtype first: torch promotes (``int + float``
is float, a Python scalar is weak) where ONNX requires equal input types, so the promoted
dtype is taken from ember's own metadata -- the output dtype, or for a comparison the
promotion of its inputs -- and every operand is cast to it.  The scalar functions with no
ONNX form (lgamma, the Bessel functions, ...) have no entry: exporting them fails with
`UnsupportedOperatorError` naming the op.
"""
import math

from .._core import dtype as _dt
from .._core import meta as _meta
from .._core.meta import TensorMeta
from ._builder import Value
from ._registry import lowers

__all__ = []


def _meta_of(a):
    return TensorMeta(a.shape, a.dtype) if isinstance(a, Value) else a


def _is_float(d):
    return d.is_floating_point


def operand(b, a, dtype):
    """``a`` (a Value, a Python number or a symbolic size) as a name of ``dtype``."""
    if isinstance(a, Value):
        return b.cast(a, dtype)
    if isinstance(a, int) and not isinstance(a, bool) and not b.is_static(a):
        return b.cast(b.size0(a), dtype, _dt.int64)
    return b.scalar(a, dtype)


def _operands(b, args, dtype):
    return [operand(b, a, dtype) for a in args]


# ---- unary ----------------------------------------------------------------------------------

_DIRECT_FLOAT = {"exp": "Exp", "log": "Log", "sqrt": "Sqrt", "sin": "Sin", "cos": "Cos",
                 "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh",
                 "cosh": "Cosh", "tanh": "Tanh", "asinh": "Asinh", "acosh": "Acosh",
                 "atanh": "Atanh", "sigmoid": "Sigmoid", "erf": "Erf"}


@lowers(*_DIRECT_FLOAT)
def _float_unary(b, ctx, x):
    return b.op(_DIRECT_FLOAT[ctx.name], [operand(b, x, ctx.out.dtype)])


@lowers("abs", "neg", "sign")
def _same_type_unary(b, ctx, x):
    return b.op({"abs": "Abs", "neg": "Neg", "sign": "Sign"}[ctx.name],
                [operand(b, x, ctx.out.dtype)])


@lowers("floor", "ceil", "trunc", "round")
def _rounding(b, ctx, x, decimals=0):
    dt = ctx.out.dtype
    v = operand(b, x, dt)
    if not _is_float(dt):
        return b.op("Identity", [v])  # integers are already whole
    if ctx.name == "trunc":
        neg = b.op("Less", [v, b.scalar(0, dt)])
        return b.op("Where", [neg, b.op("Ceil", [v]), b.op("Floor", [v])])
    if ctx.name == "round" and decimals:
        scale = b.scalar(10.0 ** decimals, dt)
        return b.op("Div", [b.op("Round", [b.op("Mul", [v, scale])]), scale])
    return b.op({"floor": "Floor", "ceil": "Ceil", "round": "Round"}[ctx.name], [v])


@lowers("exp2", "expm1", "log2", "log10", "log1p", "erfc")
def _float_formula(b, ctx, x):
    dt = ctx.out.dtype
    v = operand(b, x, dt)
    one = b.scalar(1, dt)
    if ctx.name == "exp2":
        return b.op("Pow", [b.scalar(2, dt), v])
    if ctx.name == "expm1":
        return b.op("Sub", [b.op("Exp", [v]), one])
    if ctx.name == "log1p":
        return b.op("Log", [b.op("Add", [v, one])])
    if ctx.name == "erfc":
        return b.op("Sub", [one, b.op("Erf", [v])])
    base = 2.0 if ctx.name == "log2" else 10.0
    return b.op("Div", [b.op("Log", [v]), b.scalar(math.log(base), dt)])


@lowers("isnan")
def _isnan(b, ctx, x):
    if _is_float(x.dtype):
        return b.op("IsNaN", [x])
    return b.op("Not", [b.op("Equal", [x, x])])  # integers are never NaN


def _signbit(b, v, dt):
    zero = b.scalar(0, dt)
    neg = b.op("Less", [v, zero])
    if not _is_float(dt):
        return neg
    # -0.0 has its sign bit set: 1 / -0.0 is -inf
    neg_zero = b.op("And", [b.op("Equal", [v, zero]),
                            b.op("Less", [b.op("Div", [b.scalar(1, dt), v]), zero])])
    return b.op("Or", [neg, neg_zero])


@lowers("signbit")
def _signbit_lowering(b, ctx, x):
    return _signbit(b, x.name, x.dtype)


@lowers("logical_not")
def _logical_not(b, ctx, x):
    return b.op("Not", [operand(b, x, _dt.bool)])


@lowers("bitwise_not")
def _bitwise_not(b, ctx, x):
    if x.dtype == _dt.bool:
        return b.op("Not", [x])
    return b.op("BitwiseNot", [x])


@lowers("relu")
def _relu(b, ctx, x, **params):
    return b.op("Relu", [operand(b, x, ctx.out.dtype)])


# ---- binary ---------------------------------------------------------------------------------

@lowers("add", "sub")
def _add_sub(b, ctx, x, y, alpha=1):
    dt = ctx.out.dtype
    a, c = _operands(b, (x, y), dt)
    if alpha != 1:
        c = b.op("Mul", [c, operand(b, alpha, dt)])
    if dt == _dt.bool:  # torch's bool add is logical or
        return b.op("Or", [a, c])
    return b.op("Add" if ctx.name == "add" else "Sub", [a, c])


@lowers("mul", "div", "pow", "maximum", "minimum")
def _arith(b, ctx, x, y, **params):
    dt = ctx.out.dtype
    a, c = _operands(b, (x, y), dt)
    if ctx.name == "mul" and dt == _dt.bool:
        return b.op("And", [a, c])
    kind = {"mul": "Mul", "div": "Div", "pow": "Pow", "maximum": "Max", "minimum": "Min"}
    return b.op(kind[ctx.name], [a, c])


@lowers("fmod", "remainder", "floor_divide", "trunc_divide")
def _integer_division(b, ctx, x, y):
    dt = ctx.out.dtype
    a, c = _operands(b, (x, y), dt)
    if ctx.name == "fmod":  # C's fmod: the sign of the dividend, for floats and integers
        return b.op("Mod", [a, c], fmod=1)
    if not _is_float(dt):
        if ctx.name == "remainder":  # Python's %: the sign of the divisor
            return b.op("Mod", [a, c], fmod=0)
        if ctx.name == "trunc_divide":
            return b.op("Div", [a, c])  # integer Div truncates
        return b.op("Div", [b.op("Sub", [a, b.op("Mod", [a, c], fmod=0)]), c])
    q = b.op("Div", [a, c])
    if ctx.name == "trunc_divide":
        return b.op("Where", [b.op("Less", [q, b.scalar(0, dt)]), b.op("Ceil", [q]),
                              b.op("Floor", [q])])
    fq = b.op("Floor", [q])
    if ctx.name == "floor_divide":
        return fq
    return b.op("Sub", [a, b.op("Mul", [fq, c])])


@lowers("atan2")
def _atan2(b, ctx, y, x):
    dt = ctx.out.dtype
    yv, xv = _operands(b, (y, x), dt)
    zero, pi = b.scalar(0, dt), b.scalar(math.pi, dt)
    base = b.op("Atan", [b.op("Div", [yv, xv])])
    # x < 0: shift by +-pi toward y's side; x == 0: +-pi/2 by y's sign (0 when y == 0)
    shift = b.op("Where", [b.op("Less", [yv, zero]), b.op("Neg", [pi]), pi])
    left = b.op("Add", [base, shift])
    on_axis = b.op("Mul", [b.op("Sign", [yv]), b.scalar(math.pi / 2, dt)])
    at_zero = b.op("Equal", [xv, zero])
    res = b.op("Where", [b.op("Less", [xv, zero]), left, base])
    return b.op("Where", [at_zero, on_axis, res])


@lowers("hypot")
def _hypot(b, ctx, x, y):
    a, c = _operands(b, (x, y), ctx.out.dtype)
    return b.op("Sqrt", [b.op("Add", [b.op("Mul", [a, a]), b.op("Mul", [c, c])])])


@lowers("copysign")
def _copysign(b, ctx, x, y):
    dt = ctx.out.dtype
    a, c = _operands(b, (x, y), dt)
    mag = b.op("Abs", [a])
    return b.op("Where", [_signbit(b, c, dt), b.op("Neg", [mag]), mag])


_COMPARE = {"eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
            "ge": "GreaterOrEqual"}


@lowers("eq", "ne", "lt", "le", "gt", "ge")
def _compare(b, ctx, x, y):
    dt = _meta.promote(_meta_of(x), _meta_of(y))
    a, c = _operands(b, (x, y), dt)
    if ctx.name == "ne":
        return b.op("Not", [b.op("Equal", [a, c])])
    return b.op(_COMPARE[ctx.name], [a, c])


@lowers("logical_and", "logical_or", "logical_xor")
def _logical(b, ctx, x, y):
    a, c = _operands(b, (x, y), _dt.bool)
    return b.op({"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}[ctx.name],
                [a, c])


@lowers("bitwise_and", "bitwise_or", "bitwise_xor")
def _bitwise(b, ctx, x, y):
    dt = ctx.out.dtype
    a, c = _operands(b, (x, y), dt)
    kind = ctx.name.split("_")[1]
    if dt == _dt.bool:
        return b.op(kind.capitalize(), [a, c])
    return b.op("Bitwise" + kind.capitalize(), [a, c])


@lowers("bitwise_left_shift", "bitwise_right_shift")
def _shift(b, ctx, x, y):
    # ONNX's BitShift takes unsigned types only: a shift is a multiply or a floor division by
    # a power of two (the arithmetic shift torch does on signed integers)
    dt = ctx.out.dtype
    a, c = _operands(b, (x, y), dt)
    p = b.op("Pow", [b.scalar(2, dt), c])
    if ctx.name == "bitwise_left_shift":
        return b.op("Mul", [a, p])
    return b.op("Div", [b.op("Sub", [a, b.op("Mod", [a, p], fmod=0)]), p])


@lowers("where")
def _where(b, ctx, cond, x, y):
    dt = ctx.out.dtype
    a, c = _operands(b, (x, y), dt)
    return b.op("Where", [operand(b, cond, _dt.bool), a, c])
