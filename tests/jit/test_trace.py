"""jit.trace: the recorded program against eager ember and against torch.jit.trace."""
import io

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember import jit

from . import models as M

# torch 2.13 deprecates torch.jit, and its tracer warns on the branch the tests freeze on purpose
pytestmark = [pytest.mark.filterwarnings("ignore:`torch.jit:DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")]


def _np(t):
    return t.detach().numpy()


def test_trace_freezes_the_branch_like_torch():
    x, y = ember.randn(5, 5), ember.randn(5, 5)
    tx, ty = torch.from_numpy(_np(x).copy()), torch.from_numpy(_np(y).copy())
    ours = jit.trace(M.branchy, (x, y))
    theirs = torch.jit.trace(M.branchy, (tx, ty))
    for sx, stx in ((x, tx), (-x, -tx)):
        np.testing.assert_array_equal(_np(ours(sx, y)), theirs(stx, ty).numpy())
    # the frozen branch is right for the example and wrong for the flipped input
    assert ember.equal(ours(x, y), M.branchy(x, y))
    assert not ember.equal(ours(-x, y), M.branchy(-x, y))


def test_traced_module_shares_parameters_and_matches_eager():
    m = M.Plain().train()
    x = ember.randn(6, 4)
    ref = M.Plain()
    ref.load_state_dict(m.state_dict())
    t = jit.trace(m, (x,))
    assert isinstance(t, jit.TopLevelTracedModule) and isinstance(t, jit.ScriptModule)
    assert [n for n, _ in t.named_parameters()] == [n for n, _ in m.named_parameters()]
    assert list(t.state_dict()) == list(m.state_dict())
    assert t.l1.weight is m.l1.weight
    # the trace ran forward once (and check_trace ran the program without writing buffers):
    # the running stats moved once, as one eager call moves them
    ref(x)
    np.testing.assert_allclose(_np(m.bn.running_mean), _np(ref.bn.running_mean), rtol=1e-6)
    # BatchNorm's running statistics are buffer mutations of the program
    x2 = ember.randn(6, 4)
    np.testing.assert_allclose(_np(t(x2)), _np(ref(x2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(m.bn.running_var), _np(ref.bn.running_var), rtol=1e-6)
    assert int(m.bn.num_batches_tracked) == int(ref.bn.num_batches_tracked) == 2
    # gradients reach the shared parameters
    t(x2).sum().backward()
    assert m.l1.weight.grad is not None and m.l1.weight.grad.shape == (8, 4)


def test_graph_and_code():
    m = M.Plain().eval()
    t = jit.trace(m, ember.randn(2, 4))  # a single tensor is wrapped in a tuple
    g = str(t.graph)
    assert g.startswith("graph(%p_l1_weight : Float32(8, 4)")
    assert "ember::linear(%x, %p_l1_weight, %p_l1_bias)" in g
    assert "%x : Float32(2, 4)" in g  # traced sizes are static
    code = t.code
    assert code.startswith("def forward(self,\n    x: Float32(2, 4)):")
    assert "ember.ops.linear(x, self.l1.weight, self.l1.bias)" in code
    assert t.forward.graph is not None and "ember::relu" in str(t.forward.graph)


def test_trace_keyword_inputs_and_nested_outputs():
    def f(a, b):
        return {"sum": a + b, "pair": (a * b, a - b)}
    a, b = ember.randn(3), ember.randn(3)
    with pytest.raises(RuntimeError, match="Encountering a dict at the output of the tracer"):
        jit.trace(f, example_kwarg_inputs={"a": a, "b": b})
    with pytest.raises(RuntimeError, match="Encountering a dict at the output of the tracer"):
        torch.jit.trace(lambda a, b: {"s": a + b}, (torch.ones(1), torch.ones(1)))
    t = jit.trace(f, example_kwarg_inputs={"a": a, "b": b}, strict=False)
    out = t(a, b=b)
    np.testing.assert_allclose(_np(out["sum"]), _np(a + b))
    np.testing.assert_allclose(_np(out["pair"][1]), _np(a - b))


def test_constants_are_lifted():
    bias = ember.randn(3)

    def f(x):
        return x + bias
    t = jit.trace(f, (ember.zeros(3),))
    np.testing.assert_allclose(_np(t(ember.ones(3))), _np(ember.ones(3) + bias))
    assert "c_lifted_tensor_0" in str(t.graph)


def test_untraceable_inputs_and_outputs_raise_like_torch():
    with pytest.raises(RuntimeError, match=r"Type 'Tuple\[Tensor, int\]' cannot be traced"):
        jit.trace(lambda x, n: x * n, (ember.ones(2), 3))
    with pytest.raises(RuntimeError, match=r"Type 'Tuple\[Tensor, int\]' cannot be traced"):
        torch.jit.trace(lambda x, n: x * n, (torch.ones(2), 3))
    with pytest.raises(RuntimeError, match="Only tensors, lists, tuples of tensors, or "
                                           "dictionary of tensors can be output"):
        jit.trace(lambda x: 3, (ember.ones(2),))


def test_check_inputs_detect_a_frozen_branch():
    x = ember.ones(3)
    with pytest.raises(jit.TracingCheckError, match="Tracing failed sanity checks"):
        jit.trace(M.branchy, (x, x), check_inputs=[(-x, x)])
    with pytest.raises(torch.jit.TracingCheckError):
        torch.jit.trace(M.branchy, (torch.ones(3), torch.ones(3)),
                        check_inputs=[(-torch.ones(3), torch.ones(3))])
    jit.trace(M.branchy, (x, x), check_inputs=[(2 * x, x)])  # same branch: passes


def test_nondeterminism_warns():
    calls = []

    def f(x):  # a Python-side change between calls: the program cannot reproduce it
        calls.append(1)
        return x * len(calls)
    with pytest.warns(jit.TracerWarning, match="does not match"):
        jit.trace(f, (ember.ones(2),), check_inputs=None)


def test_is_tracing_and_trace_module_methods():
    seen = []

    class T(nn.Module):
        def forward(self, x):
            seen.append(jit.is_tracing())
            return x * 2

        def other(self, x):
            return x - 1
    m = T()
    t = jit.trace_module(m, {"forward": (ember.ones(2),), "other": (ember.ones(2),)})
    assert seen[0] is True and not jit.is_tracing()
    np.testing.assert_array_equal(_np(t.other(ember.zeros(2))), [-1.0, -1.0])
    np.testing.assert_array_equal(_np(t(ember.ones(2))), [2.0, 2.0])
    with pytest.raises(AttributeError, match="expected torch.nn.Module"):
        jit.trace_module(lambda x: x, {"forward": (ember.ones(1),)})


def test_graph_api():
    t = jit.trace(M.Plain().eval(), ember.randn(2, 4))
    g = t.graph
    assert [n.name for n in g.inputs()][-1] == "x"
    assert "linear" in [n.name for n in g.nodes()]
    assert [n.name for n in g.outputs()] == ["linear_1"]
    # the fx Graph's own API: 6 parameters, 3 BatchNorm buffers, the input
    assert len(g.find_nodes(op="placeholder")) == 10


def test_in_place_writes_through_views_are_recorded():
    def f(x, y):
        z = x.clone()
        z[0] = y[1]  # a write into a view of z
        z.add_(1)
        w = z.view(-1)
        w.mul_(2)  # in place on a view: z changes too
        return z, w[1:3] * 1
    x, y = ember.randn(3, 2), ember.randn(3, 2)
    t = jit.trace(f, (x, y))
    x2, y2 = ember.randn(3, 2), ember.randn(3, 2)
    for got, want in zip(t(x2, y2), f(x2, y2)):
        np.testing.assert_array_equal(_np(got), _np(want))
    tx, ty = torch.from_numpy(_np(x2).copy()), torch.from_numpy(_np(y2).copy())
    ours = t(x2, y2)[0]
    theirs = torch.jit.trace(f, (torch.randn(3, 2), torch.randn(3, 2)))(tx, ty)[0]
    np.testing.assert_allclose(_np(ours), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_scripted_if_inside_a_trace_keeps_both_branches(sign):
    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = jit.script(M.Gate())
            self.post = nn.Linear(4, 2)

        def forward(self, x):
            return self.post(self.gate(x * 2)) + 1
    m = Outer()
    x = ember.randn(3, 4).abs() * sign
    t = jit.trace(m, (x,))  # no TracerWarning: the if is kept
    for v in (x, -x):
        np.testing.assert_allclose(_np(t(v)), _np(m(v)), rtol=1e-6)
    assert "ember.ops.cond(" in t.code
    buf = io.BytesIO()
    t.save(buf)
    loaded = jit.load(io.BytesIO(buf.getvalue()))
    np.testing.assert_allclose(_np(loaded(-x)), _np(m(-x)), rtol=1e-6)


def test_scripted_statements_a_trace_cannot_keep_warn_with_their_line():
    class Counting(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("hits", ember.zeros(()))

        def forward(self, x):
            if x.sum() > 0:
                self.hits.add_(1)  # a side effect: not run for the branch not taken
                y = x * 2
            else:
                y = x
            return y
    m = jit.script(Counting())
    x = ember.ones(3)
    with pytest.warns(jit.TracerWarning, match=r"scripted if at File \".*test_trace.py\", "
                                                r"line \d+ depends on a tensor and could not be "
                                                r"kept as a cond \(it writes into a tensor"):
        t = jit.trace(m, (x,), check_trace=False)
    assert float(m.hits) == 1.0  # the taken branch ran once
    np.testing.assert_array_equal(_np(t(x)), [2.0, 2.0, 2.0])
    s = jit.script(M.double_until)
    with pytest.warns(jit.TracerWarning, match=r"while loop at File \".*models.py\", line \d+ "
                                                r"is a tensor"):
        jit.trace(lambda v: s(v, 10.0), (ember.ones(2),))


def test_a_branch_returning_an_outer_tensor():
    gate = jit.script(M.branchy)
    x, y = ember.ones(3), ember.randn(3)
    t = jit.trace(lambda a, b: gate(a, b) * 2, (x, y))  # the false branch returns b itself
    for v in (x, -x):
        np.testing.assert_array_equal(_np(t(v, y)), _np(M.branchy(v, y) * 2))
