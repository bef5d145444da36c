"""``loss.backward()`` inside a compiled region, recorded into the pending graph.

A compiled training step (forward, loss, ``backward()``, ``optimizer.step()``,
``zero_grad()``) would otherwise end its graph at ``backward()``: the engine needs the
loss's autograd history, which exists only once the graph has run.  When the loss is a
lazy value of the pending trace, `record_backward` runs the vjps of the recorded ops in
reverse instead (`ember._dynamo.backprop`), as AOT autograd does for its joint graph, so
the backward becomes more ops of the same graph; the gradients of the leaves are
accumulated into their ``.grad`` as the engine does (a new tensor where ``.grad`` is None,
an in-place add into an existing one).  The optimizer update that follows reads those
lazy gradients and is recorded too (its functional decomposition), so the whole step is
one graph, which the replay fast path can run without the Python.

Anything the engine would do that a recorded backward cannot (hooks, ``retain_graph``,
``create_graph``, ``inputs=``, an explicit gradient, anomaly detection, a non-leaf input
that requires grad, an op without a derivative or whose vjp needs values) leaves the call
to the engine: the graph runs first (a graph break) and ``backward()`` runs eagerly.

The values whose backward was recorded keep ``requires_grad`` and get a ``grad_fn`` whose
graph is freed, as after an eager ``backward()``: a second ``backward()`` through them
raises torch's error.
"""
from .._core.node import Node
from .._core.op import REGISTRY
from .._core.state import SHARED, STATE
from .._core.tensor import Tensor, wrap
from . import logs
from .backprop import NotDifferentiable, backprop
from .trace import CannotCapture, _as_value

__all__ = ["record_backward", "BackwardDone"]


def record_backward(loss, gradient, retain_graph, create_graph, inputs):
    """Record ``loss.backward()`` into the loss's pending trace; False (nothing recorded)
    where the engine must run it (see the module docstring)."""
    lz = loss.__dict__["_lazy"]
    trace = lz.trace
    s = trace.session
    why = _refusal(trace, loss, gradient, retain_graph, create_graph, inputs)
    if why is not None:
        logs.log("graph_breaks", f"backward() not recorded into the graph: {why}")
        return False
    j = trace.ref_of(loss)[0][1]
    if trace.consumed and _reaches(trace, j, trace.consumed):
        # through values an earlier backward() of this graph spent: eager raises here
        BackwardDone((), None).unpack_inputs()
    mark = trace.checkpoint()
    prev = STATE.grad_enabled
    STATE.grad_enabled = False  # the backward itself is not differentiated (create_graph)
    trace.in_backward = True
    try:
        _record(trace, j)
    except (CannotCapture, NotDifferentiable) as e:
        trace.rollback(mark)
        logs.log("graph_breaks", f"backward() not recorded into the graph: {e}")
        return False
    finally:
        trace.in_backward = False
        STATE.grad_enabled = prev
    s.backwards += 1
    return True


def _refusal(trace, loss, gradient, retain_graph, create_graph, inputs):
    if gradient is not None or retain_graph or create_graph or inputs is not None:
        return "gradient=, retain_graph, create_graph or inputs= was given"
    if SHARED.anomaly:
        return "anomaly detection is on"
    if trace.session.trace is not trace or getattr(trace.session, "record_random", False):
        return "the loss is not of this compiled call's graph"
    j = loss.__dict__["_lazy"].index
    if j is None or not trace.value_rg[j] or len(trace.metas[j][0]) != 0:
        return "the loss is not a scalar that requires grad"
    if loss.__dict__["_lazy"].view is not None:
        return "the loss is a view"
    if loss.__dict__.get("grad_fn") is not None:
        return "the loss is the output of an autograd.Function"
    for k, t in enumerate(trace.inputs):
        if not trace.input_metas[k][2]:
            continue
        d = t.__dict__
        if d.get("grad_fn") is not None:
            return "an input of the graph that requires grad is not a leaf"
        acc = d.get("_accumulator")
        if d.get("_hooks") or d.get("_post_acc_hooks") or acc is not None and (
                acc.pre_hooks or acc.post_hooks or acc.tensor_hooks):
            return "a leaf of the graph has hooks"
        g = d.get("_grad")
        if g is not None and (g._requires_grad or "_lazy" in g.__dict__ and
                              g.__dict__["_lazy"].trace is not trace):
            return "a leaf's .grad requires grad"
    for rec in trace.ops:
        if not (rec.grad and rec.op.differentiable):
            for j in range(rec.out, rec.out + rec.n_out):
                if trace.value_rg[j]:
                    return f"a tensor made in the graph requires grad ({rec.op.name})"
    return None


