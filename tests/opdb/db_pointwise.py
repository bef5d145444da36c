"""Pointwise operators: unary math, binary arithmetic, comparisons, ternaries.

Every operator gets its function form over every dtype (torch rejecting a dtype
means ember must reject it too), and most get an in-place (``x.clone().op_()``)
and an ``out=`` variant.  Input domains keep the values away from poles and
branch cuts so that gradients are comparable.
"""
import math
import operator

import numpy as np

from .core import (ALL_NUMERIC, COMPLEX, FLOATS, INTS, OpInfo, SampleInput, make, np_dtype)

ALL = ALL_NUMERIC + COMPLEX
NUM_NO_BOOL = INTS + ("float16", "bfloat16") + FLOATS
REAL = ALL_NUMERIC
FLOAT_ONLY = ("float16", "bfloat16") + FLOATS


def _bounds(dtype, low, high):
    if np_dtype(dtype).kind in "iu":
        lo = None if low is None else int(math.ceil(low))
        hi = None if high is None else max(int(math.floor(high)), (lo or 0) + 1)
        return lo, hi
    return low, high


def mk(shape, dtype, rng, low=None, high=None, **kw):
    lo, hi = _bounds(dtype, low, high)
    return make(shape, dtype, rng, low=lo, high=hi, **kw)


def unary(low=None, high=None, exclude_zero=False, special=()):
    """Elementwise unary samples: 0-dim, 1-D, 2-D, non-contiguous, empty, special values."""
    def gen(dtype, rng):
        kw = dict(low=low, high=high, exclude_zero=exclude_zero)
        yield SampleInput((mk((), dtype, rng, **kw),), name="0d")
        yield SampleInput((mk((5,), dtype, rng, **kw),), name="1d")
        yield SampleInput((mk((3, 4), dtype, rng, **kw),), name="2d")
        yield SampleInput((mk((2, 3, 4), dtype, rng, noncontig=True, **kw),), name="noncontig")
        yield SampleInput((mk((0, 3), dtype, rng, **kw),), name="empty")
        if special and np_dtype(dtype).kind in "fV":
            yield SampleInput((np.array(special, dtype=np.float64).astype(np_dtype(dtype)),),
                              name="special")
    return gen


def binary(low=None, high=None, rlow=None, rhigh=None, rhs_exclude_zero=False,
           scalars=(2.5, 3, -2, True), kwargs=None):
    """Elementwise binary samples: broadcasting both ways, 0-dim, scalars, non-contiguous."""
    rlow = low if rlow is None else rlow
    rhigh = high if rhigh is None else rhigh
    kw = kwargs or {}

    def gen(dtype, rng):
        a = dict(low=low, high=high)
        b = dict(low=rlow, high=rhigh, exclude_zero=rhs_exclude_zero)

        def s(args, name):
            return SampleInput(args, dict(kw), name=name)
        yield s((mk((4,), dtype, rng, **a), mk((4,), dtype, rng, **b)), "same")
        yield s((mk((3, 1), dtype, rng, **a), mk((1, 4), dtype, rng, **b)), "broadcast")
        yield s((mk((4,), dtype, rng, **a), mk((2, 3, 4), dtype, rng, **b)), "broadcast-lhs")
        yield s((mk((2, 3), dtype, rng, **a), mk((), dtype, rng, **b)), "0d-rhs")
        yield s((mk((), dtype, rng, **a), mk((2, 3), dtype, rng, **b)), "0d-lhs")
        yield s((mk((2, 3), dtype, rng, noncontig=True, **a),
                 mk((2, 3), dtype, rng, noncontig=True, **b)), "noncontig")
        yield s((mk((0, 3), dtype, rng, **a), mk((3,), dtype, rng, **b)), "empty")
        for sc in scalars:
            if rhs_exclude_zero and sc == 0:
                continue
            if rlow is not None and not isinstance(sc, bool) and sc < rlow:
                continue
            yield s((mk((2, 3), dtype, rng, **a), sc), f"scalar-{sc!r}")
    return gen


def mixed_dtypes(fn_samples=None):
    """Pairs of different dtypes (promotion), used by the '_promote' entries."""
    pairs = [("int64", "float32"), ("uint8", "int8"), ("bool", "int32"), ("float16", "bfloat16"),
             ("int32", "float64"), ("float32", "float64"), ("int16", "float16"),
             ("float32", "complex64"), ("float64", "complex64")]

    def gen(dtype, rng):
        for da, db in pairs:
            yield SampleInput((make((2, 3), da, rng, low=1, high=4),
                               make((3,), db, rng, low=1, high=4)), name=f"{da}-{db}")
            yield SampleInput((make((2, 3), da, rng, low=1, high=4),
                               make((), db, rng, low=1, high=4)), name=f"{da}-0d{db}")
    return gen


