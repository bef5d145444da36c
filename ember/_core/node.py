"""Autograd records: one Node per recorded operator application.

A Node holds what backward needs: the op and its static params, the saved
tensors with the versions they had (checked on use, so an in-place write to a
saved tensor raises PyTorch's error), and one edge per input -- ``(node,
output_nr)`` of the input's producer, or ``None``.  Leaves receive gradients
through an `AccumulateGrad` node.  Outputs are saved without a reference cycle:
the node keeps the output's array and rebuilds the tensor on use.
"""
import threading
import weakref

from .state import SHARED
from .tensor import Tensor, _version_of, wrap

__all__ = ["Node", "OpNode", "AccumulateGrad", "record", "grad_accumulator", "SAVED_HOOKS",
           "HOOKS_ON", "pack_saved", "Packed"]


class RemovableHandle:
    __slots__ = ("_list", "_item")

    def __init__(self, lst, item):
        self._list, self._item = lst, item

    def remove(self):
        try:
            self._list.remove(self._item)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class Node:
    """A backward function (``grad_fn``): computes input gradients from output gradients."""
    # What every node has is a slot; what few nodes have (hooks, anomaly traces, metadata,
    # the output metadata of multi-output nodes) is a class default that the instance dict
    # overrides when set, so recording a node stores none of them.  ``hooked`` says whether
    # any hook or retain_grad was registered (always True on an `AccumulateGrad`): the
    # engine reads that one slot per node (a class default costs a slower lookup than a
    # slot).  Freeing the saved tensors sets ``saved`` to None: that is the released mark
    # (no field of its own).
    __slots__ = ("op", "params", "saved", "versions", "saved_out", "next_edges", "in_meta",
                 "n_out", "seq", "hooked", "__weakref__", "__dict__")
    pre_hooks = post_hooks = tensor_hooks = retained = trace = metadata_ = out_meta = None

    @property
    def released(self):
        """Whether a backward pass freed this node's saved tensors."""
        return getattr(self, "saved", ()) is None

    @released.setter
    def released(self, value):
        if value:
            self.saved = None

    def __init__(self):
        self.hooked = False

    # ---- torch's public Node API --------------------------------------------------
    def name(self):
        return type(self).__name__

    @property
    def next_functions(self):
        return tuple((e[0], e[1]) if e is not None else (None, 0) for e in self.next_edges)

    @property
    def metadata(self):
        if self.metadata_ is None:
            self.metadata_ = {}
        return self.metadata_

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node; it may return new grad_inputs."""
        if self.post_hooks is None:
            self.post_hooks = []
        self.hooked = True
        self.post_hooks.append(fn)
        return RemovableHandle(self.post_hooks, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node; it may return new grad_outputs."""
        if self.pre_hooks is None:
            self.pre_hooks = []
        self.hooked = True
        self.pre_hooks.append(fn)
        return RemovableHandle(self.pre_hooks, fn)

    def _add_tensor_hook(self, output_nr, fn):
        if self.tensor_hooks is None:
            self.tensor_hooks = {}
        self.hooked = True
        lst = self.tensor_hooks.setdefault(output_nr, [])
        lst.append(fn)
        return RemovableHandle(lst, fn)

    def _retain(self, tensor):
        if self.retained is None:
            self.retained = {}
        self.hooked = True
        self.retained[tensor._output_nr] = weakref.ref(tensor)

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    # ---- used by the engine ---------------------------------------------------------
    def unpack_inputs(self):
        if self.saved is None:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or if "
                "you need to access saved tensors after calling backward.")
        if self.versions:
            for t, vc, v in self.versions:
                if vc[0] != v:
                    _raise_modified(t, vc[0], v)
        return self.saved

    def unpack_output(self):
        so = self.saved_out
        if so is None:
            return None
        if self.n_out == 1:
            return self._unpack_one(0, so[0])
        return tuple([self._unpack_one(i, item) for i, item in enumerate(so)])

    def _unpack_one(self, i, item):
        if item is None:
            return None
        arr, vc, v, diff = item
        if vc is None:
            return arr
        if vc[0] != v:
            t = wrap(arr)
            t.grad_fn, t._output_nr = self, i
            _raise_modified(t, vc[0], v)
        t = wrap(arr)
        t._vc = vc
        if diff:
            t.grad_fn, t._output_nr, t._requires_grad = self, i, True
        return t

    def release(self):
        # as torch: only a node that saved tensors refuses a second backward (its saved
        # tensors are freed); one that saved none (``versions`` lists every saved input
        # tensor) keeps its non-tensor params and can run again
        if self.versions or self.saved_out is not None:
            self.saved = None
            self.saved_out = None
            self.versions = None


