"""NumPy's functions and ufuncs on `NumpyArray`s, as ember ops the capture session records.

Dtypes follow NumPy, not torch: a ufunc's loop comes from NumPy itself
(``ufunc.resolve_dtypes``, NEP 50: Python scalars are weak, NumPy scalars and 0-d arrays are
not); the operands are cast to the loop's dtypes before the ember op runs and the result to
its output dtype.  Reductions ask NumPy for their result dtype on a one-element array of the
input's dtype and rank (``sum`` of int32 is int64, ``mean`` of ints is float64), other
functions use ``np.result_type``.  Whatever has no mapping here, or an argument form a
handler does not take, is a graph break: the pending graph runs, real NumPy runs the call on
the real arrays, and its array results are wrapped again (zero-copy) for the next graph.  An
ember error inside a handler falls back the same way, so NumPy, not ember, raises the user's
errors.
"""
import operator
import sys
import warnings

import numpy as np

from .. import linalg as _linalg
from .. import ops as _ops
from .._core import dtype as _dt
from .._core.tensor import Tensor
from .exc import BackendCompilerFailed, RecompileLimitExceeded, Unsupported
from . import numpy_array as _numpy_array
from .numpy_array import NumpyArray, tensor_meta
from .session import current_session

__all__ = ["ufunc_call", "function_call", "ember_function_call", "getitem", "setitem",
           "astype", "real_array", "real_attribute", "HANDLERS", "UFUNCS"]


class _Ember:
    """ember's public functions (``ember.add`` ...), reached from the layers below."""
    linalg = _linalg

    def __getattr__(self, name):
        f = getattr(_ops, name, None)
        if f is None:
            from ..ops import surface_extras
            f = getattr(surface_extras, name)
        return f


ember = _Ember()


class _Fallback(Exception):
    """This call is not captured: real NumPy runs it (the message is the reason)."""


# errors of ember that mean "NumPy should answer this", not "compilation failed"
_EMBER_ERRORS = (TypeError, ValueError, RuntimeError, IndexError, NotImplementedError)
_OUR_ERRORS = (Unsupported, BackendCompilerFailed, RecompileLimitExceeded)
_NO = object()


# ---- operands ------------------------------------------------------------------------
def _supported(dtype):
    return dtype in _dt.FROM_NP


def _from_real(a):
    """A real ndarray met inside the program (a constant, a global, a fallback's input):
    writable ones are copied, so a later NumPy write to them cannot reach the pending graph."""
    if not _supported(a.dtype):
        raise _Fallback(f"an array of dtype {a.dtype}")
    return ember.from_numpy(a.copy() if a.flags.writeable else a)


def arr(x):
    """``x`` (array_like) as a NumpyArray."""
    if type(x) is NumpyArray:
        return x
    if isinstance(x, Tensor):
        return NumpyArray(x)
    if type(x) is not np.ndarray:
        x = np.asarray(x)
        if type(x) is not np.ndarray:
            raise _Fallback(f"an operand of type {type(x).__name__}")
    return NumpyArray(_from_real(x))


def _np_dtype(t):
    return tensor_meta(t)[1]


def _rank(t):
    return len(tensor_meta(t)[0])


def cast(t, dtype):
    """``t`` converted to NumPy dtype ``dtype`` (recorded), or ``t`` when it already is."""
    dtype = np.dtype(dtype)
    if _np_dtype(t) == dtype:
        return t
    if not _supported(dtype):
        raise _Fallback(f"dtype {dtype}")
    return t.to(_dt.FROM_NP[dtype])


def _dtype_operand(x):
    """What ``np.result_type``/``resolve_dtypes`` should see for ``x`` (Python scalars weak)."""
    if type(x) is NumpyArray or type(x) is np.ndarray or isinstance(x, np.generic):
        return x.dtype
    if type(x) in (int, float, complex):
        return x
    if type(x) is bool:
        return np.dtype(bool)
    if isinstance(x, Tensor):
        return _np_dtype(x)
    return np.asarray(x).dtype


def _result_type(*xs):
    return np.result_type(*[_dtype_operand(x) for x in xs if x is not None])


def _scalar_tensor(value, dtype):
    return ember.full((), value, dtype=_dt.FROM_NP[np.dtype(dtype)])


def _operand_tensor(x, dtype):
    """Operand ``x`` (array or scalar) as a tensor of NumPy dtype ``dtype``."""
    if type(x) in (int, float, complex, bool) or isinstance(x, np.generic):
        return _scalar_tensor(x.item() if isinstance(x, np.generic) else x, dtype)
    return cast(arr(x)._t, dtype)


def _dims(axis, ndim):
    """NumPy's ``axis`` as ember's ``dim``: None, or a tuple of dims."""
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        return tuple(operator.index(a) for a in axis)
    return (operator.index(axis),)


def _finish(t, scalar=False, out=None):
    """Wrap result ``t``; with ``out``, write it there (recorded) and return ``out``."""
    if out is not None:
        if type(out) is tuple and len(out) == 1:
            out = out[0]
        if type(out) is not NumpyArray:
            raise _Fallback("out= that is not an array of this program")
        if not np.can_cast(_np_dtype(t), out.dtype, "same_kind"):
            raise _Fallback("out= of another kind")
        out._t.copy_(t)
        return out
    return NumpyArray(t, scalar)


