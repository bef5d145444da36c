"""The dispatcher: every operator call goes through `apply` (or `apply_inplace`).

Fast path: no mode pushed -> unwrap tensors, run the kernel, wrap the result,
and record an autograd Node only when grad mode is on and an input requires
grad.  Slow path: the innermost dispatch mode sees the call (tracing, vmap,
profiling, ... are modes).

This module is apply and the modes; the override protocol (``__ember_function__``,
`overridable`) lives in ``overrides``, in-place writes and version tracking
(`apply_inplace`, `copy_into`, ``out=``) in ``inplace``.  Their public names are
re-exported here, where the rest of ember imports them from.
"""
import numbers

import numpy as np

from .dtype import NUMPY_SCALARS, python_scalar
from .errors import NUMPY_ERRORS, translate
from .device import XP_BY_ARRAY_TYPE, backend_for_type, namespace_of
from .meta_device import META_XP, meta_kernel, meta_operands
from .node import _NO_PARAMS, record, record_binary, record_unary
from .overrides import (  # noqa: F401  (re-exported: ember imports them from here)
    OVERRIDE_TYPES, SUBCLASS_OVERRIDES, NeedsOverride, _ROUTED_DUNDERS, _UNROUTED_METHODS,
    _override_of,
    handle_override, overridable, register_override_type, route_tensor_methods,
    routes_overrides, unregister_override_type)
from .state import STATE
from .storage import _root
from .tensor import Tensor, _version_of, wrap

__all__ = ["apply", "apply_unary", "apply_binary", "apply_inplace", "apply_meta", "DispatchMode", "overridable", "NeedsOverride",
           "SUBCLASS_OVERRIDES", "OVERRIDE_TYPES", "write_out", "register_override_type",
           "unregister_override_type", "handle_override", "routes_overrides",
           "route_tensor_methods", "mark_multi_output_views", "copy_into",
           "regenerate_view_grad_fn"]

_ndarray = np.ndarray
_np = np
_new_tensor = object.__new__
_SCALARS = (int, float, bool, complex)
_XP = XP_BY_ARRAY_TYPE


def _unwrap(args):
    """Arrays for the kernel, whether any input requires grad, and the array namespace."""
    arrays = []
    rg = False
    xp = None
    for a in args:
        if isinstance(a, Tensor):
            if SUBCLASS_OVERRIDES and type(a) in SUBCLASS_OVERRIDES:
                raise NeedsOverride(a)
            d = a._data
            if xp is None:
                t0 = type(d)
                xp = _XP.get(t0)
                if xp is None:
                    d = _healed(a, d)
                    t0 = type(d)
                    xp = _XP.get(t0) or _xp_of_subclass(t0)
            elif type(d) is not t0:
                d = _healed(a, d)
                if type(d) is not t0 and backend_for_type(type(d)) is not backend_for_type(t0):
                    return _unwrap_meta(args)
            arrays.append(d)
            if a._requires_grad:
                rg = True
        elif a is None or type(a) in _SCALARS:
            arrays.append(a)
        elif isinstance(a, NUMPY_SCALARS):
            arrays.append(python_scalar(a))  # torch reads it as a Python number (weak)
        elif isinstance(a, (numbers.Number, _np.generic)):
            arrays.append(a)
        elif _override_of(type(a)) is not None:  # __ember_function__ or __torch_function__
            raise NeedsOverride(a)
        else:
            raise TypeError(f"expected Tensor as element {len(arrays)} in argument list, but got "
                            f"{type(a).__name__}")
    return arrays, rg, xp or _np


def _unwrap_meta(args):
    """`_unwrap` for tensors on two devices: meta tensors with CPU scalar tensors compute on
    meta, as torch lets them; anything else is torch's device error."""
    arrays = meta_operands(args, [a._data if isinstance(a, Tensor) else a for a in args])
    if arrays is None:
        _raise_device_mismatch(args)
    return arrays, any(isinstance(a, Tensor) and a._requires_grad for a in args), META_XP


