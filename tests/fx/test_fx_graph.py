"""Graph and Node manipulation API (ember.fx.Graph / Node)."""
import operator

import pytest

import ember
import ember.nn.functional as F
from ember.fx import Graph, GraphModule, Node, symbolic_trace
from fxutil import close, rand


def _simple():
    g = Graph()
    x = g.placeholder("x")
    y = g.placeholder("y", default_value=2.0)
    a = g.call_function(operator.add, (x, y))
    r = g.call_function(F.relu, (a,))
    s = g.call_method("sum", (r,), {"dim": 0})
    g.output(s)
    return g, (x, y, a, r, s)


def test_build_graph_names_users_and_links():
    g, (x, y, a, r, s) = _simple()
    assert [n.op for n in g.nodes] == ["placeholder", "placeholder", "call_function",
                                       "call_function", "call_method", "output"]
    assert [n.name for n in g.nodes] == ["x", "y", "add", "relu", "sum_1", "output"]
    assert a.args == (x, y) and a.all_input_nodes == [x, y]
    assert list(x.users) == [a] and list(a.users) == [r]
    assert x.next is y and y.prev is x and s.next.op == "output"
    assert s.kwargs == {"dim": 0}
    assert len(g.nodes) == 6
    assert [n.name for n in reversed(g.nodes)][0] == "output"
    g.lint()


def test_deterministic_readable_names():
    g = Graph()
    x = g.placeholder("x")
    names = [g.call_function(operator.add, (x, 1)).name for _ in range(3)]
    assert names == ["add", "add_1", "add_2"]
    assert g.get_attr("layer1.0.conv1").name == "layer1_0_conv1"
    assert g.call_module("ReLU", (x,)).name == "re_lu"
    # builtins and keywords are never used as names
    assert g.call_method("sum", (x,)).name == "sum_1"
    assert g.call_method("max", (x,)).name == "max_1"
    assert g.create_node("call_function", operator.add, (x, 1), name="my name").name == "my_name"


def test_python_code_defaults_and_exec_round_trip():
    g, _ = _simple()
    code = g.python_code("self")
    assert "def forward(self, x, y = 2.0):" in code.src
    assert "add = x + y" in code.src
    assert "relu = ember.nn.functional.relu(add)" in code.src
    assert "sum_1 = relu.sum(dim = 0)" in code.src
    gm = GraphModule(ember.nn.Module(), g)
    x = rand(3, 4)
    close(gm(x), F.relu(x + 2.0).sum(dim=0))
    close(gm(x, ember.ones(4)), F.relu(x + 1).sum(dim=0))
    ns = dict(code.globals)
    exec(code.src, ns)
    close(ns["forward"](None, x), F.relu(x + 2.0).sum(dim=0))


def test_inserting_before_after_replace_all_uses_and_erase():
    g, (x, y, a, r, s) = _simple()
    with g.inserting_after(a):
        neg = g.call_function(operator.neg, (a,))
    assert a.next is neg
    changed = a.replace_all_uses_with(neg, delete_user_cb=lambda u: u is not neg)
    assert changed == [r] and r.args == (neg,) and neg.args == (a,)
    with g.inserting_before(r):
        m = g.call_function(operator.mul, (neg, 3))
    assert r.prev is m
    r.replace_input_with(neg, m)
    assert r.args == (m,) and r not in neg.users and r in m.users
    with pytest.raises(RuntimeError, match="still had 1 users"):
        g.erase_node(a)
    g.lint()
    gm = GraphModule(ember.nn.Module(), g)
    x = rand(5)
    close(gm(x, 0.5), F.relu(-(x + 0.5) * 3).sum(dim=0))


def test_update_arg_kwarg_and_format_node():
    g, (x, y, a, r, s) = _simple()
    a.update_arg(1, 5)
    assert a.args == (x, 5) and a not in y.users
    s.update_kwarg("dim", -1)
    assert s.kwargs == {"dim": -1}
    s.update_kwarg("keepdim", True)
    assert a.format_node() == ("%add : [num_users=1] = call_function[target=operator.add]"
                               "(args = (%x, 5), kwargs = {})")
    assert s.format_node() == ("%sum_1 : [num_users=1] = call_method[target=sum](args = "
                               "(%relu,), kwargs = {dim: -1, keepdim: True})")
    assert "graph(x, y):" in str(g)
    assert y.format_node() == "%y : [num_users=0] = placeholder[target=y] = 2.0"


def test_eliminate_dead_code_keeps_side_effects():
    g = Graph()
    x = g.placeholder("x")
    g.call_function(operator.mul, (x, 2))            # dead
    g.call_method("add_", (x, 1))                    # in-place: kept
    dead2 = g.call_method("neg", (x,))
    g.call_function(operator.add, (dead2, 1))        # dead chain
    g.output(x)
    assert g.eliminate_dead_code()
    assert [n.name for n in g.nodes] == ["x", "add_", "output"]
    assert not g.eliminate_dead_code()


