"""The scalar-function table: the elementwise math of ember, written once.

Every elementwise function (``exp``, ``gelu``, ``atan2``, ``lerp``, the comparisons...)
has one `ScalarFunction` entry in `TABLE`, keyed by name, with:

``numpy(xp, *operands)``
    the formula on arrays of the *compute* dtype (see the rules below); operands may be
    Python scalars for binary functions (torch's weak scalars).  Nothing about dtypes,
    broadcasting errors or torch's error messages is in it.
``c``
    a C expression template for one float/double element (None: no C form).  ``$0``,
    ``$1``, ``$2`` are the operands, ``$T`` the C type, ``$S`` the suffix of per-type
    helpers (f32/f64), ``$exp``, ``$log``, ``$sin``, ... the math function of that type:
    for float, ``exp``/``log``/``tanh``/``erf``/``sigmoid`` are the branch-free vectorised
    polynomials of `_cmath` (the C library's are scalar and stop a loop from vectorising),
    everything else the C library's ``sinf``/``sin``...; ``$max``/``$min`` propagate NaN.
    ``c_int`` is the template for integer and bool operands where the function has one
    (a dict ``{"b": ..., "i": ...}`` when bool differs).  ``c_helper`` is C text (same
    placeholders) defining ``static inline`` functions the expression calls, used when an
    operand appears more than once so that a caller's expression is evaluated once.
``c_grad``
    for unary functions, the C template of ``d f / d x`` where it has one (the eager C
    backward kernels multiply it by the incoming gradient).
``rule``
    the compute-dtype rule (`compute_dtype` applies it):
    ``float``: a floating function; bool/integer inputs are computed in the default float
    dtype (torch's ``exp(int tensor)`` is float32), float16/bfloat16 in float32 and
    rounded once.  ``same``: the dtype is kept (integers and bool too where ``kinds``
    allows), halves computed in float32.  ``promote``: torch's promotion of the operands,
    halves in float32.  ``promote_float``: the same with integer results promoted to the
    default float (true division, atan2).  ``compare``: computed in the promoted dtype,
    the result is bool.  ``predicate``: unary, bool result.  ``integral``: integers and
    bool only, dtype kept.  ``kinds`` lists the dtype kinds the function is defined for
    ('b' bool, 'i'/'u' integers, 'f' floats, 'c' complex); torch's error for the others is
    the op's business.
``derivative``
    one function per input, ``d(grad, *inputs, output) -> grad of that input``, written
    in ember Tensor operations (so double backward, tracing and vmap of gradients work),
    complex inputs following torch's conjugate-Wirtinger convention; None for an input
    (or the whole entry) without a gradient.  ``saves`` says what it reads: ``inputs``,
    ``output``, ``both`` or ``none``.

How each consumer uses it:

- The eager NumPy kernels: `ember.ops.pointwise` declares an elementwise Op by name;
  the op-layer helpers (``ember.ops._helpers.unary_float``/``unary_same``/
  ``binary_kernel``) wrap ``numpy`` with the dtype rule, and the op's vjp calls
  ``derivative`` (``saves`` sets what the op saves for backward).  What needs more than a
  formula stays explicit in the op: torch's error messages and dtype gating, bool
  arithmetic (``True + True``), complex special cases, integer division by zero.
- The eager C kernels: `ember._core.ckernels.source` renders one vectorised loop per
  function listed in ``ckernels.EAGER`` from ``c_expr`` (forward) and ``c_grad``
  (backward), after `c_prelude`.  The row kernels (softmax, normalize) are not
  elementwise formulas and stay hand-written there.
- The compiler (ember.compile's C code generator): ``c_prelude()`` once per translation
  unit, then ``c_expr(name, dtype, *operand_exprs)`` for each fused elementwise node,
  with ``compute_dtype(name, *dtypes)`` deciding the C type and the casts around it.
"""
import numpy as np

from .. import dtype as _dt
from . import _cmath
from ._record import RULES, TABLE, CTemplate, ScalarFunction, define
from . import _unary, _binary  # noqa: F401 - they fill TABLE

__all__ = ["TABLE", "ScalarFunction", "RULES", "define", "get", "c_expr", "c_grad_expr",
           "c_prelude", "c_type", "has_c", "compute_dtype"]

_LIBM = ("sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
         "acosh", "atanh", "exp2", "expm1", "log2", "log10", "log1p", "erfc", "lgamma",
         "floor", "ceil", "trunc", "rint", "fabs", "fmod", "pow", "atan2", "hypot",
         "copysign", "fmax", "fmin")
_NAMES = {
    # exp_le0: exp of an argument known to be <= 0 (or NaN), cheaper in float32
    "f32": dict({n: n + "f" for n in _LIBM}, T="float", S="f32", exp="ck_expf",
                exp_le0="ck_expf_le0", log="ck_logf", tanh="ck_tanhf", erf="ck_erff",
                sigmoid="ck_sigmoidf", max="sf_max_f32", min="sf_min_f32"),
    "f64": dict({n: n for n in _LIBM}, T="double", S="f64", exp="exp", exp_le0="exp",
                log="log", tanh="tanh", erf="erf", sigmoid="ck_sigmoid", max="sf_max_f64",
                min="sf_min_f64"),
}
_CTYPES = {"bool": "_Bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
           "int64": "int64_t", "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t",
           "uint64": "uint64_t", "float32": "float", "float64": "double"}