class OpNode(Node):
    """The Node of one operator application (``op.node_cls`` derives from it).  It is its
    vjp's ``ctx`` too: ``ctx.out`` (the saved output), ``ctx.needs_input_grad`` and
    ``ctx.in_meta``, with no context object made per backward call.  ``pick(args, params)``,
    where set, gives the node class of one call of an op whose node torch names after the
    overload that ran (``2.0 - x``: RsubBackward1; `op.NODE_NAMES`)."""
    __slots__ = ()
    pick = None

    def apply(self, grads):
        """Input gradients for output gradients ``grads`` (a list, one per output)."""
        saved = self.saved
        if saved is None:
            self.unpack_inputs()  # raises: freed by an earlier backward
        versions = self.versions
        if versions:
            for t, vc, v in versions:
                if vc[0] != v:
                    _raise_modified(t, vc[0], v)
        vjp = self.op.vjp
        if vjp is None:
            raise RuntimeError(f"the derivative for '{self.op.name}' is not implemented.")
        g = grads[0] if self.n_out == 1 else tuple(grads)
        params = self.params
        r = vjp(self, g, *saved, **params) if params else vjp(self, g, *saved)
        if type(r) is not tuple and type(r) is not list:
            r = (r,)
        return r

    @property
    def out(self):
        so = self.saved_out
        if so is None or self.n_out != 1:
            return self.unpack_output()
        # `_unpack_one` inline for the common case: one output, saved unhooked
        item = so[0]
        if item is None:
            return None
        arr, vc, v, diff = item
        if vc is None or vc[0] != v:
            return self._unpack_one(0, item)
        t = _new(Tensor)
        t._data = arr
        t._vc = vc
        if diff:
            t.grad_fn = self
            t._requires_grad = True
        return t

    # torch's saved-variable attributes: ``_saved_self``/``_saved_other`` (the saved first
    # and second inputs; None for one the wanted gradients do not read) and
    # ``_saved_result`` (the saved output, a new tensor), through the unpack hook if one
    # packed it, refused once backward freed them.  (Properties: a ``__getattr__`` would
    # turn off CPython's fast attribute reads of every node.)
    @property
    def _saved_self(self):
        return self._saved_input(0, "_saved_self")

    @property
    def _saved_other(self):
        return self._saved_input(1, "_saved_other")

    @property
    def _saved_result(self):
        if not self.op.save_output or self.n_out != 1:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute "
                                 f"'_saved_result'")
        self.unpack_inputs()  # raises when freed
        return self.out

    def _saved_input(self, i, name):
        if not self.op.save_inputs or self.saved is not None and i >= len(self.saved):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        a = self.unpack_inputs()[i]
        return a.get() if type(a) is Packed else a

    @property
    def needs_input_grad(self):
        e = self.next_edges
        if len(e) == 2:  # every binary op's vjp asks this
            return (e[0] is not None, e[1] is not None)
        return tuple([x is not None for x in e])


def _raise_modified(t, now, expected):
    fn = t.grad_fn
    where = f", which is output {t._output_nr} of {fn.name()}," if fn is not None else ""
    raise RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{_type_name(t)} {list(t._data.shape)}]{where} is at version {now}; "
        f"expected version {expected} instead. Hint: enable anomaly detection to find the "
        f"operation that failed to compute its gradient, with ember.autograd."
        f"set_detect_anomaly(True).")


def _type_name(t):
    n = t.dtype.name
    return "ember." + {"float32": "Float", "float64": "Double", "float16": "Half",
                       "bfloat16": "BFloat16", "complex64": "ComplexFloat",
                       "complex128": "ComplexDouble"}.get(n, n) + "Tensor"


class AccumulateGrad(Node):
    """Sink of a leaf tensor: adds incoming gradients into ``variable.grad``."""
    __slots__ = ("_variable",)

    def __init__(self, tensor):
        # ``hooked`` always: the engine reads the leaf's tensor hooks where it reads a
        # node's hooks
        self.hooked = True
        # a weak reference: the leaf owns its accumulator, not the other way round
        self._variable = weakref.ref(tensor)
        self.next_edges = ()
        self.n_out = 1
        self.saved = ()
        self.versions = None
        self.saved_out = None
        self.in_meta = ()
        SHARED.seq += 1
        self.seq = SHARED.seq

    @property
    def variable(self):
        """The leaf tensor (torch's ``AccumulateGrad.variable``); None once it is freed."""
        return self._variable()


