"""fx: replace_pattern_with_filters / ReplacedPatterns, Node.insert_arg and .type,
Graph.output_node, against torch.fx."""
import pytest
import torch

import ember


def _program(lib):
    class M(lib.nn.Module):
        def forward(self, x, y):
            a = lib.add(x, y)
            b = lib.relu(a)
            c = lib.add(b, 2)
            return lib.relu(c) * 3
    return M()


def _rewrite(lib, **kw):
    gm = lib.fx.symbolic_trace(_program(lib))

    def pattern(p, q):
        return lib.relu(lib.add(p, q))

    def replacement(p, q):
        return lib.sigmoid(lib.sub(p, q))
    res = lib.fx.subgraph_rewriter.replace_pattern_with_filters(gm, pattern, replacement, **kw)
    x, y = lib.arange(4.0) - 1.5, lib.full((4,), 0.5)
    return gm(x, y).tolist(), [(type(r).__name__, len(r.nodes_map), len(r.replacements))
                               for r in res]


def _second_input_is_literal(match, original_graph, pattern_graph):
    return not isinstance(match.placeholder_nodes[1], (torch.fx.Node, ember.fx.Node))


@pytest.mark.parametrize("kw", [
    {},
    {"match_filters": [_second_input_is_literal]},
    {"match_filters": [lambda m, g, p: False]},
    {"node_name_match": "mul"},
], ids=["all", "filter", "reject", "by_name"])
def test_replace_pattern_with_filters_like_torch(kw):
    t_vals, t_res = _rewrite(torch, **kw)
    e_vals, e_res = _rewrite(ember, **kw)
    assert e_res == t_res
    assert e_vals == pytest.approx(t_vals, rel=1e-6)


def test_replacement_callback_and_errors():
    for lib in (torch, ember):
        def callback(match, original_graph, pattern_graph, lib=lib):
            return lib.fx.symbolic_trace(lambda p, q: lib.mul(p, q)).graph
        gm = lib.fx.symbolic_trace(_program(lib))
        res = lib.fx.subgraph_rewriter.replace_pattern_with_filters(
            gm, lambda p, q: lib.relu(lib.add(p, q)), replacement_callback=callback)
        assert len(res) == 2
        assert gm(lib.full((2,), 2.0), lib.full((2,), 3.0)).tolist() == [36.0, 36.0]
        with pytest.raises(AssertionError, match="replacement"):
            lib.fx.subgraph_rewriter.replace_pattern_with_filters(gm, lambda p: p)


def test_ignore_literals():
    outs = []
    for lib in (torch, ember):
        gm = lib.fx.symbolic_trace(lambda x: lib.add(x, 2) + lib.add(x, 5))
        res = lib.fx.subgraph_rewriter.replace_pattern_with_filters(
            gm, lambda x: lib.add(x, 1), lambda x: lib.sub(x, 1), ignore_literals=True)
        outs.append((len(res), gm(lib.ones(1)).tolist()))
    assert outs[0] == outs[1]


def test_insert_arg_output_node_and_type():
    for lib in (torch, ember):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        y = g.placeholder("y")
        s = g.call_function(lib.add, (x,))
        with pytest.raises(AssertionError, match="Expected output node"):
            g.output_node()
        s.insert_arg(1, y)
        assert s.args == (x, y) and s in y.users and s.all_input_nodes == [x, y]
        with pytest.raises(AssertionError, match="insert_args index"):
            s.insert_arg(5, 1)
        out = g.output(s)
        assert g.output_node() is out
        assert lib.fx.GraphModule(lib.nn.Module(), g)(lib.ones(1), lib.ones(1)).tolist() == [2.0]
        assert lib.fx.Node.type is None or isinstance(lib.fx.Node.type, object)
        assert s.type is None and g.placeholder("z", type_expr=int).type is int
