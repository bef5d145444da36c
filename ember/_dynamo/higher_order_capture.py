"""Capturing a function once as a sub-graph: the bodies of ``cond``, ``while_loop`` and ``map``.

Inside a compiled region a higher-order op records ONE node whose params hold its
functions as graphs (torch's higher-order ops do the same).  A function is captured by
running it once on stand-ins: lazy tensors of a fresh `SubTrace` that carry only the
operands' metadata (shapes with their symbolic sizes, dtypes).  Its operator calls are
recorded into the sub-trace by the capture mode already on the stack; the compiled
region's own pending graph is set aside meanwhile.  A tensor the function reads that is
not one of its operands (a closure, a module parameter, a value computed before the call)
is *lifted*: it becomes an extra input of the sub-graph and of the node, as torch lifts
free variables into ``additional_inputs``.

Whatever cannot be a sub-graph raises `CannotCapture` out of the capture, and the caller
falls back to running the function as ordinary Python: a point where Python needs a value
(``bool``, ``item``), an in-place write to a tensor from outside, random numbers.

The result is a `Subgraph`, a hashable param object.  Its structural key is the graph's
(ops, params, input and output metadata), with symbolic sizes rendered the way the
enclosing graph renders them, so a second call hits the cache and one compiled graph
serves every size that was generalised.  Every size (``SymInt`` leaf) the sub-graph uses
is also passed to the node as an extra int argument and received by a size placeholder,
so the sub-graph computes its shape params from the sizes of the call that runs it.
"""
import operator

from .._core.meta import TensorMeta
from .._core.state import STATE
from .._core.tensor import Tensor, wrap
from .symbolic import SymInt, leaves_of
from .trace import CannotCapture, Trace

__all__ = ["Subgraph", "SubTrace", "capture", "build_subgraphs", "map_subgraphs"]


class SubTrace(Trace):
    """The pending graph of one captured function (see the module docstring).

    ``placeholders``: value indices of the stand-ins, in input order (the operands, then
    the lifted tensors); ``lifted``: the outer tensors read by the function."""

    # a sub-graph may run any number of times, or not at all: draws stay Python
    draws_allowed = False

    def __init__(self, session, outer, what, mutation_is_error=False):
        super().__init__(session)
        self.outer = outer
        self.what = what
        # running the function as Python instead would not keep the write's meaning
        self.mutation_is_error = mutation_is_error
        self.placeholders = []
        self.placeholder_metas = []
        self.lifted = []
        self.lifted_ids = {}

    def flush(self, reason):
        raise CannotCapture(f"{self.what} needs a value while it is captured ({reason})")

    def add_placeholder(self, shape, dtype):
        t = self._new_value(tuple(shape), dtype, False, -1, None)
        self.placeholders.append(t.__dict__["_lazy"].index)
        self.placeholder_metas.append((tuple(shape), dtype))
        return t

    def lift(self, t):
        """The stand-in of outer tensor ``t`` (lifted on first use)."""
        j = self.lifted_ids.get(id(t))
        if j is None:
            _, meta, _ = self.outer.ref_of(t)
            stand_in = self.add_placeholder(meta.shape, meta.dtype)
            j = stand_in.__dict__["_lazy"].index
            self.lifted_ids[id(t)] = j
            self.lifted.append(t)
            self._keep = getattr(self, "_keep", [])
            self._keep.append(stand_in)
        return j

    def ref_of(self, a):
        if isinstance(a, Tensor):
            lz = a.__dict__.get("_lazy")
            if lz is None or lz.trace is not self:
                j = self.lift(a)
                shape, dtype = self.metas[j]
                return ("v", j), TensorMeta(shape, dtype), False
        return super().ref_of(a)

    def assign(self, target, j, where=None):
        lz = target.__dict__.get("_lazy")
        root = lz.view[0] if lz is not None and lz.view is not None else target
        rlz = root.__dict__.get("_lazy")
        if rlz is None or rlz.trace is not self or rlz.index in self.placeholders:
            msg = f"{self.what} writes in place to a tensor it did not create"
            if self.mutation_is_error:
                raise RuntimeError(f"{msg} (its input or a tensor from outside): as in torch, "
                                   f"the functions must not mutate their inputs; clone first")
            raise CannotCapture(msg)
        super().assign(target, j, where)


