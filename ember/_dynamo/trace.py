"""The pending graph of a compiled region: operator calls recorded instead of run.

A `Trace` numbers the values it records (0, 1, ...).  Each recorded call is an `OpRecord`
whose arguments are *refs*: ``("v", j)`` a value of this trace, ``("i", k)`` the k-th real
tensor the trace reads (a graph input), ``("s", p)`` the p-th Python number passed to an
op (a constant, or a graph input once it is seen to vary), ``("c", x)`` any other constant
(None, bool, str).  In-place writes are recorded functionally: the written tensor is
rebound to the new value, and a real tensor becomes lazy until the graph runs and the value
is written back into its memory.  See `ember._dynamo.lazy` for what a lazy tensor is, and
`ember._dynamo.materialize` for running the trace.
"""
import numbers
import weakref

import numpy as np

from .._core import dtype as _dt
from .._core.meta import DataDependentShape, TensorMeta
from .._core.op import REGISTRY, Category, Op
from .._core.random import Generator, default_generator
from .._core.state import STATE
from .._core.tensor import Tensor
from .keep_history import KEEP_HISTORY
from .lazy import LazyArray, LazyRef, lazy_class
from .random_ops import RANDOM_NAMES as _RANDOM_NAMES
from .symbolic import SymInt

__all__ = ["Trace", "OpRecord", "CannotCapture"]

_NUMBERS = (int, float, complex)


class CannotCapture(Exception):
    """This call is not recorded: the pending graph runs and the call runs eagerly."""


class OpRecord:
    __slots__ = ("op", "args", "params", "out", "n_out", "grad", "where")

    def __init__(self, op, args, params, out, n_out, grad, where):
        self.op = op            # the Op
        self.args = args        # tuple of refs
        self.params = params    # the static params, as the kernel gets them
        self.out = out          # index of the first output value
        self.n_out = n_out      # number of output values
        self.grad = grad        # grad mode when recorded
        self.where = where      # the user's file:line, for messages (or None)