# ---- helpers that build entries -------------------------------------------------------------

def _inplace(name):
    def fn(lib, x, *args, **kw):
        return getattr(x.clone(), name + "_")(*args, **kw)
    return fn


def _out(name):
    def fn(lib, x, *args, **kw):
        out = lib.empty(0, dtype=x.dtype)
        r = getattr(lib, name)(x, *args, out=out, **kw)
        assert r is out
        return out
    return fn


def variants(name, samples, dtypes, *, inplace=True, out=True, method=True, grad=True,
             inplace_grad=True, **kw):
    """The function entry plus method, in-place and out= entries for one operator."""
    ents = [OpInfo(name, samples=samples, dtypes=dtypes, grad=grad, **kw)]
    small = tuple(d for d in dtypes if d in ("bool", "int64", "float32", "float64",
                                             "complex128", "uint8", "float16"))
    kw.pop("gradcheck", None)
    if method:
        ents.append(OpInfo(name + "_method", fn="Tensor." + name, samples=samples, dtypes=small,
                           grad=False, **kw))
    if inplace:
        ents.append(OpInfo(name + "_inplace", fn=_inplace(name), samples=samples, dtypes=small,
                           grad=grad and inplace_grad, gradcheck=False, **kw))
    if out:
        ents.append(OpInfo(name + "_out", fn=_out(name), samples=samples, dtypes=small,
                           grad=False, **kw))
    return ents


OPS = []


def add(*ents):
    for e in ents:
        OPS.extend(e if isinstance(e, list) else [e])


# ---- unary math ----------------------------------------------------------------------------
# (name, low, high, dtypes, extra OpInfo kwargs)
_SPECIAL = (0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), 1e-30, 1e30)
_UNARY = [
    ("abs", -3, 3, ALL, dict(special=_SPECIAL)),
    ("neg", -3, 3, ALL, dict(special=_SPECIAL)),
    ("sign", -3, 3, ALL, dict(special=_SPECIAL)),
    # torch's real sgn gradient is a ZeroTensor the harness can't read: sgn_complex has grads
    ("sgn", -3, 3, ALL, dict(special=_SPECIAL, grad=False)),
    ("reciprocal", 0.5, 3, ALL, dict(special=_SPECIAL)),
    ("sqrt", 0.5, 3, ALL, dict(special=_SPECIAL)),
    ("rsqrt", 0.5, 3, ALL, dict(special=_SPECIAL)),
    ("exp", -3, 3, ALL, dict(special=_SPECIAL)),
    ("exp2", -3, 3, ALL, dict(special=_SPECIAL)),
    ("expm1", -3, 3, ALL, dict(special=_SPECIAL)),
    ("log", 0.5, 3, ALL, dict(special=_SPECIAL)),
    ("log2", 0.5, 3, ALL, dict(special=_SPECIAL)),
    ("log10", 0.5, 3, ALL, dict(special=_SPECIAL)),
    ("log1p", 0.5, 3, ALL, dict(special=_SPECIAL)),
    ("sin", -3, 3, ALL, {}),
    ("cos", -3, 3, ALL, {}),
    ("tan", -1.2, 1.2, ALL, {}),
    ("asin", -0.9, 0.9, ALL, dict(special=(1.0, -1.0, 2.0, float("nan")))),
    ("acos", -0.9, 0.9, ALL, dict(special=(1.0, -1.0, 2.0, float("nan")))),
    ("atan", -3, 3, ALL, dict(special=_SPECIAL)),
    ("sinh", -3, 3, ALL, {}),
    ("cosh", -3, 3, ALL, {}),
    ("tanh", -3, 3, ALL, dict(special=_SPECIAL)),
    # torch has no derivative for in-place asinh_/acosh_/atanh_
    ("asinh", -3, 3, ALL, dict(inplace_grad=False)),
    ("acosh", 1.2, 4, ALL, dict(special=(1.0, 0.5, float("inf")), inplace_grad=False)),
    ("atanh", -0.9, 0.9, ALL, dict(special=(1.0, -1.0, 2.0), inplace_grad=False)),
    ("sigmoid", -3, 3, ALL, dict(special=_SPECIAL)),
    ("erf", -2, 2, REAL, dict(special=_SPECIAL)),
    ("erfc", -2, 2, REAL, dict(special=_SPECIAL)),
    ("erfinv", -0.9, 0.9, REAL, dict(special=(1.0, -1.0, 0.0, 2.0))),
    ("lgamma", 0.5, 4, REAL, dict(special=(1.0, 2.0, 0.0, -1.0, float("inf")))),
    ("digamma", 0.5, 4, REAL, dict(special=(1.0, 2.0, -2.5, 1e-8))),
    ("floor", -3, 3, ALL, dict(special=_SPECIAL)),
    ("ceil", -3, 3, ALL, dict(special=_SPECIAL)),
    ("trunc", -3, 3, ALL, dict(special=_SPECIAL)),
    ("frac", -3, 3, ALL, dict(special=_SPECIAL)),
    ("round", -3, 3, ALL, dict(special=(0.5, 1.5, 2.5, -0.5, -2.5, float("nan")))),
]
for _n, _lo, _hi, _dts, _kw in _UNARY:
    _sp = _kw.pop("special", ())
    add(variants(_n, unary(_lo, _hi, special=_sp), _dts, atol=1e-5, rtol=2e-6, **_kw))

