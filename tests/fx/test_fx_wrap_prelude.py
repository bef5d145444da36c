"""The code of a traced module re-wraps its wrap()ped functions in a prelude, as torch.fx's
``torch.fx._symbolic_trace.wrap("name")`` lines, so a retrace keeps them leaves."""
import torch
import torch.fx

import ember
import ember.fx


def _leaf_step(x):
    # data-dependent: tracing through it would fail, so only a leaf call traces
    return x + 1 if float(x.sum()) > 0 else x - 1


def scaled(x):
    return x * 2


ember.fx.wrap("_leaf_step")
ember.fx.wrap(scaled)
torch.fx.wrap("_leaf_step")
torch.fx.wrap(scaled)


def _model(lib):
    class M(lib.nn.Module):
        def forward(self, x):
            return scaled(_leaf_step(x)).relu() + 1
    return M()


def test_wrap_prelude_like_torch_fx():
    gm = ember.fx.symbolic_trace(_model(ember))
    tgm = torch.fx.symbolic_trace(_model(torch))
    assert [n.name for n in gm.graph.nodes] == [n.name for n in tgm.graph.nodes]
    assert gm.code == tgm.code.replace("torch.fx._symbolic_trace.wrap", "ember.fx.wrap")
    assert gm.code.startswith(f'\nember.fx.wrap("{__name__.replace(".", "_")}__leaf_step")\n')


def test_retrace_keeps_wrapped_functions_leaves():
    gm = ember.fx.symbolic_trace(_model(ember))
    again = ember.fx.symbolic_trace(gm)
    targets = [n.target for n in again.graph.nodes if n.op == "call_function"]
    assert _leaf_step in targets and scaled in targets
    x = ember.tensor([3.0, -1.0])
    # sum > 0: relu((x + 1) * 2) + 1
    assert again(x).tolist() == gm(x).tolist() == [9.0, 1.0]
    assert again.code == gm.code