class Trace:
    """One pending graph; see the module docstring."""

    def __init__(self, session):
        self.session = session
        self.inputs = []            # real tensors read by the graph
        self.input_ids = {}         # id(tensor) -> input index
        self.input_metas = []       # (shape, ember dtype, requires_grad) per input
        self.ops = []
        self.metas = []             # value -> (shape, ember dtype)
        self.holders = []           # weakrefs of every lazy tensor made or rebound here
        self.value_rg = []          # value -> requires_grad
        self.producer = []          # value -> index of its OpRecord
        self.scalars = []           # the Python numbers passed to ops, in order
        self.mutated = {}           # id(real tensor) -> tensor written in place
        self.versions = {}          # id(root tensor) -> number of writes through it
        self.roots = {}             # id(root tensor) -> root (kept alive while views exist)
        self.closed = False
        self.in_backward = False    # recording that must not run the graph: a value it
        # needs raises CannotCapture (a backward(), step_backward; an update's probe)
        self.consumed = set()       # values whose recorded backward spent their history
        self.draws = []             # ops that draw from the default generator (never dead)

    def checkpoint(self):
        """A mark to `rollback` to: what recording appends (not in-place writes)."""
        return (len(self.ops), len(self.metas), len(self.scalars), len(self.inputs),
                len(self.holders))

    def rollback(self, mark):
        """Forget what was recorded since ``mark`` (a recording that could not finish)."""
        n_ops, n_values, n_scalars, n_inputs, n_holders = mark
        del self.ops[n_ops:]
        del self.metas[n_values:], self.value_rg[n_values:], self.producer[n_values:]
        del self.holders[n_holders:]
        if self.draws and self.draws[-1] >= n_ops:
            self.draws = [i for i in self.draws if i < n_ops]
        self._undo(n_scalars, n_inputs)

    def flush(self, reason):
        """Run this trace now (Python needs a value it holds)."""
        if not self.closed and self.session.trace is self:
            # Python needs a value: the graph ends here (a graph break, as in torch)
            self.session.graph_break(reason)

    # ---- reading arguments -----------------------------------------------------------
    def meta(self, j):
        return self.metas[j]

    def _input(self, t):
        k = self.input_ids.get(id(t))
        if k is not None:
            return k
        arr = t.__dict__["_data"]
        if type(arr) is not np.ndarray:
            raise CannotCapture("a tensor on another device than the CPU")
        if self.mutated and any(m.__dict__["_data"] is arr for m in self.mutated.values()):
            # another tensor object on the same array (``x.data``, ``detach()``) was written
            raise CannotCapture("a tensor that shares memory with one written in place")
        if self.mutated and arr.base is not None or self.mutated and any(
                m.__dict__["_data"].base is not None for m in self.mutated.values()):
            for m in self.mutated.values():
                if np.may_share_memory(arr, m.__dict__["_data"]):
                    raise CannotCapture("a tensor that shares memory with one written in place")
        k = len(self.inputs)
        self.inputs.append(t)
        self.input_ids[id(t)] = k
        shape = self.session.symbolic_shape(t, arr.shape)
        self.input_metas.append((shape, _dt.FROM_NP[arr.dtype], t._requires_grad))
        return k

    def ref_of(self, a):
        """The ref of argument ``a`` and what a shape rule sees of it."""
        if isinstance(a, Tensor):
            lz = a.__dict__.get("_lazy")
            if lz is not None:
                if lz.trace is not self:
                    raise CannotCapture("a lazy tensor of another compiled region")
                if a.__dict__.get("grad_fn") is not None:
                    # an autograd.Function's output: its history is that Function's node,
                    # outside this graph; it enters the next graph as a real input
                    raise CannotCapture("the output of an autograd.Function is read")
                if lz.view is not None:
                    self._refresh_view(a, lz)
                elif STATE.grad_enabled and id(a) in self.mutated and a._requires_grad:
                    # a leaf written in place here (an optimizer step): its gradient must
                    # reach the leaf itself, which only a graph reading it as an input does
                    raise CannotCapture("a tensor that requires grad was written in place in "
                                        "this graph and is read with grad mode on")
                shape, dtype = self.metas[lz.index]
                return ("v", lz.index), TensorMeta(shape, dtype), self.value_rg[lz.index]
            d = a.__dict__.get("_data")
            if d is None:
                raise CannotCapture(f"a tensor of type {type(a).__name__} without storage")
            if type(d) is LazyArray:
                # a tensor made from a lazy tensor's array (wrap(x._data)): it aliases x
                src = d._tensor
                slz = src.__dict__.get("_lazy")
                if slz is not None and slz.trace is self:
                    return self.ref_of(src)
                a.__dict__["_data"] = d._real()
            k = self._input(a)
            shape, dtype, rg = self.input_metas[k]
            return ("i", k), TensorMeta(shape, dtype), a._requires_grad
        if a is None or type(a) is bool or type(a) is str:
            return ("c", a), a, False
        if type(a) in _NUMBERS or isinstance(a, SymInt):
            self.scalars.append(a)
            return ("s", len(self.scalars) - 1), a, False
        if isinstance(a, np.generic) and a.dtype.kind in "biuf":
            return self.ref_of(a.item())   # a NumPy scalar is a Python number to an op
        if isinstance(a, numbers.Number) or isinstance(a, np.generic):
            raise CannotCapture(f"a {type(a).__name__} argument")
        raise CannotCapture(f"an argument of type {type(a).__name__}")

    # ---- recording -------------------------------------------------------------------
    def record(self, op, args, params, where=None):
        """Record ``op(*args, **params)``; returns its lazy result(s)."""
        if op.shape is None:
            raise CannotCapture(f"operator {op.name} has no shape rule")
        if op.name.endswith("_step"):
            raise CannotCapture(f"operator {op.name} is an optimizer update that writes its "
                                f"inputs (ember._dynamo.config.capture_optimizer_updates "
                                f"records it instead)")
        random = op.category is Category.RANDOM or op.name in _RANDOM_NAMES
        if op.name in _EAGER_OPS and not (op.name == "tensor" and self.session.record_literals):
            raise CannotCapture(f"operator {op.name} has effects")
        if op.name == "empty_strided" and not _fresh_layout(params["size"], params["stride"]):
            # a graph value has a fresh array's layout: strides the program reads or writes
            # through (fill_ keeps them in eager mode) exist only in an eager result
            raise CannotCapture("empty_strided with strides a fresh tensor does not have")
        if random and not self.session.record_random and not self.can_draw(args, params):
            raise CannotCapture(f"operator {op.name} draws random numbers")
        n_scalars = len(self.scalars)
        n_inputs = len(self.inputs)
        try:
            refs, metas, any_rg = [], [], False
            for a in args:
                r, m, rg = self.ref_of(a)
                refs.append(r)
                metas.append(m)
                any_rg = any_rg or rg
            try:
                out = op.shape(*metas, **params)
            except DataDependentShape:
                raise CannotCapture(f"the output shape of {op.name} depends on the data") from None
        except CannotCapture:
            self._undo(n_scalars, n_inputs)
            raise
        multi = op.n_out != 1
        outs = out if multi else (out,)
        if op.n_out is None:
            self._undo(n_scalars, n_inputs)
            raise CannotCapture(f"operator {op.name} returns a list of data-dependent length")
        grad = STATE.grad_enabled
        rg = grad and any_rg and op.differentiable
        first = len(self.metas)
        rec = OpRecord(op, tuple(refs), params, first, len(outs), grad, where)
        if random:
            self.draws.append(len(self.ops))
        self.ops.append(rec)
        results = []
        view = None
        if op.view:
            view = self._view_of(args[0], op, params)
        for i, (shape, dtype) in enumerate(outs):
            dtype = dtype if isinstance(dtype, _dt.dtype) else _dt.FROM_NP[np.dtype(dtype)]
            out_rg = rg and i not in op.nondiff_outputs and (dtype.is_floating_point or
                                                            dtype.is_complex)
            results.append(self._new_value(tuple(shape), dtype, out_rg, len(self.ops) - 1,
                                           view))
        return tuple(results) if op.n_out is not None and multi else results[0]

    # a graph node that draws runs its kernel, which reads the default generator, when
    # the graph runs: the draws of one graph come in recorded order, and anything else
    # that uses the generator meanwhile runs the pending graph first (`ACCESS_HOOKS`), so
    # the stream is consumed exactly as in eager mode, replayed calls included
    draws_allowed = True

    def can_draw(self, args, params):
        """Whether a random op with these arguments may be a node of this graph: it draws
        from the default generator (a Generator object's stream is drawn at the call)."""
        if not self.draws_allowed:
            return False
        g = params.get("generator")
        if g is not None and g is not default_generator:
            return False
        for a in args:
            if isinstance(a, Generator) and a is not default_generator:
                return False
        return True

    def _undo(self, n_scalars, n_inputs):
        del self.scalars[n_scalars:]
        for t in self.inputs[n_inputs:]:
            del self.input_ids[id(t)]
        del self.inputs[n_inputs:]
        del self.input_metas[n_inputs:]

    def _new_value(self, shape, dtype, rg, producer, view, cls=Tensor):
        j = len(self.metas)
        self.metas.append((shape, dtype))
        self.value_rg.append(rg)
        self.producer.append(producer)
        t = object.__new__(lazy_class(cls))
        t.__dict__["_lazy"] = LazyRef(self, j, cls, view)
        if rg:
            t._requires_grad = True
        self.holders.append(weakref.ref(t))
        return t

    def alias(self, t):
        """A lazy tensor sharing ``t``'s value and memory, without autograd history
        (``detach()``, ``.data``)."""
        lz = t.__dict__["_lazy"]
        if lz.view is not None:
            self._refresh_view(t, lz)
            root, chain, _ = lz.view
        else:
            root, chain = t, ()
        self.roots[id(root)] = root
        # a view by _stop_gradient: it reads as a value without history, and so does every
        # view of it and every value derived again after a write (a value without history
        # is read as it is: no node)
        value = lz.index
        if self.value_rg[value]:
            value = self.record(STOP_GRADIENT, (t,), {}).__dict__["_lazy"].index
        a = object.__new__(lazy_class(Tensor))
        a.__dict__["_lazy"] = LazyRef(self, value, Tensor,
                                      (root, chain + DETACHED, self.versions.get(id(root), 0)))
        self.holders.append(weakref.ref(a))
        return a

    def _view_of(self, src, op, params):
        """(root, chain, version) of a view of ``src`` by ``op``."""
        lz = src.__dict__.get("_lazy")
        if lz is not None and lz.view is not None:
            root, chain, _ = lz.view
            chain = chain + ((op, params),)
        else:
            root, chain = src, ((op, params),)
        self.roots[id(root)] = root
        return (root, chain, self.versions.get(id(root), 0))

    def _refresh_view(self, t, lz):
        """Derive a view again from its root when the root was written since."""
        root, chain, version = lz.view
        now = self.versions.get(id(root), 0)
        if version == now:
            return
        lz.view = None  # the replay below reads the root, not this stale view
        # a view keeps a history whatever the grad mode it is read under, as eager
        # regenerates a view's grad_fn from its base's
        prev = STATE.grad_enabled
        STATE.grad_enabled = prev or self.value_rg[lz.index]
        try:
            v = root
            for op, params in chain:
                v = self.record(op, (v,), params)
        finally:
            STATE.grad_enabled = prev
        new = v.__dict__["_lazy"]
        self._rebind(t, lz, new.index)
        lz.view = (root, chain, now)

    def _rebind(self, t, lz, j):
        if lz.index is None:
            self.holders.append(weakref.ref(t))
        lz.index = j
        if self.value_rg[j]:
            t._requires_grad = True

    # ---- in-place writes -------------------------------------------------------------
    def record_inplace(self, op, target, args, params, where=None):
        """Record ``target.op_(*args)`` functionally and rebind ``target`` to the result."""
        if not isinstance(target, Tensor):
            raise TypeError(f"{op.name}_ expects a Tensor, got {type(target).__name__}")
        lz = target.__dict__.get("_lazy")
        d = target.__dict__.get("_data")
        if lz is None and type(d) is LazyArray and "_lazy" in d._tensor.__dict__ and \
                d._tensor.__dict__["_lazy"].trace is self:
            # a tensor made on a lazy tensor's array (nn.Parameter(ember.empty(...))): the
            # write is the lazy tensor's, whose value the alias reads once the graph runs
            self.record_inplace(op, d._tensor, args, params, where)
            return target
        if lz is None:
            self._check_real_target(target, args)
        elif lz.view is not None:
            root = lz.view[0]
            if "_lazy" not in root.__dict__:
                self._check_real_target(root, args, through_view=True)
        shape, dtype = self._meta_of(target)
        new = self.record(op, (target,) + tuple(args), params, where)
        nlz = new.__dict__["_lazy"]
        nshape, ndtype = self.metas[nlz.index]
        if tuple(nshape) != tuple(shape):
            raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast "
                               f"shape {list(nshape)}")
        if ndtype != dtype:
            if ndtype.category > dtype.category:
                from .._core.inplace import _cat_name
                raise RuntimeError(f"result type {_cat_name(ndtype)} can't be cast to the "
                                   f"desired output type {_cat_name(dtype)}")
            new = self.record(REGISTRY["_to_copy"], (new,), {"dtype": dtype.np}, where)
            nlz = new.__dict__["_lazy"]
        self.assign(target, nlz.index, where)
        return target

    def record_functional_write(self, op, args, params, where=None):
        """Record ``op`` (an operator that writes its inputs in place and returns nothing,
        `ember.ops.decompositions.FUNCTIONALIZED`) functionally: one node under compile
        (`ember._dynamo.functional_update`), its functional decomposition under export;
        each written input is rebound to its new value."""
        for a in args:
            if isinstance(a, Tensor):
                lz = a.__dict__.get("_lazy")
                if lz is None:
                    if a.__dict__.get("_base") is not None:
                        raise CannotCapture("an optimizer update of a view")
                elif lz.view is not None:
                    raise CannotCapture("an optimizer update of a lazy view")
        if not self.session.record_random:  # compile (export records primitives)
            written = self._written(op, args, params)
            if written is not None:
                self._record_update(op, written, args, params, where)
                return
        prev = STATE.grad_enabled
        news = self._decompose(op, args, params)
        # the decomposition may have needed a value (a graph break): write in the trace
        # that is pending now
        trace = self.session.trace
        if trace is None:  # the flush was the decomposition's last event: a fresh trace
            trace = self.session.trace = Trace(self.session)
        for t, new in zip(args, news):
            if new is None:
                continue
            nlz = new.__dict__.get("_lazy")
            STATE.grad_enabled = False
            try:
                if nlz is None:  # the new value is a real tensor (an input returned as it is)
                    new = trace.record(REGISTRY["clone"], (new,), {}, where)
                    nlz = new.__dict__["_lazy"]
                shape, dtype = trace._meta_of(t)
                if trace.metas[nlz.index][1] != dtype:
                    new = trace.record(REGISTRY["_to_copy"], (new,), {"dtype": dtype.np}, where)
                    nlz = new.__dict__["_lazy"]
            finally:
                STATE.grad_enabled = prev
            trace.assign(t, nlz.index, where)

    def _decompose(self, op, args, params):
        """``op.decomp(*args, **params)``, recorded, without autograd."""
        prev = STATE.grad_enabled
        STATE.grad_enabled = False  # the update is not differentiable (as the fused op)
        # the capture mode is off while it handles a call: it records the decomposition
        mode = self.session.mode
        outer = mode not in STATE.modes
        if outer:
            STATE.modes.append(mode)
            STATE.intercept = True
        try:
            return op.decomp(*args, **params)
        finally:
            STATE.grad_enabled = prev
            if outer:
                STATE.modes.remove(mode)
                STATE.intercept = bool(STATE.modes)

    def _written(self, op, args, params):
        """The positions of the inputs update ``op`` writes (its decomposition's entries
        that are not None), found once per structure by recording the decomposition and
        forgetting it again; None when that needs values."""
        key = (op, len(args)) + tuple(
            (k, v) for k, v in params.items()
            if v is None or type(v) in (bool, str, int) or type(v) is float and v == 0)
        written = _WRITTEN.get(key)
        if written is None:
            mark = self.checkpoint()
            self.in_backward = True  # a value needed raises instead of running the graph
            try:
                news = self._decompose(op, args, params)
                written = tuple(i for i, x in enumerate(news) if x is not None)
            except CannotCapture:
                return None
            finally:
                self.in_backward = False
                self.rollback(mark)
            _WRITTEN[key] = written
        return written

    def _record_update(self, op, written, args, params, where):
        """Record update ``op`` as one functional node (`functional_update`) and rebind
        each written input to its new value."""
        from .functional_update import functional_update
        prev = STATE.grad_enabled
        STATE.grad_enabled = False
        numbers = tuple(k for k, v in params.items() if type(v) is float)
        fn = functional_update(op, written, len(args), numbers)
        args = tuple(args) + tuple(params[k] for k in numbers)
        params = {k: v for k, v in params.items() if k not in numbers}
        try:
            outs = self.record(fn, args, params, where)
        finally:
            STATE.grad_enabled = prev
        for i, o in zip(written, outs if len(written) > 1 else (outs,)):
            self.assign(args[i], o.__dict__["_lazy"].index, where)

    def _meta_of(self, t):
        lz = t.__dict__.get("_lazy")
        if lz is not None:
            return self.metas[lz.index]
        arr = t.__dict__["_data"]
        return arr.shape, _dt.FROM_NP[arr.dtype]

    def _check_real_target(self, target, args, through_view=False):
        from .._core.inplace import _check_inplace_allowed
        if target.__dict__.get("_base") is not None:
            raise CannotCapture("an in-place write to a view of another tensor")
        arr = target.__dict__.get("_data")
        if type(arr) is not np.ndarray:
            raise CannotCapture("an in-place write to a tensor on another device")
        if not through_view:
            _check_inplace_allowed(target, args)
        elif target._requires_grad and target.__dict__.get("grad_fn") is None and \
                STATE.grad_enabled:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        for k, t in enumerate(self.inputs):
            other = t.__dict__["_data"]
            if t is not target and (other is arr or (arr.base is not None or
                                                     other.base is not None)
                                    and np.may_share_memory(arr, other)):
                raise CannotCapture("an in-place write to a tensor that shares memory with "
                                    "another input")

    def assign(self, target, j, where=None):
        """``target`` now holds value ``j`` (an in-place write)."""
        lz = target.__dict__.get("_lazy")
        if lz is None:  # a real tensor: lazy until the graph runs and writes it back
            cls = type(target)
            lz = LazyRef(self, None, cls)
            target.__dict__["_lazy"] = lz
            target.__class__ = lazy_class(cls)
            self.mutated[id(target)] = target
            self._rebind(target, lz, j)
        elif lz.view is not None:
            root, chain, _ = lz.view
            prev = STATE.grad_enabled
            if DETACHED[0] in chain:  # a write through detach(): the root keeps its history
                STATE.grad_enabled = False
            try:
                scattered = self.record(REGISTRY["_view_scatter"], (root, _as_value(self, j)),
                                        {"chain": chain}, where)
                self.assign(root, scattered.__dict__["_lazy"].index, where)
            finally:
                STATE.grad_enabled = prev
            self._rebind(target, lz, self._kept_history(lz.index, j, where))
            lz.view = (root, chain, self.versions.get(id(root), 0))
            return
        else:
            self._rebind(target, lz, self._kept_history(lz.index, j, where))
        self.versions[id(target)] = self.versions.get(id(target), 0) + 1

    def _kept_history(self, old, new, where):
        """The value a tensor holding ``old`` holds after a write of ``new``: ``new`` itself,
        or, for a write without grad over a value with history, ``new`` carrying ``old``'s
        history (`ember._dynamo.keep_history`), as eager mode keeps the ``grad_fn`` of a
        tensor written under no_grad or in a custom Function's forward.  A real tensor
        (``old`` None) keeps its own ``grad_fn`` when it is written back."""
        if STATE.grad_enabled or old is None or not self.value_rg[old] or self.value_rg[new]:
            return new
        STATE.grad_enabled = True
        try:
            kept = self.record(KEEP_HISTORY, (_as_value(self, new), _as_value(self, old)), {},
                               where)
        finally:
            STATE.grad_enabled = False
        return kept.__dict__["_lazy"].index

    # ---- what the graph must produce -------------------------------------------------
    def live(self):
        """The lazy tensors still referenced: (tensor, LazyRef) pairs, plus the mutated
        real tensors (which stay alive through ``mutated``)."""
        out = []
        seen = set()
        for h in self.holders:
            t = h()
            if t is not None and id(t) not in seen:
                lz = t.__dict__.get("_lazy")
                if lz is not None and lz.trace is self:
                    seen.add(id(t))
                    out.append((t, lz))
        for t in self.mutated.values():
            if id(t) not in seen:
                seen.add(id(t))
                out.append((t, t.__dict__["_lazy"]))
        return out


def _as_value(trace, j):
    """A throwaway lazy handle on value ``j`` (to pass it to `Trace.record`)."""
    t = object.__new__(lazy_class(Tensor))
    t.__dict__["_lazy"] = LazyRef(trace, j, Tensor)
    return t


STOP_GRADIENT = REGISTRY["_stop_gradient"]
# the view chain of an alias without history (detach(), .data)
DETACHED = ((STOP_GRADIENT, {}),)
# update op structure -> the positions of the inputs it writes (Trace._written)
_WRITTEN = {}
# ops that must run when called: they have effects beyond their result
_EAGER_OPS = frozenset(("_to_device", "tensor"))


def _fresh_layout(size, stride):
    """Whether ``stride`` is what a new C-ordered array of shape ``size`` has (plain ints
    only: a symbolic size could make the same strides another layout later)."""
    if not all(type(n) is int for n in size) or not all(type(n) is int for n in stride):
        return False
    if 0 in size:
        return tuple(stride) == np.empty(size, np.int8).strides
    want, acc = [], 1
    for n in reversed(size):
        want.append(acc)
        acc *= n
    return tuple(stride) == tuple(reversed(want))
_ = Op