def test_node_copy_and_graph_copy_and_deepcopy():
    g, _ = _simple()
    g2 = Graph()
    val_map = {}
    out = g2.graph_copy(g, val_map)
    g2.output(out)
    assert [n.name for n in g2.nodes] == [n.name for n in g.nodes]
    assert all(k.graph is g and v.graph is g2 for k, v in val_map.items())
    g2.lint()
    import copy
    g3 = copy.deepcopy(g)
    assert str(g3) == str(g)
    assert all(a is not b for a, b in zip(g.nodes, g3.nodes))
    # copying a node from another graph maps its inputs through arg_transform
    g4 = Graph()
    x4 = g4.placeholder("inp")
    add = next(n for n in g.nodes if n.name == "add")
    n = g4.node_copy(add, lambda old: x4)
    assert n.args == (x4, x4) and n.target is operator.add


def test_lint_errors():
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.add, (x, 1))
    b = g.call_function(operator.mul, (a, 2))
    g.output(b)
    b.prepend(a)  # fine: a is still before b
    g.lint()
    a.append(b)
    x.prepend(b)  # b now precedes its input a
    with pytest.raises(RuntimeError, match="used before it has been defined"):
        g.lint()
    other = Graph()
    ox = other.placeholder("x")
    with pytest.raises(RuntimeError, match="another Graph"):
        g.call_function(operator.add, (ox, 1))


def test_print_tabular(capsys):
    g, _ = _simple()
    g.print_tabular()
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert out[3].split()[:3] == ["placeholder", "y", "y"]
    assert "ember.nn.functional.relu" in out[5]


def test_node_meta_and_invalid_nodes():
    g = Graph()
    x = g.placeholder("x")
    x.meta["val"] = 1
    assert x.meta == {"val": 1}
    with pytest.raises(ValueError, match="Callable is expected"):
        g.create_node("call_function", "not callable", (x,))
    with pytest.raises(ValueError, match="str is expected"):
        g.create_node("call_method", len, (x,))
    assert isinstance(x, Node) and repr(x) == "x"


def test_graph_of_traced_module_matches_torch_fx_ops_and_targets():
    import torch
    import torch.fx

    def build(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.nn.Linear(4, 4)
                self.w = lib.nn.Parameter(lib.ones(4))

            def forward(self, x):
                y = self.lin(x) * self.w
                y = lib.nn.functional.relu(y + 1)
                return y.sum(dim=-1), y.shape[0], lib.tanh(y)[0, 1:]
        return M()
    eg = symbolic_trace(build(ember)).graph
    tg = torch.fx.symbolic_trace(build(torch)).graph

    def sig(g, lib):
        out = []
        for n in g.nodes:
            t = n.target
            if callable(t):
                t = t.__name__ if not hasattr(lib, "nn") or t is not getattr(lib.nn.functional, t.__name__, None) else "F." + t.__name__
            out.append((n.op, n.name, t))
        return out
    assert sig(eg, ember) == sig(tg, torch)


def _under(x):
    return x + 1


def __dunder(x):
    return x * 2


def _(x):
    return x - 3


def test_node_names_keep_leading_underscores_like_torch_fx():
    import torch.fx as torch_fx

    def build(graph_cls):
        g = graph_cls()
        x = g.placeholder("_x")
        a = g.call_function(_under, (x,))
        b = g.call_function(__dunder, (a,))
        c = g.call_function(_, (b,))
        d = g.call_method("__add__", (c, 1))
        e = g.call_function(operator.mul, (d, g.get_attr("_buf")))
        g.output(g.call_module("_sub", (e,)))
        return g

    g = build(Graph)
    names, src = [n.name for n in g.nodes], g.python_code("self").src
    assert names == ["_x", "_under", "__dunder", "_", "add", "_buf", "mul", "_sub", "output"]
    tg = build(torch_fx.Graph)
    assert (names, src) == ([n.name for n in tg.nodes], tg.python_code("self").src)
    root = ember.nn.Module()
    root.register_buffer("_buf", ember.tensor(2.0))
    root.add_module("_sub", ember.nn.Identity())
    # ((1 + 1) * 2 - 3 + 1) * 2
    assert GraphModule(root, g)(ember.tensor(1.0)).item() == 4.0


def test_node_named_by_an_ember_op_keeps_its_underscores():
    # torch names a node after its target's name as written (make_fx: `_to_copy`, `add_`);
    # an ember Op has no __name__, so its operator name is used unchanged
    from ember.ops.conversion import CAST
    g = Graph()
    x = g.placeholder("x")
    assert CAST.name == "_to_copy"
    assert g.call_function(CAST, (x,)).name == "_to_copy"
    assert g.call_function(CAST, (x,)).name == "_to_copy_1"