# ---- leaving the graph -------------------------------------------------------------
def real_array(a, reason=None):
    """The real ndarray of NumpyArray ``a``.  ``reason``: log a graph break (the value
    leaves the graph); without one this is a plain flush, as reading a tensor's value is."""
    s = current_session()
    if reason is not None and s is not None and s.trace is not None:
        s.graph_break(reason)
    d = a._t._data
    if type(d) is not np.ndarray:
        d = d.__ember_array__()
    return d


def _to_real(x):
    if type(x) is NumpyArray:
        a = real_array(x)
        return a[()] if x.scalar else a
    if type(x) in (list, tuple):
        return type(x)(_to_real(i) for i in x)
    if type(x) is dict:
        return {k: _to_real(v) for k, v in x.items()}
    return x


def rewrap(x):
    """Results of real NumPy as values of this program (arrays zero-copy)."""
    if type(x) is np.ndarray:
        return NumpyArray(ember.from_numpy(x)) if _supported(x.dtype) else x
    if type(x) in (list, tuple):
        return type(x)(rewrap(i) for i in x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # namedtuple results (EigResult)
        return type(x)(*[rewrap(i) for i in x])
    return x


def _fallback(func, args, kwargs, reason):
    s = current_session()
    if s is not None:
        s.graph_break(reason)
    return rewrap(func(*_to_real(args), **_to_real(kwargs)))


def _name(func):
    mod = getattr(func, "__module__", None) or "numpy"
    mod = "np" if mod in ("numpy", "numpy._core.multiarray") else mod.replace("numpy.", "np.")
    return f"{mod}.{getattr(func, '__name__', func)}"


def real_attribute(a, name):
    """``a.name`` for an ndarray attribute this module does not capture."""
    real = real_array(a, f"ndarray.{name} is not captured")
    value = getattr(real, name)
    if callable(value):
        def method(*args, **kwargs):
            return rewrap(value(*_to_real(args), **_to_real(kwargs)))
        return method
    return rewrap(value)


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
        raise _Fallback(f"np.{ufunc.__name__}.{method} is not captured")
    except _Fallback as e:
        reason = str(e)
    except _OUR_ERRORS:
        raise
    except _EMBER_ERRORS as e:
        reason = f"np.{ufunc.__name__}: ember raised {type(e).__name__}: {e}"
    f = ufunc if method == "__call__" else getattr(ufunc, method)
    return _fallback(f, inputs, kwargs, reason)


def _ufunc_apply(ufunc, inputs, kwargs):
    fn = UFUNCS.get(ufunc)
    if fn is None:
        raise _Fallback(f"np.{ufunc.__name__} is not captured")
    out = dtype = None
    casting = "same_kind"
    if kwargs:
        out = kwargs.pop("out", None)
        dtype = kwargs.pop("dtype", None)
        casting = kwargs.pop("casting", "same_kind")
        kwargs.pop("order", None)
        kwargs.pop("subok", None)
        if kwargs.pop("where", True) is not True or kwargs:
            raise _Fallback(f"np.{ufunc.__name__} with {sorted(kwargs) or ['where']}")
    operands, dts = [], []
    n_tensors = 0
    for x in inputs:
        tx = type(x)
        if tx is NumpyArray:
            t = x._t
            operands.append(t)
            dts.append(_np_dtype(t))
            n_tensors += 1
        elif tx is float or tx is int or tx is complex:  # weak: the ember op takes it as is
            operands.append(x)
            dts.append(tx)
        elif isinstance(x, Tensor):
            # an ember Tensor among the operands: ember's (torch's) semantics, a Tensor
            return fn(*[y._t if type(y) is NumpyArray else y for y in inputs])
        elif isinstance(x, np.generic) or tx is bool:  # a strong scalar
            operands.append(x.item() if tx is not bool else x)
            dts.append(_dtype_operand(x))
        else:
            t = arr(x)._t
            operands.append(t)
            dts.append(_np_dtype(t))
            n_tensors += 1
    sig = tuple(dts) + ((np.dtype(dtype) if dtype is not None else None),) * ufunc.nout
    key = (ufunc, sig, casting)
    loop = _LOOPS.get(key)
    if loop is None:
        loop = _LOOPS[key] = ufunc.resolve_dtypes(sig, casting=casting)
        if ufunc in _FLOAT_ONLY and loop[0].kind not in "fc" or \
                ufunc in _NO_COMPLEX and loop[0].kind == "c":
            del _LOOPS[key]
            raise _Fallback(f"np.{ufunc.__name__} on {loop[0]}")
    if ufunc in _BOOL_IDENTITY and loop[0] == np.bool_:
        fn = ember.clone
    scalars_ok = n_tensors and ufunc in _SCALAR_OK
    args = []
    for x, d in zip(operands, loop):
        if isinstance(x, Tensor):
            args.append(x if _np_dtype(x) == d else cast(x, d))
        else:
            if type(x) is bool and d != np.bool_:  # True - x: NumPy computes 1 - x
                x = d.type(x).item()
            args.append(x if scalars_ok else _scalar_tensor(x, d))
    if ufunc is np.matmul:
        _check_matmul(tensor_meta(args[0])[0], tensor_meta(args[1])[0])
    if ufunc in _INT_DIVISION and loop[1].kind in "biu":
        res = _int_division(fn, args[0], args[1], loop[1])
    else:
        res = fn(*args)
    if ufunc.nout == 1:
        r = res if _np_dtype(res) == loop[-1] else cast(res, loop[-1])
        if out is not None:
            return _finish(r, out=out)
        return NumpyArray(r, _rank(r) == 0)
    results = [cast(r, d) for r, d in zip(res, loop[ufunc.nin:])]
    if out is not None:
        if len(out) != len(results):
            raise _Fallback("out= of another length")
        return tuple(_finish(r, out=o) for r, o in zip(results, out))
    return tuple(NumpyArray(r, _rank(r) == 0) for r in results)


def _int_division(fn, a, b, dtype):
    """``fn(a, b)`` on integers with NumPy's 0 where ``b`` is 0."""
    if not isinstance(b, Tensor):
        if b != 0:
            return fn(a, b)
        b = _scalar_tensor(b, dtype)
    zero = ember.eq(b, 0)
    r = fn(a, ember.where(zero, _scalar_tensor(1, dtype), b))
    return ember.where(zero, _scalar_tensor(0, _np_dtype(r)), r)


# ---- NumPy functions -------------------------------------------------------------------
HANDLERS = {}


def handles(*funcs):
    def register(h):
        for f in funcs:
            HANDLERS[f] = h
        return h
    return register


def function_call(func, args, kwargs):
    """``__array_function__``: ``func(*args, **kwargs)``."""
    h = HANDLERS.get(func)
    if h is None:
        reason = f"{_name(func)} is not captured"
    else:
        try:
            return h(*args, **kwargs)
        except _Fallback as e:
            reason = f"{_name(func)}: {e}"
        except _OUR_ERRORS:
            raise
        except _EMBER_ERRORS as e:
            reason = f"{_name(func)}: ember raised {type(e).__name__}: {e}"
    return _fallback(func, args, kwargs, reason)


def _meta(func, a, **kwargs):
    """(dtype, is a NumPy scalar) of ``func`` on an array like ``a``, asked of NumPy on a
    one-element array of the same dtype and rank (it also validates axis and dtype)."""
    try:
        key = (func, a.dtype, a.ndim, tuple(kwargs.items()))
        hit = _METAS.get(key)
    except TypeError:  # an unhashable argument (a list of axes)
        key = hit = None
    if hit is not None:
        return hit
    dummy = np.ones((1,) * a.ndim, dtype=a.dtype)
    with warnings.catch_warnings():  # ddof=1 of one element warns; only the dtype counts
        warnings.simplefilter("ignore")
        r = func(dummy, **kwargs)
    hit = np.asarray(r).dtype, isinstance(r, np.generic)
    if key is not None:
        _METAS[key] = hit
    return hit


_METAS = {}  # (func, dtype, rank, kwargs) -> what `_meta` found


def _no_complex(a):
    """ember's orderings and variances have no complex kernels (NumPy orders complex
    numbers lexicographically): real NumPy answers."""
    if a.dtype.kind == "c":
        raise _Fallback("complex numbers")


def _reduction(func, compute, cast_input=True, takes_dtype=True, real_only=False):
    def handler(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True,
                initial=_NO, **extra):
        if where is not True or initial is not _NO:
            raise _Fallback("where= or initial=")
        a = arr(a)
        if real_only:
            _no_complex(a)
        kw = dict(axis=axis, keepdims=keepdims, **extra)
        if takes_dtype:
            kw["dtype"] = dtype
        elif dtype is not None:
            raise TypeError(f"{func.__name__}() got an unexpected keyword argument 'dtype'")
        rdtype, scalar = _meta(func, a, **kw)
        t = cast(a._t, rdtype) if cast_input else a._t
        dims = _dims(axis, a.ndim)
        if dims is None and keepdims:
            dims = tuple(range(a.ndim))
        r = compute(t, dims, bool(keepdims), **extra) if a.ndim else compute(t, None, False,
                                                                               **extra)
        return _finish(cast(r, rdtype), scalar, out)
    return handler


def _prod(t, dims, keep):
    if dims is None:
        return ember.prod(t)
    for d in sorted((d % t.dim() for d in dims), reverse=True):
        t = ember.prod(t, d, keepdim=keep)
    return t


def _minmax(op):
    def compute(t, dims, keep):
        return op(t, dim=dims if dims is not None else tuple(range(t.dim())), keepdim=keep)
    return compute


def _var(op):
    def compute(t, dims, keep, ddof=0):
        return op(t, dim=dims, correction=ddof, keepdim=keep)
    return compute


HANDLERS[np.sum] = _reduction(np.sum, lambda t, d, k: ember.sum(t, dim=d, keepdim=k))
HANDLERS[np.mean] = _reduction(np.mean, lambda t, d, k: ember.mean(t, dim=d, keepdim=k))
HANDLERS[np.prod] = _reduction(np.prod, _prod)
HANDLERS[np.max] = HANDLERS[np.amax] = _reduction(np.max, _minmax(ember.amax), False, False,
                                                  True)
HANDLERS[np.min] = HANDLERS[np.amin] = _reduction(np.min, _minmax(ember.amin), False, False,
                                                  True)
HANDLERS[np.all] = _reduction(np.all, lambda t, d, k: ember.all(t, dim=d, keepdim=k), False,
                              False)
HANDLERS[np.any] = _reduction(np.any, lambda t, d, k: ember.any(t, dim=d, keepdim=k), False,
                              False)
HANDLERS[np.std] = _reduction(np.std, _var(ember.std), real_only=True)
HANDLERS[np.var] = _reduction(np.var, _var(ember.var), real_only=True)


def _quantile_of(func, a, q, axis, keepdims, scale, method="linear", **unsupported):
    if unsupported or method != "linear" or not isinstance(q, (int, float, np.floating,
                                                                np.integer)):
        raise _Fallback("only a scalar q with linear interpolation is captured")
    a = arr(a)
    if isinstance(axis, (tuple, list)) or a.dtype.kind in "cb":
        raise _Fallback("several axes or complex numbers")
    rdtype, scalar = _meta(func, a, **({"q": q} if func is not np.median else {}),
                           axis=axis, keepdims=keepdims)
    t = cast(a._t, rdtype if rdtype.kind == "f" else np.float64)
    if axis is None:
        r = ember.quantile(t.reshape(-1), float(q) / scale, dim=0)
        if keepdims:
            r = r.reshape((1,) * a.ndim)
    else:
        r = ember.quantile(t, float(q) / scale, dim=operator.index(axis),
                           keepdim=bool(keepdims))
    return NumpyArray(cast(r, rdtype), scalar)


@handles(np.median)
def _median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    if out is not None:
        raise _Fallback("out=")
    return _quantile_of(np.median, a, 0.5, axis, keepdims, 1)


@handles(np.percentile)
def _percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, **kw):
    if out is not None:
        raise _Fallback("out=")
    return _quantile_of(np.percentile, a, q, axis, keepdims, 100, method, **kw)


