"""Node names of captured graphs keep the operator's own name, leading underscores included,
as torch's make_fx / torch.compile graphs do (``aten._to_copy`` -> node ``_to_copy``)."""
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import ember


def _f(mod):
    def f(x):
        return (x.to(mod.float64) * 2).sum()
    return f


def _torch_names():
    g = make_fx(_f(torch))(torch.randn(3))
    return [n.name for n in g.graph.nodes if n.op == "call_function"]


def test_compile_graph_keeps_leading_underscore():
    seen = []

    def backend(gm, example_inputs):
        seen.append([n.name for n in gm.graph.nodes if n.op == "call_function"])
        return gm.forward

    fn = ember.compile(_f(ember), backend=backend)
    out = fn(ember.tensor([1.0, 2.0, 3.0]))
    assert out.item() == 12.0
    names = seen[0]
    assert "_to_copy" in _torch_names()
    assert "_to_copy" in names and "to_copy" not in names


def test_jit_trace_graph_keeps_leading_underscore():
    tr = ember.jit.trace(_f(ember), (ember.tensor([1.0, 2.0, 3.0]),))
    assert "%_to_copy : Float64(3) = ember::_to_copy(%x" in str(tr.graph)
    assert "    _to_copy = ember.ops._to_copy(x" in tr.code
    assert tr(ember.tensor([1.0, 1.0])).item() == 4.0
