"""``ember.autograd.Function``: user-defined operators with custom backward.

``ctx`` is the backward Node itself (as in PyTorch): ``save_for_backward`` keeps
tensors with their versions, and the engine calls ``backward(ctx, *grads)``.
Because the user's backward is written in ember ops, it can itself be
differentiated (unless marked ``once_differentiable``).

``Function.apply`` is one operator call for dispatch modes: while a mode is pushed, it
sees ``autograd_function_apply`` with the inputs and ``fn``/``kwargs`` params (a tracer can
inline the forward or keep the call whole).  A mode that passes the call on runs the
forward under every mode of the call again, so its operators are seen one by one as
before (vmap batches them, forward AD propagates through them, autocast casts them),
and the backward node is the ctx, built here as always.
"""
import functools
import threading
import warnings

import numpy as np

from .._core.dispatch import _apply_mode
from .._core.meta import DataDependentShape
from .._core.node import HOOKS_ON, SAVED_HOOKS, Node, _edge, pack_saved
from .._core.op import Op
from .._core.state import SHARED, STATE
from .._core.tensor import Tensor, _version_of, wrap
from .engine import current_graph_task_keeps_graph
from ..ops.decompositions import no_decomposition

__all__ = ["Function", "FunctionCtx", "once_differentiable", "InplaceFunction", "FunctionMeta",
           "BackwardCFunction"]


