"""Elementwise operators: unary math, binary arithmetic, comparisons, ternaries.

Each block declares one Op (kernel + derivative in ember ops + shape rule) and
its public forms.  Derivatives follow PyTorch's conjugate-Wirtinger convention
(``cj`` conjugates complex operands and is a no-op for real ones).
"""
import math

import numpy as np

from ._helpers import _def_magic, _own_override, cpp_name
from ._helpers import (Op, Tensor, _E, apply, apply_binary, apply_inplace, apply_unary,
                       binary_kernel, cj,
                       def_binary,
                       def_unary, handle_override, NeedsOverride,
                       nary_kernel, overridable, promote_np, shape_broadcast, shape_same, special,
                       unary_float, unary_same, write_out)
from ._helpers import (_F32, _cast, broadcast_guard, check_castable, check_out_same,
                       check_tensor, dtype_kind, gated, not_implemented, type_name, jvp_elementwise, jvp_sum)
from .._core import ckernels as _ck
from .._core.number_args import number_arg
from .._core.ckernels import binary as _ckbin
from .._core.ckernels import ternary as _cktern
from .._core import dtype as _dt
from .._core import meta as _meta
from ._batching import _elementwise_rule
from .._core import scalar_functions as _sf
from ._helpers import table_vjp

__all__ = []
_HALVES = _dt.NP_HALVES


def _export(name, fn):
    globals()[name] = fn
    __all__.append(name)
    return fn


def _table(name, fn):
    """The NumPy form of table function ``name`` (or ``fn``, an op's wrapper of it that adds
    torch's special cases), behind its compiled kernel where `ckernels.EAGER` has one."""
    fn = fn or _sf.get(name).numpy
    dtypes = _ck.EAGER.get(name)
    return _ck.unary(name, fn, dtypes) if dtypes else fn


def _unary(name, fn=None, vjp=None, *, floating=None, save_inputs=None, save_output=None,
           inplace=True, reject="", kname=None, exact_out=None):
    """An elementwise op from its scalar-function table entry (kernel, dtype rule, vjp and
    what it saves); ``fn``/``vjp`` and the flags override the entry's for special cases.
    An op keeping its input's dtype takes only an ``out`` of that dtype, as torch's."""
    sf = _sf.get(name)
    fn = _table(name, fn)
    vjp = vjp or table_vjp(sf)
    floating = sf.rule == "float" if floating is None else floating
    save_inputs = sf.save_inputs if save_inputs is None else save_inputs
    save_output = sf.save_output if save_output is None else save_output
    kernel = unary_float(fn) if floating else unary_same(fn)
    if reject:
        kernel = gated(kernel, kname or f"{name}_cpu", reject)
    op = Op(name, kernel, vjp, shape=_meta.unary_float if floating else shape_same,
            save_inputs=save_inputs,
            save_output=save_output, category="unary",
            jvp=jvp_elementwise(vjp) if vjp else None, batch=_elementwise_rule)
    exact_out = not floating if exact_out is None else exact_out
    _export(name, def_unary(name, op, inplace=inplace, exact_out=exact_out))
    return op


# ---- unary math -------------------------------------------------------------------------
_NEG = _sf.get("neg").numpy
# torch refuses a bool input, a complex one of sign/floor/..., before it looks at out
NEG = _unary("neg", lambda xp, x: _NEG(xp, x) if x.dtype.kind != "b" else _bool_neg(x),
             exact_out=lambda x, out: x.dtype is not _dt.bool)


def _bool_neg(x):
    raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are "
                       "trying to invert a mask, use the `~` or `logical_not()` operator instead.")


_export("negative", globals()["neg"])
Tensor.negative = Tensor.neg
Tensor.__neg__ = lambda self: apply_unary(NEG, self)


@overridable
def positive(input):
    """Returns ``input``; raises for bool tensors like torch's unary ``+``."""
    if input.dtype == _dt.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


_export("positive", positive)
Tensor.positive = Tensor.__pos__ = positive


_abs_real = unary_same(_sf.get("abs").numpy)


def _abs_kernel(xp, x):
    if x.dtype.kind == "c":
        return xp.abs(x)
    if x.dtype.kind == "b":
        not_implemented("abs_cpu", x.dtype)
    return _abs_real(xp, x)


# complex: Re(conj(sgn) t) by the fit; torch writes |z| into a real out by a cast
ABS = _unary("abs", exact_out=lambda x, out: not x.dtype.is_complex or out.dtype.is_complex)
ABS.kernel = _abs_kernel
ABS.shape = _meta.unary_real
_export("absolute", globals()["abs"])
_abs_inplace = Tensor.abs_


def _abs_(self):
    if self.dtype.is_complex:
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return _abs_inplace(self)


Tensor.abs_ = Tensor.absolute_ = _abs_
Tensor.__abs__ = lambda self: apply_unary(ABS, self)
Tensor.absolute = Tensor.abs


_SIGN = _sf.get("sign").numpy


def _sign_np(xp, x):
    if x.dtype.kind == "b":
        return x
    if x.dtype.kind == "c":
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex "
                                  "numbers. Please use torch.sgn instead.")
    return _SIGN(xp, x)


def _real_input(x, out):
    return not x.dtype.is_complex


SIGN = _unary("sign", _sign_np, exact_out=_real_input)


def _sgn_kernel(xp, x):
    if x.dtype.kind != "c":
        return SIGN.kernel(xp, x)
    a = xp.abs(x)
    return xp.where(a == 0, 0, x / xp.where(a == 0, 1, a)).astype(x.dtype)


def _sgn_vjp(ctx, g, x):
    if not x.dtype.is_complex:
        return g * 0
    a = x.abs()
    s = ctx.out
    # torch: (grad - real(grad * conj(sgn)) * sgn) / |x|, zero where x == 0
    r = (g - (g * s.conj()).real * s) / a
    return where(a == 0, 0, r)


SGN = Op("sgn", _sgn_kernel, _sgn_vjp, shape=shape_same, save_output=True, category="unary",
         batch=_elementwise_rule)
_export("sgn", def_unary("sgn", SGN, exact_out=True))

