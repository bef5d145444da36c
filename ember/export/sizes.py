"""Sizes computed in the graph: what makes an exported program run at every size.

In a captured graph a dynamic size reaches an op as a `SymInt` whose expression is a
string over the program's symbols (``view(x, shape=(s0*9,))``).  A program must compute
such a size from its inputs when it runs, as torch's exported graphs do: each symbol is
read once from the first input dimension that carries it (``sym_size(x, 0)``, torch's
``aten.sym_size.int``), or for a value read from an input (``u0``, see
`ember.export.unbacked`) from that input (``item_at(x, 0)``), and expressions become
``operator`` nodes (``mul(sym_size, 9)``; ``max(s0, s1)`` a ``sym_max`` node, as torch's),
whose results the ops take in place of the
SymInts.  ``assert_size`` nodes check at run time what the program assumed of values read
from inputs.
"""
import ast
import operator

from .._dynamo import symbolic
from .._dynamo.symbolic import SymInt

__all__ = ["sym_size", "item_at", "assert_size", "SizeBuilder", "lift_sizes"]

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
            ">": operator.gt, ">=": operator.ge}


def sym_size(t, dim):
    """Size ``dim`` of tensor ``t`` (a graph op: ``aten.sym_size.int``)."""
    return t.shape[dim]


def item_at(t, index):
    """Element ``index`` of integer tensor ``t`` (flattened) as a Python int (a graph op:
    torch's ``aten._local_scalar_dense`` of a select)."""
    return int(t.reshape(-1)[index].item())


def assert_size(lhs, op, rhs, message):
    """Raise RuntimeError unless ``lhs op rhs`` (a graph op: ``aten._assert_scalar``)."""
    if not _COMPARE[op](lhs, rhs):
        raise RuntimeError(f"Runtime assertion failed for expression {message}: got {lhs} "
                           f"{op} {rhs} false")


def _has_symbolic(v):
    if isinstance(v, SymInt):
        return isinstance(v.expr, str)
    if isinstance(v, (tuple, list)):
        return any(_has_symbolic(x) for x in v)
    if isinstance(v, dict):
        return any(_has_symbolic(x) for x in v.values())
    return False


class SizeBuilder:
    """Makes the graph nodes that compute symbolic sizes (see the module docstring);
    ``unbacked``: symbol -> (node of the input, flat index) of each value read."""

    def __init__(self, graph, unbacked=None):
        self.graph = graph
        self.sources = {}
        for node in graph.nodes:
            if node.op != "placeholder":
                continue
            val = node.meta.get("val")
            for d, s in enumerate(getattr(val, "shape", ()) or ()):
                if isinstance(s, SymInt) and isinstance(s.expr, str) and s.expr.isidentifier():
                    self.sources.setdefault(s.expr, (sym_size, node, d))
        for name, (node, index) in (unbacked or {}).items():
            self.sources[name] = (item_at, node, index)
        self.nodes = {}       # expression text -> node

    def _anchor(self):
        last = None
        for node in self.graph.nodes:
            if node.op == "placeholder" or node.target in (sym_size, item_at):
                last = node
        return last

    def symbol(self, name):
        node = self.nodes.get(name)
        if node is None:
            src = self.sources.get(name)
            if src is None:
                raise RuntimeError(f"symbolic size {name} is not the size of any input "
                                   f"dimension of the program")
            fn, source, index = src
            with self.graph.inserting_after(self._anchor()):
                node = self.graph.call_function(fn, (source, index))
            node.meta["val"] = int
            self.nodes[name] = node
        return node

    def node(self, text, before):
        """The node (or int) computing size expression ``text``, made before ``before``."""
        if text in self.nodes:
            return self.nodes[text]
        r = self._build(ast.parse(text, mode="eval").body, before, text)
        if not isinstance(r, int):
            self.nodes[text] = r
        return r

    def _build(self, tree, before, text):
        if isinstance(tree, ast.Constant) and type(tree.value) is int:
            return tree.value
        if isinstance(tree, ast.Name):
            return self.symbol(tree.id)
        if isinstance(tree, ast.BinOp) and type(tree.op) in _BINOPS:
            key = ast.unparse(tree)
            if key in self.nodes:
                return self.nodes[key]
            a = self._build(tree.left, before, text)
            b = self._build(tree.right, before, text)
            with self.graph.inserting_before(before):
                node = self.graph.call_function(_BINOPS[type(tree.op)], (a, b))
            node.meta["val"] = int
            self.nodes[key] = node
            return node
        if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and \
                tree.func.id in ("max", "min") and len(tree.args) == 2 and not tree.keywords:
            key = ast.unparse(tree)
            if key in self.nodes:
                return self.nodes[key]
            args = tuple(self._build(a, before, text) for a in tree.args)
            fn = symbolic.sym_max if tree.func.id == "max" else symbolic.sym_min
            with self.graph.inserting_before(before):
                node = self.graph.call_function(fn, args)
            node.meta["val"] = int
            self.nodes[key] = node
            return node
        if isinstance(tree, ast.UnaryOp) and isinstance(tree.op, ast.USub):
            a = self._build(tree.operand, before, text)
            with self.graph.inserting_before(before):
                node = self.graph.call_function(operator.neg, (a,))
            node.meta["val"] = int
            return node
        raise RuntimeError(f"cannot compute symbolic size {text!r} in the graph")

    def lift(self, v, before):
        """``v`` (args or params) with each symbolic size replaced by its node."""
        if isinstance(v, SymInt) and isinstance(v.expr, str):
            return self.node(v.expr, before)
        if isinstance(v, tuple) and not hasattr(v, "_fields"):
            return tuple(self.lift(x, before) for x in v)
        if isinstance(v, list):
            return [self.lift(x, before) for x in v]
        if isinstance(v, dict):
            return {k: self.lift(x, before) for k, x in v.items()}
        return v


def lift_sizes(gm, unbacked=None):
    """Replace every symbolic size in ``gm``'s op arguments by graph nodes computing it
    (see the module docstring); returns the `SizeBuilder` for further sizes."""
    builder = SizeBuilder(gm.graph, unbacked)
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target in (sym_size, item_at):
            continue
        if _has_symbolic(node.args) or _has_symbolic(node.kwargs):
            node.args = builder.lift(node.args, node)
            node.kwargs = builder.lift(node.kwargs, node)
    return builder