# A leaf has one AccumulateGrad, whichever thread first needs it: two threads recording
# ops on a fresh leaf at once must not each make their own (autograd.grad finds its
# inputs by that node).  Only the creation takes the lock.
_ACC_LOCK = threading.Lock()


def grad_accumulator(t):
    acc = t._accumulator
    if acc is None:
        with _ACC_LOCK:
            acc = t._accumulator
            if acc is None:
                acc = t._accumulator = AccumulateGrad(t)
    return acc


def _edge(a):
    fn = a.grad_fn
    if fn is None:
        acc = a._accumulator
        if acc is None:
            acc = grad_accumulator(a)
        return (acc, 0)
    if a._base is not None and a._view_base_fn is not a._base.grad_fn:
        from .dispatch import regenerate_view_grad_fn
        regenerate_view_grad_fn(a)
        return (a.grad_fn, a._output_nr)
    return (fn, a._output_nr)


_new = object.__new__


def _input(a, save):
    """The edge to Tensor input ``a`` and its (shape, dtype) -- both None when it needs no
    gradient -- and, when ``save``, its version entry ``(a, counter, version now)``: one
    call per tensor input."""
    if save:
        vc = a._vc
        if vc is None:
            vc = _version_of(a)
        v = (a, vc, vc[0])
    else:
        v = None
    if not a._requires_grad:
        return None, None, v
    d = a._data
    return _grad_edge(a), (d.shape, d.dtype), v


def _grad_edge(a):
    """The edge to Tensor ``a`` (which requires grad): the common ones (a non-view output of
    a recorded op, a leaf whose accumulator exists) without `_edge`'s call."""
    fn = a.grad_fn
    if fn is not None:
        return (fn, a._output_nr) if a._base is None else _edge(a)
    acc = a._accumulator
    return (acc, 0) if acc is not None else _edge(a)


_NO_INPUT = (None, None, None)


def record(op, args, params, outs):
    """Create the Node for ``op(*args, **params)`` that produced ``outs`` and link the outputs."""
    cls = op.node_cls
    # Node.__init__ inline: the rare fields are class defaults
    node = _new(cls if cls.pick is None else cls.pick(args, params))
    node.hooked = False
    node.op = op
    node.params = params
    si = op.save_inputs
    n = len(args)
    # edges and input metadata: tuples spelled out for one and two inputs, the commonest
    # arities (lists filled in a loop cost ~0.2 us more per node)
    if n == 2 and (si is True or not si):
        x, y = args
        tx = isinstance(x, Tensor)
        ty = isinstance(y, Tensor)
        sx = sy = si
        if si:
            # (read only here: hand-made ops that save nothing may lack the field)
            by_need = op.saved_by_need
            if by_need is not None:
                # only what the wanted gradients read (x * b, b needing none: b alone)
                sx, sy = by_need[(tx and x._requires_grad) + 2 * (ty and y._requires_grad)]
        ex, mx, vx = _input(x, sx) if tx else _NO_INPUT
        ey, my, vy = _input(y, sy) if ty else _NO_INPUT
        if si:
            node.saved = args if sx and sy else (x if sx else None, y if sy else None)
            node.versions = ((vx, vy) if vy is not None else (vx,)) if vx is not None else \
                ((vy,) if vy is not None else ())
        else:
            node.saved = (None, None)
            node.versions = None
        node.next_edges = (ex, ey)
        node.in_meta = (mx, my)
    elif n == 1:
        x = args[0]
        save = si is True or (si and 0 in si)
        ex, mx, vx = _input(x, save) if isinstance(x, Tensor) else _NO_INPUT
        if save:
            node.saved = args
            node.versions = (vx,) if vx is not None else ()
        else:
            node.saved = (None,)
            node.versions = None
        node.next_edges = (ex,)
        node.in_meta = (mx,)
    else:  # any arity; ``si`` True, falsy or a tuple of the saved inputs' indices
        by_need = op.saved_by_need if si else None
        if by_need is not None:
            mask = sum(1 << i for i, a in enumerate(args)
                       if isinstance(a, Tensor) and a._requires_grad)
            si = tuple([i for i, keep in enumerate(by_need[mask]) if keep])
        edges = []
        meta = []
        versions = [] if si else None
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                e, m, v = _input(a, si is True or (si and i in si))
                if v is not None:
                    versions.append(v)
            else:
                e = m = None
            edges.append(e)
            meta.append(m)
        node.next_edges = edges
        node.in_meta = meta
        node.versions = versions
        node.saved = args if si is True else \
            tuple([a if i in si else None for i, a in enumerate(args)]) if si else (None,) * n
    nd = op.nondiff_outputs
    if op.n_out == 1:
        node.n_out = 1
        o = outs[0]
        diff = 0 not in nd and o._data.dtype.kind in "fcV"
        if diff:
            o.grad_fn = node  # (its _output_nr is the class default 0)
            o._requires_grad = True
        node.saved_out = [_saved_output(o, diff)] if op.save_output else None
    else:
        node.n_out = len(outs)
        keep = op.save_output
        saved_out = [] if keep else None
        for i, o in enumerate(outs):
            diff = i not in nd and o._data.dtype.kind in "fcV"
            if diff:
                o.grad_fn = node
                o._output_nr = i
                o._requires_grad = True
            if saved_out is not None:   # True: every output; a tuple: those indices
                saved_out.append(_saved_output(o, diff) if keep is True or i in keep else None)
        node.saved_out = saved_out
        node.out_meta = [(o._data.shape, o._data.dtype) for o in outs]
    shared = SHARED
    shared.seq += 1
    node.seq = shared.seq
    if shared.anomaly:
        import traceback
        node.trace = traceback.format_stack()[:-3]
    if HOOKS_ON[0] and SAVED_HOOKS.stack:
        pack_saved(node)
    return node


