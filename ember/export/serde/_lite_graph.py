"""The graph ember_lite runs: the program's graph decomposed to primitives.

Exported graphs compute their dynamic sizes in the graph (``sym_size`` and ``operator``
nodes, `ember.export.sizes`).  Decomposition treats such a runtime scalar argument as data
and keeps the op whole, and ember_lite binds sizes from the input shapes anyway: so the
size nodes are first folded back into symbolic sizes (SymInts over ``s0``, ...) in the ops'
arguments, then the graph is decomposed."""
import copy
import operator
import re

from ..._dynamo import symbolic
from ..._dynamo.symbolic import SymInt
from ._graph import SIZE_OPS, _sym_size, encode_graph
from ._values import eval_expr

__all__ = ["lite_graph"]

_SYMBOL = {operator.add: "+", operator.sub: "-", operator.mul: "*",
           operator.floordiv: "//", operator.mod: "%"}


# ``max(a, b)``/``min(a, b)`` of sizes: calls in the lite graph's size expressions
_CALLS = {symbolic.sym_max: "max", symbolic.sym_min: "min"}


def _atom(e):
    return e if e.isidentifier() or e.lstrip("-").isdigit() else f"({e})"


def _expr_of(v, exprs):
    if hasattr(v, "op") and hasattr(v, "graph"):
        return exprs[v]
    if isinstance(v, SymInt) and isinstance(v.expr, str):
        return v.expr
    return str(int(v))


def _fold_sizes(gm, hints):
    """Replace the size nodes by SymInts in their users' arguments.  A value read from an
    input (``item_at``) stays a node that binds its unbacked symbol (``u0``, ...) when the
    lite runtime runs it (its metadata names the symbol), and the ``assert_size`` checks on
    such values stay, with sizes for arguments."""
    graph = gm.graph
    sym_size = _sym_size()
    sizes = set(SIZE_OPS.values())
    exprs, values, binds = {}, {}, set()
    for node in list(graph.nodes):
        val = node.meta.get("val")
        if node.op == "placeholder" and isinstance(val, int) and not isinstance(val, bool):
            # a sub-graph's size input: its users read the size as a symbolic int (the
            # placeholder stays, the lite runtime binds its symbol from the argument)
            exprs[node] = val.expr if isinstance(val, SymInt) and isinstance(val.expr, str) \
                else str(int(val))
            values[node] = val
            continue
        if node.op != "call_function":
            continue
        value_op = getattr(node.target, "__name__", None) \
            if "export" in getattr(node.target, "__module__", "") else None
        if value_op == "assert_size":
            continue
        if value_op == "item_at":
            sym = f"u{len(binds)}"   # export numbers its unbacked symbols in this order
            hints.setdefault(sym, 2)
            exprs[node] = sym
            values[node] = SymInt(hints[sym], sym)
            node.meta["val"] = values[node]
            binds.add(node)
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
            elif node.target in _CALLS:
                exprs[node] = f"{_CALLS[node.target]}({ops[0]}, {ops[1]})"
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
    for node in graph.nodes:   # a size returned as an output is its expression there too
        if node.op in ("call_function", "output") and node not in values:
            node.args = sub(node.args)
            node.kwargs = sub(node.kwargs)
    for node in reversed(list(values)):
        if node.op != "placeholder" and node not in binds and not node.users:
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
    if sym in ("max", "min"):
        return f"{sym}({_render(a)}, {_render(b)})"
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
            out = _meta(node.target.shape(*arg(node.args),
                                          **{k: arg(v) for k, v in node.kwargs.items()}))
        except Exception:  # noqa: BLE001 - data-dependent shapes: the recorded meta stays
            out = node.meta.get("val")
            if out is None or isinstance(out, tuple):
                continue
            out = copy.copy(out)
        shape = node.kwargs.get("shape")
        if isinstance(shape, (tuple, list)) and not isinstance(out, tuple) and \
                len(shape) == len(out.shape):
            # a shape param is the output shape: its symbolic entries are the sizes
            out.shape = tuple(p if isinstance(p, SymInt) and isinstance(p.expr, str) else s
                              for p, s in zip(shape, out.shape))
        node.meta["val"] = out
    return gm


_ALIAS = "zalias"