class FunctionCtx(Node):
    """The context object passed to ``forward``/``backward`` (a Node of the graph)."""

    # what an instance sets, readable on the class too (torch's Function derives from it)
    to_save = None
    non_differentiable = None
    needs_input_grad = None
    saved_for_forward = None
    materialize_grads = True

    def __init__(self):
        Node.__init__(self)
        self.to_save = ()
        self.saved = ()
        self.versions = None
        self.saved_out = None
        self.dirty = ()
        self.non_differentiable = ()
        self.materialize_grads = True
        self.needs_input_grad = ()
        self.next_edges = ()
        self.in_meta = ()
        self.n_out = 1
        self.seq = 0

    def save_for_backward(self, *tensors):
        """Saves tensors for backward; in-place changes to them before backward raise."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{len(self.to_save)} is of type {type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        self.saved_for_forward = tensors

    def mark_dirty(self, *args):
        """Marks tensors as modified in-place by ``forward``."""
        self.dirty = args

    def mark_non_differentiable(self, *args):
        """Marks outputs as not requiring gradients."""
        self.non_differentiable = args

    def set_materialize_grads(self, value):
        """Whether undefined output gradients are passed to backward as zeros (default True)."""
        self.materialize_grads = value

    def mark_shared_storage(self, *pairs):
        """Deprecated: tensors sharing storage are tracked automatically."""
        warnings.warn("`mark_shared_storage` is deprecated. Tensors with shared storages are "
                      "automatically tracked. Note that calls to `set_()` are not tracked",
                      FutureWarning, stacklevel=2)

    @property
    def dirty_tensors(self):
        """The tensors passed to ``mark_dirty`` (None if it was not called)."""
        return self.dirty or None

    @dirty_tensors.setter
    def dirty_tensors(self, value):
        self.dirty = tuple(value) if value is not None else ()

    @property
    def requires_grad(self):
        """Whether any input of the forward call requires grad."""
        return any(e is not None for e in self.next_edges)

    @property
    def saved_variables(self):
        """Deprecated alias of ``saved_tensors``."""
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning,
                      stacklevel=2)
        return self.saved_tensors

    def maybe_clear_saved_tensors(self):
        """Free the saved tensors now if the running backward does not retain the graph
        (the engine would free them after this node anyway)."""
        if not current_graph_task_keeps_graph():
            self.release()

    @property
    def saved_tensors(self):
        if self.saved is None:
            self.unpack_inputs()  # raises: freed by an earlier backward
        if self.versions:
            for t, vc, v in self.versions:
                if vc[0] != v:
                    from .._core.node import _raise_modified
                    _raise_modified(t, vc[0], v)
        return tuple(self.saved)

    def apply(self, grads):
        fn = self._fn_cls
        if self.materialize_grads:
            grads = [g if g is not None else wrap(np.zeros(shape, dtype=dt))
                     for g, (shape, dt) in zip(grads, self.out_meta)]
        if STATE.intercept:
            r = _dispatch(FUNCTION_BACKWARD, tuple(grads), {"fn": fn, "ctx": self})
        else:
            r = fn.backward(self, *grads)
        if not isinstance(r, tuple):
            r = (r,)
        n_in = len(self.next_edges)
        if len(r) < n_in:
            raise RuntimeError(f"function {type(self).__name__} returned an incorrect number of "
                               f"gradients (expected {n_in}, got {len(r)})")
        if len(r) > n_in:
            extra = r[n_in:]
            if any(x is not None for x in extra):
                raise RuntimeError(f"function {type(self).__name__} returned an incorrect number "
                                   f"of gradients (expected {n_in}, got {len(r)})")
            r = r[:n_in]
        for i, (g, e) in enumerate(zip(r, self.next_edges)):
            if e is not None and g is not None and not isinstance(g, Tensor):
                raise TypeError(f"function {type(self).__name__} returned a gradient of type "
                                f"{type(g).__name__} at index {i}; expected a Tensor or None")
            meta = self.in_meta[i]
            if e is not None and g is not None and meta is not None:
                shape = meta[0]
                if g._data.shape != shape:
                    try:
                        np.broadcast_shapes(g.shape, shape)
                        ok = np.broadcast_shapes(g.shape, shape) == g.shape
                    except ValueError:
                        ok = False
                    if not ok:
                        raise RuntimeError(f"Function {type(self).__name__} returned an invalid "
                                           f"gradient at index {i} - got {list(g.shape)} "
                                           f"but expected shape compatible with {list(shape)}")
        return r

    def release(self):
        if self.versions:  # saved nothing: a second backward is legal (as torch)
            self.saved = None  # the released mark (Node.released)
            self.versions = None


class BackwardCFunction(FunctionCtx):
    """The class of a custom Function's ``ctx`` (one subclass per Function, ``<Name>Backward``):
    the graph node that runs the Function's ``backward``.  ``_forward_cls`` is the Function."""

    @property
    def _forward_cls(self):
        return self._fn_cls

    def apply_jvp(self, *args):
        """The Function's ``jvp`` on this context."""
        return self._fn_cls.jvp(self, *args)

    def _compiled_autograd_key(self):
        return (id(self._fn_cls),)


class FunctionMeta(type):
    """Metaclass of `Function`: gives each Function class its ``_backward_cls``, the
    `BackwardCFunction` subclass its contexts are made from."""

    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_fn_cls": cls})


_FunctionMeta = FunctionMeta


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Base class for custom autograd operators: define ``forward`` and ``backward``
    staticmethods and call ``MyFunction.apply(*args)``.

    ``forward(ctx, *args)`` may instead be ``forward(*args)`` together with
    ``setup_context(ctx, inputs, output)``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode AD.")

    vjp = backward
    setup_context = None
    generate_vmap_rule = False
    clear_saved_tensors_on_access = False
    boxed_grads_call = False

    @staticmethod
    def vmap(info, in_dims, *args):
        """Define the behaviour of this Function under ``vmap``: return the batched outputs
        and their out_dims.  ember's vmap runs the Function's Python on batched tensors when
        no rule is given; this default, as torch's, refuses being called."""
        raise NotImplementedError("To use autograd.Function with vmap, you must either "
                                  "override the vmap staticmethod or set "
                                  "generate_vmap_rule=True.")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        if not STATE.intercept:
            return _run(cls, args, kwargs)
        return _dispatch(FUNCTION_APPLY, args, {"fn": cls, "kwargs": kwargs})