def _reaches(trace, j_loss, values):
    """Whether the backward from value ``j_loss`` reaches one of ``values``."""
    reached = {j_loss}
    for rec in reversed(trace.ops[:trace.producer[j_loss] + 1]):
        if not rec.grad or not any(rec.out + n in reached for n in range(rec.n_out)):
            continue
        for r in rec.args:
            if r[0] == "v":
                if r[1] in values:
                    return True
                reached.add(r[1])
    return False


def _record(trace, j_loss):
    handles = {}
    aliases = {}
    roots_before = set(trace.roots)

    def handle(r):
        kind = r[0]
        if kind == "v":
            h = handles.get(r)
            if h is None:
                h = handles[r] = _as_value(trace, r[1])
            return h
        if kind == "i":
            t = trace.inputs[r[1]]
            if id(t) not in trace.mutated:
                return t
            # written in place later in the graph: the vjp reads the value it had, which
            # its memory still holds until the graph runs
            a = aliases.get(r[1])
            if a is None:
                a = aliases[r[1]] = wrap(t.__dict__["_data"])
                trace.input_ids[id(a)] = r[1]
            return a
        return trace.scalars[r[1]] if kind == "s" else r[1]

    try:
        rg = {}
        for k, t in enumerate(trace.inputs):
            rg[id(t)] = trace.input_metas[k][2]
        for k, a in aliases.items():
            rg[id(a)] = trace.input_metas[k][2]
        records = []
        last = trace.producer[j_loss]
        for rec in trace.ops[:last + 1]:
            args = [handle(r) for r in rec.args]
            outs = [handle(("v", rec.out + n)) for n in range(rec.n_out)]
            for o in outs:
                rg[id(o)] = trace.value_rg[o.__dict__["_lazy"].index]
            for r, a in zip(rec.args, args):
                if r[0] == "i" and a is not trace.inputs[r[1]]:
                    rg[id(a)] = trace.input_metas[r[1]][2]
            records.append((rec, args, outs))
        loss = handle(("v", j_loss))
        grads = {id(loss): REGISTRY["full"](shape=(), fill_value=1,
                                            dtype=trace.metas[j_loss][1].np)}
        backprop(records, grads, rg)
        # the gradients of the leaves, accumulated into .grad as the engine does: first
        # everything that may fail, then the writes (which a rollback could not undo)
        leaf_grads = []
        assigned = set()
        for k, t in enumerate(trace.inputs):
            g = grads.get(id(t))
            if g is None:
                a = aliases.get(k)
                g = grads.get(id(a)) if a is not None else None
            if g is None or not trace.input_metas[k][2]:
                continue
            glz = g.__dict__.get("_lazy")
            if glz is None or glz.view is not None or id(g) in assigned:
                g = REGISTRY["clone"](g)  # .grad owns its memory (the engine copies too)
            assigned.add(id(g))
            cur = t.__dict__.get("_grad")
            if cur is not None and "_lazy" not in cur.__dict__:
                trace._check_real_target(cur, (g,))
            leaf_grads.append((t, cur, g))
        for t, cur, g in leaf_grads:
            if cur is None:
                t._grad = g
            else:
                trace.record_inplace(REGISTRY["add"], cur, (g,), {})
    finally:
        for a in aliases.values():
            trace.input_ids.pop(id(a), None)
        # the roots of the backward's own views (a gradient viewed as a transpose): no
        # view of them outlives the recording, and a root kept would be a graph output
        for k in set(trace.roots) - roots_before:
            if k not in trace.versions:
                del trace.roots[k]
    # the history the backward went through is spent, as after an eager backward()
    for o in handles.values():
        j = o.__dict__["_lazy"].index
        if id(o) in grads and trace.value_rg[j]:
            trace.value_rg[j] = False
            trace.consumed.add(j)


class BackwardDone(Node):
    """The ``grad_fn`` of a value whose backward a compiled step recorded and ran: its
    graph is freed, so another backward through it raises torch's error."""
    __slots__ = ()

    def __init__(self, shape, dtype):
        Node.__init__(self)
        self.op = self.params = None
        self.saved = ()
        self.versions = self.saved_out = None
        self.next_edges = []
        self.in_meta = []
        self.n_out = 1
        self.out_meta = [(shape, dtype)]
        self.seq = 0
        self.released = True

    def name(self):
        return "CompiledFunctionBackward"

    def apply(self, grads):
        self.unpack_inputs()  # raises: the graph was freed by the first backward


def mark_consumed(t):
    """``t`` (a settled tensor whose backward was recorded) gets its spent history."""
    d = t.__dict__
    arr = d["_data"]
    d["grad_fn"] = BackwardDone(arr.shape, arr.dtype)
    d["_output_nr"] = 0
    d["_requires_grad"] = True


_ = Tensor