# kernel, dtype rule, derivative and saved values all come from the scalar-function table
RECIPROCAL = _unary("reciprocal")
SQRT = _unary("sqrt")
RSQRT = _unary("rsqrt")
EXP = _unary("exp")
EXP2 = _unary("exp2")
EXPM1 = _unary("expm1")
LOG = _unary("log")
LOG2 = _unary("log2")
LOG10 = _unary("log10")
LOG1P = _unary("log1p")
SIN = _unary("sin")
COS = _unary("cos")
TAN = _unary("tan")
ASIN = _unary("asin")
ACOS = _unary("acos")
ATAN = _unary("atan")
SINH = _unary("sinh")
COSH = _unary("cosh")
TANH = _unary("tanh")
ASINH = _unary("asinh")
ACOSH = _unary("acosh")
ATANH = _unary("atanh")
# the dispatcher's fast path (`Op.ufunc`): for float32/float64 operands below the eager C
# kernels' size these ops' kernels are the ufunc (tests/_core/test_dispatch_fast_paths.py)
for _op, _uf in ((NEG, np.negative), (ABS, np.absolute), (SQRT, np.sqrt), (EXP, np.exp),
                 (EXP2, np.exp2), (EXPM1, np.expm1), (LOG, np.log), (LOG2, np.log2),
                 (LOG10, np.log10), (LOG1P, np.log1p), (SIN, np.sin), (COS, np.cos),
                 (TAN, np.tan), (ASIN, np.arcsin), (ACOS, np.arccos), (ATAN, np.arctan),
                 (SINH, np.sinh), (COSH, np.cosh), (TANH, np.tanh), (ASINH, np.arcsinh),
                 (ACOSH, np.arccosh), (ATANH, np.arctanh)):
    _op.ufunc = _uf