add(OpInfo("negative", samples=unary(), dtypes=("int64", "float32")),
    OpInfo("signbit_nan", fn="signbit", samples=unary(special=(0.0, -0.0, float("inf"))),
           dtypes=REAL),
    OpInfo("absolute", samples=unary(), dtypes=("int64", "float32")),
    OpInfo("arcsin", samples=unary(-0.9, 0.9), dtypes=("float32",)),
    OpInfo("arctanh_inplace", fn=_inplace("arctanh"), samples=unary(-0.9, 0.9),
           dtypes=("float32",), grad=False),
    OpInfo("sgn_complex", fn="sgn", samples=unary(exclude_zero=True), dtypes=COMPLEX),
    OpInfo("digamma_poles", fn="digamma", samples=unary(special=(0.0, -0.0, -1.0, -2.0)),
           dtypes=FLOATS + ("int64",), grad=False),
    OpInfo("fix", samples=unary(), dtypes=("float32", "int64"), grad=False),
    )

add(variants("logit", unary(0.05, 0.95, special=(0.0, 1.0, -1.0, 0.5)), REAL),
    OpInfo("logit_eps", fn=lambda lib, x: lib.logit(x, eps=0.2), samples=unary(0.05, 0.95),
           dtypes=FLOAT_ONLY + ("int64",)),
    OpInfo("logit_eps_inplace", fn=lambda lib, x: x.clone().logit_(0.2),
           samples=unary(0.05, 0.95), dtypes=FLOATS),
    OpInfo("round_decimals", fn=lambda lib, x: lib.round(x, decimals=2),
           samples=unary(-30, 30), dtypes=NUM_NO_BOOL, grad=False),
    OpInfo("round_decimals_neg", fn=lambda lib, x: x.round(decimals=-1),
           samples=unary(-300, 300), dtypes=FLOATS + INTS, grad=False),
    OpInfo("round_decimals_inplace", fn=lambda lib, x: x.clone().round_(decimals=1),
           samples=unary(-30, 30), dtypes=FLOATS, grad=False))


def _polygamma(n):
    return OpInfo(f"polygamma_{n}", fn=lambda lib, x: lib.polygamma(n, x),
                  samples=unary(0.5, 4), dtypes=REAL, atol=1e-4, rtol=1e-5)


add(_polygamma(0), _polygamma(1), _polygamma(3),
    OpInfo("polygamma_method", fn=lambda lib, x: x.polygamma(2), samples=unary(0.5, 4),
           dtypes=FLOATS),
    OpInfo("polygamma_inplace", fn=lambda lib, x: x.clone().polygamma_(1), samples=unary(0.5, 4),
           dtypes=FLOATS + ("int64",)))


def _nan_samples(dtype, rng):
    base = [0.5, float("nan"), float("inf"), float("-inf"), -2.0, 0.0]
    dt = np_dtype(dtype)
    if dt.kind in "fV":
        yield SampleInput((np.array(base).astype(dt),), name="specials")
        yield SampleInput((np.array(base).astype(dt),), dict(nan=1.0, posinf=9.0, neginf=-9.0),
                          name="values")
        yield SampleInput((np.array(base).astype(dt),), dict(posinf=3.0), name="posinf")
    elif dt.kind == "c":
        yield SampleInput((np.array([complex(float("nan"), 1), complex(1, float("inf"))],
                                    dtype=dt),), name="complex")
    yield SampleInput((make((3, 4), dtype, rng),), name="plain")


