"""The structural key of a pending graph: what finds its compiled artifact in the cache.

The key is everything a compiled graph depends on: the ops (with their params and grad
mode), how they connect, the inputs' shapes, dtypes and requires_grad, which values come
out and which inputs are written back.  Guards are implicit in it: a new dtype, rank,
requires_grad, grad mode, training flag (it changes the ops the Python records) or a
size that has not been generalised makes another key.  Sizes of the compiled function's
arguments are `SymInt` leaves: a leaf marked dynamic renders as a symbol (``s0``, equal
sizes sharing one symbol as in torch's duck sizing; 0 and 1 stay specialised); Python
numbers passed to ops render as their value until their position is marked dynamic, and
then become graph inputs.

The *skeleton* is the key with every argument size and Python number blanked: two keys
with one skeleton differ only in sizes and numbers, so the cache can say what varied and
generalise it (automatic dynamic shapes).
"""
import numpy as np

from .._core import dtype as _dt
from .symbolic import _LEAF_KINDS as _LEAVES
from .symbolic import SymInt, render

__all__ = ["GraphSpec", "spec_of"]


class GraphSpec:
    """What `spec_of` finds: ``key``, ``skeleton``, the kept ops, graph ``inputs`` (input
    indices of the trace), ``scalar_inputs`` (scalar positions made inputs), ``outputs``
    (value indices), the rendered input metas and ``symbols`` (leaf -> name)."""
    __slots__ = ("key", "skeleton", "ops", "inputs", "scalar_inputs", "outputs", "symbols",
                 "size_inputs",
                 "input_shapes", "leaf_values", "scalar_values", "dynamic_scalars")


def _freeze(v, values, symbols):
    """A hashable form of a param value, SymInts rendered."""
    t = type(v)
    if t is int or t is str or v is None:
        return v
    if t is float:
        return ("f", v.hex())
    if t is bool:
        return ("b", v)
    if isinstance(v, SymInt):
        return ("sym", render(v.expr, values, symbols)) if type(v.expr) is tuple else int(v)
    if isinstance(v, (tuple, list)):
        return ("tuple" if isinstance(v, tuple) else "list",) + \
            tuple(_freeze(x, values, symbols) for x in v)
    if t is dict:
        return ("dict",) + tuple((k, _freeze(x, values, symbols)) for k, x in v.items())
    if t is complex:
        return ("c", v.real.hex(), v.imag.hex())
    if isinstance(v, np.dtype) or isinstance(v, _dt.dtype):
        return v
    if isinstance(v, slice):
        return ("slice", _freeze(v.start, values, symbols), _freeze(v.stop, values, symbols),
                _freeze(v.step, values, symbols))
    if v is Ellipsis:
        return "..."
    key = getattr(v, "_ember_key_", None)
    if key is not None:  # a param holding sizes inside (a higher-order op's Subgraph)
        return key(lambda x: _freeze(x, values, symbols))
    try:
        hash(v)
    except TypeError:
        raise _Unhashable(type(v).__name__) from None
    return v


class _Unhashable(Exception):
    pass


class _Symbols(dict):
    """leaf -> symbol name.  A dynamic leaf no tensor input binds (an int argument, a size
    used only in params) gets a symbol on first use and becomes a *size input* of the
    graph, unless an equal size already has a symbol (duck sizing).  Every leaf rendered
    is noted in ``used``."""

    def __init__(self, dyn, values, by_value, leaf_symbol=None):
        super().__init__()
        self.dyn = dyn
        self.values = values
        self.by_value = by_value
        self.leaf_symbol = leaf_symbol
        self.size_inputs = []
        self.used = set()

    def name_of(self, leaf, v):
        """The symbol of dynamic ``leaf`` (value ``v``): duck sizing by value, unless the
        cache names leaves itself (ember.export: one symbol per `Dim`)."""
        if self.leaf_symbol is not None:
            return self.leaf_symbol(leaf, v, self.by_value)
        name = self.by_value.get(v)
        if name is None:
            name = self.by_value[v] = f"s{len(self.by_value)}"
        return name

    def get(self, leaf, default=None):
        self.used.add(leaf)
        name = dict.get(self, leaf)
        if name is None and leaf in self.dyn and (self.values[leaf] > 1 or leaf[0] == "u"):
            v = self.values[leaf]
            known = len(self.by_value)
            name = self.name_of(leaf, v)
            if len(self.by_value) > known:
                self.size_inputs.append((name, leaf))
            self[leaf] = name
        return name


def _blank(v):
    """The skeleton form of a param value: SymInts blanked."""
    t = type(v)
    if isinstance(v, SymInt):
        return "?"
    if isinstance(v, (tuple, list)):
        return ("tuple" if isinstance(v, tuple) else "list",) + tuple(_blank(x) for x in v)
    if t is dict:
        return ("dict",) + tuple((k, _blank(x)) for k, x in v.items())
    key = getattr(v, "_ember_key_", None)
    if key is not None:  # a Subgraph: its structure, sizes blanked
        return key(_blank)
    return None  # the key holds the rest


