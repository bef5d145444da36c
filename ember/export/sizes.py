"""Sizes computed in the graph: what makes an exported program run at every size.

In a captured graph a dynamic size reaches an op as a `SymInt` whose expression is a
string over the program's symbols (``view(x, shape=(s0*9,))``).  A program must compute
such a size from its inputs when it runs, as torch's exported graphs do: each symbol is
read once from the first input dimension that carries it (``sym_size(x, 0)``, torch's
``aten.sym_size.int``) and expressions become ``operator`` nodes (``mul(sym_size, 9)``),
whose results the ops take in place of the SymInts.
"""
import ast
import operator

from .._dynamo.symbolic import SymInt

__all__ = ["sym_size", "lift_sizes"]

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}


def sym_size(t, dim):
    """Size ``dim`` of tensor ``t`` (a graph op: ``aten.sym_size.int``)."""
    return t.shape[dim]


def _symbol_sources(graph):
    """symbol -> (placeholder, dim) of its first occurrence as a whole dimension."""
    out = {}
    for node in graph.nodes:
        if node.op != "placeholder":
            continue
        val = node.meta.get("val")
        for d, s in enumerate(getattr(val, "shape", ()) or ()):
            if isinstance(s, SymInt) and isinstance(s.expr, str) and s.expr.isidentifier():
                out.setdefault(s.expr, (node, d))
    return out


def _has_symbolic(v):
    if isinstance(v, SymInt):
        return isinstance(v.expr, str)
    if isinstance(v, (tuple, list)):
        return any(_has_symbolic(x) for x in v)
    if isinstance(v, dict):
        return any(_has_symbolic(x) for x in v.values())
    return False


def lift_sizes(gm):
    """Replace every symbolic size in ``gm``'s op arguments by graph nodes computing it
    (see the module docstring); returns ``gm``."""
    graph = gm.graph
    sources = _symbol_sources(graph)
    sizes = {}       # expression string -> node
    symbols = {}     # symbol -> sym_size node

    def symbol(name, before):
        node = symbols.get(name)
        if node is None:
            src = sources.get(name)
            if src is None:
                raise RuntimeError(f"symbolic size {name} is not the size of any input "
                                   f"dimension of the program")
            with graph.inserting_after(src[0] if _last_placeholder(graph) is None
                                       else _last_placeholder(graph)):
                node = graph.call_function(sym_size, (src[0], src[1]))
            node.meta["val"] = int
            symbols[name] = node
        return node

    def build(tree, before, text):
        if isinstance(tree, ast.Expression):
            return build(tree.body, before, text)
        if isinstance(tree, ast.Constant) and type(tree.value) is int:
            return tree.value
        if isinstance(tree, ast.Name):
            return symbol(tree.id, before)
        if isinstance(tree, ast.BinOp) and type(tree.op) in _BINOPS:
            a = build(tree.left, before, text)
            b = build(tree.right, before, text)
            key = ast.unparse(tree)
            node = sizes.get(key)
            if node is None:
                with graph.inserting_before(before):
                    node = graph.call_function(_BINOPS[type(tree.op)], (a, b))
                node.meta["val"] = int
                sizes[key] = node
            return node
        if isinstance(tree, ast.UnaryOp) and isinstance(tree.op, ast.USub):
            a = build(tree.operand, before, text)
            with graph.inserting_before(before):
                node = graph.call_function(operator.neg, (a,))
            node.meta["val"] = int
            return node
        raise RuntimeError(f"cannot compute symbolic size {text!r} in the graph")

    def lift(v, before):
        if isinstance(v, SymInt) and isinstance(v.expr, str):
            if v.expr in sizes:
                return sizes[v.expr]
            node = build(ast.parse(v.expr, mode="eval"), before, v.expr)
            if not isinstance(node, int):
                sizes[v.expr] = node
            return node
        if isinstance(v, tuple) and not hasattr(v, "_fields"):
            return tuple(lift(x, before) for x in v)
        if isinstance(v, list):
            return [lift(x, before) for x in v]
        if isinstance(v, dict):
            return {k: lift(x, before) for k, x in v.items()}
        return v

    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is sym_size:
            continue
        if _has_symbolic(node.args) or _has_symbolic(node.kwargs):
            node.args = lift(node.args, node)
            node.kwargs = lift(node.kwargs, node)
    gm.recompile()
    return gm


def _last_placeholder(graph):
    last = None
    for node in graph.nodes:
        if node.op == "placeholder":
            last = node
    return last
