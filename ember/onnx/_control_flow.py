"""ONNX lowerings of ember's higher-order ops: ``cond`` -> ``If``, ``while_loop`` and ``map``
-> ``Loop``.  Their functions arrive as sub-graphs (`ember._dynamo.higher_order_capture.
Subgraph`), lowered into ONNX subgraphs that read the enclosing graph's values by name, so
data-dependent control flow survives the export instead of being traced one way.

Node layouts (as ember.export records them): ``cond(pred, *operands, *sizes)``,
``while_loop(*carried, *additional, *sizes)`` with ``n_carried``, ``map(*xs, *additional,
*sizes)`` with ``n_xs``; each sub-graph takes its tensors then the sizes.
"""
import numpy as np

from .._core import dtype as _dt
from ._builder import Value
from ._registry import lowers

__all__ = []

_SCALAR = []   # the shape of a scalar formal input


def _inline(b, subgraph, values, sizes, opset):
    from ._convert import inline_subgraph
    return inline_subgraph(b, subgraph, values, sizes, opset)


def _split(rest, n):
    return list(rest[:n]), list(rest[n:])


def _truth(b, v):
    """A bool scalar of a 0-d (or one-element) predicate."""
    t = b.cast(v, _dt.bool)
    if v.ndim:
        t = b.op("Reshape", [t, b.const(np.array([], dtype=np.int64))])
    return t


@lowers("cond")
def _cond(b, ctx, pred, *rest, true_graph, false_graph):
    operands, sizes = _split(rest, len(true_graph.inputs))
    branches = []
    for name, sg in (("then_branch", true_graph), ("else_branch", false_graph)):
        child = b.child()
        outs = _inline(child, sg, operands, sizes, ctx.opset)
        branches.append(child.subgraph(name, [], outs))
    flag = _truth(b, pred) if isinstance(pred, Value) else b.scalar(bool(pred), _dt.bool)
    n = len(true_graph.out_metas)
    out = b.op("If", [flag], outputs=n, then_branch=branches[0], else_branch=branches[1])
    return tuple(out) if n > 1 else (out,)


@lowers("while_loop")
def _while_loop(b, ctx, *rest, cond_graph, body_graph, n_carried):
    n_in = len(body_graph.inputs)
    carried, tail = _split(rest, n_carried)
    additional, sizes = _split(tail, n_in - n_carried)
    (first,) = _inline(b, cond_graph, carried + additional, sizes, ctx.opset)
    body = b.child()
    it, flag_in = body.fresh("iteration"), body.fresh("cond_in")
    names = [body.fresh(f"carried_{i}") for i in range(n_carried)]
    inside = [Value(nm, v.shape, v.dtype) for nm, v in zip(names, carried)]
    new = _inline(body, body_graph, inside + additional, sizes, ctx.opset)
    new = [Value(body.cast(nv, v.dtype, nv.dtype), nv.shape, v.dtype)
           for nv, v in zip(new, carried)]
    (again,) = _inline(body, cond_graph, new + additional, sizes, ctx.opset)
    flag_out = Value(_truth(body, again), (), _dt.bool)
    graph = body.subgraph("loop_body", [(it, _dt.int64, _SCALAR), (flag_in, _dt.bool, _SCALAR)]
                          + [(nm, v.dtype, None) for nm, v in zip(names, carried)],
                          [flag_out] + new)
    out = b.op("Loop", ["", _truth(b, first)] + carried, outputs=n_carried, body=graph)
    return tuple(out) if n_carried > 1 else (out,)


@lowers("map")
def _map(b, ctx, *rest, body_graph, n_xs):
    n_in = len(body_graph.inputs)
    xs, tail = _split(rest, n_xs)
    additional, sizes = _split(tail, n_in - n_xs)
    trips = b.op("Shape", [xs[0]], start=0, end=1)
    trips = b.op("Squeeze", [trips, b.const(np.array([0], dtype=np.int64))])
    body = b.child()
    it, flag_in = body.fresh("iteration"), body.fresh("cond_in")
    slices = [Value(body.op("Gather", [x, it], axis=0), x.shape[1:], x.dtype) for x in xs]
    outs = _inline(body, body_graph, slices + additional, sizes, ctx.opset)
    flag_out = Value(body.op("Identity", [flag_in]), (), _dt.bool)
    graph = body.subgraph("map_body", [(it, _dt.int64, _SCALAR), (flag_in, _dt.bool, _SCALAR)],
                          [flag_out] + outs)
    n = len(outs)
    out = b.op("Loop", [trips, ""], outputs=n, body=graph)
    return tuple(out) if n > 1 else (out,)