def _alias_value(v, aliases):
    """``v`` with each SymInt of a compound expression replaced by its alias symbol."""
    if isinstance(v, SymInt) and isinstance(v.expr, str) and not v.expr.isidentifier():
        name = aliases.setdefault(v.expr, f"{_ALIAS}{len(aliases)}")
        return SymInt(int(v), name)
    if isinstance(v, tuple) and not hasattr(v, "_fields"):
        return tuple(_alias_value(x, aliases) for x in v)
    if isinstance(v, list):
        return [_alias_value(x, aliases) for x in v]
    if isinstance(v, dict):
        return {k: _alias_value(x, aliases) for k, x in v.items()}
    return v


def _alias_meta(m, aliases):
    from ..._core.meta import TensorMeta
    if isinstance(m, tuple):
        return tuple(_alias_meta(x, aliases) for x in m)
    if isinstance(m, TensorMeta):
        return TensorMeta(_alias_value(tuple(m.shape), aliases), m.dtype)
    return m


def _unalias(v, back):
    """The inverse of `_alias_value` on the nodes a decomposition made."""
    from ..._core.meta import TensorMeta
    if isinstance(v, SymInt) and isinstance(v.expr, str) and _ALIAS in v.expr:
        return SymInt(int(v), re.sub(rf"\b{_ALIAS}\d+\b", lambda m: f"({back[m.group(0)]})",
                                     v.expr))
    if isinstance(v, TensorMeta):
        return TensorMeta(_unalias(tuple(v.shape), back), v.dtype)
    if isinstance(v, tuple) and not hasattr(v, "_fields"):
        return tuple(_unalias(x, back) for x in v)
    if isinstance(v, list):
        return [_unalias(x, back) for x in v]
    if isinstance(v, dict):
        return {k: _unalias(x, back) for k, x in v.items()}
    return v


def _decompose_aliased(graph, node):
    """Decompose ``node`` with its compound sizes ("5*s0") seen as fresh symbols: the
    inductor's generalisation binds symbols from bare input sizes only, and an op whose
    sizes are all compound (a linear after a reshape to (5*s0, 8)) would stay whole, which
    the lite runtime cannot run.  The decomposition holds for every value of the alias,
    so substituting the expressions back is sound."""
    from ..._inductor.passes.decompose_symbolic import decompose_symbolic
    aliases = {}
    inputs = [a for a in node.all_input_nodes]
    saved = {a: a.meta.get("val") for a in inputs}
    saved_self = (node.args, node.kwargs, node.meta.get("val"))
    before = set(graph.nodes)
    try:
        for a in inputs:
            a.meta["val"] = _alias_meta(saved[a], aliases)
        node.args = _alias_value(node.args, aliases)
        node.kwargs = _alias_value(node.kwargs, aliases)
        node.meta["val"] = _alias_meta(saved_self[2], aliases)
        decompose_symbolic(graph, node)
    except Exception:
        if node in set(graph.nodes):
            node.args, node.kwargs = saved_self[0], saved_self[1]
            node.meta["val"] = saved_self[2]
        raise
    finally:
        for a, v in saved.items():
            a.meta["val"] = v
    back = {v: k for k, v in aliases.items()}
    for n in graph.nodes:
        if n not in before:
            n.args = _unalias(n.args, back)
            n.kwargs = _unalias(n.kwargs, back)
            n.meta["val"] = _unalias(n.meta.get("val"), back)


def _decompose(gm):
    """The inductor's decompose pass, with `_decompose_aliased` as the second try."""
    from ..._inductor.passes.decompose import _decomposable
    from ..._inductor.passes.decompose_symbolic import decompose_symbolic
    graph = gm.graph
    for _ in range(16):
        todo = [n for n in graph.nodes if _decomposable(n)]
        done = 0
        for node in todo:
            try:
                decompose_symbolic(graph, node)
                done += 1
                continue
            except Exception:  # noqa: BLE001 - tried again with aliases below
                pass
            try:
                _decompose_aliased(graph, node)
                done += 1
            except Exception:  # noqa: BLE001 - the node stays (the lite runtime names it)
                node.meta["no_decompose"] = True
        if not done:
            break
    gm.recompile()
    return gm


def lite_graph(gm, hints, ctx):
    """The JSON nodes of ``gm`` with sizes folded and ops decomposed (on a copy); ``ctx``
    (`LiteEncoder`) stores the array literals decompositions make and lowers sub-graphs
    the same way."""
    from ..._inductor import config
    work = _propagate_shapes(_fold_sizes(copy.deepcopy(gm), dict(hints)))
    # the compiler keeps some ops whole for its fast eager kernels; the lite runtime has
    # primitives only
    saved, config.keep_whole = config.keep_whole, frozenset()
    try:
        return encode_graph(_decompose(work).graph, ctx)
    finally:
        config.keep_whole = saved