add(variants("nan_to_num", _nan_samples, ALL, method=True))
add(OpInfo("nan_to_num_kw_inplace", fn=lambda lib, x: x.clone().nan_to_num_(nan=2.0, posinf=1.0),
           samples=_nan_samples, dtypes=FLOATS))

# ---- clamp ---------------------------------------------------------------------------------


def _clamp_samples(dtype, rng):
    kind = np_dtype(dtype).kind
    f = kind not in "biu"
    lo, hi = (-1.5, 1.5) if f else (-2, 2)
    yield SampleInput((make((3, 4), dtype, rng),), dict(min=lo, max=hi), name="both")
    yield SampleInput((make((3, 4), dtype, rng),), dict(min=lo), name="min")
    yield SampleInput((make((3, 4), dtype, rng),), dict(max=hi), name="max")
    yield SampleInput((make((3, 4), dtype, rng),), dict(min=hi, max=lo), name="min>max")
    yield SampleInput((make((3, 4), dtype, rng), make((4,), dtype, rng),
                       make((3, 1), dtype, rng)), name="tensors")
    yield SampleInput((make((3, 4), dtype, rng), make((4,), dtype, rng)), name="tensor-min")
    yield SampleInput((make((3, 4), dtype, rng), None, make((), dtype, rng)), name="tensor-max")
    yield SampleInput((make((0, 4), dtype, rng),), dict(min=lo), name="empty")
    if f:
        yield SampleInput((np.array([np.nan, 1.0, -5.0, 5.0]).astype(np_dtype(dtype)),),
                          dict(min=-1.0, max=1.0), name="nan")
    yield SampleInput((make((3, 4), dtype, rng),), dict(min=1), name="int-bound")


add(variants("clamp", _clamp_samples, ALL),
    OpInfo("clip", samples=_clamp_samples, dtypes=("float32", "int64")),
    OpInfo("clamp_min", samples=lambda d, r: [SampleInput((make((3, 4), d, r), 0.5))],
           dtypes=FLOATS + ("int64",)),
    OpInfo("clamp_max", samples=lambda d, r: [SampleInput((make((3, 4), d, r), 0))],
           dtypes=FLOATS + ("int64",)),
    OpInfo("clamp_float_bound_int", fn=lambda lib, x: lib.clamp(x, min=0.5),
           samples=unary(), dtypes=INTS + ("bool",), grad=False),
    OpInfo("clamp_min_method_inplace", fn=lambda lib, x: x.clone().clamp_min_(0.2),
           samples=unary(), dtypes=FLOATS),
    OpInfo("clamp_max_method_inplace", fn=lambda lib, x: x.clone().clamp_max_(-0.2),
           samples=unary(), dtypes=FLOATS),
    OpInfo("clamp_none", fn=lambda lib, x: lib.clamp(x), samples=unary(), dtypes=("float32",),
           grad=False, errors=lambda rng: [(SampleInput((make((3,), "float32", rng),)),
                                            RuntimeError)]))

# ---- binary arithmetic ---------------------------------------------------------------------


def _err(*cases):
    """errors= from (dtype-a, value-or-dtype-b, exception, [fn kwargs])."""
    def gen(rng):
        for c in cases:
            a, b, exc = c[:3]
            kw = c[3] if len(c) > 3 else {}
            xa = make((3,), a, rng, low=1, high=4)
            xb = make((3,), b, rng, low=1, high=4) if isinstance(b, str) else b
            yield SampleInput((xa, xb), kw), exc
    return gen


_B = dict(atol=1e-5, rtol=2e-6)
add(variants("add", binary(), ALL, **_B),
    variants("sub", binary(), ALL, errors=_err(("bool", "bool", RuntimeError)), **_B),
    variants("mul", binary(), ALL, **_B),
    variants("div", binary(rhs_exclude_zero=True, rlow=0.5, scalars=(2.5, 3, True)), ALL,
             **_B),
    variants("floor_divide", binary(rlow=0.5, rhs_exclude_zero=True, scalars=(2.5, 3)),
             NUM_NO_BOOL + ("bool",), grad=False),
    variants("remainder", binary(rlow=0.5, rhs_exclude_zero=True, scalars=(2.5, 3)),
             NUM_NO_BOOL + ("bool",)),
    variants("fmod", binary(rlow=0.5, rhs_exclude_zero=True, scalars=(2.5, 3)),
             NUM_NO_BOOL + ("bool",)),
    variants("atan2", binary(rlow=0.5), REAL + COMPLEX, **_B),
    variants("hypot", binary(), REAL + COMPLEX, **_B),
    variants("copysign", binary(low=0.2, high=3, rlow=-3, rhigh=3), REAL + COMPLEX, **_B),
    variants("xlogy", binary(low=0, high=3, rlow=0.5, rhigh=3), REAL + COMPLEX, **_B),
    variants("maximum", binary(), ALL, inplace=False, **_B),
    variants("minimum", binary(), ALL, inplace=False, **_B),
    variants("fmax", binary(), ALL, inplace=False, **_B),
    variants("fmin", binary(), ALL, inplace=False, **_B),
    OpInfo("subtract", samples=binary(), dtypes=("float32", "int64")),
    OpInfo("multiply", samples=binary(), dtypes=("float32", "int64")),
    OpInfo("divide", samples=binary(rlow=0.5), dtypes=("float32", "int64")),
    OpInfo("true_divide", samples=binary(rlow=0.5), dtypes=("float32", "int64", "bool")),
    OpInfo("arctan2", samples=binary(), dtypes=("float32",)))