for _a, _b in (("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("arcsinh", "asinh"),
               ("arccosh", "acosh"), ("arctanh", "atanh")):
    _export(_a, globals()[_b])
    setattr(Tensor, _a, getattr(Tensor, _b))
    setattr(Tensor, _a + "_", getattr(Tensor, _b + "_"))


_SIGMOID = _sf.get("sigmoid").numpy


def _sigmoid_np(xp, x):
    if x.dtype.kind == "c":  # scipy's expit has no complex loop
        return 1 / (1 + xp.exp(-x))
    return _SIGMOID(xp, x)


SIGMOID = _unary("sigmoid", _sigmoid_np)


def _logit_kernel(xp, x, eps=None):
    def f(xp, x):
        if eps is not None:
            x = xp.clip(x, eps, 1 - eps)
        return xp.log(x / (1 - x))
    return unary_float(f)(xp, x)


def _logit_vjp(ctx, g, x, eps=None):
    d = g / (x * (1 - x))
    if eps is not None:
        return where((x < eps) | (x > 1 - eps), 0, d)
    return where((x < 0) | (x > 1), math.nan, d)


LOGIT = Op("logit", gated(_logit_kernel, "logit_cpu", "c"), _logit_vjp, shape=_meta.unary_float,
           category="unary", batch=_elementwise_rule)


@overridable
def logit(input, eps=None, *, out=None):
    if isinstance(out, Tensor) and isinstance(input, Tensor):
        check_castable(_meta.unary_float(input)[1], out.dtype)
    r = LOGIT(input, **({"eps": eps} if eps is not None else {}))
    return r if out is None else write_out(out, r, (input,))


_export("logit", logit)
Tensor.logit = lambda self, eps=None: logit(self, eps)
Tensor.logit_ = lambda self, eps=None: apply_inplace(LOGIT, self, (), {} if eps is None else
                                                     {"eps": eps})

ERF = _unary("erf", reject="c", kname="erf_vml_cpu")
ERFC = _unary("erfc", reject="c", kname="erfc_vml_cpu")
ERFINV = _unary("erfinv", reject="c", kname="erfinv_vml_cpu")
LGAMMA = _unary("lgamma", reject="c", kname="lgamma_vml_cpu")


def _polygamma_kernel(xp, x, n):
    if n == 0:
        return special(xp).psi(x)
    r = special(xp).polygamma(n, x).astype(x.dtype, copy=False)
    # trigamma has no limit at -inf (it has a pole at every negative integer): torch gives
    # NaN there as digamma does, scipy inf
    return xp.where(x == -math.inf, math.nan, r) if n == 1 else r


POLYGAMMA = Op("polygamma", gated(lambda xp, x, n: unary_float(
    lambda xp, x: _polygamma_kernel(xp, x, n))(xp, x), "polygamma", "c"),
    lambda ctx, g, x, n: g * polygamma(n + 1, x), shape=_meta.unary_float, category="unary",
               batch=_elementwise_rule)


@overridable
def polygamma(n, input, *, out=None):
    r = POLYGAMMA(input, n=n)
    return r if out is None else write_out(out, r, (input,))


_export("polygamma", polygamma)
Tensor.polygamma = lambda self, n: polygamma(n, self)
Tensor.polygamma_ = lambda self, n: apply_inplace(POLYGAMMA, self, (), {"n": n})
DIGAMMA = _unary("digamma", reject="c", kname="digamma")
_export("psi", globals()["digamma"])

# rounding: zero gradient almost everywhere
def _no_complex(name):
    def check(dt):
        if dt.kind == "c":
            raise NotImplementedError(f"{name} is not supported for complex inputs")
        not_implemented(f"{name}_vml_cpu", dt)
    return check


def _ints_kept(name):
    """Table function ``name``, with integer inputs returned as they are."""
    f = _sf.get(name).numpy
    return lambda xp, x: f(xp, x) if x.dtype.kind not in "biu" else x


FLOOR = _unary("floor", _ints_kept("floor"), reject="bc", kname=_no_complex("floor"),
               exact_out=_real_input)
CEIL = _unary("ceil", _ints_kept("ceil"), reject="bc", kname=_no_complex("ceil"),
              exact_out=_real_input)
TRUNC = _unary("trunc", _ints_kept("trunc"), reject="bc", kname=_no_complex("trunc"),
               exact_out=_real_input)
_export("fix", globals()["trunc"])
Tensor.fix, Tensor.fix_ = Tensor.trunc, Tensor.trunc_
FRAC = _unary("frac", reject="bic")


def _round_kernel(xp, x, decimals=0):
    k = dtype_kind(x.dtype)
    if k in "bc" or (decimals and k == "i"):
        not_implemented("round_cpu" if decimals else "round_vml_cpu", x.dtype)
    if k == "i":
        return x
    if not decimals:
        return _round_same(xp, x)
    return unary_same(lambda xp, x: xp.round(x, decimals))(xp, x)


_round_same = unary_same(_sf.get("round").numpy)


ROUND = Op("round", _round_kernel, lambda ctx, g, x, decimals=0: g * 0, shape=shape_same,
           save_inputs=False, category="unary", batch=_elementwise_rule)


@overridable
def round(input, *, decimals=0, out=None):
    if out is not None and isinstance(input, Tensor):
        check_out_same(out, input.dtype)
    r = ROUND(input, **({"decimals": decimals} if decimals else {}))
    return r if out is None else write_out(out, r, (input,))


_export("round", round)
Tensor.round = lambda self, decimals=0: round(self, decimals=decimals)
Tensor.round_ = lambda self, decimals=0: apply_inplace(ROUND, self, (), {"decimals": decimals}
                                                       if decimals else {})


def _nan_to_num_kernel(xp, x, nan=0.0, posinf=None, neginf=None):
    if x.dtype.kind in "biu":
        return x
    if x.dtype in _HALVES:
        # the defaults are the limits of x's own dtype, not of float32 where we compute
        import ml_dtypes
        big = float(ml_dtypes.finfo(x.dtype).max)
        posinf = big if posinf is None else posinf
        neginf = -big if neginf is None else neginf
    return unary_same(lambda xp, x: xp.nan_to_num(x, nan=nan, posinf=posinf,
                                                  neginf=neginf))(xp, x)


NAN_TO_NUM = Op("nan_to_num", _nan_to_num_kernel,
                lambda ctx, g, x, **kw: g * x.isfinite(), shape=shape_same, category="unary",
                batch=_elementwise_rule)


@overridable
def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    if isinstance(out, Tensor) and isinstance(input, Tensor) and out.dtype is not input.dtype:
        raise RuntimeError(f"nan_to_num: dtype of out: {type_name(out.dtype)} should be same "
                           f"as input: {type_name(input.dtype)}")
    r = NAN_TO_NUM(input, nan=nan, posinf=posinf, neginf=neginf)
    return r if out is None else write_out(out, r, (input,))


_export("nan_to_num", nan_to_num)
Tensor.nan_to_num = lambda self, nan=0.0, posinf=None, neginf=None: nan_to_num(
    self, nan, posinf, neginf)
Tensor.nan_to_num_ = lambda self, nan=0.0, posinf=None, neginf=None: apply_inplace(
    NAN_TO_NUM, self, (), {"nan": nan, "posinf": posinf, "neginf": neginf})


# ---- predicates (bool results, no gradient) ---------------------------------------------
def _pred(name, fn, with_out=True):
    op = Op(name, fn, None, shape=_meta.predicate, differentiable=False,
            save_inputs=False, batch=_elementwise_rule)
    _export(name, def_unary(name, op, inplace=False, with_out=with_out))
    return op


# torch's isnan, isinf, isfinite and isreal have no out= overload
_pred("isnan", lambda xp, x: xp.isnan(x) if x.dtype.kind in "fcV" else xp.zeros(x.shape, bool),
      False)
_pred("isinf", lambda xp, x: xp.isinf(x) if x.dtype.kind in "fcV" else xp.zeros(x.shape, bool),
      False)
_pred("isfinite", lambda xp, x: xp.isfinite(x) if x.dtype.kind in "fcV" else
      xp.ones(x.shape, bool), False)
def _no_complex_pred(name, fn, exc=RuntimeError, msg="does not support complex inputs."):
    def kernel(xp, x):
        if x.dtype.kind == "c":
            raise exc(f"{name} {msg}")
        return fn(xp, x)
    return kernel


def _bool_out(name):
    """``name(input, *, out=None)`` where ``out`` must be a bool tensor, as torch requires."""
    f = globals()[name]

    def public(input, *, out=None):
        if out is not None and isinstance(out, Tensor) and out.dtype != _dt.bool:
            if not input.dtype.is_complex:
                raise RuntimeError(f"{name} does not support non-boolean outputs.")
        return f(input, out=out)
    public.__name__ = public.__qualname__ = name
    _export(name, overridable(public))


_pred("isposinf", _no_complex_pred("isposinf", lambda xp, x: xp.isposinf(x) if x.dtype.kind in
                                   "fV" else xp.zeros(x.shape, bool)))
_pred("isneginf", _no_complex_pred("isneginf", lambda xp, x: xp.isneginf(x) if x.dtype.kind in
                                   "fV" else xp.zeros(x.shape, bool)))
_pred("isreal", lambda xp, x: xp.imag(x) == 0 if x.dtype.kind == "c" else xp.ones(x.shape, bool),
      False)
_pred("signbit", _no_complex_pred(
    "signbit", lambda xp, x: xp.signbit(x) if x.dtype.kind != "b" else xp.zeros(x.shape, bool),
    NotImplementedError, "is not implemented for complex tensors."))
for _n in ("isposinf", "isneginf", "signbit"):
    __all__.remove(_n)
    _bool_out(_n)
LOGICAL_NOT = Op("logical_not", lambda xp, x: xp.logical_not(x), None, shape=_meta.predicate,
                 differentiable=False, save_inputs=False, category="unary",
                 batch=_elementwise_rule)
_export("logical_not", def_unary("logical_not", LOGICAL_NOT))


def _bitwise_not_kernel(xp, x):
    if x.dtype.kind not in "biu":
        not_implemented("bitwise_not_cpu", x.dtype)
    return xp.invert(x)


_torch_type_name = type_name


BITWISE_NOT = Op("bitwise_not", _bitwise_not_kernel, None, shape=shape_same,
                 differentiable=False, save_inputs=False, category="unary",
                 batch=_elementwise_rule)
_export("bitwise_not", def_unary("bitwise_not", BITWISE_NOT, exact_out=True))


def _invert(self):
    if (self.dtype.is_floating_point or self.dtype.is_complex):
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return apply(BITWISE_NOT, (self,), _E)


Tensor.__invert__ = _invert


# ---- binary arithmetic ------------------------------------------------------------------
def _threaded(name, fn):
    """Table function ``name``'s NumPy form ``fn``, behind its C loop over the threads where
    `ckernels.binary` has one (large float operands)."""
    return _ckbin.wrap(name, fn) if name in _ckbin.BINARY else fn


def _binary(name, fn=None, vjp=None, *, kind="promote", magic=None, reflected=False,
            save_inputs=None, save_output=None, inplace=True, public=True, reject="", kname=None,
            tensors=0, ufunc=False):
    """A binary elementwise op from its scalar-function table entry (NumPy form, vjp, what it
    saves); ``fn``/``vjp`` and the flags override the entry's for special cases, ``vjp=False``
    marks an op without derivative."""
    sf = _sf.get(name)
    fn = _threaded(name, fn or sf.numpy)
    # the table's derivative saves only the inputs that the wanted gradients read
    reads = sf.reads if vjp is None and save_inputs is None else None
    if vjp is None and sf.derivative is not None:
        vjp = table_vjp(sf)
    save_inputs = sf.save_inputs if save_inputs is None else save_inputs
    save_output = sf.save_output if save_output is None else save_output
    kernel = binary_kernel(fn, kind=kind)
    if reject:
        kernel = gated(kernel, kname or f"{name}_cpu", reject, n=2)
    op = Op(name, kernel, vjp, shape={"promote": shape_broadcast, "float": _meta.broadcast_float,
                                      "bool": _meta.broadcast_bool}[kind],
            save_inputs=save_inputs, save_output=save_output, category="binary",
            differentiable=kind != "bool" and vjp is not False, batch=_elementwise_rule,
            grad_reads=reads)
    if vjp is False:
        op.vjp = None
    if ufunc:  # the dispatcher's fast path (`Op.ufunc`): the table's NumPy form's ufunc
        op.ufunc = _ckbin._UFUNC[name]
    if public:
        _export(name, def_binary(name, op, inplace=inplace, magic=magic, reflected=reflected,
                                 tensors=tensors))
    elif magic:
        _def_magic(op, magic, reflected)
    return op


def _is_bool(x):
    return type(x) is bool or (type(x) is np.ndarray and x.dtype.kind == "b")


# NumPy's add/multiply of two bools are logical or/and, as torch's are
_add_np = _threaded("add", _sf.get("add").numpy)
_sub_np = _threaded("sub", _sf.get("sub").numpy)


def _sub_check(a, b):
    ba, bb = _is_bool(a), _is_bool(b)
    if ba and bb:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if ba or bb:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def _alpha_kernel(fn, check=None):
    """``a op alpha * b`` with torch's checks on ``alpha``; the scaling happens in the
    result dtype so that e.g. ``bool + 2 * bool`` stays bool."""
    base = binary_kernel(fn)

    def kernel(xp, a, b, alpha=1):
        if check is not None:
            check(a, b)
        if alpha != 1 or type(alpha) is bool:
            dt = promote_np(a, b)
            k = dtype_kind(dt)
            if k in "bi" and isinstance(alpha, (float, complex)):
                raise RuntimeError("For integral input tensors, argument alpha must not be a "
                                   "floating point number.")
            if type(alpha) is bool and k != "b":
                raise RuntimeError("Boolean alpha only supported for Boolean results.")
            if k == "f" and isinstance(alpha, complex):
                raise RuntimeError("For non-complex input tensors, argument alpha must not be a "
                                   "complex number.")
            if k == "b":
                b = b if alpha else xp.zeros_like(b)
            elif type(b) is np.ndarray:
                b = (b.astype(dt) * alpha).astype(dt, copy=False) if dt not in _HALVES else \
                    (b.astype(np.float32) * alpha).astype(dt)
            else:
                b = b * alpha
        return base(xp, a, b)
    return kernel


def _scaled(t, alpha):
    return t if t is None or alpha == 1 else t * alpha


ADD = Op("add", _alpha_kernel(_add_np), lambda ctx, g, a, b, alpha=1: (g, g * cj(alpha)),
         jvp=lambda out, ts, a, b, alpha=1: jvp_sum(ts[0], _scaled(ts[1], alpha)),
         shape=shape_broadcast, save_inputs=False, category="binary", batch=_elementwise_rule)
SUB = Op("sub", _alpha_kernel(_sub_np, _sub_check), lambda ctx, g, a, b, alpha=1: (g, -g * cj(alpha)),
         jvp=lambda out, ts, a, b, alpha=1: jvp_sum(ts[0], _scaled(ts[1], -alpha)),
         shape=shape_broadcast, save_inputs=False, category="binary", batch=_elementwise_rule)
# the dispatcher's fast path computes these with the ufunc itself (the table's NumPy forms,
# checked equal in tests/_core/test_dispatch_fast_paths.py)
ADD.ufunc, SUB.ufunc = _ckbin._UFUNC["add"], _ckbin._UFUNC["sub"]
_def_magic(ADD, "add", True)
_def_magic(SUB, "sub", True)


def _alpha(alpha, name="add"):
    if alpha.__class__ is int and alpha == 1:
        return _E
    alpha = number_arg(alpha, name, "alpha")
    return _E if alpha == 1 and type(alpha) is not bool else {"alpha": alpha}


def _value(value, name):
    if value.__class__ is int and value == 1:
        return _E
    value = number_arg(value, name, "value")
    return {"value": value} if value != 1 else _E


def add(input, other, *, alpha=1, out=None):
    """Adds ``other``, scaled by ``alpha``, to ``input``: out = input + alpha * other."""
    try:
        r = apply_binary(ADD, input, other) if alpha.__class__ is int and alpha == 1 else \
            apply(ADD, (input, other), _alpha(alpha))
    except NeedsOverride:
        return handle_override(add, (input, other), {"alpha": alpha, "out": out})
    return r if out is None else write_out(out, r, (input, other))


def sub(input, other, *, alpha=1, out=None):
    """Subtracts ``other``, scaled by ``alpha``, from ``input``."""
    try:
        r = apply_binary(SUB, input, other) if alpha.__class__ is int and alpha == 1 else \
            apply(SUB, (input, other), _alpha(alpha, "sub"))
    except NeedsOverride:
        return handle_override(sub, (input, other), {"alpha": alpha, "out": out})
    return r if out is None else write_out(out, r, (input, other))


def _add_m(self, other, *, alpha=1):
    try:
        return apply_binary(ADD, self, other) if alpha.__class__ is int and alpha == 1 else \
            apply(ADD, (self, other), _alpha(alpha))
    except NeedsOverride:
        return handle_override(_add_m, (self, other), {"alpha": alpha})


def _sub_m(self, other, *, alpha=1):
    try:
        return apply_binary(SUB, self, other) if alpha.__class__ is int and alpha == 1 else \
            apply(SUB, (self, other), _alpha(alpha, "sub"))
    except NeedsOverride:
        return handle_override(_sub_m, (self, other), {"alpha": alpha})


_export("add", add)
_export("sub", sub)
_export("subtract", sub)
Tensor.add = _add_m
Tensor.sub = Tensor.subtract = _sub_m
Tensor.add_ = lambda self, other, *, alpha=1: apply_inplace(
    ADD, self, (other,), _alpha(alpha, "add_"))
Tensor.sub_ = Tensor.subtract_ = lambda self, other, *, alpha=1: apply_inplace(
    SUB, self, (other,), _alpha(alpha, "sub_"))


MUL = _binary("mul", magic="mul", reflected=True, ufunc=True)
MUL.jvp = lambda out, ts, a, b: jvp_sum(None if ts[0] is None else ts[0] * b,
                                        None if ts[1] is None else a * ts[1])
_export("multiply", globals()["mul"])
Tensor.multiply, Tensor.multiply_ = Tensor.mul, Tensor.mul_


TRUE_DIV = _binary("div", kind="float", magic="truediv", reflected=True, public=False,
                   ufunc=True)


def _div_jvp(out, ts, a, b):
    t = jvp_sum(ts[0], None if ts[1] is None else -ts[1] * out)
    return None if t is None else t / b


TRUE_DIV.jvp = _div_jvp


def _rtruediv(self, other):
    """``other / self`` is ``self.reciprocal() * other``, as torch's: its values (two
    roundings) and its graph (the reciprocal's node saves its result, not ``self``, so an
    in-place write to ``self`` before backward is allowed)."""
    try:
        return apply(MUL, (apply(RECIPROCAL, (self,), _E), other), _E)
    except NeedsOverride:
        return _own_override(self, _rtruediv, (self, other))
    except TypeError:
        if isinstance(other, (Tensor, bool, int, float, complex, np.generic)):
            raise
        return NotImplemented


_rtruediv.__name__ = "__rtruediv__"
Tensor.__rtruediv__ = _rtruediv


def _nonzero_int_divisor(fn):
    def f(xp, a, b):
        if getattr(b, "dtype", np.dtype(np.float64)).kind in "iu" and (
                type(a) is not np.ndarray or a.dtype.kind in "iu") and (b == 0).any():
            raise RuntimeError("ZeroDivisionError")
        return fn(xp, a, b)
    return f


FLOOR_DIV = _binary("floor_divide", _nonzero_int_divisor(_sf.get("floor_divide").numpy),
                    magic="floordiv", reflected=True, public=False, reject="bc",
                    kname="div_floor_cpu")
TRUNC_DIV = _binary("trunc_divide", _nonzero_int_divisor(_sf.get("trunc_divide").numpy),
                    public=False, reject="bc", kname="div_trunc_cpu")
_trunc_div_base = TRUNC_DIV.kernel


def _trunc_div_kernel(xp, a, b):
    dt = promote_np(a, b)
    if dt in _HALVES:
        # torch rounds the quotient to the half dtype before truncating
        q = xp.true_divide(_cast(a, _F32), _cast(b, _F32)).astype(dt)
        return xp.trunc(q.astype(_F32)).astype(dt)
    return _trunc_div_base(xp, a, b)


TRUNC_DIV.kernel = _trunc_div_kernel


def _div_op(rounding_mode):
    if rounding_mode is None:
        return TRUE_DIV
    if rounding_mode == "floor":
        return FLOOR_DIV
    if rounding_mode == "trunc":
        return TRUNC_DIV
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                       f"found '{rounding_mode}'")