@handles(np.quantile)
def _quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
              keepdims=False, **kw):
    if out is not None:
        raise _Fallback("out=")
    return _quantile_of(np.quantile, a, q, axis, keepdims, 1, method, **kw)


@handles(np.average)
def _average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    if weights is not None or returned:
        raise _Fallback("average with weights")
    return np.mean(a, axis=axis, keepdims=keepdims)


@handles(np.ptp)
def _ptp(a, axis=None, out=None, keepdims=False):
    return np.subtract(np.max(a, axis=axis, keepdims=keepdims),
                       np.min(a, axis=axis, keepdims=keepdims), out=out)


@handles(np.count_nonzero)
def _count_nonzero(a, axis=None, *, keepdims=False):
    if axis is None and not keepdims:
        raise _Fallback("count_nonzero of the whole array (a Python int)")
    return np.sum(np.not_equal(a, 0), axis=axis, keepdims=keepdims, dtype=np.intp)


def _arg_reduction(func, op):
    @handles(func)
    def handler(a, axis=None, out=None, *, keepdims=False):
        a = arr(a)
        _no_complex(a)
        rdtype, scalar = _meta(func, a, axis=axis, keepdims=keepdims)
        if axis is None:
            r = op(a._t.reshape(-1), 0)
            if keepdims:
                r = r.reshape((1,) * a.ndim)
        else:
            r = op(a._t, operator.index(axis), keepdim=bool(keepdims))
        return _finish(cast(r, rdtype), scalar, out)


