"""Symbolic tracing: models, Proxy semantics, control-flow errors, wrap/autowrap, leaves."""
import math
import operator

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.fx import Proxy, TraceError, Tracer, symbolic_trace, wrap
from fxutil import AddRelu, BasicBlock, close, rand


def _my_leaf(x, k):
    # data-dependent: would not trace, but wrap() keeps it a leaf
    return x * k if float(x.sum()) > 0 else x


wrap(_my_leaf)
wrap("len")


@pytest.mark.parametrize("train", [False, True])
def test_resnet_block_traces_and_matches(train):
    m = BasicBlock()
    m.train(train)
    gm = symbolic_trace(m)
    x = rand(2, 4, 8, 8)
    close(gm(x), m(x))
    ops = [(n.op, n.target if isinstance(n.target, str) else n.target.__name__)
           for n in gm.graph.nodes]
    assert ops == [("placeholder", "x"), ("call_module", "conv1"), ("call_module", "bn1"),
                   ("call_module", "relu"), ("call_module", "conv2"), ("call_module", "bn2"),
                   ("call_module", "downsample.0"), ("call_module", "downsample.1"),
                   ("call_function", "add"), ("call_function", "relu"), ("output", "output")]
    code = gm.code
    assert "conv1 = self.conv1(x)" in code
    assert 'downsample_0 = getattr(self.downsample, "0")(x)' in code
    assert "add = bn2 + downsample_1" in code
    compile(code, "<test>", "exec")


def test_transformer_encoder_layer_traces_and_matches():
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, dropout=0.0)
    layer.eval()
    gm = symbolic_trace(layer)
    x = rand(5, 2, 16)
    close(gm(x), layer(x))
    mods = [n.target for n in gm.graph.nodes if n.op == "call_module"]
    assert mods == ["self_attn", "dropout1", "norm1", "linear1", "dropout", "linear2",
                    "dropout2", "norm2"]
    assert any(n.target is F.relu for n in gm.graph.nodes if n.op == "call_function")
    # the src_mask argument stays an input with its default
    assert "def forward(self, src, src_mask = None, src_key_padding_mask = None, " \
           "is_causal = False):" in gm.code
    mask = ember.zeros(5, 5)
    close(gm(x, mask), layer(x, mask))


def test_traced_function_and_tensor_methods_operators():
    def f(x, y):
        z = (x @ y.t()).abs() - 1.5
        z = ember.where(z > 0, z, -z) ** 2 / 3 // 1 % 2
        w = ember.ones(3) + x[0, :3]
        return z.mean(dim=-1, keepdim=True), -w, ~(x > 0), x.transpose(0, 1).shape
    gm = symbolic_trace(f)
    x, y = rand(3, 4), rand(3, 4, seed=1)
    for a, b in zip(gm(x, y)[:3], f(x, y)[:3]):
        close(a.float(), b.float())
    assert gm(x, y)[3] == ember.Size([4, 3])
    assert gm.__class__.__name__ == "f"


def test_proxy_attribute_access_and_unpacking():
    def f(x):
        b, c = x.shape
        n = x.dtype
        return x.reshape(c, b).to(n) + x.ndim
    gm = symbolic_trace(f)
    getattrs = [n for n in gm.graph.nodes if n.target is getattr]
    assert [n.args[1] for n in getattrs] == ["shape", "dtype", "ndim"]
    x = rand(2, 3)
    close(gm(x), f(x))


def test_data_dependent_control_flow_raises_naming_the_line():
    class M(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x + 1
            return x - 1
    with pytest.raises(TraceError) as ei:
        symbolic_trace(M())
    msg = str(ei.value)
    assert "symbolically traced variables cannot be used as inputs to control flow" in msg
    assert "if x.sum() > 0:" in msg and "test_fx_trace.py" in msg and "concrete_args" in msg


def test_concrete_args_specialise_control_flow():
    class M(nn.Module):
        def forward(self, x, flag):
            if flag:
                return x + 1
            return x - 1
    with pytest.raises(TraceError):
        symbolic_trace(M())
    gm = symbolic_trace(M(), concrete_args={"flag": True})
    x = rand(3)
    close(gm(x), x + 1)
    close(gm(x, True), x + 1)
    assert not any(n.target is operator.sub for n in gm.graph.nodes)
    with pytest.raises(AssertionError, match="flag has been specialized to have value True"):
        gm(x, False)
    gm2 = symbolic_trace(M(), concrete_args={"flag": False})
    close(gm2(x), x - 1)
    with pytest.raises(TraceError, match="not parameters"):
        symbolic_trace(M(), concrete_args={"nope": 1})


def test_iteration_len_and_conversion_errors():
    def loop(x):
        return [v for v in x]
    with pytest.raises(TraceError, match="Proxy object cannot be iterated"):
        symbolic_trace(loop)

    def as_int(x):
        return ember.zeros(int(x.sum()))
    with pytest.raises(TraceError, match="int()"):
        symbolic_trace(as_int)

    def uses_len(x):
        return x + len(x)
    gm = symbolic_trace(uses_len)   # len was wrap()-ed at module scope
    assert any(n.target is len for n in gm.graph.nodes)
    close(gm(rand(4, 2)), rand(4, 2) + 4)


def test_wrap_keeps_function_a_leaf():
    def f(x):
        return _my_leaf(x, 3) + 1
    gm = symbolic_trace(f)
    leaf = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is _my_leaf]
    assert len(leaf) == 1 and leaf[0].args[1] == 3
    assert "_my_leaf(x, 3)" in gm.code
    x = rand(4).abs()
    close(gm(x), x * 3 + 1)
    # outside tracing the function is untouched
    assert _my_leaf.__name__ == "_my_leaf" and not hasattr(_my_leaf, "__fx_orig__")