def div(input, other, *, rounding_mode=None, out=None):
    """Divides ``input`` by ``other`` (true division, or 'trunc' / 'floor' rounding)."""
    op = _div_op(rounding_mode)
    try:
        r = apply_binary(op, input, other)
    except NeedsOverride:
        return handle_override(div, (input, other), {"rounding_mode": rounding_mode, "out": out})
    return r if out is None else write_out(out, r, (input, other))


@overridable
def floor_divide(input, other, *, out=None):
    return div(input, other, rounding_mode="floor", out=out)


_export("div", div)
_export("divide", div)


@overridable
def true_divide(input, other, *, out=None):
    """Alias of `div` without rounding."""
    return div(input, other, out=out)


_export("true_divide", true_divide)
_export("floor_divide", floor_divide)
Tensor.div = Tensor.divide = lambda self, other, *, rounding_mode=None: div(
    self, other, rounding_mode=rounding_mode)
Tensor.true_divide = lambda self, other: div(self, other)


def _div_(self, other, *, rounding_mode=None):
    return apply_inplace(_div_op(rounding_mode), self, (other,), _E)


Tensor.div_ = Tensor.divide_ = _div_
Tensor.true_divide_ = lambda self, other: apply_inplace(TRUE_DIV, self, (other,), _E)
Tensor.floor_divide = lambda self, other: floor_divide(self, other)
Tensor.floor_divide_ = lambda self, other: _div_(self, other, rounding_mode="floor")