def _alpha(name, alpha):
    def fn(lib, a, b):
        return getattr(lib, name)(a, b, alpha=alpha)
    return fn


add(OpInfo("add_alpha", fn=_alpha("add", 2), samples=binary(), dtypes=ALL),
    OpInfo("add_alpha_float", fn=_alpha("add", 0.5), samples=binary(), dtypes=ALL),
    OpInfo("sub_alpha", fn=_alpha("sub", 3), samples=binary(), dtypes=ALL),
    OpInfo("add_alpha_method_inplace", fn=lambda lib, a, b: a.clone().add_(b, alpha=-2),
           samples=binary(), dtypes=FLOATS + ("int64",)),
    OpInfo("sub_alpha_method", fn=lambda lib, a, b: a.sub(b, alpha=2), samples=binary(),
           dtypes=FLOATS + ("int64",)),
    OpInfo("add_alpha_out", fn=lambda lib, a, b: lib.add(a, b, alpha=2, out=lib.empty(
        0, dtype=a.dtype)), samples=binary(), dtypes=FLOATS + ("int64",), grad=False),
    OpInfo("add_alpha_errors", fn=lambda lib, a, b, alpha=1: lib.add(a, b, alpha=alpha), samples=binary(), dtypes=("int64",),
           grad=False, errors=lambda rng: [
               (SampleInput((make((3,), "int64", rng), make((3,), "int64", rng)),
                            dict(alpha=1.5)), RuntimeError),
               (SampleInput((make((3,), "bool", rng), make((3,), "bool", rng)),
                            dict(alpha=2.0)), RuntimeError)]))


def _div_mode(mode, inplace=False):
    def fn(lib, a, b):
        if inplace:
            return a.clone().div_(b, rounding_mode=mode)
        return lib.div(a, b, rounding_mode=mode)
    return fn


_DIVS = binary(low=-9, high=9, rlow=-4, rhigh=4, rhs_exclude_zero=True, scalars=(2.5, 3, -2))
for _mode in ("trunc", "floor"):
    add(OpInfo(f"div_{_mode}", fn=_div_mode(_mode), samples=_DIVS, dtypes=REAL, grad=False),
        OpInfo(f"div_{_mode}_inplace", fn=_div_mode(_mode, True), samples=_DIVS,
               dtypes=FLOATS + INTS, grad=False))
add(OpInfo("div_bad_mode", fn=_div_mode("bogus"), samples=_DIVS, dtypes=("float32",),
           grad=False),
    OpInfo("int_div_zero", fn=lambda lib, a, b: a // b, samples=binary(), dtypes=("int64",),
           grad=False, errors=lambda rng: [
               (SampleInput((make((3,), "int64", rng), np.zeros(3, np.int64))), RuntimeError),
               (SampleInput((make((3,), "int32", rng), 0)), RuntimeError)]),
    OpInfo("remainder_signs", fn=lambda lib, a, b: (lib.remainder(a, b), lib.fmod(a, b)),
           samples=_DIVS, dtypes=FLOATS + INTS, grad=False),
    OpInfo("remainder_scalar_self", fn=lambda lib, b: lib.remainder(7, b),
           samples=unary(0.5, 4, exclude_zero=True), dtypes=FLOATS + ("int64",), grad=False))


def _pow_samples(dtype, rng):
    kind = np_dtype(dtype).kind
    yield from binary(low=0.5, high=2, rlow=-2, rhigh=3, scalars=(2, 3, 0.5, -1, 0, True))(
        dtype, rng)
    if kind in "iu":
        yield SampleInput((make((4,), dtype, rng, low=0, high=4),
                           make((4,), dtype, rng, low=0, high=3)), name="int-nonneg")
    if kind in "fV":
        yield SampleInput((np.array([-2.0, -0.5, 0.0, 2.0]).astype(np_dtype(dtype)), 0.5),
                          name="neg-base-frac-exp")
        yield SampleInput((np.array([0.0, 0.0, 1.5]).astype(np_dtype(dtype)),
                           np.array([0.0, 2.0, 0.0]).astype(np_dtype(dtype))), name="zeros")


