"""NumPy's ufuncs on `NumpyArray`s (``__array_ufunc__``, so every operator too) as ember ops.

Dtypes follow NumPy, not torch: the loop comes from NumPy itself (``ufunc.resolve_dtypes``,
NEP 50: Python scalars are weak, NumPy scalars and 0-d arrays are not), the operands are
cast to the loop's dtypes before the ember op runs and the result to its output dtype.
Where ember's kernel means something else than NumPy's loop (integer division by zero,
complex orderings, integer reciprocals) the ufunc is computed NumPy's way or runs in NumPy.
``reduce``/``accumulate``/``outer`` of the common ufuncs map to their functions.
"""
import numpy as np

from .._core.tensor import Tensor
from .numpy_array import NumpyArray, tensor_meta
from .numpy_operands import (Fallback, EMBER_ERRORS, OUR_ERRORS, arr, dtype_of, rank_of, cast,
                             dtype_operand, scalar_tensor, finish, fallback, ember,
                             function_call)

__all__ = ["ufunc_call", "UFUNCS", "check_matmul"]


# ---- ufuncs ----------------------------------------------------------------------------
UFUNCS = {
    np.add: ember.add, np.subtract: ember.sub, np.multiply: ember.mul,
    np.true_divide: ember.div, np.floor_divide: ember.floor_divide,
    np.remainder: ember.remainder, np.fmod: ember.fmod, np.power: ember.pow,
    np.float_power: ember.float_power, np.maximum: ember.maximum, np.minimum: ember.minimum,
    np.fmax: ember.fmax, np.fmin: ember.fmin, np.exp: ember.exp, np.exp2: ember.exp2,
    np.log: ember.log, np.log2: ember.log2, np.log10: ember.log10, np.log1p: ember.log1p,
    np.expm1: ember.expm1, np.sqrt: ember.sqrt, np.square: ember.square,
    np.sin: ember.sin, np.cos: ember.cos, np.tan: ember.tan, np.arcsin: ember.asin,
    np.arccos: ember.acos, np.arctan: ember.atan, np.arctan2: ember.atan2,
    np.sinh: ember.sinh, np.cosh: ember.cosh, np.tanh: ember.tanh, np.arcsinh: ember.asinh,
    np.arccosh: ember.acosh, np.arctanh: ember.atanh, np.hypot: ember.hypot,
    np.absolute: ember.abs, np.fabs: ember.abs, np.negative: ember.neg,
    np.positive: ember.positive, np.sign: ember.sign, np.floor: ember.floor,
    np.ceil: ember.ceil, np.trunc: ember.trunc, np.rint: ember.round,
    np.logical_and: ember.logical_and, np.logical_or: ember.logical_or,
    np.logical_xor: ember.logical_xor, np.logical_not: ember.logical_not,
    np.bitwise_and: ember.bitwise_and, np.bitwise_or: ember.bitwise_or,
    np.bitwise_xor: ember.bitwise_xor, np.invert: ember.bitwise_not,
    np.left_shift: ember.bitwise_left_shift, np.right_shift: ember.bitwise_right_shift,
    np.equal: ember.eq, np.not_equal: ember.ne, np.less: ember.lt, np.less_equal: ember.le,
    np.greater: ember.gt, np.greater_equal: ember.ge, np.isnan: ember.isnan,
    np.isinf: ember.isinf, np.isfinite: ember.isfinite, np.copysign: ember.copysign,
    np.nextafter: ember.nextafter, np.logaddexp: ember.logaddexp,
    np.logaddexp2: ember.logaddexp2, np.heaviside: ember.heaviside, np.gcd: ember.gcd,
    np.lcm: ember.lcm, np.deg2rad: ember.deg2rad, np.rad2deg: ember.rad2deg,
    np.signbit: ember.signbit, np.matmul: ember.matmul,
    np.conjugate: lambda t: ember.conj(t).resolve_conj(),
    np.reciprocal: ember.reciprocal,
}
# ufuncs whose ember op takes a Python number operand (the others get 0-d tensors)
_SCALAR_OK = {np.add, np.subtract, np.multiply, np.true_divide, np.floor_divide, np.remainder,
              np.fmod, np.power, np.float_power, np.copysign, np.equal, np.not_equal,
              np.less, np.less_equal, np.greater, np.greater_equal, np.bitwise_and,
              np.bitwise_or, np.bitwise_xor, np.left_shift, np.right_shift}
# NumPy loops whose integer forms mean something else than ember's op
_FLOAT_ONLY = {np.reciprocal}
_LOOPS = {}  # (ufunc, operand dtypes, casting) -> the loop NumPy resolves
_BOOL_IDENTITY = {np.absolute, np.fabs, np.positive, np.floor, np.ceil, np.trunc}
# ember has no complex kernel for these (NumPy orders complex numbers lexicographically)
_NO_COMPLEX = {np.maximum, np.minimum, np.fmax, np.fmin, np.greater, np.greater_equal,
               np.less, np.less_equal, np.rint, np.sign}
# integer division by zero is 0 in NumPy (with a warning), an error in ember's kernels
_INT_DIVISION = {np.floor_divide, np.remainder, np.fmod}
_REDUCE = {np.add: np.sum, np.multiply: np.prod, np.maximum: np.max, np.minimum: np.min,
           np.logical_and: np.all, np.logical_or: np.any}
_ACCUMULATE = {np.add: np.cumsum, np.multiply: np.cumprod}