class InplaceFunction(Function):
    def __init__(self, inplace=False):
        self.inplace = inplace


# ---- the dispatcher entries ----------------------------------------------------------------

class _Calls(threading.local):
    def __init__(self):
        self.stack = []  # (modes, args) of the calls being dispatched, innermost last


_CALLS = _Calls()


def _dispatch(op, args, params):
    calls = _CALLS.stack
    calls.append((list(STATE.modes), args))
    try:
        return _apply_mode(op, args, params)
    finally:
        calls.pop()


def _under_modes(op, args, params):
    """Run ``op``'s Python body with the dispatch modes of its call pushed again (a mode that
    passed the call on reaches this with every mode popped)."""
    calls = _CALLS.stack
    if not calls or STATE.modes:
        return op.body(args, params)
    modes = STATE.modes
    modes[:] = calls[-1][0]
    STATE.intercept = bool(modes)
    try:
        return op.body(args, params)
    finally:
        modes[:] = []
        STATE.intercept = False


# A compiler never meets these ops: capture runs the Function's Python under its modes, so a
# graph holds the operators of forward/backward, and there is nothing left to lower.
_WHY = ("user Python: capture traces through the Function's forward/backward, so a compiler "
        "sees the user's ops, never this op")
_TRACED_THROUGH = {"decomp": _WHY, "lowering": _WHY}


class _PythonOp(Op):
    """An operator whose body is Python on tensors (a custom Function's forward or backward).
    Calling it (what a mode does to pass the call on) goes to the next mode; below the last
    one the body runs under the call's modes, which then see its operators one by one."""

    def __init__(self, name, body, doc):
        super().__init__(name, _no_kernel, None, differentiable=False, save_inputs=False,
                         n_out=None, shape=_python_shape, batch=_python_batch,
                         jvp=_python_jvp, doc=doc, unsupported=_TRACED_THROUGH)
        self.body = body
        no_decomposition(name, _TRACED_THROUGH["decomp"])

    def __call__(self, *args, **params):
        if STATE.intercept:
            return _apply_mode(self, args, params)
        return _under_modes(self, args, params)


def _no_kernel(xp, *arrays, **params):
    raise RuntimeError("this operator runs Python code on tensors; it has no array kernel "
                       "(call the op itself)")


def _python_shape(*inputs, **params):
    raise DataDependentShape("a custom Function's outputs are whatever its Python returns")


def _python_batch(op, phys, bdims, params, batch_size):
    # vmap passes on a Function without a vmap rule: its Python runs on the batched tensors
    # under every mode of the call (vmap's included), so its operators batch one by one;
    # the results are already batched tensors of this level, passed through unwrapped
    out = _under_modes(op, _CALLS.stack[-1][1], params)
    return out, (tuple(None for _ in out) if isinstance(out, tuple) else None)


def _python_jvp(out, tangents, *args, **params):
    # the body ran under forward AD: its operators gave the outputs their tangents
    outs = out if isinstance(out, tuple) else (out,)
    tans = tuple(getattr(o, "_fw_tangent", None) if isinstance(o, Tensor) else None
                 for o in outs)
    return tans if isinstance(out, tuple) else tans[0]


_python_jvp.from_body = True  # not a formula: nothing to derive it from or compare it with


# Autograd of a custom Function is its ctx node, built by the call itself; the dispatcher
# records nothing for these ops (differentiable=False: no mode records a second node).
FUNCTION_APPLY = _PythonOp(
    "autograd_function_apply", lambda args, params: _run(params["fn"], args, params["kwargs"]),
    "A custom autograd.Function's forward: inputs are the arguments of Function.apply, "
    "params ``fn`` (the Function class) and ``kwargs``.")
FUNCTION_BACKWARD = _PythonOp(
    "autograd_function_backward",
    lambda args, params: params["fn"].backward(params["ctx"], *args),
    "A custom autograd.Function's backward: inputs are the output gradients, params ``fn`` "
    "(the Function class) and ``ctx``.")