add(variants("pow", _pow_samples, ALL, atol=1e-5, rtol=1e-5),
    OpInfo("pow_scalar_base", fn=lambda lib, x: lib.pow(2, x), samples=unary(-2, 3),
           dtypes=ALL),
    OpInfo("pow_scalar_base_float", fn=lambda lib, x: lib.pow(1.5, x), samples=unary(-2, 3),
           dtypes=ALL),
    OpInfo("pow_errors", fn=lambda lib, a, b: lib.pow(a, b), samples=_pow_samples,
           dtypes=("int64",), grad=False, errors=lambda rng: [
               (SampleInput((make((3,), "int64", rng), -1)), RuntimeError),
               (SampleInput((make((3,), "int32", rng), -2)), RuntimeError),
               (SampleInput((make((3,), "uint8", rng), -1)), RuntimeError),
               (SampleInput((True, make((3,), "bool", rng))), NotImplementedError)]),
    OpInfo("pow_int_inplace_float_exp", fn=lambda lib, a: a.clone().pow_(0.5),
           samples=unary(1, 4), dtypes=("int64", "float32"), grad=False),
    variants("float_power", binary(low=0.5, high=2, rlow=-2, rhigh=3, scalars=(2, 0.5, -1)),
             ALL, inplace=True))


def _lerp_samples(dtype, rng):
    yield SampleInput((make((3, 4), dtype, rng), make((3, 4), dtype, rng), 0.3), name="scalar-w")
    yield SampleInput((make((3, 4), dtype, rng), make((4,), dtype, rng), 2), name="int-w")
    yield SampleInput((make((3, 4), dtype, rng), make((4,), dtype, rng),
                       make((3, 1), dtype, rng, low=0, high=1)), name="tensor-w")
    yield SampleInput((make((4,), dtype, rng), make((3, 4), dtype, rng),
                       make((), dtype, rng, low=0, high=1)), name="0d-w")
    yield SampleInput((make((0, 4), dtype, rng), make((4,), dtype, rng), 0.5), name="empty")


add(variants("lerp", _lerp_samples, ALL))


def _addc_samples(dtype, rng):
    kind = np_dtype(dtype).kind
    vals = (1, 2, -0.5) if kind not in "biu" else (1, 2)
    for v in vals:
        yield SampleInput((make((3, 4), dtype, rng), make((4,), dtype, rng),
                           make((3, 1), dtype, rng, low=1, high=3, exclude_zero=True)),
                          dict(value=v), name=f"value={v}")
    yield SampleInput((make((), dtype, rng), make((3, 4), dtype, rng),
                       make((3, 4), dtype, rng, low=1, high=3, exclude_zero=True)), name="0d")
    yield SampleInput((make((0, 4), dtype, rng), make((4,), dtype, rng),
                       make((4,), dtype, rng, low=1, high=3, exclude_zero=True)), name="empty")


add(variants("addcmul", _addc_samples, ALL), variants("addcdiv", _addc_samples, ALL))


