"""Category helpers: the routine parts of operator definitions.

Elementwise operators share their dtype handling (torch promotion, integer
inputs of float functions computed in the default float dtype, float16/bfloat16
computed in float32 and rounded once), their shape rule (broadcasting) and the
boilerplate of public function, Tensor method, in-place variant and ``out=``.
"""
import numpy as np

from .._core import dtype as _dt
from .._core import meta as _meta
from .._core.dispatch import (SUBCLASS_OVERRIDES, NeedsOverride, apply, apply_binary,
                              apply_inplace, apply_unary, handle_override, overridable,
                              routes_overrides, write_out)
from .._core.inplace import check_castable
from .._core.overrides import FUNCTION_MODES
from .._core.op import Op
from .._core.device import XP_BY_ARRAY_TYPE as _ARRAY_TYPES
from .._core.tensor import Tensor, host_tensor, wrap

_ndarray = np.ndarray
_E = {}
_HALF = _dt.NP_NARROW_FLOATS
_F32 = np.dtype(np.float32)
_PY = (bool, int, float, complex)


_sps = None


def special(xp):
    """The special-functions namespace for ``xp`` (scipy.special for NumPy, imported on first
    use: it costs ~0.2 CPU s, a tenth of ``import ember``)."""
    if xp is np:
        return _sps or _load_scipy_special()
    return xp.special


def _load_scipy_special():
    global _sps
    import scipy.special
    _sps = scipy.special
    return _sps


def default_float_np():
    return _dt.get_default_dtype().np


def method(name):
    """Attach the decorated function to Tensor as method ``name``."""
    def deco(fn):
        setattr(Tensor, name, fn)
        return fn
    return deco


def cj(t):
    """conj(t) for complex tensors, t itself otherwise (PyTorch's Wirtinger formulas)."""
    if isinstance(t, Tensor):
        return t.conj() if t.dtype.is_complex else t
    return t.conjugate() if isinstance(t, complex) else t


# ---- dtype rules ------------------------------------------------------------------------

def _operand_key(x):
    if isinstance(x, _ndarray) or type(x) in _ARRAY_TYPES:  # any backend's arrays
        return (x.dtype, x.ndim == 0)
    if isinstance(x, np.generic):
        return (x.dtype, True)
    return (type(x), None)


_PROMO_CACHE = {}


def promote_np(*xs):
    """torch's result dtype (a NumPy dtype) of arrays (dims matter) and Python scalars."""
    # the default dtype decides int/float promotions, so it is part of the key
    key = (_dt._default[0],) + tuple(_operand_key(x) for x in xs if x is not None)
    r = _PROMO_CACHE.get(key)
    if r is None:
        pairs = [(_dt.FROM_NP[k], 0 if z else 1) for k, z in key[1:] if z is not None]
        scalars = [k(0) for k, z in key[1:] if z is None]
        r = _dt.result_type_of(pairs, scalars).np
        if len(_PROMO_CACHE) < 4096:
            _PROMO_CACHE[key] = r
    return r


def xp_fn(xp, fn):
    """NumPy function or ufunc ``fn``'s namesake in the array namespace ``xp``."""
    return fn if xp is np else getattr(xp, fn.__name__)


def _cast(x, dt, xp=np):
    if isinstance(x, _ndarray) or type(x) in _ARRAY_TYPES:
        return x if x.dtype is dt else x.astype(dt)
    if type(x) is int and dt.kind in "iu":
        # torch wraps Python ints into the tensor's integer type (uint8 - 2 -> 254 - ...)
        return xp.asarray(x, dtype=np.int64).astype(dt)
    return x


_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
               "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
               "complex64": "ComplexFloat", "complex128": "ComplexDouble",
               "bfloat16": "BFloat16", "uint16": "UInt16", "uint32": "UInt32",
               "uint64": "UInt64"}


def _dtype_named(dt, table):
    name = dt.np.name if isinstance(dt, _dt.dtype) else np.dtype(dt).name
    return table.get(name, name)


