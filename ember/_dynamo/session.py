"""One call of a compiled function: the capture mode, its traces, graph breaks, the flush.

While the user's Python runs, `CaptureMode` sits on the dispatch stack and records every
operator call into the current `Trace` instead of running it.  When Python needs a value
(a lazy tensor's data, its autograd history), when a call cannot be recorded (a graph
break), or when the function returns, the trace runs (`CaptureSession.flush`): its key
finds the compiled graph or the backend compiles one, the graph runs on the real inputs,
and every lazy tensor becomes an ordinary tensor holding its value.  Python side effects,
prints and data-dependent branches therefore happen exactly as in eager mode.
"""
import os
import sys
import threading

from .._core.dispatch import DispatchMode
from .._core.meta_device import MetaArray, is_meta_device
from .._core.op import Op
from .._core.random import ACCESS_HOOKS, default_generator
from .._core.state import STATE
from .._core.tensor import STORAGE_HOOKS, VALUE_HOOKS, Size, Tensor
from . import config, logs
from .exc import Unsupported
from ..ops.decompositions import FUNCTIONALIZED
from .materialize import run_trace
from .random_ops import capture_draw, draws_random
from .symbolic import SymInt, int_leaf, leaf
from .trace import CannotCapture, Trace

__all__ = ["CaptureMode", "CaptureSession", "current_session", "user_location"]

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_location():
    """``file:line`` of the innermost frame outside ember (the user's code)."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_EMBER_DIR):
            return f"{fn}:{f.f_lineno}"
        f = f.f_back
    return "<unknown>"


class CaptureMode(DispatchMode):
    """Records operator calls into the session's current trace (see the module docstring)."""
    records_logical = False  # autograd is attached when the graph runs, not per op

    def __init__(self, session):
        self.session = session

    def __ember_dispatch__(self, op, args, kwargs):
        s = self.session
        trace = s.trace
        if trace is None:
            trace = s.trace = Trace(s)
        if _on_meta(args, kwargs):
            # meta tensors hold no data: their ops run as they come, as fake tensors do in
            # torch's tracing (a module built on the meta device inside the function)
            return op(*args, **kwargs)
        base = getattr(op, "base", None)
        try:
            if base is not None:
                return trace.record_inplace(base, args[0], args[1:], kwargs)
            if not isinstance(op, Op):
                raise CannotCapture(f"{op!r} is not an operator")
            if op.name == "autograd_function_apply":
                return op(*args, **kwargs)  # passed on: its forward's ops reach this mode
            if op.name in FUNCTIONALIZED and op.decomp is not None and (
                    config.capture_optimizer_updates or s.backwards and _reads_lazy(args)
                    and not _counts_in(kwargs)):
                # an update of gradients a recorded backward() made joins their graph
                # (not one keyed by Python step counts: each step would compile again)
                trace.record_functional_write(op, args, kwargs)
                return None
            if draws_random(op) and not s.record_random and not trace.can_draw(args, kwargs):
                r = capture_draw(trace, op, args, kwargs)
                s.effects.append(f"{op.name} draws random numbers")
                if r is None:
                    raise CannotCapture(f"operator {op.name} draws random numbers")
                return r
            return trace.record(op, args, kwargs)
        except CannotCapture as e:
            s.graph_break(f"{e} (operator {getattr(op, 'name', op)})")
        return op(*args, **kwargs)


def _on_meta(args, kwargs):
    """Whether an operator call works on meta tensors only (or makes one)."""
    seen = False
    for a in args:
        if isinstance(a, Tensor):
            if type(a.__dict__.get("_data")) is not MetaArray:
                return False
            seen = True
    return seen or is_meta_device(kwargs.get("device"))


def _reads_lazy(args):
    for a in args:
        if isinstance(a, Tensor) and "_lazy" in a.__dict__:
            return True
    return False


def _counts_in(params):
    """Whether an update's params hold per-parameter Python counts (SparseAdam's steps)."""
    for v in params.values():
        if type(v) in (tuple, list) and any(type(x) is int for x in v):
            return True
    return False