_arg_reduction(np.argmax, ember.argmax)
_arg_reduction(np.argmin, ember.argmin)


def _cumulative(func, op):
    @handles(func)
    def handler(a, axis=None, dtype=None, out=None):
        a = arr(a)
        rdtype, _ = _meta(func, a, axis=axis, dtype=dtype)
        t = cast(a._t, rdtype)
        if axis is None:
            t, axis = t.reshape(-1), 0
        return _finish(cast(op(t, operator.index(axis)), rdtype), False, out)


_cumulative(np.cumsum, ember.cumsum)
_cumulative(np.cumprod, ember.cumprod)


# ---- elementwise functions that are not ufuncs ----------------------------------------
@handles(np.where)
def _where(condition, x=_NO, y=_NO):
    if x is _NO or y is _NO:
        raise _Fallback("np.where with one argument (data-dependent shape)")
    rdtype = _result_type(x, y)
    c = cast(arr(condition)._t, np.bool_)
    return NumpyArray(ember.where(c, _operand_tensor(x, rdtype), _operand_tensor(y, rdtype)))


@handles(np.clip)
def _clip(a, a_min=_NO, a_max=_NO, out=None, *, min=_NO, max=_NO, **kwargs):
    if kwargs:
        raise _Fallback(f"np.clip with {sorted(kwargs)}")
    lo = a_min if a_min is not _NO else (min if min is not _NO else None)
    hi = a_max if a_max is not _NO else (max if max is not _NO else None)
    r = arr(a)
    if lo is not None:
        r = np.maximum(r, lo)
    if hi is not None:
        r = np.minimum(r, hi)
    if out is not None:
        return _finish(r._t, False, out)
    return NumpyArray(r._t)


@handles(np.round, np.around)
def _round(a, decimals=0, out=None):
    a = arr(a)
    if a.dtype == np.bool_:
        raise _Fallback("rounding booleans")
    if a.dtype.kind in "biu":
        if decimals < 0:
            raise _Fallback("rounding integers to negative decimals")
        return _finish(ember.clone(a._t), a.scalar, out)
    if a.dtype.kind == "c":
        raise _Fallback("rounding complex numbers")
    return _finish(ember.round(a._t, decimals=operator.index(decimals)), a.scalar, out)


@handles(np.isclose)
def _isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    rdtype = _result_type(a, b)
    if rdtype.kind not in "fc":
        rdtype = np.dtype(np.float64)
    r = ember.isclose(_operand_tensor(a, rdtype), _operand_tensor(b, rdtype), rtol=rtol,
                      atol=atol, equal_nan=equal_nan)
    return NumpyArray(r, _rank(r) == 0)