_NO_PARAMS = {}


def record_unary(op, x, out):
    """`record` for the dispatcher's unary fast path (`dispatch.apply_unary`): ``out =
    op(x)`` with no params, ``x`` a plain Tensor that requires grad, ``out`` one floating
    output.  The same node, less the general path's branches, tuples and calls (an op with
    a ``ufunc`` is differentiable, has one output and saves all or none of its input:
    tests/autograd/test_fast_records.py)."""
    cls = op.node_cls
    node = _new(cls if cls.pick is None else cls.pick((x,), _NO_PARAMS))
    node.hooked = False
    node.op = op
    node.params = _NO_PARAMS
    if op.save_inputs:
        vc = x._vc
        if vc is None:
            vc = _version_of(x)
        node.saved = (x,)
        node.versions = ((x, vc, vc[0]),)
    else:
        node.saved = (None,)
        node.versions = None
    node.next_edges = (_grad_edge(x),)
    d = x._data
    node.in_meta = ((d.shape, d.dtype),)
    node.n_out = 1
    out.grad_fn = node
    out._requires_grad = True
    node.saved_out = [_saved_output(out, True)] if op.save_output else None
    shared = SHARED
    shared.seq += 1
    node.seq = shared.seq
    if shared.anomaly or HOOKS_ON[0]:
        _record_rare(node)
    return node


def record_binary(op, x, y, out):
    """`record` for the dispatcher's binary fast path (`dispatch.apply_binary`): ``out =
    op(x, y)`` with no params, ``x`` and ``y`` plain Tensors or Python numbers (one of them
    a Tensor that requires grad), ``out`` one floating output; see `record_unary`."""
    cls = op.node_cls
    node = _new(cls if cls.pick is None else cls.pick((x, y), _NO_PARAMS))
    node.hooked = False
    node.op = op
    node.params = _NO_PARAMS
    tx = type(x) is Tensor
    ty = type(y) is Tensor
    rx = tx and x._requires_grad
    ry = ty and y._requires_grad
    if op.save_inputs:
        by_need = op.saved_by_need
        # only what the wanted gradients read (x * b, b needing none: b alone)
        sx, sy = by_need[rx + 2 * ry] if by_need is not None else (True, True)
        vx = vy = None
        if sx and tx:
            vc = x._vc
            if vc is None:
                vc = _version_of(x)
            vx = (x, vc, vc[0])
        if sy and ty:
            vc = y._vc
            if vc is None:
                vc = _version_of(y)
            vy = (y, vc, vc[0])
        node.saved = (x if sx else None, y if sy else None)
        node.versions = ((vx, vy) if vy is not None else (vx,)) if vx is not None else \
            ((vy,) if vy is not None else ())
    else:
        node.saved = (None, None)
        node.versions = None
    if rx:
        ex = _grad_edge(x)
        d = x._data
        mx = (d.shape, d.dtype)
    else:
        ex = mx = None
    if ry:
        ey = _grad_edge(y)
        d = y._data
        my = (d.shape, d.dtype)
    else:
        ey = my = None
    node.next_edges = (ex, ey)
    node.in_meta = (mx, my)
    node.n_out = 1
    out.grad_fn = node
    out._requires_grad = True
    node.saved_out = [_saved_output(out, True)] if op.save_output else None
    shared = SHARED
    shared.seq += 1
    node.seq = shared.seq
    if shared.anomaly or HOOKS_ON[0]:
        _record_rare(node)
    return node