def type_name(dt):
    """torch's scalar-type name of dtype ``dt`` (ember or NumPy) ('Float', 'Long', 'ComplexDouble', ...)."""
    return _dtype_named(dt, _TYPE_NAMES)


def not_implemented(kernel_name, dt):
    raise NotImplementedError(f"\"{kernel_name}\" not implemented for '{type_name(dt)}'")


_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>", "int64": "long int", "int32": "int",
              "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
              "bool": "bool"}


def cpp_name(dt):
    """The C++ name torch's messages give dtype ``dt`` ('float', 'long int', ...)."""
    return _dtype_named(dt, _CPP_NAMES)


def write_out_exact(out, result, inputs=None):
    """``out=`` of an op whose out must already have the result's dtype (torch's structured
    kernels: matmul, sort, max(dim), argmax, ...), where `write_out` would cast."""
    if isinstance(out, Tensor) and out.dtype is not result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {cpp_name(result.dtype)}, but "
                           f"got {cpp_name(out.dtype)} instead")
    return write_out(out, result, inputs)


def check_out_same(out, expected):
    """``out=`` of an op that does not promote (neg, abs, floor, sgn, bitwise_not, clamp, ...):
    torch's TensorIterator wants ``out`` in the operands' dtype ``expected`` and casts
    nothing, where `write_out` would cast."""
    if isinstance(out, Tensor) and out.dtype is not expected:
        raise RuntimeError(f"Found dtype {type_name(out.dtype)} but expected "
                           f"{type_name(expected)}")


def check_tensor(fn, name, pos, v):
    """torch's TypeError for a non-tensor argument of a tensor-only function (a tensor-like
    with ``__ember_function__``, an fx Proxy say, goes to its override instead)."""
    if not isinstance(v, Tensor):
        if hasattr(type(v), "__ember_function__"):
            raise NeedsOverride
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(v).__name__}")


def no_derivative(name, aten=False):
    """``Op`` keywords (``vjp``, ``jvp``) for an op whose outputs require grad in torch
    although torch has no derivative for it: backward and forward AD raise torch's error.
    ``aten``: torch registers no formula at all (RuntimeError naming ``aten::name``);
    otherwise its formula is ``not_implemented`` (NotImplementedError).  ``name`` may be a
    callable of the op's params."""
    def refuse(_ctx, _grads, *inputs, **params):
        n = name(params) if callable(name) else name
        if aten:
            raise RuntimeError(f"derivative for aten::{n} is not implemented")
        raise NotImplementedError(f"the derivative for '{n}' is not implemented.")

    def refuse_forward(_out, _tangents, *inputs, **params):
        n = name(params) if callable(name) else name
        if aten:
            raise NotImplementedError(f"Trying to use forward AD with aten::{n} that does not "
                                      f"support it.")
        raise NotImplementedError(
            f"Trying to use forward AD with {n} that does not support it because it has not "
            f"been implemented yet.\nPlease file an issue to PyTorch at https://github.com/"
            f"pytorch/pytorch/issues/new?template=feature-request.yml so that we can prioritize "
            f"its implementation or submit a PR adding the implementation to derivatives.yaml")
    # a refusal, not a formula: there is no tangent to compare with one derived from the vjp
    refuse_forward.no_derivative = True
    return {"vjp": refuse, "jvp": refuse_forward}


def dtype_kind(dt):
    """'b', 'i' (signed and unsigned), 'f' (halves included) or 'c'."""
    k = dt.kind
    return "i" if k == "u" else "f" if k == "V" else k


def gated(kernel, kernel_name, reject, n=1):
    """Wrap ``kernel`` to raise torch's NotImplementedError for the dtype kinds in ``reject``
    ('b', 'i', 'f', 'c'), judged on the promoted dtype of the first ``n`` inputs."""
    def k(xp, *args, **params):
        dt = args[0].dtype if n == 1 else promote_np(*args[:n])
        if dtype_kind(dt) in reject:
            if callable(kernel_name):
                kernel_name(dt)
            not_implemented(kernel_name, dt)
        return kernel(xp, *args, **params)
    return k


