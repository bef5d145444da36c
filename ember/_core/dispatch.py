"""The dispatcher: every operator call goes through `apply` (or `apply_inplace`).

Fast path: no mode pushed -> unwrap tensors, run the kernel, wrap the result,
and record an autograd Node only when grad mode is on and an input requires
grad.  Slow path: the innermost dispatch mode sees the call (tracing, vmap,
profiling, ... are modes), and arguments that are not tensors but define
``__ember_function__`` (fx Proxies, tensor-likes) divert the *public* function
call to their override (see `overridable`).
"""
import functools
import numbers

import numpy as np

from . import dtype as _dt
from .errors import NUMPY_ERRORS, translate
from .device import XP_BY_ARRAY_TYPE, backend_for_type
from .node import record
from .state import SHARED, STATE
from .tensor import Tensor, _version_of, wrap

__all__ = ["apply", "apply_inplace", "DispatchMode", "overridable", "NeedsOverride",
           "SUBCLASS_OVERRIDES", "OVERRIDE_TYPES", "write_out", "register_override_type",
           "unregister_override_type", "handle_override", "routes_overrides",
           "route_tensor_methods", "mark_multi_output_views"]

SUBCLASS_OVERRIDES = set()
_ndarray = np.ndarray
_np = np
_SCALARS = (int, float, bool, complex)
_XP = XP_BY_ARRAY_TYPE


class NeedsOverride(Exception):
    """Raised inside the dispatcher when an argument defines ``__ember_function__``."""


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
            arrays.append(d)
            if a._requires_grad:
                rg = True
            if xp is None:
                t0 = type(d)
                xp = _XP.get(t0) or _xp_of_subclass(t0)
            elif type(d) is not t0 and backend_for_type(type(d)) is not backend_for_type(t0):
                _raise_device_mismatch(args)
        elif a is None or type(a) in _SCALARS or isinstance(a, (numbers.Number, _np.generic)):
            arrays.append(a)
        elif type(a).__dict__.get("__ember_function__") is not None or \
                getattr(type(a), "__ember_function__", None) is not None:
            raise NeedsOverride(a)
        else:
            raise TypeError(f"expected Tensor as element {len(arrays)} in argument list, but got "
                            f"{type(a).__name__}")
    return arrays, rg, xp or _np


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
    arrays, rg, xp = _unwrap(args)
    try:
        r = op.kernel(xp, *arrays, **params)
    except NUMPY_ERRORS as e:
        t = translate(op.name, arrays, e)
        if t is None:
            raise
        raise t from None
    if op.n_out == 1:
        if type(r) is not _ndarray:
            r = _as_array(r, xp)
        out = wrap(r)
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


def _as_array(r, xp):
    if xp is _np:
        return _np.asanyarray(r)  # scalars become 0-d arrays; ndarray subclasses stay
    return xp.asarray(r)


def _mark_view(out, src, op, params):
    if not _np.may_share_memory(out._data, src._data):
        return  # the kernel had to copy (e.g. reshape of a non-contiguous tensor)
    root = src._base if src._base is not None else src
    out._base = root
    out._version = _version_of(root)
    out._view_chain = (src._view_chain or ()) + ((op, params),)
    out._view_base_fn = root.grad_fn
    if getattr(src, "_multi_view", None) is not None and STATE.grad_enabled:
        out._multi_view = (None, None)  # a view of such an output is one too (torch)


# ---- in-place -------------------------------------------------------------------------

def mark_multi_output_views(outs, name):
    """Mark the views ``outs`` returned together by ``name`` (split, unbind, ...): with grad
    mode on, torch forbids writing into them in place while autograd tracks the write."""
    if STATE.grad_enabled:
        for i, o in enumerate(outs):
            o._multi_view = (name, i)
    return outs


_MULTI_VIEW_MSG = ("This view is the output of a function that returns multiple views. Such "
                   "functions do not allow the output views to be modified inplace. You should "
                   "replace the inplace operation by an out-of-place one.")


