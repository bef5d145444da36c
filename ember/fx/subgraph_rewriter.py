"""`replace_pattern`: find every occurrence of a pattern graph in a GraphModule and
replace it with a replacement graph (PyTorch's subgraph rewriter)."""
from collections import namedtuple

from .graph import Graph
from .node import Node

__all__ = ["replace_pattern", "Match"]

Match = namedtuple("Match", ["anchor", "nodes_map"])
Match.__doc__ = ("One replaced occurrence: ``anchor`` is the pattern's output node, "
                 "``nodes_map`` maps pattern nodes to the nodes they matched.")


def _graph_of(obj):
    from ..nn import Module
    from .graph_module import GraphModule
    from .tracer import symbolic_trace
    if isinstance(obj, Graph):
        return obj, None
    if isinstance(obj, GraphModule):
        return obj.graph, obj
    gm = symbolic_trace(obj)
    return gm.graph, (gm if isinstance(obj, Module) else gm)


class _Matcher:
    def __init__(self, pattern):
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]
        out = next(n for n in pattern.nodes if n.op == "output")
        ret = out.args[0]
        if not isinstance(ret, Node):
            raise ValueError("replace_pattern: the pattern must return a single value")
        self.anchor = ret

    def match(self, gn):
        nodes_map = {}
        if not self._match_node(self.anchor, gn, nodes_map):
            return None
        inner = {gn for pn, gn in nodes_map.items() if pn.op != "placeholder"}
        for pn, g in nodes_map.items():
            if pn.op == "placeholder" or pn is self.anchor:
                continue
            # an internal node read outside the match cannot be removed
            if any(u not in inner for u in g.users):
                return None
        return nodes_map

    def _match_node(self, pn, gn, nodes_map):
        if pn in nodes_map:
            return nodes_map[pn] is gn
        if pn.op == "placeholder":
            if gn in nodes_map.values():
                return False
            nodes_map[pn] = gn
            return True
        if pn.op != gn.op or pn.target != gn.target or len(pn.args) != len(gn.args) or \
                set(pn.kwargs) != set(gn.kwargs) or gn.op in ("placeholder", "output"):
            return False
        nodes_map[pn] = gn
        return (all(self._match_arg(a, b, nodes_map) for a, b in zip(pn.args, gn.args)) and
                all(self._match_arg(pn.kwargs[k], gn.kwargs[k], nodes_map) for k in pn.kwargs))

    def _match_arg(self, a, b, nodes_map):
        if isinstance(a, Node):
            return isinstance(b, Node) and self._match_node(a, b, nodes_map)
        if isinstance(a, (tuple, list)):
            return isinstance(b, (tuple, list)) and len(a) == len(b) and \
                all(self._match_arg(x, y, nodes_map) for x, y in zip(a, b))
        if isinstance(b, Node):
            return False
        return type(a) is type(b) and a == b


def replace_pattern(gm, pattern, replacement):
    """Replace every non-overlapping match of ``pattern`` in ``gm`` by ``replacement``.

    ``pattern`` and ``replacement`` are callables (or Graphs / GraphModules) taking
    the same inputs; returns the list of `Match` es that were replaced."""
    pattern_graph, _ = _graph_of(pattern)
    repl_graph, repl_mod = _graph_of(replacement)
    matcher = _Matcher(pattern_graph)
    repl_placeholders = [n for n in repl_graph.nodes if n.op == "placeholder"]
    if len(repl_placeholders) != len(matcher.placeholders):
        raise ValueError(f"replace_pattern: the pattern takes {len(matcher.placeholders)} "
                         f"inputs but the replacement takes {len(repl_placeholders)}")
    graph = gm.graph
    matches = []
    taken = set()
    for node in list(graph.nodes):
        if node in taken or node.op in ("placeholder", "output"):
            continue
        nodes_map = matcher.match(node)
        if nodes_map is None:
            continue
        inner = [g for p, g in nodes_map.items() if p.op != "placeholder"]
        if any(g in taken for g in inner):
            continue
        taken.update(inner)
        matches.append(Match(anchor=matcher.anchor, nodes_map=nodes_map))
    replaced = {}  # anchors already rewritten -> their replacement values
    for m in matches:
        replaced[m.nodes_map[matcher.anchor]] = _replace(gm, m, matcher, repl_graph, repl_mod,
                                                         repl_placeholders, replaced)
    gm.recompile()
    return matches


def _replace(gm, m, matcher, repl_graph, repl_mod, repl_placeholders, replaced):
    graph = gm.graph
    anchor = m.nodes_map[matcher.anchor]
    val_map = {r: replaced.get(m.nodes_map[p], m.nodes_map[p])
               for r, p in zip(repl_placeholders, matcher.placeholders)}
    if repl_mod is not None:
        from .graph_module import _copy_attr
        for n in repl_graph.nodes:
            if n.op in ("get_attr", "call_module"):
                _copy_attr(repl_mod, gm, n.target)
    with graph.inserting_before(anchor):
        new = graph.graph_copy(repl_graph, val_map)
    anchor.replace_all_uses_with(new)
    order = {n: i for i, n in enumerate(graph.nodes)}
    for p, g in sorted(m.nodes_map.items(), key=lambda kv: -order.get(kv[1], -1)):
        if p.op != "placeholder" and not g._erased and not g.users:
            graph.erase_node(g)
    return new