def float_of(dt):
    """Compute dtype for a floating function of dtype ``dt``."""
    if dt.kind in "biu":
        return default_float_np()
    return dt


# ---- unary ------------------------------------------------------------------------------

def unary_float(fn, *, int_to_float=True):
    """Kernel for a floating unary function: ints -> default float, halves via float32."""
    def kernel(xp, x):
        dt = x.dtype
        if dt in _HALF:
            return fn(xp, x.astype(_F32)).astype(dt)
        if dt.kind in "biu":
            if not int_to_float:
                return fn(xp, x)
            return fn(xp, x.astype(default_float_np()))
        return fn(xp, x)
    return kernel


def unary_same(fn):
    """Kernel for a dtype-preserving unary function (halves via float32)."""
    def kernel(xp, x):
        if x.dtype in _HALF:
            return fn(xp, x.astype(_F32)).astype(x.dtype)
        r = fn(xp, x)
        return r if r.dtype is x.dtype else r.astype(x.dtype)
    return kernel


def shape_same(x, *args, **params):
    """Shape rule: the output is like input 0 (shape and dtype)."""
    return x.shape, x.dtype


def shape_broadcast(*xs, **params):
    """Shape rule: elementwise over broadcast inputs, torch promotion of all of them."""
    return _meta.broadcast(*xs)


# ---- binary -----------------------------------------------------------------------------

def check_broadcast(*xs):
    """Raise torch's RuntimeError if the shapes of arrays ``xs`` don't broadcast."""
    shapes = [x.shape for x in xs if type(x) is _ndarray]
    cur = shapes[0] if shapes else ()
    for s in shapes[1:]:
        try:
            cur = np.broadcast_shapes(cur, s)
        except ValueError:
            n = max(len(cur), len(s))
            for i in range(1, n + 1):
                a = cur[-i] if i <= len(cur) else 1
                b = s[-i] if i <= len(s) else 1
                if a != b and a != 1 and b != 1:
                    raise RuntimeError(f"The size of tensor a ({a}) must match the size of "
                                       f"tensor b ({b}) at non-singleton dimension {n - i}"
                                       ) from None


def broadcast_guard(kernel):
    """Turn NumPy's broadcasting ValueError into torch's RuntimeError (free when it succeeds)."""
    def guarded(xp, *args, **params):
        try:
            return kernel(xp, *args, **params)
        except ValueError:
            check_broadcast(*args)
            raise
    return guarded


def binary_kernel(fn, *, kind="promote"):
    """Kernel for an elementwise binary function.

    kind: 'promote' (result in the promoted dtype), 'float' (ints promote to the
    default float, e.g. true division), 'bool' (comparisons: computed in the promoted
    dtype, result bool).
    """
    def kernel(xp, a, b):
        ta = type(a)
        if ta is _ndarray:
            dt = a.dtype
            tb = type(b)
            if tb is _ndarray:
                if b.dtype is dt and dt.kind in "fc" and dt.itemsize > 2:
                    # same float/complex dtype (the common case): NumPy's result is torch's
                    try:
                        return fn(xp, a, b)
                    except ValueError:
                        check_broadcast(a, b)
                        raise
                if b.dtype is not dt:
                    dt = promote_np(a, b)
            elif (tb is float or tb is int) and dt.kind in "fc" and dt not in _HALF:
                # float array with a weak Python scalar: NumPy keeps the array's dtype too
                r = fn(xp, a, b)
                return r if kind == "bool" or r.dtype is dt else r.astype(dt)
            else:
                dt = promote_np(a, b)
        elif (ta is float or ta is int) and type(b) is _ndarray and b.dtype.kind in "fc" and \
                b.dtype not in _HALF:
            # the mirror case, a weak Python scalar first (``1 - t``, as in tanh's backward)
            dt = b.dtype
            r = fn(xp, a, b)
            return r if kind == "bool" or r.dtype is dt else r.astype(dt)
        else:
            dt = promote_np(a, b)
        try:
            if dt in _HALF:
                r = fn(xp, _cast(a, _F32, xp), _cast(b, _F32, xp))
                return r.astype(dt) if kind != "bool" else r
            if kind == "float" and dt.kind in "biu":
                dt = default_float_np()
            r = fn(xp, _cast(a, dt, xp), _cast(b, dt, xp))
        except ValueError:
            check_broadcast(a, b)  # torch's message for shapes that don't broadcast
            raise
        if kind == "bool":
            return r
        if type(r) is not _ndarray or r.dtype is not dt:
            r = xp.asarray(r).astype(dt, copy=False)
        return r
    return kernel