def ufunc_call(ufunc, method, inputs, kwargs):
    """``__array_ufunc__``: ``getattr(ufunc, method)(*inputs, **kwargs)``."""
    try:
        if method == "__call__":
            return _ufunc_apply(ufunc, inputs, dict(kwargs))
        if method == "reduce" and ufunc in _REDUCE and len(inputs) == 1:
            return function_call(_REDUCE[ufunc], inputs, {"axis": 0, **kwargs})
        if method == "accumulate" and ufunc in _ACCUMULATE and len(inputs) == 1:
            return function_call(_ACCUMULATE[ufunc], inputs, {"axis": 0, **kwargs})
        if method == "outer" and len(inputs) == 2 and not kwargs:
            a, b = arr(inputs[0]), arr(inputs[1])
            return ufunc(np.reshape(a, a.shape + (1,) * b.ndim), b)
        raise Fallback(f"np.{ufunc.__name__}.{method} is not captured")
    except Fallback as e:
        reason = str(e)
    except OUR_ERRORS:
        raise
    except EMBER_ERRORS as e:
        reason = f"np.{ufunc.__name__}: ember raised {type(e).__name__}: {e}"
    f = ufunc if method == "__call__" else getattr(ufunc, method)
    return fallback(f, inputs, kwargs, reason)


def _ufunc_apply(ufunc, inputs, kwargs):
    fn = UFUNCS.get(ufunc)
    if fn is None:
        raise Fallback(f"np.{ufunc.__name__} is not captured")
    out = dtype = None
    casting = "same_kind"
    if kwargs:
        out = kwargs.pop("out", None)
        dtype = kwargs.pop("dtype", None)
        casting = kwargs.pop("casting", "same_kind")
        kwargs.pop("order", None)
        kwargs.pop("subok", None)
        if kwargs.pop("where", True) is not True or kwargs:
            raise Fallback(f"np.{ufunc.__name__} with {sorted(kwargs) or ['where']}")
    operands, dts = [], []
    n_tensors = 0
    for x in inputs:
        tx = type(x)
        if tx is NumpyArray:
            t = x._t
            operands.append(t)
            dts.append(dtype_of(t))
            n_tensors += 1
        elif tx is float or tx is int or tx is complex:  # weak: the ember op takes it as is
            operands.append(x)
            dts.append(tx)
        elif isinstance(x, Tensor):
            # an ember Tensor among the operands: ember's (torch's) semantics, a Tensor
            return fn(*[y._t if type(y) is NumpyArray else y for y in inputs])
        elif isinstance(x, np.generic) or tx is bool:  # a strong scalar
            operands.append(x.item() if tx is not bool else x)
            dts.append(dtype_operand(x))
        else:
            t = arr(x)._t
            operands.append(t)
            dts.append(dtype_of(t))
            n_tensors += 1
    sig = tuple(dts) + ((np.dtype(dtype) if dtype is not None else None),) * ufunc.nout
    key = (ufunc, sig, casting)
    loop = _LOOPS.get(key)
    if loop is None:
        loop = _LOOPS[key] = ufunc.resolve_dtypes(sig, casting=casting)
        if ufunc in _FLOAT_ONLY and loop[0].kind not in "fc" or \
                ufunc in _NO_COMPLEX and loop[0].kind == "c":
            del _LOOPS[key]
            raise Fallback(f"np.{ufunc.__name__} on {loop[0]}")
    if ufunc in _BOOL_IDENTITY and loop[0] == np.bool_:
        fn = ember.clone
    scalars_ok = n_tensors and ufunc in _SCALAR_OK
    args = []
    for x, d in zip(operands, loop):
        if isinstance(x, Tensor):
            args.append(x if dtype_of(x) == d else cast(x, d))
        else:
            if type(x) is bool and d != np.bool_:  # True - x: NumPy computes 1 - x
                x = d.type(x).item()
            args.append(x if scalars_ok else scalar_tensor(x, d))
    if ufunc is np.matmul:
        check_matmul(tensor_meta(args[0])[0], tensor_meta(args[1])[0])
    if ufunc in _INT_DIVISION and loop[1].kind in "biu":
        res = _int_division(fn, args[0], args[1], loop[1])
    else:
        res = fn(*args)
    if ufunc.nout == 1:
        r = res if dtype_of(res) == loop[-1] else cast(res, loop[-1])
        if out is not None:
            return finish(r, out=out)
        return NumpyArray(r, rank_of(r) == 0)
    results = [cast(r, d) for r, d in zip(res, loop[ufunc.nin:])]
    if out is not None:
        if len(out) != len(results):
            raise Fallback("out= of another length")
        return tuple(finish(r, out=o) for r, o in zip(results, out))
    return tuple(NumpyArray(r, rank_of(r) == 0) for r in results)


def check_matmul(sa, sb):
    """ember's matmul checks its inner sizes only when the graph runs: NumPy raises here."""
    if not sa or not sb or sa[-1] != (sb[-2] if len(sb) > 1 else sb[0]):
        raise Fallback("matrix product of mismatched shapes")


def _int_division(fn, a, b, dtype):
    """``fn(a, b)`` on integers with NumPy's 0 where ``b`` is 0."""
    if not isinstance(b, Tensor):
        if b != 0:
            return fn(a, b)
        b = scalar_tensor(b, dtype)
    zero = ember.eq(b, 0)
    r = fn(a, ember.where(zero, scalar_tensor(1, dtype), b))
    return ember.where(zero, scalar_tensor(0, dtype_of(r)), r)