def _check_multi_output_view(target, args):
    base = target._base
    if base is None or not STATE.grad_enabled or not (
            base._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args)):
        return
    name, nr = target._multi_view
    fn = target.grad_fn
    if fn is None:
        raise RuntimeError("A view was created in no_grad mode and is being modified inplace "
                           "with grad mode enabled. " + _MULTI_VIEW_MSG)
    if name is None:
        name, nr = type(fn).__name__.rstrip("0123456789").removesuffix("Backward"), \
            target._output_nr
    raise RuntimeError(f"Output {nr} of {name} is a view and is being modified inplace. "
                       + _MULTI_VIEW_MSG)


def _check_inplace_allowed(target, args=()):
    if getattr(target, "_multi_view", None) is not None:
        _check_multi_output_view(target, args)
    if target._requires_grad and target.grad_fn is None and STATE.grad_enabled:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    base = target._base
    if base is not None and base._requires_grad and base.grad_fn is None and STATE.grad_enabled:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if STATE.inference is False and getattr(target, "_inference", False) and STATE.grad_enabled:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not "
                           "allowed.")


def copy_into(target, r):
    """Write array ``r`` into ``target``'s storage with torch's shape and casting checks."""
    td = target._data
    if r.shape != td.shape:
        try:
            b = _np.broadcast_shapes(r.shape, td.shape)
        except ValueError:
            b = None
        if b != td.shape:
            raise RuntimeError(f"output with shape {list(td.shape)} doesn't match the broadcast "
                               f"shape {list(_np.broadcast_shapes(r.shape, td.shape)) if b else list(r.shape)}")
    if r.dtype != td.dtype:
        src, dst = _dt.FROM_NP[r.dtype], _dt.FROM_NP[td.dtype]
        if src.category > dst.category:
            raise RuntimeError(f"result type {_cat_name(src)} can't be cast to the desired output "
                               f"type {_cat_name(dst)}")
    _np.copyto(td, r, casting="unsafe") if type(td) is _ndarray else td.__setitem__(..., r)
    v = _version_of(target)
    v[0] += 1


def _cat_name(d):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
            "complex64": "ComplexFloat", "complex128": "ComplexDouble",
            "bfloat16": "BFloat16"}.get(d.name, d.name)


def apply_inplace(op, target, args, params):
    """``target.op_(*args)``: compute ``op(target, *args)`` and write it into ``target``."""
    if STATE.intercept:
        return _apply_mode(op.inplace, (target,) + tuple(args), params)
    if not isinstance(target, Tensor):
        raise TypeError(f"{op.name}_ expects a Tensor, got {type(target).__name__}")
    full = (target,) + tuple(args)
    _check_inplace_allowed(target, args)
    track = STATE.grad_enabled and op.differentiable and (
        target._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args))
    if not track:
        arrays, _, xp = _unwrap(full)
        try:
            r = op.kernel(xp, *arrays, **params)
        except NUMPY_ERRORS as e:
            t = translate(op.name, arrays, e)
            if t is None:
                raise
            raise t from None
        if type(r) is not _ndarray:
            r = _as_array(r, xp)
        copy_into(target, r)
        return target
    src = target
    si = op.save_inputs
    if si is True or (si and 0 in si):
        # the op's backward reads the old value of target, which is about to be overwritten
        src = _clone_op()(target)
    out = apply(op, (src,) + tuple(args), params)
    copy_into(target, out._data)
    _rebase_history(target, out)
    return target


def _clone_op():
    from .op import REGISTRY
    return REGISTRY["clone"]


def _rebase_history(target, out):
    """Make ``target`` (just overwritten with ``out``'s value) carry ``out``'s history."""
    if out.grad_fn is None:
        return
    base = target._base
    if base is None:
        target.grad_fn = out.grad_fn
        target._output_nr = out._output_nr
        target._requires_grad = True
        return
    from .op import REGISTRY
    scatter = REGISTRY["_view_scatter"]
    chain = target._view_chain
    # base_new = base with the view region replaced by out: a node only, the data is written.
    base_edge_holder = base
    node_out = wrap(base._data)
    record(scatter, (base_edge_holder, out), {"chain": chain}, (node_out,))
    base.grad_fn = node_out.grad_fn
    base._output_nr = 0
    base._requires_grad = True
    regenerate_view_grad_fn(target)