REMAINDER = _binary("remainder", _nonzero_int_divisor(_sf.get("remainder").numpy),
                    magic="mod", reflected=True, reject="bc")
FMOD = _binary("fmod", _nonzero_int_divisor(_sf.get("fmod").numpy), reject="bc", tensors=1)


# torch's pow of a float tensor by these scalar exponents is a product or reciprocal (x*x,
# x*x*x, 1/sqrt(x), 1/x, 1/(x*x)), by 1 a copy and by 0 ones: computed the same way they are
# bit for bit torch's and 3-4x faster than np.power (0.5 is not here: torch's pow differs
# from sqrt in the last bit, ember keeps np.power's correctly rounded root)
_POW_BY_PRODUCT = {
    2: lambda a: a * a, 3: lambda a: a * a * a, -1: lambda a: a.dtype.type(1) / a,
    -2: lambda a: a.dtype.type(1) / (a * a),
    -0.5: lambda a: a.dtype.type(1) / np.sqrt(a),
    1: lambda a: a.copy(), 0: lambda a: np.ones_like(a)}


def _pow_np(xp, a, b):
    if type(a) is np.ndarray and a.dtype in _POW_FLOATS and type(b) in (int, float):
        by_product = _POW_BY_PRODUCT.get(b)
        if by_product is not None:
            return by_product(a)
    if type(b) is np.ndarray and b.dtype.kind == "i" and getattr(a, "dtype", b.dtype).kind in \
            "iu" and (b < 0).any():
        # torch's integer pow: 1 ** -n = 1, (-1) ** -n = +-1, anything else ** -n = 0
        neg = b < 0
        r = xp.power(a, xp.where(neg, 0, b))
        minus_one = xp.where(b % 2 == 1, -1, 1)
        return xp.where(neg, xp.where(a == 1, 1, xp.where(a == -1, minus_one, 0)), r).astype(
            r.dtype, copy=False)
    return _POW(xp, a, b)