def capture(session, fn, args, what, seed=(), mutation_is_error=False):
    """Run ``fn`` on stand-ins of ``args`` (tensors and `TensorMeta`s become placeholders,
    anything else is passed as it is) and return ``(sub, outputs, spec)``: the `SubTrace`,
    the value indices ``fn`` returned (flat) and its output structure (see `flatten`).
    ``seed``: outer tensors lifted first, in this order (another function of the same op
    lifted them).  ``mutation_is_error``: an in-place write to a tensor from outside raises
    RuntimeError instead of `CannotCapture` (for ``cond``, whose Python fallback would run
    both branches)."""
    outer = session.trace
    if outer is None:
        outer = session.trace = Trace(session)
    sub = SubTrace(session, outer, what, mutation_is_error)
    stand_ins = []
    for a in args:
        if isinstance(a, Tensor):
            _, meta, _ = outer.ref_of(a)
            stand_ins.append(sub.add_placeholder(meta.shape, meta.dtype))
        elif isinstance(a, TensorMeta):  # a stand-in made to measure (a slice for map)
            stand_ins.append(sub.add_placeholder(a.shape, a.dtype))
        else:
            stand_ins.append(a)
    for t in seed:
        sub.lift(t)
    effects = getattr(session, "effects", None)
    n_effects = len(effects) if effects is not None else 0
    had_break = "graph_break" in session.__dict__
    saved_break = session.__dict__.get("graph_break")

    def no_break(reason):
        raise CannotCapture(f"{what} cannot be captured: {reason}")

    session.graph_break = no_break
    session.trace = sub
    prev_grad = STATE.grad_enabled
    STATE.grad_enabled = False  # the sub-graph runs without autograd; its op's vjp differentiates
    try:
        out = fn(*stand_ins)
        flat, spec = flatten(out, what)
        refs = []
        for t in flat:
            r, _, _ = sub.ref_of(t)
            refs.append(r[1])
    finally:
        STATE.grad_enabled = prev_grad
        session.trace = outer
        if had_break:
            session.graph_break = saved_break
        else:
            del session.__dict__["graph_break"]
    if effects is not None and len(effects) > n_effects:
        what_ran = effects[n_effects:]
        del effects[n_effects:]
        raise CannotCapture(f"{what} has effects ({'; '.join(what_ran)})")
    sub.closed = True
    return sub, refs, spec


def flatten(x, what, out=None):
    """``(flat tensors, spec)`` of a function's result: a tensor or nested tuples/lists/dicts
    of tensors."""
    out = [] if out is None else out
    if isinstance(x, Tensor):
        out.append(x)
        return out, "T"
    if type(x) in (tuple, list):
        return out, (type(x), tuple(flatten(v, what, out)[1] for v in x))
    if type(x) is dict:
        return out, (dict, tuple((k, flatten(v, what, out)[1]) for k, v in x.items()))
    raise RuntimeError(f"{what} must return tensors (or tuples, lists or dicts of tensors), "
                       f"got {type(x).__name__}")


def unflatten(spec, it):
    if spec == "T":
        return next(it)
    kind, items = spec
    if kind is dict:
        return {k: unflatten(s, it) for k, s in items}
    return kind(unflatten(s, it) for s in items)


# ---- from sub-traces to Subgraphs ------------------------------------------------------

def _sym_leaves(v, out):
    if isinstance(v, SymInt):
        if type(v.expr) is tuple:
            leaves_of(v.expr, out)
    elif isinstance(v, (tuple, list)):
        for x in v:
            _sym_leaves(x, out)
    elif type(v) is dict:
        for x in v.values():
            _sym_leaves(x, out)
    elif isinstance(v, Subgraph):
        for s in v.sizes:
            _sym_leaves(s, out)
    return out


def build_subgraphs(subs, input_metas, leaf_values):
    """One `Subgraph` per ``(sub, outputs)`` in ``subs``, all with the same inputs:
    ``input_metas`` (the node's tensor inputs: each sub's placeholders are a prefix of them,
    missing ones stay unused) and the same size inputs (the union of the leaves they use).
    Returns ``(subgraphs, sizes)``: the sizes are the node's extra int arguments."""
    leaves = set()
    for sub, outs in subs:
        for shape, _ in input_metas:
            _sym_leaves(shape, leaves)
        for i in _needed(sub, outs):
            rec = sub.ops[i]
            for r in rec.args:
                if r[0] == "s":
                    _sym_leaves(sub.scalars[r[1]], leaves)
            _sym_leaves(rec.params, leaves)
            for j in range(rec.n_out):
                _sym_leaves(sub.metas[rec.out + j][0], leaves)
    sizes = tuple(SymInt(leaf_values[lf], lf) for lf in sorted(leaves, key=repr))
    graphs = tuple(_build_one(sub, outs, input_metas, sizes) for sub, outs in subs)
    return graphs, sizes