def nary_kernel(fn, n_promote):
    """Kernel for an elementwise function of several tensors promoted together."""
    def kernel(xp, *xs, **params):
        dt = promote_np(*xs[:n_promote])
        if dt in _HALF:
            r = fn(xp, *[_cast(x, _F32, xp) for x in xs[:n_promote]], *xs[n_promote:],
                   **params)
            return xp.asarray(r).astype(dt)
        r = fn(xp, *[_cast(x, dt, xp) for x in xs[:n_promote]], *xs[n_promote:], **params)
        if type(r) is not _ndarray or r.dtype != dt:
            r = xp.asarray(r).astype(dt, copy=False)
        return r
    return broadcast_guard(kernel)


def table_vjp(sf):
    """The vjp of scalar function ``sf`` (an `ember._core.scalar_functions` entry) from its
    per-input derivatives; only the wanted gradients are computed."""
    ds = sf.derivative
    with_out = sf.save_output
    if len(ds) == 1:
        d = ds[0]
        if with_out:
            return lambda ctx, g, x: d(g, x, ctx.out)
        return lambda ctx, g, x: d(g, x, None)

    if len(ds) == 2:  # the common case, without a generator (backward of every a * b)
        da, db = ds

        def vjp2(ctx, g, a, b):
            need = ctx.needs_input_grad
            out = ctx.out if with_out else None
            return (da(g, a, b, out) if need[0] and da is not None else None,
                    db(g, a, b, out) if need[1] and db is not None else None)
        return vjp2

    def vjp(ctx, g, *xs):
        need = ctx.needs_input_grad
        out = ctx.out if with_out else None
        return tuple(None if d is None or not need[i] else d(g, *xs, out)
                     for i, d in enumerate(ds))
    return vjp


# ---- public API boilerplate -------------------------------------------------------------

def def_unary(name, op, *, inplace=True, method_name=None, exact_out=False, with_out=True,
              cast_first=True):
    """Public ``ember.name(input, *, out=None)``, ``Tensor.name`` and ``Tensor.name_``.

    ``exact_out``: the op keeps its input's dtype and ``out`` must have it too; torch checks
    this before the kernel, so it wins over a dtype the kernel refuses; a callable of input
    and out says for which.  A floating op's ``out`` must take its result dtype, also checked
    first unless ``cast_first=False`` (torch refuses some inputs before that: rad2deg of
    complex).  ``with_out=False``: torch's function has no ``out=``."""
    def check_first(input, out):
        if exact_out is True or callable(exact_out) and exact_out(input, out):
            check_out_same(out, input.dtype)
        elif cast_first and op.shape is _meta.unary_float:
            check_castable(_meta.unary_float(input)[1], out.dtype)

    def public(input, *, out=None):
        if isinstance(out, Tensor) and isinstance(input, Tensor):
            check_first(input, out)
        try:
            r = apply_unary(op, input)
        except NeedsOverride:
            return handle_override(public, (input,), {"out": out} if out is not None else {})
        return r if out is None else write_out(out, r, (input,))
    if not with_out:
        def public(input):
            try:
                return apply(op, (input,), _E)
            except NeedsOverride:
                return handle_override(public, (input,), {})
    public.__name__ = public.__qualname__ = name

    def meth(self):
        try:
            return apply_unary(op, self)
        except NeedsOverride:
            return handle_override(meth, (self,), {})
    meth.__name__ = method_name or name
    setattr(Tensor, method_name or name, routes_overrides(meth))
    if inplace:
        def meth_(self):
            try:
                return apply_inplace(op, self, (), _E)
            except NeedsOverride:
                return handle_override(meth_, (self,), {})
        meth_.__name__ = (method_name or name) + "_"
        setattr(Tensor, (method_name or name) + "_", routes_overrides(meth_))
    return routes_overrides(public)