def _record_rare(node):
    """What `record` does for anomaly mode and saved-tensor hooks, for the fast records."""
    if SHARED.anomaly:
        import traceback
        node.trace = traceback.format_stack()[:-4]
    if HOOKS_ON[0] and SAVED_HOOKS.stack:
        pack_saved(node)


def _saved_output(o, diff):
    if type(o) is not Tensor or SHARED.forward:
        # tensor-likes (vmap's batched tensors) keep state beyond _data, and under forward
        # AD the output receives its tangent after recording: save the object itself
        return (o, None, None, diff)
    vc = o._vc
    if vc is None:
        vc = _version_of(o)
    return (o._data, vc, vc[0], diff)


# ---- saved-tensor hooks (``autograd.graph.saved_tensors_hooks``) -------------------------
class _SavedHooks(threading.local):
    """This thread's ``(pack_hook, unpack_hook)`` stack, innermost last, and the message of
    an active ``disable_saved_tensors_hooks`` (None: hooks may be registered)."""

    def __init__(self):
        self.stack = []
        self.disabled = None


SAVED_HOOKS = _SavedHooks()
# pushes alive in any thread: record() tests this one global, so without hooks it pays
# nothing more
HOOKS_ON = [0]


class Packed:
    """What a pack hook returned for one saved tensor, with the unpack hook to call on it."""
    __slots__ = ("value", "unpack")

    def __init__(self, value, unpack):
        self.value, self.unpack = value, unpack

    def get(self):
        t = self.unpack(self.value)
        if not isinstance(t, Tensor):
            raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but "
                            f"got result of type {type(t).__name__}")
        return t


def pack_saved(node):
    """Pass ``node``'s saved tensors (inputs and outputs) through the innermost pack hook;
    backward gets them back through its unpack hook.  As in torch, a hooked tensor is the
    hooks' business: its version is not checked."""
    stack = SAVED_HOOKS.stack
    SAVED_HOOKS.stack = []  # what the pack hook itself records is saved unhooked
    try:
        _pack_with(node, *stack[-1])
    finally:
        SAVED_HOOKS.stack = stack


def _pack_with(node, pack, unpack):
    packed = False
    saved = node.saved
    if node.versions:
        saved = list(saved)
        for i, a in enumerate(saved):
            if isinstance(a, Tensor):
                saved[i] = Packed(pack(a), unpack)
                packed = True
        node.saved = tuple(saved)
    so = node.saved_out
    if so is not None:
        for i, item in enumerate(so):
            if item is None:
                continue
            arr, vc, _, diff = item
            t = arr if vc is None else wrap(arr)
            if vc is not None:
                t._vc = vc
            so[i] = (Packed(pack(t), unpack), None, None, diff)
            packed = True
    if packed:
        node.versions = None
        node.__class__ = _packed_class(type(node))


_PACKED_CLASSES = {}


def _packed_class(cls):
    """``cls`` whose backward unpacks its saved tensors first (same name and layout, so a
    node changes class in place; nodes without hooks never pay for it)."""
    p = _PACKED_CLASSES.get(cls)
    if p is None:
        p = _PACKED_CLASSES[cls] = type(cls.__name__, (_UnpacksSaved, cls), {"__slots__": ()})
        p.__qualname__ = cls.__qualname__
    return p


class _UnpacksSaved:
    __slots__ = ()

    def apply(self, grads):
        if self.saved is None:
            self.unpack_inputs()
        saved = self.saved
        self.saved = tuple([a.get() if type(a) is Packed else a for a in saved])
        try:
            return super().apply(grads)
        finally:
            self.saved = saved

    @property
    def out(self):
        return self.unpack_output()

    @property
    def saved_tensors(self):  # a custom Function's ctx read outside its backward
        if self.saved is None:
            self.unpack_inputs()
        return tuple([a.get() if type(a) is Packed else a for a in self.saved])

    def unpack_output(self):
        so = self.saved_out
        if so is None:
            return None
        outs = []
        for i, item in enumerate(so):
            if item is None:
                outs.append(None)
                continue
            u = item[0].get()
            t = wrap(u._data)   # the output again: its grad_fn is this node (double backward)
            t._vc = _version_of(u)
            if item[3]:
                t.grad_fn, t._output_nr, t._requires_grad = self, i, True
            outs.append(t)
        return outs[0] if self.n_out == 1 else tuple(outs)

    def release(self):
        self.saved = None
        self.saved_out = None