def _run(cls, args, kwargs):
    """``cls.apply(*args, **kwargs)``: forward without grad, then the ctx node."""
    ctx = cls._backward_cls()
    tensor_args = [a for a in args if isinstance(a, Tensor)]
    needs = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
    ctx.needs_input_grad = needs
    track = STATE.grad_enabled and any(needs)
    prev = STATE.grad_enabled
    STATE.grad_enabled = False
    try:
        if cls.setup_context is not None and \
                cls.setup_context is not Function.setup_context:
            out = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, out)
        else:
            out = cls.forward(ctx, *args, **kwargs)
    finally:
        STATE.grad_enabled = prev
    single = not isinstance(out, tuple)
    outs = (out,) if single else out
    dirty = {id(t) for t in ctx.dirty}
    nondiff = {id(t) for t in ctx.non_differentiable}
    input_ids = {id(a) for a in tensor_args}
    results = []
    for o in outs:
        if isinstance(o, Tensor) and id(o) in input_ids and id(o) not in dirty:
            # returning an input unchanged: hand back an alias carrying the new history
            alias = wrap(o._data)
            alias._vc = _version_of(o)
            o = alias
        results.append(o)
    if track:
        ctx.next_edges = [(_edge(a) if isinstance(a, Tensor) and a._requires_grad else None)
                          for a in args]
        # raw reads, as record()'s: a Size per tensor would cost ~5% of apply
        ctx.in_meta = [(a._data.shape, a._data.dtype) if isinstance(a, Tensor) else None
                       for a in args]
        SHARED.seq += 1
        ctx.seq = SHARED.seq
        ctx.n_out = len(results)
        ctx.out_meta = [(o._data.shape, o._data.dtype) if isinstance(o, Tensor) else
                        ((), np.float32) for o in results]
        for i, o in enumerate(results):
            if not isinstance(o, Tensor):
                continue
            if id(outs[i]) in nondiff or o._data.dtype.kind not in "fcV":
                continue
            if id(outs[i]) in dirty:
                if o._requires_grad and o.grad_fn is None:
                    raise RuntimeError("a leaf Variable that requires grad has been used in "
                                       "an in-place operation.")
            o.grad_fn = ctx
            o._output_nr = i
            o._requires_grad = True
        saved = []
        versions = []
        for t in ctx.to_save:
            saved.append(t)
            if t is not None:
                vc = _version_of(t)
                versions.append((t, vc, vc[0]))
        ctx.saved = saved
        ctx.versions = versions
        if HOOKS_ON[0] and SAVED_HOOKS.stack:
            pack_saved(ctx)
    else:
        ctx.saved = list(ctx.to_save)
    for o in results:
        if isinstance(o, Tensor) and id(o) in dirty:
            _version_of(o)[0] += 1
    return results[0] if single else tuple(results)


def once_differentiable(fn):
    """Decorator for ``backward``: run it without recording, so it cannot be differentiated
    again (double backward through it raises)."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = STATE.grad_enabled
        STATE.grad_enabled = False
        try:
            out = fn(ctx, *args)
        finally:
            STATE.grad_enabled = prev
        if prev and any(isinstance(a, Tensor) and a._requires_grad for a in args):
            outs = out if isinstance(out, tuple) else (out,)
            marked = []
            for o in outs:
                if isinstance(o, Tensor):
                    o = wrap(o._data)
                    o._requires_grad = True
                    o.grad_fn = _OnceDiffNode()
                marked.append(o)
            return tuple(marked) if isinstance(out, tuple) else marked[0]
        return out
    return wrapper


class _OnceDiffNode(Node):
    __slots__ = ()

    def __init__(self):
        Node.__init__(self)
        self.next_edges = ()
        self.n_out = 1
        self.saved = ()
        self.versions = None
        self.saved_out = None
        self.in_meta = ()
        SHARED.seq += 1
        self.seq = SHARED.seq

    def apply(self, grads):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")