def _healed(t, d):
    """A tensor made from an array not computed then (ember.compile's stand-in): it is now."""
    if hasattr(d, "__ember_array__"):
        d = t._data = d.__ember_array__()
    return d


def _xp_of_subclass(array_type):
    b = backend_for_type(array_type)
    if b is None:
        raise TypeError(f"no ember backend stores arrays of type {array_type.__name__}")
    _XP[array_type] = b.xp
    return b.xp


def _raise_device_mismatch(args):
    devs = [str(a.device) for a in args if isinstance(a, Tensor)]
    raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                       f"devices, {devs[0]} and {[d for d in devs if d != devs[0]][0]}!")


def apply(op, args, params):
    """Run ``op`` on ``args`` (tensors and Python scalars) with static keyword ``params``."""
    if STATE.intercept:
        return _apply_mode(op, args, params)
    xp = _np
    # The commonest calls spelled out: one plain Tensor, or two operands of which each is a
    # plain Tensor on a NumPy array or (one of them) a Python scalar.  A loop with
    # isinstance over ``args`` costs ~0.2 us more per binary op.
    arrays = None
    n = len(args)
    if n == 2:
        x, y = args
        if type(x) is Tensor:
            dx = x._data
            if type(dx) is _ndarray:
                ty = type(y)
                if ty is Tensor:
                    dy = y._data
                    if type(dy) is _ndarray:
                        arrays = (dx, dy)
                        rg = x._requires_grad or y._requires_grad
                elif ty in _SCALARS:
                    arrays = (dx, y)
                    rg = x._requires_grad
        elif type(y) is Tensor and type(x) in _SCALARS:
            dy = y._data
            if type(dy) is _ndarray:
                arrays = (x, dy)
                rg = y._requires_grad
    elif n == 1:
        x = args[0]
        if type(x) is Tensor:
            dx = x._data
            if type(dx) is _ndarray:
                arrays = (dx,)
                rg = x._requires_grad
    if arrays is None:
        # the general case: tensors on NumPy arrays (Tensor subclasses such as Parameter
        # included), Python scalars and None; anything else (another backend, an array not
        # computed yet, an override) takes `_unwrap`
        arrays = []
        rg = False
        for a in args:
            if isinstance(a, Tensor):
                d = a._data
                if type(d) is not _ndarray or \
                        (SUBCLASS_OVERRIDES and type(a) in SUBCLASS_OVERRIDES):
                    arrays, rg, xp = _unwrap(args)
                    if xp is META_XP:
                        return apply_meta(op, args, params, arrays, rg)
                    break
                arrays.append(d)
                if a._requires_grad:
                    rg = True
            elif type(a) in _SCALARS or a is None:
                arrays.append(a)
            else:
                arrays, rg, xp = _unwrap(args)
                if xp is META_XP:
                    return apply_meta(op, args, params, arrays, rg)
                break
    try:
        r = op.kernel(xp, *arrays, **params) if params else op.kernel(xp, *arrays)
    except NUMPY_ERRORS as e:
        t = translate(op.name, arrays, e)
        if t is None:
            raise
        raise t from None
    if op.n_out == 1:
        if type(r) is not _ndarray:
            r = _as_array(r, xp)
        out = _new_tensor(Tensor)  # `wrap`, inline
        out._data = r
        if op.view:
            _mark_view(out, args[0], op, params)
        if rg and STATE.grad_enabled and op.differentiable:
            record(op, args, params, (out,))
        return out
    outs = tuple(wrap(x if type(x) is _ndarray else _as_array(x, xp)) for x in r)
    if op.view:
        for o in outs:
            _mark_view(o, args[0], op, params)
    if rg and STATE.grad_enabled and op.differentiable:
        record(op, args, params, outs)
    return outs if op.n_out is not None else list(outs)