def _check_tensor_args(name, input, other, tensors):
    for pos, (arg, x) in enumerate((("input", input), ("other", other))[:tensors]):
        if type(x) in _PY:
            raise TypeError(f"{name}(): argument '{arg}' (position {pos + 1}) must be Tensor, "
                            f"not {type(x).__name__}")


def def_binary(name, op, *, inplace=True, reflected=None, magic=None, tensors=0):
    """Public ``ember.name(input, other, *, out=None)``, methods, in-place and operators.

    ``tensors``: how many leading arguments must be tensors (torch rejects Python numbers
    there, e.g. ``maximum(t, 2)``); the check costs nothing when 0."""
    def public(input, other, *, out=None):
        if tensors:
            _check_tensor_args(name, input, other, tensors)
        try:
            r = apply_binary(op, input, other)
        except NeedsOverride:
            return handle_override(public, (input, other), {"out": out} if out is not None else {})
        return r if out is None else write_out(out, r, (input, other))
    public.__name__ = public.__qualname__ = name

    def meth(self, other):
        if tensors > 1:
            _check_tensor_args(name, self, other, tensors)
        try:
            return apply_binary(op, self, other)
        except NeedsOverride:
            return handle_override(meth, (self, other), {})
    meth.__name__ = name
    setattr(Tensor, name, routes_overrides(meth))
    if inplace:
        def meth_(self, other):
            if tensors > 1:
                _check_tensor_args(name + "_", self, other, tensors)
            try:
                return apply_inplace(op, self, (other,), _E)
            except NeedsOverride:
                return handle_override(meth_, (self, other), {})
        meth_.__name__ = name + "_"
        setattr(Tensor, name + "_", routes_overrides(meth_))
    if magic:
        _def_magic(op, magic, reflected)
    return routes_overrides(public)


def _own_override(self, fn, args):
    """An operator on a Tensor subclass with an override (or under a function mode) routes
    to it; with another override-capable operand, Python asks that operand's reflected
    method instead."""
    if FUNCTION_MODES.stack or SUBCLASS_OVERRIDES and type(self) in SUBCLASS_OVERRIDES:
        return handle_override(fn, args, {})
    return NotImplemented


def _def_magic(op, magic, reflected):
    def fwd(self, other):
        try:
            return apply_binary(op, self, other)
        except NeedsOverride:
            # overrides see ``Tensor.mul`` for ``a * b``, as torch's do
            return _own_override(self, getattr(Tensor, magic, fwd), (self, other))
        except TypeError:
            if isinstance(other, (Tensor, bool, int, float, complex, np.generic)):
                raise
            return NotImplemented
    fwd.__name__ = f"__{magic}__"
    setattr(Tensor, fwd.__name__, fwd)
    if reflected:
        def rev(self, other):
            try:
                return apply_binary(op, other, self)
            except NeedsOverride:  # 2 * a is Tensor.mul(a, 2) to overrides, as in torch
                return _own_override(self, getattr(Tensor, magic) if magic in ("add", "mul")
                                     else rev, (self, other))
            except TypeError:
                if isinstance(other, (Tensor, bool, int, float, complex, np.generic)):
                    raise
                return NotImplemented
        rev.__name__ = f"__r{magic}__"
        setattr(Tensor, rev.__name__, rev)

    def ifwd(self, other):
        try:
            return apply_inplace(op, self, (other,), _E)
        except NeedsOverride:
            return _own_override(self, ifwd, (self, other))
    ifwd.__name__ = f"__i{magic}__"
    setattr(Tensor, ifwd.__name__, ifwd)