@handles(np.allclose)
def _allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(np.all(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


@handles(np.nan_to_num)
def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = arr(x)
    if not copy:
        raise _Fallback("nan_to_num in place")
    if x.dtype.kind not in "fc":
        return NumpyArray(ember.clone(x._t), x.scalar)
    if x.dtype.kind == "c":
        raise _Fallback("nan_to_num of complex numbers")
    return NumpyArray(ember.nan_to_num(x._t, nan=nan, posinf=posinf, neginf=neginf), x.scalar)


@handles(np.real)
def _real(val):
    a = arr(val)
    return NumpyArray(ember.real(a._t), a.scalar) if a.dtype.kind == "c" else a


@handles(np.imag)
def _imag(val):
    a = arr(val)
    if a.dtype.kind == "c":
        return NumpyArray(ember.imag(a._t), a.scalar)
    return NumpyArray(ember.zeros_like(a._t), a.scalar)


@handles(np.copy)
def _copy(a, order="K", subok=False):
    a = arr(a)
    return NumpyArray(ember.clone(a._t), False)


def _like(fill):
    def handler(a, dtype=None, order="K", subok=True, shape=None, *, device=None, **kw):
        a = arr(a)
        d = np.dtype(dtype) if dtype is not None else a.dtype
        if not _supported(d):
            raise _Fallback(f"dtype {d}")
        shape = a.shape if shape is None else (
            (shape,) if isinstance(shape, int) else tuple(shape))
        value = fill(kw)
        return NumpyArray(ember.full(shape, value, dtype=_dt.FROM_NP[d]))
    return handler


HANDLERS[np.zeros_like] = _like(lambda kw: 0)
HANDLERS[np.empty_like] = _like(lambda kw: 0)
HANDLERS[np.ones_like] = _like(lambda kw: 1)


@handles(np.full_like)
def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    if not isinstance(fill_value, (int, float, complex, bool, np.generic)):
        raise _Fallback("full_like with an array fill value")
    return _like(lambda kw: fill_value)(a, dtype, order, subok, shape)


@handles(np.shape)
def _shape(a):
    return arr(a).shape


@handles(np.ndim)
def _ndim(a):
    return arr(a).ndim


@handles(np.size)
def _size(a, axis=None):
    a = arr(a)
    return a.size if axis is None else a.shape[axis]


@handles(np.result_type)
def _result_type_handler(*arrays_and_dtypes):
    return np.result_type(*[x.dtype if type(x) is NumpyArray else x
                            for x in arrays_and_dtypes])


# ---- shape and movement --------------------------------------------------------------
@handles(np.reshape)
def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    shape = newshape if shape is None else shape
    if order != "C" or copy is False:
        raise _Fallback(f"reshape with order={order!r}, copy={copy!r}")
    a = arr(a)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    r = ember.reshape(a._t, shape)
    return NumpyArray(ember.clone(r) if copy else r)


@handles(np.ravel)
def _ravel(a, order="C"):
    if order not in ("C", "K", "A"):
        raise _Fallback(f"ravel with order={order!r}")
    return NumpyArray(ember.reshape(arr(a)._t, (-1,)))


@handles(np.transpose)
def _transpose(a, axes=None):
    a = arr(a)
    axes = tuple(reversed(range(a.ndim))) if axes is None else tuple(axes)
    if sorted(x % a.ndim if a.ndim else x for x in axes) != list(range(a.ndim)):
        raise _Fallback("axes don't match array")
    return NumpyArray(ember.permute(a._t, axes))


@handles(np.swapaxes)
def _swapaxes(a, axis1, axis2):
    return NumpyArray(ember.transpose(arr(a)._t, axis1, axis2))


@handles(np.moveaxis)
def _moveaxis(a, source, destination):
    return NumpyArray(ember.moveaxis(arr(a)._t, source, destination))


@handles(np.expand_dims)
def _expand_dims(a, axis):
    a = arr(a)
    axes = _dims(axis, a.ndim)
    nd = a.ndim + len(axes)
    axes = sorted(x % nd for x in axes)
    if len(set(axes)) != len(axes):
        raise _Fallback("repeated axis")
    t = a._t
    for x in axes:
        t = ember.unsqueeze(t, x)
    return NumpyArray(t)


@handles(np.squeeze)
def _squeeze(a, axis=None):
    a = arr(a)
    if axis is None:
        return NumpyArray(ember.squeeze(a._t))
    dims = _dims(axis, a.ndim)
    if any(a.shape[d] != 1 for d in dims):
        raise _Fallback("squeezing an axis whose size is not 1")
    t = a._t
    for d in sorted((d % a.ndim for d in dims), reverse=True):
        t = ember.squeeze(t, d)
    return NumpyArray(t)


def _arrays(arrays, dtype=None):
    arrays = [arr(x) for x in arrays]
    if not arrays:
        raise _Fallback("no arrays")
    rdtype = np.dtype(dtype) if dtype is not None else np.result_type(*[x.dtype for x in
                                                                        arrays])
    return arrays, [cast(x._t, rdtype) for x in arrays]


@handles(np.concatenate)
def _concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _, ts = _arrays(arrays, dtype)
    if axis is None:
        ts, axis = [t.reshape(-1) for t in ts], 0
    if any(_rank(t) == 0 for t in ts):
        raise _Fallback("zero-dimensional arrays cannot be concatenated")
    return _finish(ember.cat(ts, dim=operator.index(axis)), False, out)


@handles(np.stack)
def _stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _, ts = _arrays(arrays, dtype)
    return _finish(ember.stack(ts, dim=operator.index(axis)), False, out)


@handles(np.vstack)
def _vstack(tup, *, dtype=None, casting="same_kind"):
    _, ts = _arrays(tup, dtype)
    ts = [t.reshape(1, -1) if _rank(t) < 2 else t for t in ts]
    return NumpyArray(ember.cat(ts, dim=0))


@handles(np.hstack)
def _hstack(tup, *, dtype=None, casting="same_kind"):
    _, ts = _arrays(tup, dtype)
    ts = [t.reshape(-1) if _rank(t) == 0 else t for t in ts]
    return NumpyArray(ember.cat(ts, dim=0 if _rank(ts[0]) == 1 else 1))


@handles(np.broadcast_to)
def _broadcast_to(array, shape, subok=False):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return NumpyArray(ember.broadcast_to(arr(array)._t, shape))


@handles(np.flip)
def _flip(m, axis=None):
    m = arr(m)
    dims = _dims(axis, m.ndim)
    return NumpyArray(ember.flip(m._t, dims if dims is not None else tuple(range(m.ndim))))


@handles(np.roll)
def _roll(a, shift, axis=None):
    a = arr(a)
    if axis is None:
        return NumpyArray(ember.roll(a._t.reshape(-1), shift, 0).reshape(a.shape))
    return NumpyArray(ember.roll(a._t, shift, axis))


@handles(np.repeat)
def _repeat(a, repeats, axis=None):
    if not isinstance(repeats, (int, np.integer)):
        raise _Fallback("repeats given per element")
    a = arr(a)
    t = a._t if axis is not None else a._t.reshape(-1)
    return NumpyArray(ember.repeat_interleave(t, int(repeats), dim=0 if axis is None else axis))


@handles(np.tile)
def _tile(A, reps):
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    a = arr(A)
    t = a._t
    if len(reps) > a.ndim:
        t = t.reshape((1,) * (len(reps) - a.ndim) + a.shape)
    return NumpyArray(ember.tile(t, reps))


def _atleast(nd):
    def handler(*arys):
        out = []
        for a in arys:
            a = arr(a)
            t = a._t
            if a.ndim < nd:
                shape = {0: (1,) * nd, 1: (1,) + a.shape + (1,) * (nd - 2)}.get(
                    a.ndim, a.shape + (1,))
                t = t.reshape(shape[:nd] if a.ndim == 0 else shape)
            out.append(NumpyArray(t))
        return out[0] if len(out) == 1 else tuple(out)
    return handler


HANDLERS[np.atleast_1d] = _atleast(1)
HANDLERS[np.atleast_2d] = _atleast(2)
HANDLERS[np.atleast_3d] = _atleast(3)


@handles(np.column_stack)
def _column_stack(tup):
    _, ts = _arrays(tup)
    return NumpyArray(ember.cat([t.reshape(-1, 1) if _rank(t) < 2 else t for t in ts], dim=1))


@handles(np.meshgrid)
def _meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if sparse or indexing not in ("xy", "ij"):
        raise _Fallback("sparse meshgrid")
    _, ts = _arrays(xi)
    grids = ember.meshgrid(*[t.reshape(-1) for t in ts], indexing=indexing)
    return tuple(NumpyArray(ember.clone(g) if copy else g) for g in grids)


@handles(np.split, np.array_split)
def _split(ary, indices_or_sections, axis=0):
    a = arr(ary)
    if isinstance(indices_or_sections, (int, np.integer)) and \
            a.shape[axis] % int(indices_or_sections):
        raise _Fallback("array split does not result in an equal division")
    if not isinstance(indices_or_sections, (int, np.integer)):
        indices_or_sections = [int(i) for i in indices_or_sections]
    return [NumpyArray(t) for t in ember.tensor_split(a._t, indices_or_sections, dim=axis)]


@handles(np.diagonal)
def _diagonal(a, offset=0, axis1=0, axis2=1):
    return NumpyArray(ember.diagonal(arr(a)._t, offset, axis1, axis2))


@handles(np.diag)
def _diag(v, k=0):
    v = arr(v)
    if v.ndim not in (1, 2):
        raise _Fallback("diag of an array that is not 1-d or 2-d")
    return NumpyArray(ember.diag(v._t, k))


@handles(np.tril)
def _tril(m, k=0):
    return NumpyArray(ember.tril(arr(m)._t, k))


@handles(np.triu)
def _triu(m, k=0):
    return NumpyArray(ember.triu(arr(m)._t, k))


@handles(np.trace)
def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    a = arr(a)
    rdtype, scalar = _meta(np.trace, a, offset=0, axis1=axis1, axis2=axis2, dtype=dtype)
    d = ember.diagonal(cast(a._t, rdtype), offset, axis1, axis2)
    return _finish(cast(ember.sum(d, dim=-1), rdtype), scalar, out)


@handles(np.diff)
def _diff(a, n=1, axis=-1, prepend=_NO, append=_NO):
    a = arr(a)
    if prepend is not _NO or append is not _NO or a.dtype == np.bool_:
        raise _Fallback("diff with prepend/append or of booleans")
    return NumpyArray(ember.diff(a._t, n=n, dim=axis))


# ---- sorting and gathering -------------------------------------------------------------
@handles(np.sort)
def _sort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        raise _Fallback("sort with order=")
    a = arr(a)
    _no_complex(a)
    t = a._t if axis is not None else a._t.reshape(-1)
    return NumpyArray(ember.sort(t, dim=-1 if axis is None else axis, stable=True)[0])


@handles(np.argsort)
def _argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        raise _Fallback("argsort with order=")
    a = arr(a)
    _no_complex(a)
    t = a._t if axis is not None else a._t.reshape(-1)
    return NumpyArray(ember.argsort(t, dim=-1 if axis is None else axis, stable=True))


@handles(np.take_along_axis)
def _take_along_axis(arr_, indices, axis=-1):
    a, i = arr(arr_), arr(indices)
    if axis is None:
        return NumpyArray(ember.take_along_dim(a._t.reshape(-1), i._t, 0))
    axis = operator.index(axis) % max(a.ndim, 1)
    if i.ndim == a.ndim and all(x == y for d, (x, y) in enumerate(zip(i.shape, a.shape))
                                if d != axis):
        # no broadcasting needed: a gather (whose graphs stay symbolic in the sizes)
        return NumpyArray(ember.gather(a._t, axis, i._t))
    return NumpyArray(ember.take_along_dim(a._t, i._t, axis))


@handles(np.take)
def _take(a, indices, axis=None, out=None, mode="raise"):
    if mode != "raise":
        raise _Fallback(f"take with mode={mode!r}")
    a = arr(a)
    scalar = isinstance(indices, (int, np.integer))
    idx = indices if scalar else arr(indices)._t
    if axis is None:
        r = a._t.reshape(-1)[idx]
    else:
        axis = operator.index(axis) % a.ndim
        r = a._t[(slice(None),) * axis + (idx,)]
    return _finish(r, scalar and axis is None, out)


# ---- linear algebra --------------------------------------------------------------------
def _check_matmul(sa, sb):
    """ember's matmul checks its inner sizes only when the graph runs: NumPy raises here."""
    if not sa or not sb or sa[-1] != (sb[-2] if len(sb) > 1 else sb[0]):
        raise _Fallback("matrix product of mismatched shapes")


def _matmul_operands(a, b):
    a, b = arr(a), arr(b)
    rdtype = np.result_type(a.dtype, b.dtype)
    if rdtype == np.bool_:
        raise _Fallback("boolean matrix product")
    return a, b, cast(a._t, rdtype), cast(b._t, rdtype)


@handles(np.dot)
def _dot(a, b, out=None):
    a, b, ta, tb = _matmul_operands(a, b)
    if a.ndim and b.ndim:
        _check_matmul(a.shape, b.shape)
    if a.ndim == 0 or b.ndim == 0:
        r = ember.mul(ta, tb)
    elif b.ndim <= 2 and a.ndim <= 2 or b.ndim == 1:
        r = ember.matmul(ta, tb)
    else:
        r = ember.tensordot(ta, tb, dims=([a.ndim - 1], [b.ndim - 2]))
    return _finish(r, _rank(r) == 0, out)


@handles(np.vdot)
def _vdot(a, b):
    a, b, ta, tb = _matmul_operands(a, b)
    if a.size != b.size:
        raise _Fallback("vdot of arrays of different sizes")
    r = ember.sum(ember.mul(ember.conj(ta).resolve_conj().reshape(-1), tb.reshape(-1)))
    return NumpyArray(r, True)


@handles(np.inner)
def _inner(a, b):
    a, b, ta, tb = _matmul_operands(a, b)
    r = ember.inner(ta, tb)
    return NumpyArray(r, _rank(r) == 0)


@handles(np.outer)
def _outer(a, b, out=None):
    a, b, ta, tb = _matmul_operands(a, b)
    return _finish(ember.outer(ta.reshape(-1), tb.reshape(-1)), False, out)


@handles(np.tensordot)
def _tensordot(a, b, axes=2):
    a, b, ta, tb = _matmul_operands(a, b)
    if not isinstance(axes, int):
        axes = [list(x) if isinstance(x, (list, tuple)) else [x] for x in axes]
    r = ember.tensordot(ta, tb, dims=axes)
    return NumpyArray(r, _rank(r) == 0)


@handles(np.einsum)
def _einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    if not operands or not isinstance(operands[0], str):
        raise _Fallback("einsum in the sublist form")
    arrays = [arr(x) for x in operands[1:]]
    rdtype = np.dtype(dtype) if dtype is not None else np.result_type(*[x.dtype for x in
                                                                        arrays])
    if rdtype == np.bool_:
        raise _Fallback("boolean einsum")
    r = ember.einsum(operands[0], *[cast(x._t, rdtype) for x in arrays])
    return _finish(r, _rank(r) == 0 and out is None, out)


def _linalg_dtype(*arrays):
    d = np.result_type(*[x.dtype for x in arrays])
    if d.kind in "biu":
        return np.dtype(np.float64)
    if d not in (np.float32, np.float64, np.complex64, np.complex128):
        raise _Fallback(f"linalg on {d}")
    return d


@handles(np.linalg.norm)
def _norm(x, ord=None, axis=None, keepdims=False):
    x = arr(x)
    rdtype, scalar = _meta(np.linalg.norm, x, ord=ord, axis=axis, keepdims=keepdims) \
        if x.ndim <= 2 or axis is not None else (None, False)
    if rdtype is None:
        raise _Fallback("norm over all axes of an array of rank > 2")
    t = cast(x._t, _linalg_dtype(x))
    dims = axis if axis is None or isinstance(axis, int) else tuple(axis)
    if axis is None and ord is None:
        r = ember.linalg.vector_norm(t.reshape(-1), 2)
        if keepdims:
            r = r.reshape((1,) * x.ndim)
    else:
        r = ember.linalg.norm(t, ord, dim=dims, keepdim=bool(keepdims))
    return NumpyArray(cast(r, rdtype), scalar)


@handles(np.linalg.solve)
def _solve(a, b):
    a, b = arr(a), arr(b)
    if b.ndim != 1 and b.ndim != a.ndim:
        raise _Fallback("solve with batched vector right-hand sides")
    d = _linalg_dtype(a, b)
    return NumpyArray(ember.linalg.solve(cast(a._t, d), cast(b._t, d)))


@handles(np.linalg.inv)
def _inv(a):
    a = arr(a)
    return NumpyArray(ember.linalg.inv(cast(a._t, _linalg_dtype(a))))


@handles(np.linalg.det)
def _det(a):
    a = arr(a)
    r = ember.linalg.det(cast(a._t, _linalg_dtype(a)))
    return NumpyArray(r, _rank(r) == 0)


@handles(np.linalg.cholesky)
def _cholesky(a, /, *, upper=False):
    a = arr(a)
    return NumpyArray(ember.linalg.cholesky(cast(a._t, _linalg_dtype(a)), upper=upper))


# ---- ember functions called with NumPy arrays ----------------------------------------
def _to_tensors(x):
    if type(x) is NumpyArray:
        return x._t
    if type(x) in (list, tuple):
        return type(x)(_to_tensors(i) for i in x)
    if type(x) is dict:
        return {k: _to_tensors(v) for k, v in x.items()}
    return x


def ember_function_call(func, args, kwargs):
    """``__ember_function__``: an ember function given arrays of this program.  The
    functions that take ndarrays eagerly take the array's tensor (``ember.from_numpy(a)``
    is ``a``'s tensor, sharing its memory; ``ember.tensor(a)`` a copy of it); any other
    gets the real array, as it would eagerly (usually its TypeError)."""
    if args and type(args[0]) is NumpyArray:
        t = args[0]._t
        if func is ember.from_numpy and len(args) == 1 and not kwargs:
            return t
        if func is ember.as_tensor or func is ember.asarray and not kwargs.get("copy"):
            return func(t, *args[1:], **kwargs)
        if func is ember.tensor and len(args) == 1 or func is ember.asarray:
            dtype = kwargs.get("dtype")
            r = ember.clone(t) if dtype is None or dtype == t.dtype else t.to(dtype)
            if kwargs.get("requires_grad"):
                r.requires_grad_(True)
            return r
    return func(*_to_real(args), **_to_real(kwargs))


# ---- indexing ------------------------------------------------------------------------
def _index(index):
    """NumPy index ``index`` as ember's, or _Fallback."""
    items = index if type(index) is tuple else (index,)
    out = []
    for i in items:
        if type(i) is NumpyArray:
            out.append(i._t)
        elif type(i) is np.ndarray:
            out.append(_from_real(i))
        elif type(i) is bool or isinstance(i, np.bool_):
            raise _Fallback("a boolean scalar index")
        elif isinstance(i, (int, np.integer)):
            out.append(operator.index(i))
        elif isinstance(i, slice):
            start, stop, step = (None if v is None else operator.index(v)
                                 for v in (i.start, i.stop, i.step))
            if step is not None and step < 0:
                raise _Fallback("a slice with a negative step")
            out.append(slice(start, stop, step))
        elif i is None or i is Ellipsis:
            out.append(i)
        elif type(i) is list:
            out.append(_from_real(np.asarray(i)))
        else:
            raise _Fallback(f"an index of type {type(i).__name__}")
    if len(out) > 1 and any(isinstance(i, Tensor) and _rank(i) for i in out) and \
            any(type(i) is int for i in out):
        # with an array among the indices NumPy treats integers as arrays too: they take
        # part in the advanced-index placement rule (torch's select does not).  A 1-element
        # index broadcasts away against the others.
        out = [ember.full((1,), i, dtype=_dt.int64) if type(i) is int else i for i in out]
    return tuple(out) if type(index) is tuple else out[0], any(i is Ellipsis for i in items)


def getitem(a, index):
    try:
        idx, ellipsis = _index(index)
        r = a._t[idx]
        return NumpyArray(r, _rank(r) == 0 and not ellipsis)
    except _Fallback as e:
        reason = f"indexing with {e}"
    except _OUR_ERRORS:
        raise
    except _EMBER_ERRORS as e:
        reason = f"indexing: ember raised {type(e).__name__}: {e}"
    return _fallback(operator.getitem, (a, index), {}, reason)


def setitem(a, index, value):
    try:
        idx, _ = _index(index)
        if type(value) in (int, float, bool) and a.dtype.kind != "c" and \
                not (type(value) is float and a.dtype.kind in "biu"):
            v = value
        else:
            v = cast(arr(value)._t, a.dtype)
        a._t[idx] = v
        return
    except _Fallback as e:
        reason = f"an assignment with {e}"
    except _OUR_ERRORS:
        raise
    except _EMBER_ERRORS as e:
        reason = f"an assignment: ember raised {type(e).__name__}: {e}"
    s = current_session()
    if s is not None:
        s.graph_break(reason)
    real_array(a)[_to_real(index)] = _to_real(value)


def astype(a, dtype, casting="unsafe", copy=True):
    dtype = np.dtype(dtype)
    if not _supported(dtype) or casting != "unsafe" and not np.can_cast(a.dtype, dtype,
                                                                         casting):
        return _fallback(lambda x: x.astype(dtype, casting=casting, copy=copy), (a,), {},
                         f"astype to {dtype} (casting={casting!r})")
    if dtype == a.dtype:
        return NumpyArray(ember.clone(a._t), a.scalar) if copy else a
    return NumpyArray(cast(a._t, dtype), a.scalar)


_numpy_array._impl = sys.modules[__name__]
