"""Scripted ``if`` statements inside ``jit.trace``: both branches kept, as torch keeps them.

When a traced function calls scripted code (``jit.script``) whose ``if`` has a tensor
condition, torch's trace holds the scripted control flow.  ember does the same: each
branch runs once under a `SubRecorder` of its own (the taken branch gives the values the
traced Python continues with), and the trace gets one ``cond`` node whose branches are
the two recorded sub-graphs.  Tensors a branch reads from outside (parameters, earlier
values, constants) become extra inputs of the node, as ``ember.cond`` lifts them.

A branch that writes a tensor from outside in place or draws random numbers cannot be
run speculatively: it is not run (the check comes before the op), the statement falls
back to the branch taken, baked into the trace, and a TracerWarning says so -- as does a
branch that fails, or branches whose outputs differ in structure, shape or dtype.
"""
import warnings

from .._core.op import REGISTRY, InplaceOp
from .._core.tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..fx import Graph, GraphModule
from ..nn.modules.module import Module
from ._recorder import Recorder, _meta

__all__ = ["SubRecorder", "record_cond", "Impure"]


class Impure(Exception):
    """A branch would have a side effect if run speculatively."""


class SubRecorder(Recorder):
    """Records one branch: its operands are inputs ``0..n-1``; tensors from outside are
    lifted (inputs ``n..``, resolved in the enclosing recorder)."""

    def __init__(self, outer, operands):
        super().__init__(list(operands), [], [])
        self.outer = outer
        self.lifted = []  # (outer ref, meta) of the inputs after the operands
        self.local = {id(t) for t in operands}

    def _lift(self, x):
        ref = self.outer.ref(x)
        i = len(self.input_metas)
        self.input_metas.append(_meta(x))
        self.lifted.append(ref)
        self._bind(x, ("input", i))
        return ("input", i)

    def ref(self, x):
        if isinstance(x, Tensor) and id(x) not in self.sources and \
                id(x._data) not in self.by_data and \
                (x._base is None or id(x._base) not in self.sources):
            return self._lift(x)
        return super().ref(x)

    def _const(self, array):
        from .._core.tensor import wrap
        return self._lift(wrap(array))

    def __ember_dispatch__(self, op, args, kwargs):
        if isinstance(op, InplaceOp) and id(args[0]) not in self.local and \
                (args[0]._base is None or id(args[0]._base) not in self.local):
            raise Impure(f"it writes into a tensor from outside the branch ({op.name})")
        if "random" in str(getattr(op, "category", "") or ""):
            raise Impure(f"it draws random numbers ({op.name})")
        out = super().__ember_dispatch__(op, args, kwargs)
        for o in (out if isinstance(out, (tuple, list)) else (out,)):
            if isinstance(o, Tensor):
                self.local.add(id(o))
        return out


def _flat(x, out):
    if isinstance(x, Tensor):
        out.append(x)
        return "T"
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(_flat(v, out) for v in x))
    raise Impure(f"a branch returns a {type(x).__name__}")


def _unflat(spec, it):
    if spec == "T":
        return next(it)
    kind, items = spec
    vals = [_unflat(s, it) for s in items]
    return tuple(vals) if kind == "tuple" else vals


def _run(outer, fn, operands):
    sub = SubRecorder(outer, operands)
    outer.sub = sub
    try:
        out = fn(*operands)
    finally:
        outer.sub = None
    flat = []
    spec = _flat(out, flat)
    sub.out_refs = [sub.ref(t) for t in flat]  # an output from outside is lifted now
    return sub, spec, flat


def _graph(sub, n_total, offset):
    """The branch's GraphModule over all the node's inputs (operands, then the lifted
    tensors of both branches; this branch's lifted ones start at ``offset``)."""
    g = Graph()
    env = {}
    n_ops = len(sub.input_metas) - len(sub.lifted)
    placeholders = []
    for i in range(n_total):
        p = g.placeholder(f"arg{i}")
        placeholders.append(p)
    for i in range(n_ops):
        env[("input", i)] = placeholders[i]
    for j in range(len(sub.lifted)):
        env[("input", n_ops + j)] = placeholders[offset + j]
    sub.emit(g, env)
    g.output(tuple(env[r] for r in sub.out_refs))
    return g, placeholders


def record_cond(outer, pred, taken_first, branches, operands, where):
    """Record ``cond(pred, *branches)`` (see the module docstring) and return the taken
    branch's outputs, or raise `Impure` (the caller bakes the taken branch in)."""
    from .._dynamo.higher_order_capture import Subgraph
    taken, other = (branches[0], branches[1]) if taken_first else (branches[1], branches[0])
    sub_t, spec_t, out_t = _run(outer, taken, operands)
    try:
        with no_grad():
            sub_o, spec_o, out_o = _run(outer, other, operands)
    except Impure:
        raise
    except Exception as e:  # noqa: BLE001 - the branch not taken fails on this example
        # (its condition guards it): bake the taken one
        raise Impure(f"the branch not taken raises {type(e).__name__}: {e}") from None
    if spec_t != spec_o or [(_meta(a).shape, a.dtype) for a in out_t] != \
            [(_meta(b).shape, b.dtype) for b in out_o]:
        raise Impure("the branches return different structures, shapes or dtypes")
    subs = {True: (sub_t, out_t), False: (sub_o, out_o)}
    true_sub = subs[bool(taken_first)][0]
    false_sub = subs[not taken_first][0]
    n_ops = len(operands)
    n_total = n_ops + len(true_sub.lifted) + len(false_sub.lifted)
    metas = [_meta(t) for t in operands]
    metas += [true_sub.input_metas[n_ops + j] for j in range(len(true_sub.lifted))]
    metas += [false_sub.input_metas[n_ops + j] for j in range(len(false_sub.lifted))]
    graphs = []
    for sub, offset in ((true_sub, n_ops), (false_sub, n_ops + len(true_sub.lifted))):
        g, placeholders = _graph(sub, n_total, offset)
        for p, m in zip(placeholders, metas):
            p.meta["val"] = m
        graphs.append(Subgraph.from_graph_module(GraphModule(Module(), g)))
    refs = [outer.ref(pred)] + [outer.ref(t) for t in operands] + true_sub.lifted + \
        false_sub.lifted
    out_metas = tuple(_meta(t) for t in out_t)
    k = len(outer.records)
    outer.records.append((REGISTRY["cond"], tuple(refs),
                          {"true_graph": graphs[0], "false_graph": graphs[1]},
                          len(out_t), out_metas))
    # fresh tensors for the outputs: one the branch returned may be an input (``return x``)
    # whose own binding must stay
    with _paused(outer):
        fresh = [t.clone() for t in out_t]
    for j, t in enumerate(fresh):
        outer._bind(t, ("op", k, j))
    return _unflat(spec_t, iter(fresh))


class _paused:
    """Ops run without being recorded (the outer recorder hands them to a no-op sub)."""

    def __init__(self, outer):
        self.outer = outer

    def __enter__(self):
        self.outer.sub = _PassThrough()

    def __exit__(self, *exc):
        self.outer.sub = None


class _PassThrough:
    def __ember_dispatch__(self, op, args, kwargs):
        return op(*args, **kwargs)


def warn_baked(where, reason):
    from ._trace import TracerWarning
    warnings.warn(f"jit.trace: the scripted if at {where} depends on a tensor and could not "
                  f"be kept as a cond ({reason}); the trace records the branch this example "
                  f"takes, so the trace might not generalize to other inputs", TracerWarning,
                  stacklevel=3)