def regenerate_view_grad_fn(view):
    """Give ``view`` a grad_fn that replays its view chain on its base's current history."""
    base = view._base
    t = base
    with _GradOn():
        for op, params in view._view_chain:
            t = apply(op, (t,), params)
    view.grad_fn = t.grad_fn
    view._output_nr = t._output_nr
    view._requires_grad = t._requires_grad
    view._view_base_fn = base.grad_fn


class _GradOn:
    def __enter__(self):
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = True

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev


def write_out(out, result):
    """Implement ``out=``: resize ``out`` if it is empty, then copy ``result`` into it."""
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    if getattr(result, "_level", None) is not None and getattr(out, "_level", None) is None:
        raise RuntimeError("vmap: out= is not possible with a batched result and an unbatched "
                           "out tensor: the result has one value per example. Please use the "
                           "out-of-place version of the operator inside vmap.")
    if STATE.grad_enabled and (result._requires_grad or out._requires_grad):
        raise RuntimeError("functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if out._data.shape != result._data.shape:
        if out._data.size != 0:
            import warnings
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{list(out._data.shape)}, which does not match the required output "
                          f"shape {list(result._data.shape)}. This behavior is deprecated.",
                          UserWarning, stacklevel=3)
        out._data = _np.empty(result._data.shape, dtype=out._data.dtype)
        out._base = None
    copy_into(out, result._data)
    return out


# ---- modes and overrides --------------------------------------------------------------

class DispatchMode:
    """Base class of dispatch modes (like ``TorchDispatchMode``).

    While a mode is active (``with mode:``), every operator call reaches
    ``mode.__ember_dispatch__(op, args, kwargs)``; calling ``op(*args, **kwargs)``
    inside it runs the operator under the modes below this one.
    """

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
    if STATE.grad_enabled and not hasattr(op, "base") and op.differentiable:  # not in-place
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


OVERRIDE_TYPES = set()  # non-Tensor types registered with `register_override_type`


def register_override_type(cls):
    """Make every public function honour ``cls.__ember_function__`` wherever an instance
    of ``cls`` appears in its arguments (nested lists/tuples and keywords included).

    Tensor subclasses defining ``__ember_function__`` are registered when they are
    created; other tensor-likes register here (fx Proxies instead raise
    ``SHARED.overrides`` while one is alive).  Unregistered types are still honoured
    wherever the dispatcher meets them, but a composite that reads ``.shape`` first
    would fail.  While any override is possible, public functions scan their arguments
    (the only cost; nothing is scanned otherwise)."""
    if getattr(cls, "__ember_function__", None) is None:
        raise TypeError(f"{cls.__name__} does not define __ember_function__")
    target = SUBCLASS_OVERRIDES if issubclass(cls, Tensor) else OVERRIDE_TYPES
    if cls not in target:
        target.add(cls)
        SHARED.overrides += 1


def unregister_override_type(cls):
    """Undo `register_override_type` (tests that define throwaway override types)."""
    for target in (SUBCLASS_OVERRIDES, OVERRIDE_TYPES):
        if cls in target:
            target.discard(cls)
            SHARED.overrides -= 1


def _collect_overrides(a, found):
    if isinstance(a, (list, tuple)):
        for x in a:
            _collect_overrides(x, found)
        return
    if isinstance(a, (dict, slice)):  # t[:, :n] with a traced n; dicts of tensors
        for x in (a.values() if isinstance(a, dict) else (a.start, a.stop, a.step)):
            _collect_overrides(x, found)
        return
    t = type(a)
    if getattr(t, "__ember_function__", None) is not None and t not in found and \
            (not isinstance(a, Tensor) or t in SUBCLASS_OVERRIDES):
        # torch's order: a subclass is asked before its parents
        for i, f in enumerate(found):
            if issubclass(t, f):
                found.insert(i, t)
                return
        found.append(t)


