"""torch.fx names beyond the tracer basics, against torch: CodeGen/set_codegen/
process_inputs/process_outputs/on_generate_code, Node.normalized_arguments, Scope tracking,
TracerBase, MetaProxy and reduce_graph_module."""
import numpy as np
import pytest

import ember

import torch


def _mlp(lib):
    class Sub(lib.nn.Module):
        def forward(self, x):
            return x.transpose(0, 1)

    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 3)
            self.sub = Sub()

        def forward(self, x):
            return self.sub(lib.relu(self.lin(x))) * 2

    return M()


def test_codegen_process_inputs_outputs_and_custom_codegen():
    for lib in (torch, ember):
        gm = lib.fx.symbolic_trace(_mlp(lib))
        assert isinstance(gm.graph._codegen, lib.fx.graph.CodeGen)
        assert gm.graph.process_inputs(1, 2) == (1, 2)
        assert gm.graph.process_outputs("o") == "o"

        class Named(lib.fx.graph.CodeGen):
            def gen_fn_def(self, free_vars, maybe_return_annotation, *, expanded_def=False):
                return super().gen_fn_def(free_vars, maybe_return_annotation,
                                          expanded_def=expanded_def) + "  # named"

            def generate_output(self, output_args, *, descs=None, repr_fn=None):
                return f"return {{'out': {output_args}}}"

            def process_outputs(self, outputs):
                return outputs["out"] if isinstance(outputs, dict) else outputs

        gm.graph.set_codegen(Named())
        gm.recompile()
        assert "# named" in gm.code and "return {'out': " in gm.code
        out = gm(lib.ones(2, 3))
        assert isinstance(out, dict) and tuple(out["out"].shape) == (3, 2)
        assert gm.graph.process_outputs(out) is out["out"]


def test_on_generate_code_transforms_the_body_and_restores():
    for lib in (torch, ember):
        gm = lib.fx.symbolic_trace(_mlp(lib))
        before = gm.code

        def add_marker(body):
            return ["_marker = 1\n", *body]
        with gm.graph.on_generate_code(lambda prev: add_marker):
            gm.recompile()
            assert "    _marker = 1\n" in gm.code
            gm(lib.ones(2, 3))
        gm.recompile()
        assert gm.code == before
        # chaining: the new transformer receives the current one
        seen = []
        gm.graph.on_generate_code(lambda prev: add_marker)
        gm.graph.on_generate_code(lambda prev: (seen.append(prev), lambda b: prev(b))[1])
        gm.recompile()
        assert seen == [add_marker] and "_marker = 1" in gm.code


def test_normalized_arguments():
    out = {}
    for lib in (torch, ember):
        F = lib.nn.functional
        g = lib.fx.Graph()
        x = g.placeholder("x")
        d = g.call_function(F.dropout, (x,), {"p": 0.3})
        s = g.call_function(F.softmax, (d,), {"dim": 1})
        m = g.call_method("relu", (s,))
        g.output(m)
        gm = lib.fx.GraphModule(lib.nn.Module(), g)
        lin = lib.fx.symbolic_trace(_mlp(lib))
        lin_node = next(n for n in lin.graph.nodes if n.op == "call_module" and n.target == "lin")
        out[lib] = [tuple(map(repr, (n.normalized_arguments(gm, normalize_to_only_use_kwargs=k)
                                     or (None,))))
                    for n in (d, s, m, x) for k in (False, True)]
        out[lib].append(repr(lin_node.normalized_arguments(lin)))
        out[lib].append(repr(lin_node.normalized_arguments(lin, normalize_to_only_use_kwargs=True)))
        sub_node = next(n for n in lin.graph.nodes if n.op == "call_method")
        out[lib].append(repr(sub_node.normalized_arguments(lin)))
    assert out[ember] == out[torch]


def test_scope_tracking_and_tracer_base():
    res = {}
    for lib in (torch, ember):
        t = lib.fx.Tracer()
        assert isinstance(t, lib.fx.proxy.TracerBase)
        t.trace(_mlp(lib))
        res[lib] = {k: (p, getattr(c, "__name__", c)) for k, (p, c) in
                    t.node_name_to_scope.items()}
        assert t.scope.module_path == "" and t.scope.module_type is None
        s = lib.fx.proxy.Scope("", None)
        with lib.fx.proxy.ScopeContextManager(s, lib.fx.proxy.Scope("a.b", int)) as cur:
            assert cur is s and (s.module_path, s.module_type) == ("a.b", int)
        assert (s.module_path, s.module_type) == ("", None)
    assert res[ember] == res[torch]

    # a TracerBase subclass with a graph builds graphs from Proxies
    class Builder(ember.fx.proxy.TracerBase):
        def __init__(self, graph):
            self.graph = graph
    g = ember.fx.Graph()
    p = ember.fx.Proxy(g.placeholder("x"), Builder(g))
    g.output(ember.relu(p * 3).node)
    gm = ember.fx.GraphModule(ember.nn.Module(), g)
    np.testing.assert_allclose(gm(ember.tensor([-1.0, 2.0])).numpy(), [0.0, 6.0])
    with pytest.raises(ember.fx.proxy.TraceError):
        Builder(g).to_bool(p)


def test_meta_proxy_records_example_values():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    x.meta["val"] = ember.ones(2, 3, device="meta")
    p = ember.fx.proxy.MetaProxy(x, ember.fx.proxy.GraphAppendingTracer(g))
    q = ember.sum(ember.relu(p), 0)
    assert isinstance(q, ember.fx.proxy.MetaProxy) and repr(q) == "MetaProxy(sum_1)"
    val = q.node.meta["val"]
    assert tuple(val.shape) == (3,) and val.device.type == "meta"
    y = g.placeholder("y")
    with pytest.raises(AssertionError, match="No MetaProxy"):
        ember.fx.proxy.MetaProxy.__ember_function__(ember.relu, (), (ember.fx.Proxy(y),))


def test_reduce_graph_module_retraces_the_code():
    gm = ember.fx.symbolic_trace(_mlp(ember))
    body = {k: v for k, v in gm.__dict__.items() if k != "_graph"}
    body["_code"] = gm.code
    r = ember.fx.graph_module.reduce_graph_module(body, gm._import_block + "\n")
    x = ember.randn(2, 3)
    np.testing.assert_allclose(r(x).detach().numpy(), gm(x).detach().numpy())
    t = torch.fx.symbolic_trace(_mlp(torch))
    tb = {k: v for k, v in t.__dict__.items() if k != "_graph"}
    tr = torch.fx.graph_module.reduce_graph_module(tb, "import torch\n")
    assert [n.op for n in tr.graph.nodes] == [n.op for n in r.graph.nodes]
    assert [n.op for n in r.graph.nodes] == [n.op for n in gm.graph.nodes]