def _sym_class(cls, _cache={}):
    """The class a tensor argument has during a compiled call: sizes read as SymInts."""
    sc = _cache.get(cls)
    if sc is None:
        def shape(self):
            return Size(self.__dict__["_sym_shape"])

        def size(self, dim=None):
            s = self.__dict__["_sym_shape"]
            if dim is None:
                return Size(s)
            return s[dim + len(s) if dim < 0 else dim] if -len(s) <= dim < len(s) else \
                cls.size(self, dim)
        def numel(self):
            n = 1
            for s in self.__dict__["_sym_shape"]:
                n = n * s
            return n
        sc = _cache[cls] = type(cls.__name__, (cls,), {
            "shape": property(shape), "size": size, "numel": numel, "nelement": numel,
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__, "_is_sym_class": True})
    return sc


class _Sessions(threading.local):
    """The capture sessions of this thread: capture, like the mode stack, is per thread."""

    def __init__(self):
        self.stack = []


_SESSIONS = _Sessions()


def current_session():
    stack = _SESSIONS.stack
    return stack[-1] if stack else None


def _storage_changing(t):
    """A tensor's storage is about to be replaced: a pending graph that reads it runs first."""
    s = current_session()
    if s is None or s.trace is None:
        return
    if "_lazy" in t.__dict__ or id(t) in s.trace.input_ids:
        s.graph_break("a tensor's storage was replaced (t_, unsqueeze_, .data =, a resize)")


STORAGE_HOOKS.append(_storage_changing)


def _generator_used(gen):
    """The default generator is about to be used outside the pending graph (``manual_seed``,
    a state read, a draw made at the call): draws the graph holds come first, as in eager."""
    if gen is not default_generator:
        return
    s = current_session()
    if s is not None and s.trace is not None and s.trace.draws:
        s.graph_break("the random number generator is used outside the graph")


ACCESS_HOOKS.append(_generator_used)