def _needed(sub, outs):
    needed = set()
    stack = [sub.producer[j] for j in outs]
    while stack:
        i = stack.pop()
        if i < 0 or i in needed:
            continue
        needed.add(i)
        for r in sub.ops[i].args:
            if r[0] == "v":
                stack.append(sub.producer[r[1]])
    return sorted(needed)


def _build_one(sub, outs, input_metas, sizes):
    slot = {}
    for n, j in enumerate(sub.placeholders):
        slot[j] = n
    n_slots = len(input_metas)
    ops = []
    for i in _needed(sub, outs):
        rec = sub.ops[i]
        args = []
        for r in rec.args:
            if r[0] == "v":
                args.append(("v", slot[r[1]]))
            elif r[0] == "s":
                args.append(("k", sub.scalars[r[1]]))
            else:
                args.append(("k", r[1]))
        metas = tuple(sub.metas[rec.out + j] for j in range(rec.n_out))
        ops.append((rec.op, tuple(args), dict(rec.params), metas))
        for j in range(rec.n_out):
            slot[rec.out + j] = n_slots
            n_slots += 1
    outputs = tuple(slot[j] for j in outs)
    out_metas = tuple(sub.metas[j] for j in outs)
    return Subgraph(tuple(input_metas), sizes, tuple(ops), outputs, out_metas)


# ---- the param object ------------------------------------------------------------------

def _plain(v):
    """``v`` with SymInts whose expression is not a symbol string made plain ints."""
    if isinstance(v, SymInt):
        return v if type(v.expr) is str else int(v)
    if isinstance(v, tuple):
        return tuple(_plain(x) for x in v)
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if type(v) is dict:
        return {k: _plain(x) for k, x in v.items()}
    return v


def _hashable(v):
    if isinstance(v, (tuple, list)):
        return (type(v).__name__,) + tuple(_hashable(x) for x in v)
    if type(v) is dict:
        return ("dict",) + tuple((k, _hashable(x)) for k, x in v.items())
    if type(v) is float:
        return ("f", v.hex())
    if type(v) is slice:
        return ("slice", _hashable(v.start), _hashable(v.stop), _hashable(v.step))
    return v