_POW = _sf.get("pow").numpy
_POW_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _pow_check(a, b):
    ta, tb = type(a), type(b)
    if ta is np.ndarray and a.dtype.kind in "biu" and tb is int and b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if tb is np.ndarray and b.dtype == np.bool_ and _is_bool(a):
        not_implemented("pow", b.dtype)


def _prechecked(op, check):
    kernel = op.kernel

    def k(xp, a, b, **params):
        check(a, b)
        return kernel(xp, a, b, **params)
    op.kernel = k
    return op


POW = _prechecked(_binary("pow", _pow_np, magic="pow", reflected=True), _pow_check)


def _pow_jvp(out, ts, a, b):
    if isinstance(b, Tensor) or not isinstance(a, Tensor):
        return NotImplemented  # tensor exponent: forward AD derives it from the vjp
    t = ts[0]
    if t is None or b == 0:
        return None
    return t * (b * a ** (b - 1)) if b != 1 else t


POW.jvp = _pow_jvp


@overridable
def float_power(input, exponent, *, out=None):
    """``input ** exponent`` computed in double precision (float64 / complex128)."""
    def up(x):
        if isinstance(x, Tensor):
            return x.to(complex128_ if x.is_complex() else float64_)
        return x
    r = pow(up(input), up(exponent))
    if not isinstance(r, Tensor) or r.dtype.np.itemsize < 8:
        r = r.double()
    if out is not None and isinstance(out, Tensor) and out.dtype != r.dtype:
        raise RuntimeError(f"the output given to float_power has dtype {type_name(out.dtype)}"
                           f" but the operation's result requires dtype "
                           f"{type_name(r.dtype)}")
    return r if out is None else write_out(out, r, (input, exponent))


from .._core.dtype import complex128 as complex128_, float64 as float64_  # noqa: E402

_export("float_power", float_power)
Tensor.float_power = float_power


def _float_power_(self, exponent):
    # the base is overwritten below: compute from a copy so autograd keeps the old value
    r = float_power(self.clone() if self._requires_grad or self.grad_fn is not None else self,
                    exponent)
    if self.dtype != r.dtype:
        raise RuntimeError(f"the base given to float_power_ has dtype {type_name(self.dtype)}"
                           f" but the operation's result requires dtype {type_name(r.dtype)}")
    if r.shape != self.shape:
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                           f"broadcast shape {list(r.shape)}")
    return self.copy_(r)


Tensor.float_power_ = _float_power_


def _no_complex_minmax(name):
    def check(dt):
        raise RuntimeError(f"{name} not implemented for complex tensors.")
    return dict(reject="c", kname=check, tensors=2, inplace=False)


MAXIMUM = _binary("maximum", **_no_complex_minmax("maximum"))
MINIMUM = _binary("minimum", **_no_complex_minmax("minimum"))
_export("max_elementwise", globals()["maximum"])
FMAX = _binary("fmax", **_no_complex_minmax("fmax"))
FMIN = _binary("fmin", **_no_complex_minmax("fmin"))
HYPOT = _binary("hypot", kind="float", reject="bic", tensors=2)
ATAN2 = _binary("atan2", kind="float", reject="c", tensors=2)
_export("arctan2", globals()["atan2"])
Tensor.arctan2, Tensor.arctan2_ = Tensor.atan2, Tensor.atan2_
COPYSIGN = _binary("copysign", kind="float", reject="c", tensors=1)
XLOGY = _binary("xlogy", kind="float", reject="c")


# ---- bitwise / logical / comparison -----------------------------------------------------
for _name, _magic, _k in (("bitwise_and", "and", "bitwise_and_cpu"),
                          ("bitwise_or", "or", "bitwise_or_cpu"),
                          ("bitwise_xor", "xor", "bitwise_xor_cpu"),
                          ("bitwise_left_shift", "lshift", "lshift_cpu"),
                          ("bitwise_right_shift", "rshift", "rshift_cpu")):
    _binary(_name, None, False, magic=_magic, reflected=True, save_inputs=False,
            reject="fc" if "shift" not in _name else "bfc", kname=_k)

for _name in ("logical_and", "logical_or", "logical_xor"):
    _binary(_name, kind="bool", save_inputs=False, tensors=2)

for _name, _magic, _alias in (("eq", "eq", None), ("ne", "ne", "not_equal"),
                              ("lt", "lt", "less"), ("le", "le", "less_equal"),
                              ("gt", "gt", "greater"), ("ge", "ge", "greater_equal")):
    _binary(_name, kind="bool", magic=_magic, save_inputs=False, tensors=1,
            reject="" if _name in ("eq", "ne") else "c")
    if _alias:
        _export(_alias, globals()[_name])
        setattr(Tensor, _alias, getattr(Tensor, _name))
        setattr(Tensor, _alias + "_", getattr(Tensor, _name + "_"))
Tensor.__hash__ = object.__hash__


# ---- ternary ----------------------------------------------------------------------------
def _where_kernel(xp, cond, a, b):
    if type(cond) is not np.ndarray or cond.dtype != bool:
        if type(cond) is np.ndarray and cond.dtype == np.uint8:
            import warnings
            warnings.warn("where received a uint8 condition tensor. This behavior is deprecated "
                          "and will be removed in a future version of PyTorch. Use a boolean "
                          "condition instead.", UserWarning, stacklevel=4)
            cond = cond.astype(bool)
        elif type(cond) is np.ndarray:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a "
                               f"tensor with dtype {_torch_type_name(cond.dtype)}")
    dt = promote_np(a, b)
    return _WHERE(xp, cond, a, b).astype(dt, copy=False)


_WHERE = _cktern.wrap("where", _sf.get("where").numpy)  # C: a select, not NumPy's branches


def _where_vjp(ctx, g, cond, a, b):
    need = ctx.needs_input_grad
    return (None, where(cond, g, 0) if need[1] else None,
            where(cond, 0, g) if need[2] else None)