_F32 = _np.dtype(_np.float32)
_F64 = _np.dtype(_np.float64)
# the smaller of ckernels.PARALLEL_SIZE and ckernels.binary.ROW_SIZE (not imported: ckernels
# needs this module): from that many elements a binary op's C loops may run (over the
# threads, or on one for a repeating row), so `apply_binary` leaves such operands to the
# op's kernel
_C_LOOP_SIZE = 1 << 16


# ckernels.MIN_SIZE: from that many elements a unary op's kernel may be an eager C kernel
_UNARY_C_SIZE = 4096


def apply_unary(op, x):
    """``apply(op, (x,), {})``, spelled out for an op whose ``ufunc`` computes it exactly
    (exp, tanh, neg, ...) on a plain Tensor of float32 or float64 below the size of the
    eager C kernels: the op's kernel, less its Python layers.  Anything else takes `apply`."""
    uf = op.ufunc
    if uf is not None and type(x) is Tensor and not STATE.intercept:
        a = x._data
        if type(a) is _ndarray and a.size < _UNARY_C_SIZE:
            dt = a.dtype
            if dt is _F32 or dt is _F64:
                r = uf(a)
                out = _new_tensor(Tensor)
                out._data = r if type(r) is _ndarray else _np.asarray(r)  # 0-d: a scalar
                if x._requires_grad and STATE.grad_enabled:
                    record_unary(op, x, out)
                return out
    return apply(op, (x,), _NO_PARAMS)


def apply_binary(op, x, y):
    """``apply(op, (x, y), {})``, with the commonest eager call spelled out: an op whose
    ``ufunc`` computes it exactly (add, sub, mul, div) on two plain Tensors of one float32 or
    float64 dtype, or on one and a Python float or int (a weak scalar: NumPy keeps the
    array's dtype, as torch does).  That is the op's kernel, less its four Python layers;
    anything else (another dtype, a mode, a subclass, operands the C loops split over the
    threads, a shape error) takes `apply`."""
    uf = op.ufunc
    if uf is not None and not STATE.intercept:
        tx = type(x)
        ty = type(y)
        if tx is Tensor and ty is Tensor:
            a = x._data
            b = y._data
            if type(a) is _ndarray and type(b) is _ndarray:
                dt = a.dtype
                if (dt is _F32 or dt is _F64) and b.dtype is dt and a.size < _C_LOOP_SIZE \
                        and b.size < _C_LOOP_SIZE:
                    try:
                        r = uf(a, b)
                    except Exception:  # noqa: BLE001 (apply raises torch's error)
                        return apply(op, (x, y), _NO_PARAMS)
                    out = _new_tensor(Tensor)
                    out._data = r if type(r) is _ndarray else _np.asarray(r)  # 0-d: a scalar
                    if (x._requires_grad or y._requires_grad) and STATE.grad_enabled:
                        record_binary(op, x, y, out)
                    return out
        elif (tx is Tensor and (ty is float or ty is int)) or \
                (ty is Tensor and (tx is float or tx is int)):  # ``t * 2.0``, ``2.0 - t``
            t = x if tx is Tensor else y
            a = t._data
            if type(a) is _ndarray and a.size < _C_LOOP_SIZE:
                dt = a.dtype
                if dt is _F32 or dt is _F64:
                    try:
                        r = uf(a, y) if t is x else uf(x, a)
                    except Exception:  # noqa: BLE001
                        return apply(op, (x, y), _NO_PARAMS)
                    if r.dtype is dt:
                        out = _new_tensor(Tensor)
                        out._data = r if type(r) is _ndarray else _np.asarray(r)
                        if t._requires_grad and STATE.grad_enabled:
                            record_binary(op, x, y, out)
                        return out
    return apply(op, (x, y), _NO_PARAMS)