class Subgraph:
    """A function captured as an op-level graph: the param of a higher-order op.

    ``inputs``: ``(shape, dtype)`` of each tensor placeholder; ``sizes``: the size
    placeholders (SymInts; in a graph handed to a backend a symbol like ``s0``, or a plain
    int where the size is static); ``ops``: ``(op, args, params, out_metas)`` with args
    ``("v", slot)`` (slots number the placeholders, then each op output) or ``("k", value)``;
    ``outputs``: the slots returned; ``out_metas``: their ``(shape, dtype)``.

    ``graph_module`` is the graph as an ``ember.fx`` GraphModule, called as
    ``gm(*tensors, *sizes) -> tuple``, in the format of every captured graph (placeholders
    with ``meta["val"]``, ``call_function`` nodes on Ops, ``operator.getitem`` after ops
    with several outputs).
    """
    __slots__ = ("inputs", "sizes", "ops", "outputs", "out_metas", "_gm", "_runner",
                 "_fast", "_hash")

    def __init__(self, inputs, sizes, ops, outputs, out_metas):
        self.inputs = inputs
        self.sizes = sizes
        self.ops = ops
        self.outputs = outputs
        self.out_metas = out_metas
        self._gm = None
        self._runner = None
        self._fast = None
        self._hash = None

    # keys: graph_key and graph_build call these with their own value functions
    def _ember_key_(self, fn):
        """The structural key with every size-bearing value passed through ``fn``."""
        if self.ops is None:
            return self._graph_key(fn)
        return ("Subgraph",
                tuple((fn(s), d) for s, d in self.inputs),
                fn(self.sizes),
                tuple((op, tuple(a if a[0] == "v" else ("k", fn(a[1])) for a in args),
                       tuple((k, fn(v)) for k, v in params.items()),
                       tuple((fn(s), d) for s, d in metas))
                      for op, args, params, metas in self.ops),
                self.outputs)

    def _ember_render_(self, fn):
        """This Subgraph with its sizes, params and metas rendered by ``fn``."""
        if self.ops is None:
            return self._graph_render(fn)
        return Subgraph(tuple((fn(s), d) for s, d in self.inputs),
                        tuple(fn(s) for s in self.sizes),
                        tuple((op, tuple(a if a[0] == "v" else ("k", fn(a[1])) for a in args),
                               {k: fn(v) for k, v in params.items()},
                               tuple((fn(s), d) for s, d in metas))
                              for op, args, params, metas in self.ops),
                        self.outputs,
                        tuple((fn(s), d) for s, d in self.out_metas))

    # ---- Subgraphs made from a GraphModule (a loaded or rewritten graph) ----------------
    @classmethod
    def from_graph_module(cls, gm):
        """The Subgraph running ``gm`` (a graph in the format of `graph_module`: tensor
        placeholders with a TensorMeta ``meta["val"]``, then size placeholders, an output
        tuple), e.g. one a pass rewrote or a program file held.  ``ops`` is None: the
        GraphModule is the graph."""
        inputs, sizes = [], []
        out_metas = ()
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                val = node.meta.get("val")
                if isinstance(val, TensorMeta):
                    if sizes:
                        raise ValueError("Subgraph.from_graph_module: tensor placeholders must "
                                         "come before the size placeholders")
                    inputs.append((tuple(val.shape), val.dtype))
                elif isinstance(val, int):
                    sizes.append(val)
                else:
                    raise ValueError(f"Subgraph.from_graph_module: placeholder {node.name} has "
                                     f"no TensorMeta or int meta['val'] (got {val!r})")
            elif node.op == "output":
                outs = node.args[0]
                out_metas = tuple((tuple(o.meta["val"].shape), o.meta["val"].dtype)
                                  for o in outs)
        sub = cls(tuple(inputs), tuple(sizes), None, None, out_metas)
        sub._gm = gm
        return sub

    def _graph_key(self, fn):
        from ..fx.node import map_arg
        index = {}
        items = []
        for node in self._gm.graph.nodes:
            index[node] = len(index)

            def ref(v):
                return ("node", index[v])
            args = map_arg(node.args, ref)
            kwargs = map_arg(node.kwargs, ref)
            val = node.meta.get("val")
            meta = (fn(tuple(val.shape)), val.dtype) if isinstance(val, TensorMeta) else \
                tuple((fn(tuple(v.shape)), v.dtype) for v in val) if isinstance(val, tuple) \
                else fn(val) if isinstance(val, int) else None
            items.append((node.op, node.target if node.op != "placeholder" else None,
                          fn(args), fn(kwargs), meta))
        return ("Subgraph.gm", tuple(items))

    def _graph_render(self, fn):
        from ..fx import Graph, GraphModule
        from ..nn.modules.module import Module
        g = Graph()
        env = {}
        for node in self._gm.graph.nodes:
            if node.op == "output":
                g.output(tuple(env[o] for o in node.args[0]))
                continue
            new = g.node_copy(node, lambda n: env[n])
            new.args = _map_values(new.args, fn)
            new.kwargs = _map_values(new.kwargs, fn)
            val = node.meta.get("val")
            if isinstance(val, TensorMeta):
                new.meta["val"] = TensorMeta(fn(tuple(val.shape)), val.dtype)
            elif isinstance(val, tuple):
                new.meta["val"] = tuple(TensorMeta(fn(tuple(v.shape)), v.dtype) for v in val)
            elif isinstance(val, int):
                new.meta["val"] = fn(val)
            env[node] = new
        return Subgraph.from_graph_module(GraphModule(Module(), g))

    def __eq__(self, other):
        return type(other) is Subgraph and self._ember_key_(_hashable) == \
            other._ember_key_(_hashable)

    def __hash__(self):
        if self._hash is None:
            self._hash = hash(self._ember_key_(_hashable))
        return self._hash

    def __repr__(self):
        n_ops = len(self.ops) if self.ops is not None else sum(
            1 for n in self._gm.graph.nodes if n.op == "call_function")
        return (f"Subgraph({len(self.inputs)} inputs, {n_ops} ops, "
                f"{len(self.out_metas)} outputs)")

    def __reduce__(self):
        if self.ops is None:
            return (Subgraph.from_graph_module, (self._gm,))
        return (Subgraph, (self.inputs, tuple(_plain(s) for s in self.sizes), self.ops,
                           self.outputs, self.out_metas))

    @property
    def graph_module(self):
        if self._gm is None:
            self._gm = self._build_gm()
        return self._gm

    def _build_gm(self):
        from ..fx import Graph, GraphModule
        from ..nn.modules.module import Module
        g = Graph()
        env = []
        for n, (shape, dtype) in enumerate(self.inputs):
            p = g.placeholder(f"arg{n}")
            p.meta["val"] = TensorMeta(_plain(shape), dtype)
            env.append(p)
        for n, s in enumerate(self.sizes):
            p = g.placeholder(f"size{n}")
            p.meta["val"] = _plain(s)
        for op, args, params, metas in self.ops:
            node_args = tuple(env[a[1]] if a[0] == "v" else _plain(a[1]) for a in args)
            node = g.create_node("call_function", op, node_args, _plain(params),
                                 name=op.name)
            vals = [TensorMeta(_plain(s), d) for s, d in metas]
            if op.n_out == 1:
                node.meta["val"] = vals[0]
                env.append(node)
            else:
                node.meta["val"] = tuple(vals)
                for j, v in enumerate(vals):
                    item = g.call_function(operator.getitem, (node, j))
                    item.meta["val"] = v
                    env.append(item)
        g.output(tuple(env[s] for s in self.outputs))
        return GraphModule(Module(), g)

    def __call__(self, *inputs):
        """Run the graph on ``inputs`` (tensors, then the sizes) through the dispatcher:
        autograd records its ops when grad mode is on."""
        if self._runner is None:
            from .backends.pycode import python_runner
            if self.ops is None and _has_node_params(self._gm):
                self._runner = self._gm  # its own code computes sizes given as graph nodes
            else:
                self._runner = python_runner(self.graph_module)
        return tuple(self._runner(*inputs))


    def run_no_grad(self, *inputs):
        """Like calling it, for a caller that runs without autograd (an op's kernel): the
        graph's kernels are called on the arrays directly, as the "eager" backend does."""
        if self._fast is None:
            if self.ops is None and _has_node_params(self._gm):
                self._fast = self._gm
            else:
                from .backends.pycode import array_runner
                self._fast = array_runner(self.graph_module)
        return tuple(self._fast(*inputs))