def spec_of(trace, out_values, state):
    """The `GraphSpec` of ``trace`` producing ``out_values``; ``state`` (the compiled
    function's cache state) says which leaves and scalar positions are dynamic."""
    ops = trace.ops
    metas = trace.metas
    producer = trace.producer
    # keep only the ops the outputs need (dead code is not part of the key)
    needed = [False] * len(ops)
    stack = [producer[j] for j in out_values] + trace.draws  # a draw moves the stream
    while stack:
        i = stack.pop()
        if needed[i]:
            continue
        needed[i] = True
        for r in ops[i].args:
            if r[0] == "v":
                stack.append(producer[r[1]])
    kept = [i for i in range(len(ops)) if needed[i]]
    input_order, input_map, scalar_pos = [], {}, []
    for i in kept:
        for r in ops[i].args:
            if r[0] == "i" and r[1] not in input_map:
                input_map[r[1]] = len(input_order)
                input_order.append(r[1])
            elif r[0] == "s":
                scalar_pos.append(r[1])
    # sizes: which leaves are bound by an input and dynamic -> symbols (duck sizing)
    leaf_values = trace.session.leaf_values
    dyn = state.dynamic_leaves
    static = getattr(trace.session, "static_leaves", None)
    if static:
        dyn = dyn - static
    by_value = {}
    symbols = _Symbols(dyn, leaf_values, by_value, getattr(state, "leaf_symbol", None))
    input_shapes, skeleton_inputs = [], []
    for k in input_order:
        shape, dtype, rg = trace.input_metas[k]
        rshape, sk = [], []
        for s in shape:
            if isinstance(s, SymInt) and type(s.expr) is tuple and s.expr[0] not in _LEAVES:
                # a size computed from others (a tangent shaped like an output)
                rshape.append(render(s.expr, leaf_values, symbols))
                sk.append("?")
            elif isinstance(s, SymInt) and type(s.expr) is tuple:
                lf = s.expr
                v = int(s)
                symbols.used.add(lf)
                if lf in dyn and v > 1:
                    name = symbols.name_of(lf, v)
                    dict.__setitem__(symbols, lf, name)
                    rshape.append(name)
                else:
                    rshape.append(v)
                sk.append("?")
            else:
                rshape.append(int(s))
                sk.append(int(s))
        input_shapes.append(tuple(rshape))
        skeleton_inputs.append((tuple(sk), dtype, rg))
    # scalars: a position (counted over the kept ops) that the cache marked dynamic for
    # this skeleton becomes an input; the marks are looked up once the skeleton is known
    skel_ops, key_args, key_rest = [], [], []
    scalar_slots = []   # (op position, arg position, scalar number, trace scalar index)
    scalar_values = []
    value_slot = {}
    for i in kept:
        rec = ops[i]
        args_k, args_s = [], []
        for r in rec.args:
            kind = r[0]
            if kind == "v":
                a = ("v", value_slot[r[1]])
                args_k.append(a)
                args_s.append(a)
            elif kind == "i":
                a = ("i", input_map[r[1]])
                args_k.append(a)
                args_s.append(a)
            elif kind == "s":
                x = trace.scalars[r[1]]
                tx = type(x) if not isinstance(x, SymInt) else int
                scalar_slots.append((len(key_args), len(args_k), len(scalar_values), r[1],
                                     tx.__name__))
                scalar_values.append(x)
                if isinstance(x, SymInt) and type(x.expr) is tuple:
                    args_k.append(("sym", render(x.expr, leaf_values, symbols)))
                else:
                    args_k.append(("s", _freeze(x, leaf_values, symbols)))
                args_s.append(("s", tx.__name__))
            else:
                a = ("c", _freeze(r[1], leaf_values, symbols))
                args_k.append(a)
                args_s.append(a)
        params = rec.params
        pk = tuple((k, _freeze(v, leaf_values, symbols)) for k, v in params.items()) \
            if params else ()
        ps = tuple((k, _blank(v)) for k, v in params.items()) if params else ()
        key_args.append(args_k)
        key_rest.append((pk, rec.grad))
        skel_ops.append((rec.op, tuple(args_s), ps, rec.grad))
        for n in range(rec.n_out):
            value_slot[rec.out + n] = len(value_slot)
    skeleton = (tuple(skel_ops), tuple(skeleton_inputs), len(out_values))
    marks = state.dynamic_scalars.get(skeleton, ()) if state.dynamic_scalars else ()
    scalar_inputs = []
    for op_pos, arg_pos, n, idx, tname in scalar_slots:
        if n in marks:
            key_args[op_pos][arg_pos] = ("S", tname, len(scalar_inputs))
            scalar_inputs.append(idx)
    key_ops = [(ops[i].op, tuple(a), pk, grad)
               for i, a, (pk, grad) in zip(kept, key_args, key_rest)]
    outs = tuple(value_slot[j] for j in out_values)
    inputs_k = tuple((shape, trace.input_metas[k][1], trace.input_metas[k][2])
                     for shape, k in zip(input_shapes, input_order))
    spec = GraphSpec()
    spec.size_inputs = list(symbols.size_inputs)
    spec.key = (tuple(key_ops), inputs_k, tuple(n for n, _ in spec.size_inputs), outs)
    spec.skeleton = skeleton
    spec.ops = kept
    spec.inputs = input_order
    spec.scalar_inputs = scalar_inputs
    spec.outputs = list(out_values)
    spec.symbols = symbols
    spec.input_shapes = input_shapes
    spec.leaf_values = {lf: leaf_values[lf] for lf in symbols.used}
    spec.scalar_values = scalar_values
    return spec


def _leaves(shape):
    return [s.expr for s in shape if isinstance(s, SymInt) and type(s.expr) is tuple
            and s.expr[0] == "a"]