class CaptureSession:
    """State of one compiled call; ``cache`` is the compiled function's `FunctionCache`."""
    # random ops drawn at the call (compile) or recorded as graph nodes (export)
    record_random = False
    # tensor literals (``ember.tensor([...])``) made at the call or recorded (export)
    record_literals = False

    def __init__(self, cache, explain=None):
        self.cache = cache
        self.trace = None
        self.mode = CaptureMode(self)
        self.arg_index = {}
        self.arg_shapes = []
        self.arg_names = []
        self.swapped = []
        self.leaf_values = {}
        self.explain = explain
        self.param_names = None
        self.module = None
        self.graph_ordinal = 0   # how many graphs this call has run so far
        self.int_names = []
        self.flushes = []        # FlushInfo of each graph run (ember._dynamo.replay)
        self.breaks = 0
        self.static_leaves = set()   # sizes mark_static'd on this call's arguments
        self.effects = []        # what ran at the call and a replay would skip
        self.last_input_names = None
        self.backwards = 0       # backward() calls recorded into a graph (step_backward)

    # ---- arguments -----------------------------------------------------------------
    def bind_arguments(self, flat, names):
        """Tensor arguments ``flat`` (named ``names``): their sizes become SymInt leaves."""
        cache = self.cache
        for t, name in zip(flat, names):
            if id(t) in self.arg_index or "_lazy" in t.__dict__ or \
                    "_data" not in t.__dict__ or type(t).__dict__.get("_is_sym_class"):
                continue
            a = len(self.arg_shapes)
            self.arg_index[id(t)] = a
            self.arg_names.append(name)
            shape = t.__dict__["_data"].shape
            dyn = t.__dict__.get("_dynamo_dynamic_indices") or ()
            weak = t.__dict__.get("_dynamo_weak_dynamic_indices") or ()
            static = t.__dict__.get("_dynamo_static_indices") or ()
            leaves = []
            for d, v in enumerate(shape):
                lf = ("a", a, d)
                self.leaf_values[lf] = v
                leaves.append(leaf(a, d, v))
                if d in static:
                    self.static_leaves.add(lf)  # this call only: the mark is the tensor's
                elif d in dyn or d in weak or cache.dynamic is True:
                    cache.dynamic_leaves.add(lf)
            sym = tuple(leaves)
            self.arg_shapes.append(sym)
            if type(t).__dict__.get("_is_lazy_class") is None:
                t.__dict__["_sym_shape"] = sym
                self.swapped.append((t, t.__class__))
                t.__class__ = _sym_class(t.__class__)

    def bind_ints(self, args, names):
        """Int arguments become SymInt leaves (symbolic once seen to vary)."""
        out = []
        for i, a in enumerate(args):
            if type(a) is int:
                n = len(self.int_names)
                self.int_names.append(names[i] if i < len(names) else f"args_{i}")
                lf = ("n", n, 0)
                self.leaf_values[lf] = a
                a = int_leaf(n, a)
            out.append(a)
        return tuple(out)

    def int_name(self, n):
        return self.int_names[n] if n < len(self.int_names) else f"int argument {n}"

    def unbind_arguments(self):
        for t, cls in self.swapped:
            if type(t).__dict__.get("_is_sym_class"):
                t.__class__ = cls
            t.__dict__.pop("_sym_shape", None)
        self.swapped.clear()

    def symbolic_shape(self, t, shape):
        a = self.arg_index.get(id(t))
        return tuple(shape) if a is None else self.arg_shapes[a]

    def arg_name(self, a):
        return self.arg_names[a] if a < len(self.arg_names) else f"argument {a}"

    def input_names(self, trace, spec):
        """Readable placeholder names: argument names, ``self.<param path>`` for module
        state, else None (the builder numbers them)."""
        names = {}
        pnames = self._param_names()
        for k in spec.inputs:
            t = trace.inputs[k]
            a = self.arg_index.get(id(t))
            if a is not None:
                names[k] = _identifier("l_" + self.arg_names[a])
            elif id(t) in pnames:
                names[k] = _identifier("l_self_" + pnames[id(t)])
        return names

    def _param_names(self):
        if self.param_names is None:
            self.param_names = {}
            if self.module is not None:
                for n, p in self.module.named_parameters():
                    self.param_names[id(p)] = n
                for n, b in self.module.named_buffers():
                    self.param_names[id(b)] = n
        return self.param_names

    # ---- graph breaks and flushes --------------------------------------------------
    def graph_break(self, reason):
        if self.trace is not None and self.trace.in_backward:
            # a recorded backward() needs a value: the engine runs it instead
            raise CannotCapture(reason)
        self.breaks += 1
        where = user_location()
        if self.cache.fullgraph:
            self.abort()
            raise Unsupported(f"graph break under fullgraph=True: {reason}\n  at {where}")
        logs.log("graph_breaks", f"Graph break in {self.cache.name}: {reason} at {where}")
        if self.explain is not None:
            self.explain.break_reasons.append(f"{reason} at {where}")
        self.flush(reason)

    def flush(self, reason="the function returned"):
        """Run the pending trace (see the module docstring)."""
        trace = self.trace
        if trace is None:
            return
        self.trace = None
        saved = STATE.modes
        # the graph runs below the capture mode: its ops must not be recorded again
        idx = next((i for i, m in enumerate(saved) if m is self.mode), None)
        below = saved[:idx] if idx is not None else saved
        STATE.modes = list(below)
        STATE.intercept = bool(below)
        try:
            info = run_trace(trace, self)
            if trace.ops:
                self.graph_ordinal += 1
                self.flushes.append(info)
        finally:
            STATE.modes = saved
            STATE.intercept = bool(saved)

    def abort(self):
        """Run what is pending without caching it (an error is on its way out)."""
        try:
            self.flush("an error")
        except Exception:
            pass

    def stats_graph(self, gm):
        if self.explain is not None:
            self.explain.graphs.append(gm)

    # ---- the session as a context ----------------------------------------------------
    def _value_read(self, t, kind):
        """A Python read of a tensor's values (``bool``, ``item``, ``tolist``): the Python
        after it may branch on them, which a replay (that skips the Python) cannot see."""
        if "_lazy" not in t.__dict__:
            self.effects.append(f"the values of a tensor were read ({kind}())")
        return NotImplemented

    def __enter__(self):
        VALUE_HOOKS.append(self._value_read)
        _SESSIONS.stack.append(self)
        if STATE.modes:
            self.effects.append("a dispatch mode was active around the call")
        # the capture sits below the modes already active (autocast, a profiler): they
        # see each call first, and what they make of it (autocast's casts) is recorded
        STATE.modes.insert(0, self.mode)
        STATE.intercept = True
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self.flush()
            else:
                self.abort()
        finally:
            self.mode.__exit__(exc_type, exc, tb)
            _SESSIONS.stack.pop()
            VALUE_HOOKS.remove(self._value_read)
            self.unbind_arguments()


def _identifier(s):
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in s)
    return out if out and not out[0].isdigit() else "_" + out


_ = (SymInt, Tensor)