def _has_node_params(gm):
    from ..fx.node import Node
    found = []

    def look(v):
        if isinstance(v, Node):
            found.append(v)
        elif isinstance(v, (tuple, list)):
            for x in v:
                look(x)
        elif type(v) is dict:
            for x in v.values():
                look(x)
    for node in gm.graph.nodes:
        if node.op == "call_function":
            look(node.kwargs)
    return bool(found)


def _map_values(v, fn):
    """``v`` (node args or kwargs) with every value that is not a Node passed through ``fn``."""
    from ..fx.node import Node
    if isinstance(v, Node):
        return v
    if isinstance(v, tuple):
        return tuple(_map_values(x, fn) for x in v)
    if isinstance(v, list):
        return [_map_values(x, fn) for x in v]
    if type(v) is dict:
        return {k: _map_values(x, fn) for k, x in v.items()}
    return fn(v)


def map_subgraphs(gm, fn):
    """Rewrite every higher-order node of ``gm`` (and of its sub-graphs, innermost first):
    each `Subgraph` param becomes ``Subgraph.from_graph_module(fn(copy))``, where ``copy`` is
    a copy of its GraphModule that ``fn`` may rewrite in place and return (a pass such as
    ``ember._inductor.passes.decompose.decompose``).  Returns ``gm``."""
    import copy
    from ..fx import GraphModule
    from ..nn.modules.module import Module
    changed = False
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if not any(isinstance(v, Subgraph) for v in node.kwargs.values()):
            continue
        new_kwargs = dict(node.kwargs)
        for k, v in node.kwargs.items():
            if isinstance(v, Subgraph):
                inner = GraphModule(Module(), copy.deepcopy(v.graph_module.graph))
                map_subgraphs(inner, fn)
                out = fn(inner)
                new_kwargs[k] = Subgraph.from_graph_module(out if out is not None else inner)
        node.kwargs = new_kwargs
        changed = True
    if changed:
        gm.recompile()
    return gm


def run_on_arrays(fn, arrays):
    """Kernel helper: ``fn`` (written on tensors) applied to ``arrays`` without autograd,
    its outputs as arrays, none of them one of the inputs' (a kernel returns fresh memory)."""
    import numpy as np
    ins = [a if a is None or isinstance(a, (int, float, complex)) else wrap(a) for a in arrays]
    prev = STATE.grad_enabled
    STATE.grad_enabled = False
    try:
        outs = fn(ins)
    finally:
        STATE.grad_enabled = prev
    res = []
    in_ids = {id(a) for a in arrays}
    for o in outs:
        d = o._data
        if id(d) in in_ids or any(isinstance(a, np.ndarray) and np.may_share_memory(d, a)
                                  for a in arrays):
            d = d.copy()
        res.append(d)
    return tuple(res)