_HALVES = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")


def get(name):
    """The entry ``name``; KeyError names the function when there is none."""
    try:
        return TABLE[name]
    except KeyError:
        raise KeyError(f"no scalar function {name!r} in the table") from None


def _np_dtype(dtype):
    if isinstance(dtype, _dt.dtype):
        return dtype.np
    if isinstance(dtype, str) and hasattr(_dt, dtype) and isinstance(getattr(_dt, dtype),
                                                                      _dt.dtype):
        return getattr(_dt, dtype).np
    return np.dtype(dtype)


def _dtype_name(dtype):
    return _dt.FROM_NP[_np_dtype(dtype)].name


def c_type(dtype):
    """The C type of ``dtype`` (``float``, ``double``, ``int64_t``, ``_Bool``...)."""
    name = _dtype_name(dtype)
    if name not in _CTYPES:
        raise NotImplementedError(f"no C type for {name} (compute halves in float32: "
                                  f"see compute_dtype)")
    return _CTYPES[name]


def _template(sf, name):
    if name in ("float32", "float64"):
        return sf.c
    t = sf.c_int
    if isinstance(t, dict):
        t = t.get("b" if name == "bool" else "i")
    return t


def _names(name):
    if name in ("float32", "float64"):
        return _NAMES["f32" if name == "float32" else "f64"]
    return {"T": _CTYPES[name], "S": name}


def has_c(name, dtype):
    """Whether `c_expr` has a form for function ``name`` on (compute) dtype ``dtype``."""
    dn = _dtype_name(dtype)
    return dn in _CTYPES and _template(get(name), dn) is not None


def c_expr(name, dtype, *operands):
    """The C expression of function ``name`` for one element of (compute) dtype ``dtype``,
    its operands given as C expressions (each is parenthesised, and evaluated once where
    the formula reads it more than once only if it is cheap: helpers take the rest).
    Float expressions may call the functions of `c_prelude`.  NotImplementedError when
    the function has no C form for that dtype (no C library function, torch semantics C
    does not give, or a half dtype: compute those in float32)."""
    sf = get(name)
    if len(operands) != sf.arity:
        raise TypeError(f"{name} takes {sf.arity} operand(s), got {len(operands)}")
    dn = _dtype_name(dtype)
    t = _template(sf, dn) if dn in _CTYPES else None
    if t is None:
        raise NotImplementedError(f"scalar function {name!r} has no C form for {dn}")
    return CTemplate(t).substitute(_names(dn), **{str(i): f"({e})"
                                                   for i, e in enumerate(operands)})


def c_grad_expr(name, dtype, x):
    """The C expression of ``d name / dx`` at ``x`` (float32/float64), or
    NotImplementedError when the entry has none."""
    sf = get(name)
    dn = _dtype_name(dtype)
    if sf.c_grad is None or dn not in ("float32", "float64"):
        raise NotImplementedError(f"scalar function {name!r} has no C derivative for {dn}")
    return CTemplate(sf.c_grad).substitute(_names(dn), **{"0": f"({x})"})


_PRELUDE = []


def c_prelude():
    """The C every float expression may call: the vectorised polynomials, the NaN-aware
    min/max and every entry's helpers, for float and double."""
    if not _PRELUDE:
        parts = [_cmath.MATH]
        for s in ("f32", "f64"):
            parts.append(CTemplate(_cmath.TYPED).substitute(_NAMES[s]))
            for sf in TABLE.values():
                if sf.c_helper:
                    parts.append(CTemplate(sf.c_helper).substitute(_NAMES[s]) + "\n")
        _PRELUDE.append("".join(parts))
    return _PRELUDE[0]


def compute_dtype(name, *dtypes):
    """``(compute, result)`` NumPy dtypes of function ``name`` on tensors of ``dtypes``
    (all dimensioned; Python scalars do not decide them): the dtype its formula runs in
    and the dtype it returns, by the entry's rule (see the module docstring)."""
    sf = get(name)
    nps = [_np_dtype(d) for d in dtypes]
    rule = sf.rule
    if sf.name == "where":  # the condition does not take part in the promotion
        nps = nps[1:]
    promoted = _dt.result_type_of([(_dt.FROM_NP[d], 1) for d in nps], []).np
    kind = promoted.kind
    default = _dt.get_default_dtype().np
    half = _dt.FROM_NP[promoted].name in _HALVES
    if rule in ("predicate", "compare"):
        return (np.dtype(np.float32) if half else promoted), np.dtype(bool)
    if rule in ("float", "promote_float") and kind in "biu":
        return default, default
    if rule == "integral" and kind not in "biu":
        raise TypeError(f"{name} is defined for integer and bool dtypes only, not {promoted}")
    return (np.dtype(np.float32) if half else promoted), promoted