def _quiet(fn, *args):
    """fn(*args) with warnings silenced (torch warns once per process, ember each time)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def _where_samples(dtype, rng):
    c = rng.random((3, 4)) > 0.5
    yield SampleInput((c, make((3, 4), dtype, rng), make((3, 4), dtype, rng)), name="same")
    yield SampleInput((c, make((4,), dtype, rng), make((3, 1), dtype, rng)), name="broadcast")
    yield SampleInput((c[0], make((3, 4), dtype, rng), make((), dtype, rng)), name="cond-bcast")
    yield SampleInput((c, make((3, 4), dtype, rng), 2), name="scalar-other")
    yield SampleInput((c, 1.5, make((3, 4), dtype, rng)), name="scalar-input")
    if np_dtype(dtype).kind != "c":  # torch's backward rejects real/complex mixes here
        yield SampleInput((c, make((3, 4), dtype, rng), make((3, 4), "float64", rng)),
                          name="promote")
    yield SampleInput((np.zeros((0, 4), bool), make((0, 4), dtype, rng), make((4,), dtype, rng)),
                      name="empty")


add(OpInfo("where", samples=_where_samples, dtypes=ALL,
           errors=lambda rng: [(SampleInput((make((3,), "float32", rng),
                                             make((3,), "float32", rng),
                                             make((3,), "float32", rng))), RuntimeError),
                               (SampleInput((make((3,), "bool", rng), make((3,), "float32", rng),
                                             make((4,), "float32", rng))), RuntimeError)]),
    OpInfo("where_method", fn=lambda lib, c, a, b: a.where(c, b), samples=_where_samples,
           dtypes=("float32", "int64"), grad=False),
    OpInfo("where_uint8_cond", fn=lambda lib, c, a, b: _quiet(lib.where, c.to(lib.uint8), a, b),
           samples=_where_samples, dtypes=("float32",), grad=False),
    OpInfo("where_cond_only", fn=lambda lib, x: lib.where(x > 0), samples=unary(),
           dtypes=("float32",), grad=False))

# ---- predicates, bitwise, logical, comparisons ---------------------------------------------
for _n in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal"):
    add(variants(_n, unary(special=_SPECIAL), ALL, inplace=False, out=_n in (
        "isposinf", "isneginf", "signbit"), grad=False))

_INT_LIKE = ("bool",) + INTS
_BITERR = _err(("float32", "float32", RuntimeError), ("int64", 1.5, RuntimeError),
               ("float64", "int64", RuntimeError))
for _n in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    add(variants(_n, binary(scalars=(3, True)), _INT_LIKE + ("float32",), grad=False,
                 errors=_BITERR))
for _n in ("bitwise_left_shift", "bitwise_right_shift"):
    add(variants(_n, binary(low=0, high=5, rlow=0, rhigh=4, scalars=(2,)),
                 INTS + ("float32",), grad=False, errors=_BITERR))
add(variants("bitwise_not", unary(), ALL, grad=False))
for _n in ("logical_and", "logical_or", "logical_xor"):
    add(variants(_n, binary(low=-1, high=2), ALL, grad=False))
add(variants("logical_not", unary(low=-1, high=2), ALL, grad=False))
for _n in ("eq", "ne", "lt", "le", "gt", "ge"):
    add(variants(_n, binary(low=-2, high=3, scalars=(1, 0.5, True)), ALL, grad=False))
add(OpInfo("greater_equal", samples=binary(), dtypes=("float32",), grad=False),
    OpInfo("not_equal", samples=binary(), dtypes=("int64",), grad=False),
    OpInfo("less", samples=binary(), dtypes=("int64",), grad=False))


def _close_samples(dtype, rng):
    a = make((3, 4), dtype, rng)
    yield SampleInput((a, a.copy()), name="equal")
    b = make((3, 4), dtype, rng)
    yield SampleInput((a, b), name="random")
    if np_dtype(dtype).kind in "fcV":
        c = (a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) * (1 + 1e-6)).astype(
            a.dtype)
        yield SampleInput((a, c), name="near")
        yield SampleInput((a, c), dict(rtol=0, atol=0), name="tight")
        n = np.array([np.nan, 1.0, np.inf, -np.inf]).astype(a.dtype)
        yield SampleInput((n, n.copy()), name="nan")
        yield SampleInput((n, n.copy()), dict(equal_nan=True), name="equal_nan")
    yield SampleInput((a, a[0].copy()), name="broadcast")


add(OpInfo("isclose", samples=_close_samples, dtypes=ALL, grad=False),
    OpInfo("allclose", samples=lambda d, r: [s for s in _close_samples(d, r)
                                             if s.name != "broadcast"], dtypes=ALL, grad=False),
    OpInfo("equal", samples=_close_samples, dtypes=ALL, grad=False),
    OpInfo("isclose_method", fn="Tensor.isclose", samples=_close_samples, dtypes=FLOATS,
           grad=False),
    OpInfo("isclose_mixed", fn=lambda lib, a, b: lib.isclose(a, b.double()),
           samples=_close_samples, dtypes=("float32",), grad=False),
    OpInfo("equal_mixed", fn=lambda lib, a, b: lib.equal(a, b.long()), samples=_close_samples,
           dtypes=("int32", "float32"), grad=False),
    OpInfo("equal_shape", fn=lambda lib, a, b: lib.equal(a, b[:1]), samples=_close_samples,
           dtypes=("float32",), grad=False))

# ---- Python operators ----------------------------------------------------------------------
_OPERATORS = {
    "op_add": lambda a, b: a + b, "op_sub": lambda a, b: a - b, "op_mul": lambda a, b: a * b,
    "op_truediv": lambda a, b: a / b, "op_floordiv": lambda a, b: a // b,
    "op_mod": lambda a, b: a % b, "op_pow": lambda a, b: a ** b,
    "op_and": lambda a, b: a & b, "op_or": lambda a, b: a | b, "op_xor": lambda a, b: a ^ b,
    "op_lshift": lambda a, b: a << b, "op_rshift": lambda a, b: a >> b,
    "op_eq": lambda a, b: a == b, "op_ne": lambda a, b: a != b, "op_lt": lambda a, b: a < b,
    "op_le": lambda a, b: a <= b, "op_gt": lambda a, b: a > b, "op_ge": lambda a, b: a >= b,
}
_IOPERATORS = {
    "op_add": operator.iadd, "op_sub": operator.isub, "op_mul": operator.imul,
    "op_truediv": operator.itruediv, "op_floordiv": operator.ifloordiv,
    "op_mod": operator.imod, "op_pow": operator.ipow, "op_and": operator.iand,
    "op_or": operator.ior, "op_xor": operator.ixor, "op_lshift": operator.ilshift,
    "op_rshift": operator.irshift,
}


def _iop(f):
    def fn(lib, a, b):
        a = a.clone()
        r = f(a, b)
        assert r is a
        return r
    return fn


_OP_SAMPLES = binary(low=0.5, high=4, rlow=1, rhigh=3, scalars=(2, 1.5, True))
for _n, _f in _OPERATORS.items():
    add(OpInfo(_n, fn=(lambda f: lambda lib, a, b: f(a, b))(_f), samples=_OP_SAMPLES,
               dtypes=ALL, grad=_n in ("op_add", "op_sub", "op_mul", "op_truediv", "op_pow")),
        OpInfo(_n + "_reflected", fn=(lambda f: lambda lib, a: (f(2, a), f(1.5, a), f(True, a)))(
            _f), samples=unary(1, 3), dtypes=ALL, grad=False))
    if _n in _IOPERATORS:
        add(OpInfo(_n + "_inplace", fn=_iop(_IOPERATORS[_n]), samples=_OP_SAMPLES,
                   dtypes=("bool", "int64", "uint8", "float32", "complex64"), grad=False))

add(OpInfo("op_neg", fn=lambda lib, a: -a, samples=unary(), dtypes=ALL),
    OpInfo("op_pos", fn=lambda lib, a: +a, samples=unary(), dtypes=ALL),
    OpInfo("op_invert", fn=lambda lib, a: ~a, samples=unary(), dtypes=ALL, grad=False),
    OpInfo("op_abs", fn=lambda lib, a: abs(a), samples=unary(), dtypes=ALL))

# ---- in-place dtype rules and promotion across dtypes --------------------------------------
_CASTERR = [("int64", 1.5, "add"), ("int32", "float32", "mul"), ("bool", 2, "add"),
            ("float32", "complex64", "sub"), ("int64", "int64", "div"), ("uint8", 0.5, "mul"),
            ("int16", 2.5, "pow"), ("float32", 1j, "add")]


def _inplace_cast_errors(rng):
    for a, b, op in _CASTERR:
        xa = make((3,), a, rng, low=1, high=4)
        xb = make((3,), b, rng, low=1, high=4) if isinstance(b, str) else b
        yield SampleInput((xa, xb), dict(op=op)), RuntimeError


add(OpInfo("inplace_cast", fn=lambda lib, a, b, op="add": getattr(a.clone(), op + "_")(b),
           samples=lambda d, r: [SampleInput((make((3,), d, r), make((3,), "int8", r))),
                                 SampleInput((make((3,), d, r), True))],
           dtypes=("int32", "float16", "float64"), grad=False, errors=_inplace_cast_errors))

for _n in ("add", "mul", "sub", "div", "maximum", "atan2", "eq", "pow", "remainder"):
    add(OpInfo(f"{_n}_promote", fn=_n, samples=mixed_dtypes(), dtypes=("float32",), grad=False,
               atol=1e-4, rtol=1e-4))


def _nextafter(dtype, rng):
    yield from binary()(dtype, rng)
    x = np.array([0.0, 1.0, -1.0, 1e30, np.inf, 0.0], dtype)
    yield SampleInput((x, np.array([1.0, 2.0, -2.0, np.inf, 0.0, -1.0], dtype)), name="edges")
    yield SampleInput((x, x), name="equal")


# nextafter steps by one representable value: exact equality, no derivative in torch
# torch's derivative: the identity for input except where it equals other (gradcheck's
# differences straddle that kink on the samples with equal arguments)
add(OpInfo("nextafter", samples=_nextafter, dtypes=FLOATS, gradcheck=False, atol=0, rtol=0))
