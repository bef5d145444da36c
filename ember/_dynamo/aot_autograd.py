"""AOT autograd: the backward of a captured graph, captured and compiled ahead of time.

When a captured graph's outputs need gradients and the backend is an `AotBackend`, the
runtime records the *joint* graph: the forward ops are recorded again on lazy tensors, and
then each op's vjp (written in ember ops) runs in reverse order on lazy tensors, so the
backward is recorded too.  The joint graph is partitioned: the backward half is what the
tangents reach; the forward values it reads are *saved* (extra forward outputs, the
backward's first inputs).  Both halves go to the backend's compilers.  At run time the
forward runs without autograd and its differentiable outputs get one
`CompiledFunctionBackward` node, whose ``apply`` runs the compiled backward.

Graphs whose backward cannot be recorded this way (a vjp that needs values, symbolic
sizes, Python numbers made inputs) run with autograd op by op instead, with the same
results: ``compile_aot`` never fails where eager would not.  Symbolic graphs are excluded
because a vjp may turn a size into a plain int, which a backward reused for another size
would then get wrong; the forward's key is recomputed every call, the backward's is not.
"""
import numpy as np

from .._core.dispatch import DispatchMode
from .._core.node import Node, _edge
from .._core.state import SHARED, STATE
from .._core.tensor import Tensor, _version_of, wrap
from ..fx import Graph, GraphModule
from ..nn.modules.module import Module
from . import logs
from .backprop import NotDifferentiable, backprop
from .backends.pycode import python_runner
from .graph_build import build_graph_module
from .graph_key import spec_of
from .symbolic import SymInt
from .trace import CannotCapture, Trace

__all__ = ["compile_aot", "CompiledFunctionBackward"]


class _NotTraceable(Exception):
    pass


class _JointSession:
    """A capture session for recording the joint graph: no cache, no flushes allowed."""
    record_random = False  # the forward's draws are nodes again (`Trace.can_draw`)

    def __init__(self, outer, shapes):
        self.leaf_values = outer.leaf_values
        self.shapes = shapes            # id(example tensor) -> its symbolic shape
        self.trace = None
        self.mode = _JointMode(self)

    def symbolic_shape(self, t, shape):
        return self.shapes.get(id(t), tuple(shape))

    def flush(self, reason):
        raise _NotTraceable(reason)

    def graph_break(self, reason):
        raise _NotTraceable(reason)


class _JointMode(DispatchMode):
    records_logical = False

    def __init__(self, session):
        self.session = session

    def __ember_dispatch__(self, op, args, kwargs):
        trace = self.session.trace
        base = getattr(op, "base", None)
        try:
            if base is not None:
                return trace.record_inplace(base, args[0], args[1:], kwargs)
            return trace.record(op, args, kwargs)
        except CannotCapture as e:
            raise _NotTraceable(str(e)) from None


class _State:
    """The dynamic marks the joint graph renders with (the function's, no scalar inputs)."""

    def __init__(self, cache):
        self.dynamic_leaves = cache.dynamic_leaves
        self.dynamic_scalars = {}