def _override_types(args, kwargs):
    found = []
    for a in args:
        _collect_overrides(a, found)
    if kwargs:
        for a in kwargs.values():
            _collect_overrides(a, found)
    return found


def handle_override(public, args, kwargs):
    """Call the ``__ember_function__`` of the override types among ``args``/``kwargs``
    with ``public`` as ``func`` (the first that does not return NotImplemented wins)."""
    types = _override_types(args, kwargs)
    for t in types:
        r = t.__ember_function__(public, tuple(types), args, kwargs)
        if r is not NotImplemented:
            return r
    raise TypeError(f"no implementation found for '{getattr(public, '__qualname__', public)}' on "
                    f"types that implement __ember_function__: {types}")


def overridable(fn, name=None):
    """Make public function (or Tensor method) ``fn`` honour ``__ember_function__``.

    Arguments are scanned for override types only while ``SHARED.overrides`` is raised,
    so the eager hot path pays one attribute test; an override the dispatcher meets
    otherwise (`NeedsOverride`) is routed too.  The override receives the returned
    wrapper as ``func``.  Wrapping an overridable function again wraps its
    implementation: a Tensor method then has its own identity, distinct from the public
    function (``Tensor.matmul`` vs ``ember.matmul``), like torch's."""
    fn = getattr(fn, "__wrapped_impl__", fn)

    @functools.wraps(fn)
    def public(*args, **kwargs):
        if SHARED.overrides and _override_types(args, kwargs):
            return handle_override(public, args, kwargs)
        try:
            return fn(*args, **kwargs)
        except NeedsOverride:
            return handle_override(public, args, kwargs)
        except NUMPY_ERRORS as e:  # a NumPy exception from a composite: torch's type
            t = translate(public.__name__, args, e)
            if t is None:
                raise
            raise t from None
    public.__wrapped_impl__ = fn
    if name is not None:
        public.__name__ = name
        public.__qualname__ = f"Tensor.{name}"
    return public


def routes_overrides(fn):
    """Mark ``fn`` as routing overrides itself (fast paths that catch `NeedsOverride`)."""
    fn.__ember_routes__ = True
    return fn


# Tensor members that stay unrouted: metadata of the tensor's own storage, answered
# concretely (they sit on the hottest internal paths, and an override commonly calls
# them), conversions to Python/NumPy data, and Python protocol hooks.
_UNROUTED_METHODS = frozenset({
    "size", "dim", "numel", "nelement", "ndimension", "element_size", "stride",
    "storage_offset", "is_contiguous", "data_ptr", "is_floating_point", "is_complex",
    "is_signed", "item", "tolist", "numpy", "retain_grad", "requires_grad_",
    "get_device", "untyped_storage", "storage", "is_inference", "is_set_to",
    "is_pinned", "is_shared", "share_memory_", "register_hook",
    "register_post_accumulate_grad_hook"})
_ROUTED_DUNDERS = frozenset({"__getitem__", "__setitem__"})


def route_tensor_methods(cls):
    """Wrap the public methods of ``cls`` (Tensor) with `overridable`, so
    ``tensor.method(proxy)`` and ``subclass_instance.method()`` reach the override with
    the Tensor method as ``func``.  Run once after every module attached its methods."""
    for name, v in list(vars(cls).items()):
        if (name[0] == "_" and name not in _ROUTED_DUNDERS) or name in _UNROUTED_METHODS:
            continue
        if not callable(v) or isinstance(v, (type, staticmethod, classmethod, property)) or \
                getattr(v, "__ember_method__", False):
            continue
        if getattr(v, "__ember_routes__", False) and getattr(v, "__name__", None) == name:
            continue  # routes itself; an alias (Tensor.greater = Tensor.gt) gets its own name

        m = overridable(v, name)
        m.__module__ = cls.__module__  # pickles and prints as Tensor.<name>
        m.__ember_method__ = True
        setattr(cls, name, m)
