"""`replace_pattern`: find every occurrence of a pattern graph in a GraphModule and
replace it with a replacement graph (PyTorch's subgraph rewriter)."""
from collections import namedtuple
from dataclasses import dataclass, field

from .graph import Graph
from .node import Node

__all__ = ["replace_pattern", "replace_pattern_with_filters", "Match", "ReplacedPatterns"]

Match = namedtuple("Match", ["anchor", "nodes_map"])
Match.__doc__ = ("One replaced occurrence: ``anchor`` is the pattern's output node, "
                 "``nodes_map`` maps pattern nodes to the nodes they matched.")


@dataclass
class ReplacedPatterns:
    """One replaced occurrence: the pattern's output node (``anchor``), the map from
    pattern nodes to the graph nodes they matched, and the nodes inserted in their place."""
    anchor: Node
    nodes_map: dict
    replacements: list


@dataclass
class InternalMatch:
    """A match as match filters see it (torch's ``InternalMatch``): ``anchors`` are
    pattern outputs, ``nodes_map`` pattern node -> graph node, ``placeholder_nodes`` the
    graph nodes feeding the pattern's inputs, ``returning_nodes`` what it returns."""
    anchors: list
    nodes_map: dict = field(default_factory=dict)
    placeholder_nodes: list = field(default_factory=list)
    returning_nodes: list = field(default_factory=list)
    name_node_map: dict = field(default_factory=dict)


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
    def __init__(self, pattern, ignore_literals=False, node_name_match=""):
        self.ignore_literals = ignore_literals
        self.node_name_match = node_name_match
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
            if any(v is gn for v in nodes_map.values()):
                return False
            nodes_map[pn] = gn
            return True
        # a graph node whose name contains ``node_name_match`` counts as the same operation
        # as the pattern node, whatever it calls (torch's rule)
        same = (self.node_name_match and self.node_name_match in gn.name) or \
            (pn.op == gn.op and pn.target == gn.target)
        if not same or len(pn.args) != len(gn.args) or \
                set(pn.kwargs) != set(gn.kwargs) or gn.op in ("placeholder", "output"):
            return False
        nodes_map[pn] = gn
        return (all(self._match_arg(a, b, nodes_map) for a, b in zip(pn.args, gn.args)) and
                all(self._match_arg(pn.kwargs[k], gn.kwargs[k], nodes_map) for k in pn.kwargs))

    def _match_arg(self, a, b, nodes_map):
        if isinstance(a, Node) and a.op == "placeholder" and not isinstance(b, Node):
            # a pattern input also matches a constant argument, as in torch
            if a in nodes_map:
                old = nodes_map[a]
                return not isinstance(old, Node) and type(old) is type(b) and old == b
            nodes_map[a] = b
            return True
        if isinstance(a, Node):
            return isinstance(b, Node) and self._match_node(a, b, nodes_map)
        if isinstance(a, (tuple, list)):
            return isinstance(b, (tuple, list)) and len(a) == len(b) and \
                all(self._match_arg(x, y, nodes_map) for x, y in zip(a, b))
        if self.ignore_literals:  # a pattern literal stands for any argument
            return True
        if isinstance(b, Node):
            return False
        return type(a) is type(b) and a == b


def replace_pattern(gm, pattern, replacement):
    """Replace every non-overlapping match of ``pattern`` in ``gm`` by ``replacement``.

    ``pattern`` and ``replacement`` are callables (or Graphs / GraphModules) taking
    the same inputs; returns the list of `Match` es that were replaced."""
    done = _rewrite(gm, pattern, replacement)
    return [Match(anchor=r.anchor, nodes_map=r.nodes_map) for r in done]


def replace_pattern_with_filters(gm, pattern, replacement=None, match_filters=None,
                                 ignore_literals=False, replacement_callback=None,
                                 node_name_match=""):
    """``replace_pattern`` with a say over each match.

    ``match_filters``: callables ``f(match, original_graph, pattern_graph) -> bool``; a
    match is replaced only if every filter accepts it.  ``ignore_literals``: constants in
    the pattern match any argument.  ``replacement_callback(match, original_graph,
    pattern_graph) -> Graph`` builds the replacement per match (instead of
    ``replacement``).  ``node_name_match``: a graph node whose name contains
    this string matches any pattern operation with as many arguments.  Returns a list of
    `ReplacedPatterns`."""
    if replacement is None and replacement_callback is None:
        raise AssertionError("Must provide either a replacement GraphModule or a replacement "
                             "callback")
    return _rewrite(gm, pattern, replacement, match_filters or [], ignore_literals,
                    replacement_callback, node_name_match)


def _rewrite(gm, pattern, replacement, match_filters=(), ignore_literals=False,
             replacement_callback=None, node_name_match=""):
    pattern_graph, _ = _graph_of(pattern)
    matcher = _Matcher(pattern_graph, ignore_literals, node_name_match)
    fixed = None if replacement is None else _graph_of(replacement)
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
        im = InternalMatch(anchors=[matcher.anchor], nodes_map=dict(nodes_map),
                           placeholder_nodes=[nodes_map[p] for p in matcher.placeholders],
                           returning_nodes=[node])
        if not all(f(im, graph, pattern_graph) for f in match_filters):
            continue
        taken.update(inner)
        matches.append((Match(anchor=matcher.anchor, nodes_map=nodes_map), im))
    replaced = {}  # anchors already rewritten -> their replacement values
    done = []
    for m, im in matches:
        repl_graph, repl_mod = fixed if fixed is not None else \
            (replacement_callback(im, graph, pattern_graph), None)
        repl_placeholders = [n for n in repl_graph.nodes if n.op == "placeholder"]
        if len(repl_placeholders) != len(matcher.placeholders):
            raise ValueError(f"replace_pattern: the pattern takes {len(matcher.placeholders)} "
                             f"inputs but the replacement takes {len(repl_placeholders)}")
        before = set(graph.nodes)
        new = _replace(gm, m, matcher, repl_graph, repl_mod, repl_placeholders, replaced)
        replaced[m.nodes_map[matcher.anchor]] = new
        done.append(ReplacedPatterns(anchor=m.anchor, nodes_map=m.nodes_map,
                                     replacements=[n for n in graph.nodes if n not in before]))
    gm.recompile()
    return done


def _replace(gm, m, matcher, repl_graph, repl_mod, repl_placeholders, replaced):
    graph = gm.graph
    anchor = m.nodes_map[matcher.anchor]
    val_map = {r: (replaced.get(m.nodes_map[p], m.nodes_map[p])
                   if isinstance(m.nodes_map[p], Node) else m.nodes_map[p])
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