def apply_meta(op, args, params, arrays=(), rg=False):
    """`apply` on meta tensors (``arrays`` their MetaArrays; a factory has none): the op's
    shape rule stands in for its kernel."""
    r = meta_kernel(op, arrays, params)
    outs = (wrap(r),) if op.n_out == 1 else tuple(wrap(x) for x in r)
    if op.view:
        for o in outs:
            _mark_view(o, args[0], op, params)
    if rg and STATE.grad_enabled and op.differentiable:
        record(op, args, params, outs)
    return outs[0] if op.n_out == 1 else outs if op.n_out is not None else list(outs)


def _as_array(r, xp):
    if type(r) in _XP:
        return r  # already an array of a backend (a device transfer's result)
    if xp is _np:
        return _np.asanyarray(r)  # scalars become 0-d arrays; ndarray subclasses stay
    return xp.asarray(r)


# NumPy's C function itself, without the __array_function__ dispatcher (ndarrays only)
_np_may_share = getattr(_np.may_share_memory, "_implementation", _np.may_share_memory)


def _may_share(a, b):
    if type(a) is _ndarray:
        # a zero-size view shares no byte with its source, yet is its view (torch's _base)
        return _np_may_share(a, b) or (a.size == 0 and a.base is not None and
                                       _root(a) is _root(b))
    f = getattr(namespace_of(a), "may_share_memory", None)
    return True if f is None else f(a, b)  # a backend that cannot tell: its views are views


def _mark_view(out, src, op, params):
    if not _may_share(out._data, src._data):
        return  # the kernel had to copy (e.g. reshape of a non-contiguous tensor)
    root = src._base if src._base is not None else src
    out._base = root
    out._vc = _version_of(root)
    out._view_chain = (src._view_chain or ()) + ((op, params),)
    out._view_base_fn = root.grad_fn
    if getattr(src, "_multi_view", None) is not None and STATE.grad_enabled:
        out._multi_view = (None, None)  # a view of such an output is one too (torch)


# ---- modes and overrides --------------------------------------------------------------

class DispatchMode:
    """Base class of dispatch modes (like ``TorchDispatchMode``).

    While a mode is active (``with mode:``), every operator call reaches
    ``mode.__ember_dispatch__(op, args, kwargs)``; calling ``op(*args, **kwargs)``
    inside it runs the operator under the modes below this one.
    """

    # whether dispatch records autograd on the caller's tensors after this mode returns
    # outputs without history (see _record_logical); a capturing mode attaches its own
    records_logical = True

    def __ember_dispatch__(self, op, args, kwargs):
        return op(*args, **kwargs)

    def __enter__(self):
        STATE.modes.append(self)
        STATE.intercept = True
        return self

    def __exit__(self, *exc):
        STATE.modes.remove(self)
        STATE.intercept = bool(STATE.modes)


def _apply_mode(op, args, params):
    if not STATE.modes:
        STATE.intercept = False
        return op(*args, **params)
    mode = STATE.modes.pop()
    STATE.intercept = bool(STATE.modes)
    try:
        out = mode.__ember_dispatch__(op, args, params)
    finally:
        STATE.modes.append(mode)
        STATE.intercept = True
    if STATE.grad_enabled and not hasattr(op, "base") and op.differentiable and \
            mode.records_logical:  # not in-place
        _record_logical(op, args, params, out)
    return out


def _record_logical(op, args, params, out):
    """Record autograd at the level of the tensors the caller passed.

    A mode that computes with other tensors than it was given (vmap unwraps batched
    tensors) returns fresh outputs without history: when a caller-level input requires
    grad, the node is recorded here, on the caller's tensors, so backward runs through
    the mode again (vmap of grad).  Pass-through modes return outputs already linked.
    """
    if not any(isinstance(a, Tensor) and a._requires_grad for a in args):
        return
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    if all(isinstance(o, Tensor) and o.grad_fn is None and not o._requires_grad for o in outs):
        record(op, args, params, outs)


# after apply and the modes exist: inplace imports them back
from .inplace import (_cat_name, _check_inplace_allowed, _rebase_history,  # noqa: E402,F401
                      apply_inplace, copy_into, mark_multi_output_views,
                      regenerate_view_grad_fn, write_out)
