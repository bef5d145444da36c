"""The graph ember_lite runs: the program's graph decomposed to primitives.

Exported graphs compute their dynamic sizes in the graph (``sym_size`` and ``operator``
nodes, `ember.export.sizes`).  Decomposition treats such a runtime scalar argument as data
and keeps the op whole, and ember_lite binds sizes from the input shapes anyway: so the
size nodes are first folded back into symbolic sizes (SymInts over ``s0``, ...) in the ops'
arguments, then the graph is decomposed."""
import copy
import operator

from ..._dynamo.symbolic import SymInt
from ._graph import SIZE_OPS, _sym_size, encode_graph
from ._values import eval_expr

__all__ = ["lite_graph"]

_SYMBOL = {operator.add: "+", operator.sub: "-", operator.mul: "*",
           operator.floordiv: "//", operator.mod: "%"}


def _atom(e):
    return e if e.isidentifier() or e.lstrip("-").isdigit() else f"({e})"


def _expr_of(v, exprs):
    if hasattr(v, "op") and hasattr(v, "graph"):
        return exprs[v]
    if isinstance(v, SymInt) and isinstance(v.expr, str):
        return v.expr
    return str(int(v))


def _fold_sizes(gm, hints):
    """Replace the size nodes by SymInts in their users' arguments."""
    graph = gm.graph
    sym_size = _sym_size()
    sizes = set(SIZE_OPS.values())
    exprs, values = {}, {}
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        if node.target is sym_size:
            src, dim = node.args
            s = src.meta["val"].shape[dim]
            exprs[node] = s.expr if isinstance(s, SymInt) and isinstance(s.expr, str) \
                else str(int(s))
        elif node.target in sizes:
            ops = [_expr_of(a, exprs) for a in node.args]
            if node.target is operator.neg:
                exprs[node] = f"-{_atom(ops[0])}"
            else:
                exprs[node] = f"{_atom(ops[0])}{_SYMBOL[node.target]}{_atom(ops[1])}"
        else:
            continue
        values[node] = SymInt(eval_expr(exprs[node], hints), exprs[node])

    def sub(v):
        if hasattr(v, "op") and hasattr(v, "graph") and v in values:
            return values[v]
        if isinstance(v, tuple) and not hasattr(v, "_fields"):
            return tuple(sub(x) for x in v)
        if isinstance(v, list):
            return [sub(x) for x in v]
        if isinstance(v, dict):
            return {k: sub(x) for k, x in v.items()}
        return v
    if not values:
        return gm
    for node in graph.nodes:
        if node.op == "call_function" and node not in values:
            node.args = sub(node.args)
            node.kwargs = sub(node.kwargs)
    for node in reversed(list(values)):
        if not node.users:
            graph.erase_node(node)
    gm.recompile()
    return gm


def _render(e):
    """A SymInt's expression (a string, or the tuples size arithmetic builds) as text."""
    if isinstance(e, str):
        return e
    if isinstance(e, int):
        return str(e)
    sym, a, b = e
    if sym == "-" and a == 0:
        return f"-{_atom(_render(b))}"
    return f"{_atom(_render(a))}{sym}{_atom(_render(b))}"


def _size(s):
    if isinstance(s, SymInt) and not isinstance(s.expr, str):
        return SymInt(int(s), _render(s.expr))
    return s


def _meta(v):
    from ..._core.meta import TensorMeta
    if isinstance(v[-1], (tuple, list)):  # several outputs: a pair per output
        return tuple(_meta(x) for x in v)
    shape, dtype = v
    return TensorMeta(tuple(_size(s) for s in shape), dtype)


def _propagate_shapes(gm):
    """Recompute each op's metadata from its shape rule on symbolic inputs, so that sizes
    derived from dynamic ones are symbolic everywhere (decomposition retraces at other
    sizes and needs them)."""
    from ..._core.op import Op
    vals = {}
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if node.target is operator.getitem:
            src = node.args[0].meta.get("val")
            if isinstance(src, tuple):
                node.meta["val"] = src[node.args[1]]
            continue
        if not isinstance(node.target, Op) or node.target.shape is None:
            continue

        def arg(v):
            if hasattr(v, "op") and hasattr(v, "graph"):
                return v.meta.get("val")
            if isinstance(v, (tuple, list)) and not hasattr(v, "_fields"):
                return type(v)(arg(x) for x in v)
            return v
        try:
            vals[node] = _meta(node.target.shape(*arg(node.args),
                                                 **{k: arg(v) for k, v in node.kwargs.items()}))
        except Exception:  # noqa: BLE001 - data-dependent shapes: the recorded meta stays
            continue
        shape = node.kwargs.get("shape")
        out = vals[node]
        if isinstance(shape, (tuple, list)) and not isinstance(out, tuple) and \
                len(shape) == len(out.shape):
            # a shape param is the output shape: its symbolic entries are the sizes
            out.shape = tuple(p if isinstance(p, SymInt) and isinstance(p.expr, str) else s
                              for p, s in zip(shape, out.shape))
        node.meta["val"] = out
    return gm


def lite_graph(gm, hints, arrays):
    """The JSON nodes of ``gm`` with sizes folded and ops decomposed (on a copy);
    ``arrays`` stores the array literals decompositions make."""
    from ..._inductor import config
    from ..._inductor.passes.decompose import decompose
    work = _propagate_shapes(_fold_sizes(copy.deepcopy(gm), hints))
    # the compiler keeps some ops whole for its fast eager kernels; the lite runtime has
    # primitives only
    saved, config.keep_whole = config.keep_whole, frozenset()
    try:
        return encode_graph(decompose(work).graph, arrays)
    finally:
        config.keep_whole = saved