def to_tensor_like(x, ref):
    """A Python number as a 0-dim tensor (weak dtype semantics are lost: use sparingly)."""
    if isinstance(x, Tensor):
        return x
    return host_tensor(np.asarray(x), ref)



# ---- forward-mode (jvp) rule helpers ----------------------------------------------------
# A jvp rule is ``jvp(out, tangents, *inputs, **params)``; ``tangents[i]`` is input i's tangent
# or None (zero).  Rules may return tangents of a smaller (broadcastable) shape or another
# dtype, or None: forward_ad fits them to the output (see forward_ad.explicit_jvp).
class _JvpCtx:
    __slots__ = ("out", "needs_input_grad", "in_meta")

    def __init__(self, out, x):
        self.out, self.needs_input_grad = out, (True,)
        self.in_meta = ((tuple(x.shape), x.dtype.np),)


def jvp_sum(*terms):
    """The sum of the non-None tangent terms (None when all are zero)."""
    r = None
    for t in terms:
        if t is not None:
            r = t if r is None else r + t
    return r


def jvp_elementwise(vjp):
    """jvp of a one-input elementwise op from its vjp: the Jacobian is diagonal, so in the
    conjugate-Wirtinger convention ``J t = conj(vjp(conj(t)))`` (one pass, no double vjp)."""
    def jvp(out, tangents, x, *rest, **params):
        t = tangents[0]
        if t is None:
            return None
        c = t.dtype.is_complex or x.dtype.is_complex
        r = vjp(_JvpCtx(out, x), t.conj() if c else t, x, *rest, **params)
        if isinstance(r, (tuple, list)):
            r = r[0]
        return r.conj() if c else r
    return jvp


def jvp_linear(op):
    """jvp of an op linear in its first input (views, reductions, copies): the op itself."""
    def jvp(out, tangents, x, *rest, **params):
        t = tangents[0]
        return None if t is None else apply(op, (t,) + rest, params)
    return jvp

__all__ = ["Op", "apply", "apply_inplace", "write_out", "wrap", "Tensor", "special", "method",
           "cj", "promote_np", "unary_float", "unary_same", "binary_kernel", "nary_kernel",
           "def_unary", "def_binary", "check_out_same", "check_castable", "shape_same",
           "shape_broadcast", "NeedsOverride",
           "handle_override", "overridable", "routes_overrides", "default_float_np", "float_of",
           "type_name", "cpp_name", "write_out_exact", "not_implemented", "check_tensor",
           "no_derivative", "gated", "dtype_kind", "broadcast_guard", "check_broadcast",
           "jvp_sum", "jvp_elementwise", "jvp_linear", "table_vjp"]



def select(xp, mask, a, b):
    """``xp.where(mask, a, b)`` for a boolean ``mask`` and arrays ``a``, ``b`` of its shape and
    one dtype.  NumPy's ``where`` branches per element (~4 ns each when the mask is
    unpredictable, as activation masks are); on NumPy this blends the bit patterns instead
    (~0.5 ns each), which is exactly the selection, NaN payloads and signed zeros included."""
    dt = a.dtype
    if (xp is not np or dt != b.dtype or dt.kind not in "fiu" or dt.itemsize not in (1, 2, 4, 8)
            or mask.dtype != np.bool_ or not (a.shape == b.shape == mask.shape)):
        return xp.where(mask, a, b)
    u = np.dtype(f"u{dt.itemsize}")
    r = np.array(b, order="C").view(u)
    t = np.bitwise_xor(a.view(u), r)
    t &= bit_mask(mask, dt.itemsize)
    r ^= t
    return r.view(dt)


def bit_mask(mask, itemsize):
    """Unsigned words of ``itemsize`` bytes: all ones where ``mask`` (bool, or int8 of 0/1)
    is set, zero elsewhere; ANDed with an array's bits they select its elements exactly."""
    return np.negative(mask.view(np.int8), dtype=np.dtype(f"i{itemsize}")).view(f"u{itemsize}")