def test_wrap_must_be_called_at_module_scope():
    with pytest.raises(NotImplementedError, match="top level"):
        wrap("len")


def _plain_sqrt_user(x):
    return x * math.sqrt(x.shape[-1])


def test_autowrap_math_functions():
    gm = symbolic_trace(_plain_sqrt_user)
    sq = [n for n in gm.graph.nodes if n.target is math.sqrt]
    assert len(sq) == 1 and "math.sqrt(getitem)" in gm.code
    x = rand(2, 9)
    close(gm(x), x * 3.0)
    assert math.sqrt(4.0) == 2.0  # restored after tracing
    no_math = Tracer(autowrap_modules=())
    with pytest.raises(TraceError, match="float()"):
        no_math.trace(_plain_sqrt_user)


def test_autowrap_functions_leaf():
    tracer = Tracer(autowrap_functions=(_helper_fn,))
    graph = tracer.trace(_uses_helper)
    assert [n.target for n in graph.nodes if n.op == "call_function"][0] is _helper_fn
    default = Tracer().trace(_uses_helper)
    assert _helper_fn not in [n.target for n in default.nodes]


def _helper_fn(x):
    return x.relu()


def _uses_helper(x):
    return _helper_fn(x) * 2


def test_custom_leaf_modules_and_param_shapes_constant():
    m = nn.Sequential(nn.Linear(4, 6), nn.GELU(), nn.LayerNorm(6), nn.Dropout(0.2)).eval()

    class NoLeaves(Tracer):
        def is_leaf_module(self, mod, name):
            return False
    g = NoLeaves().trace(m)
    targets = [getattr(n.target, "__name__", n.target) for n in g.nodes]
    # Dropout's forward calls F.dropout through a reference stored on the class: still a
    # node (the __ember_function__ protocol, as torch.fx records it)
    assert targets == ["input", "0.weight", "0.bias", "linear", "gelu", "2.weight", "2.bias",
                       "layer_norm", "dropout", "output"]
    from ember.fx import GraphModule
    gm = GraphModule(m, g)
    x = rand(2, 4)
    close(gm(x), m(x))

    class P(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.ones(3, 4))

        def forward(self, x):
            return x.reshape(-1, self.w.shape[1]) @ self.w.t()
    g1 = Tracer().trace(P())
    g2 = Tracer(param_shapes_constant=True).trace(P())
    assert any(n.target is getattr for n in g1.nodes)
    assert not any(n.target is getattr for n in g2.nodes)
    reshape = next(n for n in g2.nodes if n.target == "reshape")
    assert reshape.args[1:] == (-1, 4)


def test_parameters_buffers_constants_become_get_attr():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.p = nn.Parameter(ember.ones(3))
            self.register_buffer("b", ember.full((3,), 2.0))
            self.c = ember.full((3,), 5.0)

        def forward(self, x):
            return x * self.p + self.b + self.c + self.p + ember.tensor([1.0, 2.0, 3.0])
    m = M()
    gm = symbolic_trace(m)
    attrs = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    assert attrs == ["p", "b", "c", "_tensor_constant0"]
    assert "b" in dict(gm.named_buffers()) and "p" in dict(gm.named_parameters())
    x = rand(3)
    close(gm(x), m(x))


def test_module_not_installed_raises():
    class M(nn.Module):
        def forward(self, x):
            return nn.ReLU()(x)
    with pytest.raises(NameError, match="not installed as a submodule"):
        symbolic_trace(M())


def test_patches_are_restored_after_tracing_errors():
    f_relu, e_sum, t_add = F.relu, ember.sum, ember.Tensor.add
    call = nn.Module.__call__

    def bad(x):
        if x > 0:
            pass
    with pytest.raises(TraceError):
        symbolic_trace(bad)
    assert F.relu is f_relu and ember.sum is e_sum and ember.Tensor.add is t_add
    assert nn.Module.__call__ is call


def test_proxy_routes_ember_function_protocol():
    from ember.fx import Graph
    from ember.fx.tracer import GraphAppendingTracer
    g = Graph()
    p = Proxy(g.placeholder("x"), GraphAppendingTracer(g))
    # outside a trace nothing is patched: these reach Proxy.__ember_function__
    r1 = ember.exp(p)
    r2 = ember.ones(2) + p
    r3 = ember.ones(2).mul(p)
    r4 = F.gelu(p)
    assert [n.op for n in g.nodes][1:] == ["call_function", "call_function", "call_method",
                                           "call_function"]
    assert r1.node.target is ember.exp and r2.node.target is operator.add
    assert r3.node.target == "mul" and r4.node.target is F.gelu


def test_nested_user_modules_trace_through_and_sequential():
    class Inner(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x).sigmoid()

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()
            self.seq = nn.Sequential(nn.Linear(4, 4), nn.Tanh())

        def forward(self, x):
            return self.seq(self.inner(x))
    m = Outer()
    gm = symbolic_trace(m)
    assert [n.target for n in gm.graph.nodes if n.op == "call_module"] == \
        ["inner.lin", "seq.0", "seq.1"]
    x = rand(2, 4)
    close(gm(x), m(x))


def test_add_relu_model_with_two_inputs():
    m = AddRelu()
    gm = symbolic_trace(m)
    x, y = rand(3, 4), rand(3, 4, seed=1)
    close(gm(x, y), m(x, y))
    assert np.isfinite(gm(x, y).detach().numpy()).all()