def _where_shape(cond, a, b):
    return _meta.broadcast_bool(cond, a, b)[0], _meta.promote(a, b)


def _where_jvp(out, ts, cond, a, b):
    if ts[1] is None and ts[2] is None:
        return None
    return where(cond, 0 if ts[1] is None else ts[1], 0 if ts[2] is None else ts[2])


WHERE = Op("where", broadcast_guard(_where_kernel), _where_vjp, shape=_where_shape,
           save_inputs=(0,), jvp=_where_jvp, batch=_elementwise_rule)


@overridable
def where(condition, input=None, other=None, *, out=None):
    """Elements of ``input`` where ``condition`` holds, else of ``other``.

    With only ``condition``, same as ``nonzero(condition, as_tuple=True)``."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    try:
        if out is not None:  # torch's where.out overload takes tensors only, of out's dtype
            check_tensor("where", "input", 2, input)
            check_tensor("where", "other", 3, other)
        r = apply(WHERE, (condition, input, other), _E)
    except NeedsOverride:
        return handle_override(where, (condition, input, other), {})
    if out is not None and out.dtype is not r.dtype:
        raise RuntimeError(f"Expected out type to be {type_name(r.dtype)} but got "
                           f"{type_name(out.dtype)}")
    return r if out is None else write_out(out, r, (condition, input, other))


_export("where", where)
Tensor.where = lambda self, condition, other: where(condition, self, other)


def _clip_bound(b, missing, dt, kind):
    """A clamp bound as a 0-d array of ``dt`` for np.clip, or None where np.clip would not
    give torch's result (integer or complex dtypes, tensor bounds)."""
    if kind != "f":
        return None
    if b is None:
        b = missing
    elif type(b) is np.ndarray:
        if b.ndim:
            return None
    elif not isinstance(b, (int, float, np.number)):
        return None
    return np.asarray(b).astype(dt)


def _clamp_kernel(xp, x, lo, hi):
    dt = promote_np(x, lo, hi)
    k = dtype_kind(dt)
    if k == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    if k == "b" and lo is not None and hi is not None:
        not_implemented("clamp_cpu", dt)
    comp = _F32 if dt in _HALVES else dt
    # np.maximum/minimum propagate NaN from either side, as torch's clamp does
    r = x.astype(comp, copy=False)
    clip_lo, clip_hi = _clip_bound(lo, -np.inf, comp, k), _clip_bound(hi, np.inf, comp, k)
    if clip_lo is not None and clip_hi is not None and type(r) is np.ndarray:
        # np.clip's SIMD loop is 3-8x faster than maximum+minimum; with scalar bounds (a
        # missing one as an infinity) it gives torch's clamp bit for bit, NaNs and signed
        # zeros included (tensor bounds can differ at NaNs, so they take the path below)
        r = np.clip(r, clip_lo, clip_hi)
        lo = hi = None
    if lo is not None:
        r = xp.maximum(r, _cast(lo, comp, xp))
    if hi is not None:
        r = xp.minimum(r, _cast(hi, comp, xp))
    if type(r) is not np.ndarray or r.dtype != dt:
        r = xp.asarray(r).astype(dt)
    return r


def _clamp_masks(need, x, lo, hi):
    inside = None
    if lo is not None:
        inside = x >= lo
    if hi is not None:
        m = x <= hi
        inside = m if inside is None else inside & m
    mlo = mhi = None
    # with both bounds and min > max the result is max: the derivative goes to max only
    if len(need) > 1 and need[1]:
        mlo = (x < lo) & (lo < hi) if hi is not None else x < lo
    if len(need) > 2 and need[2]:
        mhi = (x > hi) | (hi < lo) if lo is not None else x > hi
    return inside if need[0] else None, mlo, mhi


def _clamp_vjp(ctx, g, x, lo, hi):
    return tuple(None if m is None else where(m, g, 0)
                 for m in _clamp_masks(ctx.needs_input_grad, x, lo, hi))


def _clamp_jvp(out, ts, x, lo, hi):
    masks = _clamp_masks([t is not None for t in ts], x, lo, hi)
    return jvp_sum(*(None if m is None else where(m, t, 0) for t, m in zip(ts, masks)))


CLAMP = Op("clamp", broadcast_guard(_clamp_kernel), _clamp_vjp, shape=shape_broadcast,
           jvp=_clamp_jvp, batch=_elementwise_rule)