def _record_joint(trace, spec, cache):
    """Record forward and backward of ``spec`` on lazy tensors: (joint trace, fw outputs,
    input grads, tangent inputs, the example tensors standing for the graph inputs)."""
    shapes = {}
    examples = []
    for k in spec.inputs:
        t = trace.inputs[k]
        e = wrap(t.__dict__["_data"])
        shapes[id(e)] = trace.input_metas[k][0]
        examples.append(e)
    js = _JointSession(trace.session, shapes)
    jt = js.trace = Trace(js)
    in_rg = [trace.input_metas[k][2] for k in spec.inputs]
    saved_modes = STATE.modes
    saved_grad = STATE.grad_enabled
    STATE.modes = [js.mode]
    STATE.intercept = True
    STATE.grad_enabled = False
    try:
        env = {}   # original ref -> lazy tensor (or example)
        rg = {}    # id(lazy or example) -> requires grad
        for k, e in zip(spec.inputs, examples):
            env[("i", k)] = e
        for e, r in zip(examples, in_rg):
            rg[id(e)] = r
        records = []
        for i in spec.ops:
            rec = trace.ops[i]
            args = [env[r] if r[0] in ("v", "i") else
                    trace.scalars[r[1]] if r[0] == "s" else r[1] for r in rec.args]
            out = rec.op(*args, **rec.params)
            outs = out if rec.op.n_out != 1 else (out,)
            any_rg = rec.grad and rec.op.differentiable and any(
                isinstance(a, Tensor) and rg.get(id(a), False) for a in args)
            for n, o in enumerate(outs):
                env[("v", rec.out + n)] = o
                rg[id(o)] = any_rg and n not in rec.op.nondiff_outputs and \
                    (o.dtype.is_floating_point or o.dtype.is_complex)
            records.append((rec, args, outs))
        fw_outs = [env[("v", j)] for j in spec.outputs]
        # tangents: example zeros shaped like each differentiable output
        tangents = []
        grads = {}
        for j, o in zip(spec.outputs, fw_outs):
            if rg[id(o)]:
                tz = wrap(np.zeros(tuple(int(s) for s in o.shape), dtype=o.dtype.np))
                shapes[id(tz)] = trace.metas[j][0]
                tangents.append(tz)
                grads[id(o)] = tz
            else:
                tangents.append(None)
        try:
            backprop(records, grads, rg)
        except NotDifferentiable as e:
            raise _NotTraceable(str(e)) from None
        in_grads = [grads.get(id(e)) if r else None for e, r in zip(examples, in_rg)]
    finally:
        STATE.modes = saved_modes
        STATE.intercept = bool(saved_modes)
        STATE.grad_enabled = saved_grad
    return jt, fw_outs, in_grads, tangents, examples


def compile_aot(gm, example_inputs, backend, trace, spec):
    """(run, info) for the AOT path; falls back to autograd per op (see the docstring)."""
    try:
        if spec.scalar_inputs or spec.size_inputs:
            raise _NotTraceable("Python numbers or sizes are graph inputs")
        if spec.symbols:
            # a vjp may turn a symbolic size into an int (a baked constant), and nothing
            # re-derives the backward for another size: dynamic graphs take autograd per op
            raise _NotTraceable("the graph has symbolic sizes")
        return _compile_partitioned(gm, example_inputs, backend, trace, spec)
    except _NotTraceable as e:
        logs.log("graph_code", f"backward of a graph not captured ({e}): autograd per op")
        fallback = build_graph_module(trace, spec, grad_nodes=True)
        return python_runner(fallback), None


def _lazy_index(t):
    lz = t.__dict__.get("_lazy")
    return None if lz is None else lz.index


def _compile_partitioned(gm, example_inputs, backend, trace, spec):
    jt, fw_outs, in_grads, tangents, examples = _record_joint(trace, spec,
                                                              trace.session.cache)
    # joint outputs: the forward's outputs, then the gradients of the inputs that need them
    out_tensors = list(fw_outs) + [g for g in in_grads if g is not None]
    n_inputs = len(examples)
    for t in out_tensors:
        if _lazy_index(t) is None:
            raise _NotTraceable("an output is a graph input itself")
    jspec = spec_of(jt, [_lazy_index(t) for t in out_tensors], _State(trace.session.cache))
    # which joint inputs are tangents
    role = {}
    for n, k in enumerate(jspec.inputs):
        t = jt.inputs[k]
        i = next((i for i, e in enumerate(examples) if e is t), None)
        if i is not None:
            role[n] = ("in", i)
            continue
        i = next((i for i, tz in enumerate(tangents) if tz is t), None)
        if i is None:
            raise _NotTraceable("a derivative reads a tensor made outside the graph")
        role[n] = ("tangent", i)
    joint = build_graph_module(jt, jspec, grad_nodes=False)
    tangent_ids = [i for i, t in enumerate(tangents) if t is not None]
    fw_gm, bw_gm, n_saved, saved_inputs = _partition(joint, role, len(fw_outs), n_inputs,
                                                     gm, tangent_ids)
    _check_bound(bw_gm)
    fw = backend.fw_compiler(fw_gm, example_inputs)
    bw_examples = None
    bw = backend.bw_compiler(bw_gm, bw_examples)
    diff_out = [t is not None for t in tangents]
    out_meta = [(tuple(int(s) for s in o.shape), o.dtype.np) for o in fw_outs]
    need_in = [g is not None for g in in_grads]
    n_fw = len(fw_outs)

    def run(*inputs):
        prev = STATE.grad_enabled
        STATE.grad_enabled = False
        try:
            outs = fw(*inputs)
        finally:
            STATE.grad_enabled = prev
        user = list(outs[:n_fw])
        saved = list(outs[n_fw:])
        if not prev:
            return user
        node = CompiledFunctionBackward()
        node.setup(bw, saved, saved_inputs, inputs, need_in, diff_out, out_meta)
        nr = 0
        for i, o in enumerate(user):
            if diff_out[i]:
                o.grad_fn = node
                o._output_nr = nr
                o._requires_grad = True
                nr += 1
        return user
    logs.log("output_code", f"AOT forward graph:\n{fw_gm.code}\nAOT backward graph:\n"
                            f"{bw_gm.code}")
    return run, {"fw": fw_gm, "bw": bw_gm, "saved": n_saved}