@overridable
def clamp(input, min=None, max=None, *, out=None):
    """Clamps all elements of ``input`` into the range [min, max] (tensor or scalar bounds)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    try:
        r = apply(CLAMP, (input, min, max), _E)
    except NeedsOverride:
        return handle_override(clamp, (input, min, max), {})
    if out is None:
        return r
    if not isinstance(min, Tensor) and not isinstance(max, Tensor):
        # torch's clamp(Scalar) does not promote into out; clamp(Tensor) casts
        check_out_same(out, r.dtype)
    return write_out(out, r, (input, min, max))


_export("clamp", clamp)
_export("clip", clamp)


@overridable
def clamp_min(input, min, *, out=None):
    """`clamp` with only a lower bound."""
    return clamp(input, min, None, out=out)


@overridable
def clamp_max(input, max, *, out=None):
    """`clamp` with only an upper bound."""
    return clamp(input, None, max, out=out)


_export("clamp_min", clamp_min)
_export("clamp_max", clamp_max)
Tensor.clamp = Tensor.clip = lambda self, min=None, max=None: clamp(self, min, max)
Tensor.clamp_min = lambda self, min: clamp(self, min, None)
Tensor.clamp_max = lambda self, max: clamp(self, None, max)


def _clamp_(self, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return apply_inplace(CLAMP, self, (min, max), _E)


Tensor.clamp_ = Tensor.clip_ = _clamp_
Tensor.clamp_min_ = lambda self, min: _clamp_(self, min, None)
Tensor.clamp_max_ = lambda self, max: _clamp_(self, None, max)


_lerp_vjp = table_vjp(_sf.get("lerp"))


LERP = Op("lerp", gated(nary_kernel(_cktern.wrap("lerp", _sf.get("lerp").numpy), 3),
                       "lerp_kernel_tensor", "bi", n=2), _lerp_vjp, shape=shape_broadcast,
          batch=_elementwise_rule)


def _lerp_dtypes(input, end, weight):
    """torch's lerp computes in ``input``'s dtype: ``end`` and a weight tensor with
    dimensions must have it (a 0-dim weight is read as a number)."""
    if isinstance(input, Tensor):
        for name, t in (("end", end), ("weight", weight)):
            if isinstance(t, Tensor) and t.dtype != input.dtype and \
                    (name == "end" or t.ndim > 0):
                raise RuntimeError(f"expected dtype {cpp_name(input.dtype)} for `{name}` but "
                                   f"got dtype {cpp_name(t.dtype)}")


@overridable
def lerp(input, end, weight, *, out=None):
    """``input + weight * (end - input)``."""
    _lerp_dtypes(input, end, weight)
    r = apply(LERP, (input, end, weight), _E)
    return r if out is None else write_out(out, r, (input, end, weight))


def _lerp_(self, end, weight):
    _lerp_dtypes(self, end, weight)
    return apply_inplace(LERP, self, (end, weight), _E)


_export("lerp", lerp)
Tensor.lerp = lambda self, end, weight: lerp(self, end, weight)
Tensor.lerp_ = _lerp_


def _addcmul_kernel(xp, x, t1, t2, value=1):
    p = t1 * t2
    if value != 1:
        p = value * p
    if type(p) is np.ndarray and type(x) is np.ndarray and x.dtype == p.dtype and (
            x.shape == p.shape or np.broadcast_shapes(x.shape, p.shape) == p.shape):
        return np.add(x, p, out=p)  # into the fresh product: no third full-size temporary
    return x + p


def _addcmul_vjp(ctx, g, x, t1, t2, value=1):
    need = ctx.needs_input_grad
    return (g if need[0] else None, _scaled(g * cj(t2), value) if need[1] else None,
            _scaled(g * cj(t1), value) if need[2] else None)


def _addcdiv_kernel(xp, x, t1, t2, value=1):
    return x + value * t1 / t2  # torch's order: (value * t1) / t2


_ADDCDIV_PROMOTED = nary_kernel(_cktern.wrap("addcdiv", _addcdiv_kernel), 3)


def _addcdiv_checked(xp, x, t1, t2, value=1):
    # on the arguments' own dtypes: promotion with a float input would hide integer ones
    if all(getattr(t, "dtype", np.dtype(float)).kind in "biu" for t in (t1, t2)):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future "
                           "release addcdiv will perform a true division of tensor1 and tensor2. "
                           "The historic addcdiv behavior can be implemented as (input + value * "
                           "torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and "
                           "as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * "
                           "tensor1 / tensor2), for all dtypes.")
    return _ADDCDIV_PROMOTED(xp, x, t1, t2, value=value)


def _addcdiv_vjp(ctx, g, x, t1, t2, value=1):
    need = ctx.needs_input_grad
    return (g if need[0] else None, g * value / cj(t2) if need[1] else None,
            -g * value * cj(t1 / (t2 * t2)) if need[2] else None)


ADDCMUL = Op("addcmul", gated(nary_kernel(_cktern.wrap("addcmul", _addcmul_kernel), 3),
                             "addcmul_cpu_out", "b", n=3),
             _addcmul_vjp, shape=shape_broadcast, batch=_elementwise_rule)
ADDCDIV = Op("addcdiv", _addcdiv_checked, _addcdiv_vjp, shape=shape_broadcast,
             batch=_elementwise_rule)


@overridable
def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 * tensor2``."""
    r = apply(ADDCMUL, (input, tensor1, tensor2), _value(value, "addcmul"))
    return r if out is None else write_out(out, r, (input, tensor1, tensor2))


@overridable
def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 / tensor2``."""
    r = apply(ADDCDIV, (input, tensor1, tensor2), _value(value, "addcdiv"))
    return r if out is None else write_out(out, r, (input, tensor1, tensor2))


_export("addcmul", addcmul)
_export("addcdiv", addcdiv)
Tensor.addcmul = lambda self, tensor1, tensor2, *, value=1: addcmul(self, tensor1, tensor2,
                                                                    value=value)
Tensor.addcdiv = lambda self, tensor1, tensor2, *, value=1: addcdiv(self, tensor1, tensor2,
                                                                    value=value)
Tensor.addcmul_ = lambda self, tensor1, tensor2, *, value=1: apply_inplace(
    ADDCMUL, self, (tensor1, tensor2), _value(value, "addcmul_"))
Tensor.addcdiv_ = lambda self, tensor1, tensor2, *, value=1: apply_inplace(
    ADDCDIV, self, (tensor1, tensor2), _value(value, "addcdiv_"))


# ---- closeness --------------------------------------------------------------------------
def _isclose_kernel(xp, a, b, rtol, atol, equal_nan):
    if isinstance(a, np.ndarray) and (a.dtype == np.float16 or a.dtype.kind == "V"):
        a = a.astype(np.float32)
        b = b.astype(np.float32) if isinstance(b, np.ndarray) else b
    return xp.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


ISCLOSE = Op("isclose", _isclose_kernel, None, differentiable=False, save_inputs=False,
             category="binary",
             shape=_meta.broadcast_bool, batch=_elementwise_rule)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (NaNs equal if ``equal_nan``)."""
    try:
        check_tensor("isclose", "input", 1, input)
        check_tensor("isclose", "other", 2, other)
        if input.dtype != other.dtype:
            raise RuntimeError(f"{input.dtype} did not match {other.dtype}")
        return apply(ISCLOSE, (input, other), {"rtol": rtol, "atol": atol,
                                               "equal_nan": equal_nan})
    except NeedsOverride:
        return handle_override(isclose, (input, other), {"rtol": rtol, "atol": atol,
                                                         "equal_nan": equal_nan})


@overridable
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether all elements are close (see `isclose`); returns a Python bool."""
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


@overridable
def equal(input, other):
    """True if the two tensors have the same size and elements."""
    if input.shape != other.shape:
        return False
    return bool((input._data == other._data).all())


_export("isclose", isclose)
_export("allclose", allclose)
_export("equal", equal)
Tensor.isclose = isclose
Tensor.allclose = allclose
Tensor.equal = equal


# no jvp rules written: forward AD derives these tangents from the vjps
from .._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, "sgn", "logit", "polygamma", "round", "nan_to_num",
                 "floor_divide", "trunc_divide", "remainder", "fmod", "maximum", "minimum", "fmax",
                 "fmin", "hypot", "atan2", "copysign", "xlogy", "lerp", "addcmul", "addcdiv")