def _check_bound(gm):
    """Every symbol a graph's params use must be bound by one of its placeholders."""
    import re
    bound = set()
    used = set()
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            for s in getattr(n.meta.get("val"), "shape", ()):
                if isinstance(s, SymInt) and type(s.expr) is str and s.expr.isidentifier():
                    bound.add(s.expr)
        elif n.op == "call_function":
            for a in _flat(n.args) + _flat(n.kwargs):
                if isinstance(a, SymInt) and type(a.expr) is str:
                    # names, not the calls max(..)/min(..) of sym_max
                    used.update(re.findall(r"[A-Za-z_]\w*\b(?!\()", a.expr))
    if used - bound:
        raise _NotTraceable(f"the backward uses sizes {sorted(used - bound)} it has no input for")


def _flat(x):
    if type(x) in (tuple, list):
        return [y for v in x for y in _flat(v)]
    if type(x) is dict:
        return [y for v in x.values() for y in _flat(v)]
    return [x]


def _partition(joint, role, n_fw_outs, n_inputs, orig_gm, tangent_ids):
    """Split the joint graph: (fw_gm, bw_gm, number saved, which saved are fw inputs)."""
    nodes = list(joint.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    out_node = nodes[-1]
    outs = list(out_node.args[0])
    # the backward: everything a tangent reaches
    bw_set = set()
    for n, p in enumerate(placeholders):
        if role[n][0] == "tangent":
            bw_set.add(p)
    for n in nodes:
        if n.op == "call_function" and any(a in bw_set for a in _node_args(n)):
            bw_set.add(n)
    fw_nodes = [n for n in nodes if n not in bw_set and n.op == "call_function"]
    # values the backward reads from the forward: saved
    saved = []
    seen = set()
    for n in nodes:
        if n in bw_set and n.op == "call_function":
            for a in _node_args(n):
                if a not in bw_set and a not in seen:
                    seen.add(a)
                    saved.append(a)
    for o in outs[n_fw_outs:]:  # a gradient that is a forward value (no tangent reached it)
        if o not in bw_set and o not in seen:
            seen.add(o)
            saved.append(o)
    # forward graph: all original inputs, outputs + saved
    fg = Graph()
    env = {}
    fw_phs = {}
    for n, p in enumerate(placeholders):
        if role[n][0] == "in":
            fw_phs[role[n][1]] = p
    orig_phs = [n for n in orig_gm.graph.nodes if n.op == "placeholder"]
    for i in range(n_inputs):
        src = orig_phs[i]
        new = fg.placeholder(src.name)
        new.meta.update(src.meta)
        if i in fw_phs:
            env[fw_phs[i]] = new
    for n in fw_nodes:
        env[n] = fg.node_copy(n, lambda a: env[a])
    fw_out = [env[o] for o in outs[:n_fw_outs]] + [env[s] for s in saved]
    fg.output(tuple(fw_out))
    fw_gm = GraphModule(Module(), fg)
    # backward graph: saved values, then tangents (in output order); outputs: input grads
    bg = Graph()
    benv = {}
    saved_inputs = []
    for i, s in enumerate(saved):
        p = bg.placeholder(f"saved_{i}_{s.name}")
        p.meta.update(s.meta)
        benv[s] = p
        saved_inputs.append(next((r[1] for n, r in role.items()
                                  if placeholders[n] is s and r[0] == "in"), None))
    by_idx = {role[n][1]: p for n, p in enumerate(placeholders) if role[n][0] == "tangent"}
    for idx in tangent_ids:  # one input per differentiable output, used or not
        q = bg.placeholder(f"tangent_{idx}")
        p = by_idx.get(idx)
        if p is not None:
            q.meta.update(p.meta)
            benv[p] = q
    for n in nodes:
        if n in bw_set and n.op == "call_function":
            benv[n] = bg.node_copy(n, lambda a: benv[a])
    bg.output(tuple(benv[o] for o in outs[n_fw_outs:]))
    bw_gm = GraphModule(Module(), bg)
    return fw_gm, bw_gm, len(saved), saved_inputs


def _node_args(n):
    out = []

    def walk(a):
        if hasattr(a, "op") and hasattr(a, "graph"):
            out.append(a)
        elif type(a) in (tuple, list):
            for x in a:
                walk(x)
        elif type(a) is dict:
            for x in a.values():
                walk(x)
    walk(n.args)
    walk(n.kwargs)
    return out


class CompiledFunctionBackward(Node):
    """The backward of a compiled graph: one node for all its differentiable outputs."""
    __slots__ = ("bw", "saved_values", "saved_versions", "tangent_idx", "need_in")

    def setup(self, bw, saved, saved_inputs, inputs, need_in, diff_out, out_meta):
        Node.__init__(self)
        self.op = None
        self.params = None
        self.bw = bw
        self.saved_values = saved
        self.saved_versions = [(inputs[i], _version_of(inputs[i]), _version_of(inputs[i])[0])
                               for i in set(x for x in saved_inputs if x is not None)
                               if isinstance(inputs[i], Tensor)]
        self.need_in = need_in
        self.tangent_idx = [i for i, d in enumerate(diff_out) if d]
        self.next_edges = [_edge(t) if need and isinstance(t, Tensor) and t._requires_grad
                           else None for t, need in zip(inputs, need_in)]
        self.in_meta = [(t.shape, t.dtype.np) if isinstance(t, Tensor) else None
                        for t in inputs]
        self.n_out = len(self.tangent_idx)
        self.out_meta = [out_meta[i] for i in self.tangent_idx]
        self.saved = ()
        self.versions = None
        self.saved_out = None
        SHARED.seq += 1
        self.seq = SHARED.seq

    def name(self):
        return "CompiledFunctionBackward"

    def apply(self, grads):
        if self.released:
            self.unpack_inputs()
        from .._core.node import _raise_modified
        for t, vc, v in self.saved_versions:
            if vc[0] != v:
                _raise_modified(t, vc[0], v)
        tangents = []
        for g in grads:
            if g is not None and "_lazy" in g.__dict__:
                g._data.__ember_array__()  # computed in a capture: run it now
        for g, (shape, dtype) in zip(grads, self.out_meta):
            tangents.append(g if g is not None else wrap(np.zeros(shape, dtype=dtype)))
        # the backward is compiled already: a capture running around backward() (a compiled
        # training step) must not record its ops again
        prev, modes = STATE.grad_enabled, STATE.modes
        STATE.grad_enabled = False
        STATE.modes = [m for m in modes if m.records_logical]
        STATE.intercept = bool(STATE.modes)
        try:
            res = list(self.bw(*self.saved_values, *tangents))
        finally:
            STATE.grad_enabled = prev
            STATE.modes = modes
            STATE.intercept = bool(modes)
        out = []
        for need in self.need_in:
            out.append(res.pop(0) if need else None)
        return tuple(out)

    def release(self):
        self.saved_values = None
        self.released = True


_ = SymInt
