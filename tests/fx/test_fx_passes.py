"""Interpreter, Transformer, replace_pattern, ShapeProp, split_module, drawer, fuse."""
import operator
import time

import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.fx import Interpreter, Transformer, replace_pattern, symbolic_trace
from ember.fx.experimental.optimization import fuse
from ember.fx.passes.graph_drawer import FxGraphDrawer
from ember.fx.passes.shape_prop import ShapeProp
from ember.fx.passes.split_module import split_module
from fxutil import AddRelu, BasicBlock, close, rand


def _block():
    ember.manual_seed(0)
    m = BasicBlock()
    # non-trivial running statistics so that fusion has something to fold
    m.train()
    for s in range(3):
        m(rand(4, 4, 8, 8, seed=10 + s))
    return m.eval(), rand(2, 4, 8, 8)


def test_interpreter_runs_and_profiles_per_node():
    m, x = _block()
    gm = symbolic_trace(m)
    close(Interpreter(gm).run(x), m(x))

    class Profiler(Interpreter):
        def __init__(self, mod):
            super().__init__(mod)
            self.times = {}

        def run_node(self, n):
            t0 = time.perf_counter()
            r = super().run_node(n)
            self.times[n.name] = time.perf_counter() - t0
            return r
    p = Profiler(gm)
    close(p.run(x), m(x))
    assert list(p.times) == [n.name for n in gm.graph.nodes]
    assert all(t >= 0 for t in p.times.values()) and p.times["conv1"] > 0


def test_interpreter_overrides_boxed_run_and_gc():
    gm = symbolic_trace(AddRelu())

    class NegRelu(Interpreter):
        def call_function(self, target, args, kwargs):
            if target is F.relu:
                return -F.relu(*args, **kwargs)
            return super().call_function(target, args, kwargs)
    x, y = rand(3, 4), rand(3, 4, seed=1)
    close(NegRelu(gm).run(x, y), -F.relu(-F.relu(gm.lin(x) + y) + x) * 2)
    args = [x, y]
    it = Interpreter(gm)
    close(it.boxed_run(args), gm(x, y))
    assert args == []
    # values are dropped after their last use
    assert set(it.env) <= {n for n in gm.graph.nodes if n.op == "output"}
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter y"):
        Interpreter(gm).run(x)


def test_transformer_replaces_relu_with_gelu():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return F.relu(self.lin(x)) + ember.nn.functional.relu(x) * 2

    class ReluToGelu(Transformer):
        def call_function(self, target, args, kwargs):
            if target is F.relu:
                target = F.gelu
            return super().call_function(target, args, kwargs)
    m = M()
    gm = ReluToGelu(symbolic_trace(m)).transform()
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert F.relu not in targets and targets.count(F.gelu) == 2
    assert "gelu = ember.nn.functional.gelu(lin)" in gm.code
    x = rand(3, 4)
    close(gm(x), F.gelu(m.lin(x)) + F.gelu(x) * 2)
    # an identity Transformer reproduces the graph
    same = Transformer(symbolic_trace(m)).transform()
    assert same.code == symbolic_trace(m).code


def _fused_add_relu(x, y):
    return (x + y).clamp(min=0)


ember.fx.wrap(_fused_add_relu)  # stays one call in the replacement graph


def test_replace_pattern_add_relu_returns_matches():
    def pattern(a, b):
        return F.relu(a + b)

    def replacement(a, b):
        return _fused_add_relu(a, b)
    m = AddRelu()
    gm = symbolic_trace(m)
    matches = replace_pattern(gm, pattern, replacement)
    assert len(matches) == 2
    for mt in matches:
        mapped = {p.name: g.name for p, g in mt.nodes_map.items()}
        assert mt.anchor.name == "relu" and set(mapped) == {"a", "b", "add", "relu"}
    assert [mt.nodes_map[mt.anchor].name for mt in matches] == ["relu", "relu_1"]
    fused = [n for n in gm.graph.nodes if n.target is _fused_add_relu]
    assert len(fused) == 2 and fused[0].args[1].name == "y"
    assert not any(n.target is F.relu for n in gm.graph.nodes)
    gm.graph.lint()
    x, y = rand(3, 4), rand(3, 4, seed=1)
    close(gm(x, y), m(x, y))
    # no match: nothing changes
    assert replace_pattern(gm, pattern, replacement) == []


def test_replace_pattern_skips_matches_with_outside_users():
    def f(x, y):
        s = x + y
        return F.relu(s), s * 2

    def pattern(a, b):
        return F.relu(a + b)
    gm = symbolic_trace(f)
    assert replace_pattern(gm, pattern, lambda a, b: _fused_add_relu(a, b)) == []


def test_shape_prop_records_tensor_meta():
    m, x = _block()
    gm = symbolic_trace(m)
    ShapeProp(gm).propagate(x)
    meta = {n.name: n.meta.get("tensor_meta") for n in gm.graph.nodes}
    assert tuple(meta["x"].shape) == (2, 4, 8, 8)
    assert tuple(meta["conv1"].shape) == (2, 8, 4, 4) and meta["conv1"].dtype == ember.float32
    assert meta["conv1"].stride == (128, 16, 4, 1)
    assert meta["output"] is not None and tuple(meta["relu_1"].shape) == (2, 8, 4, 4)

    def two(x):
        return x.sum(0), (x.long(), 3)
    g2 = symbolic_trace(two)
    ShapeProp(g2).propagate(rand(2, 3))
    out = next(n for n in g2.graph.nodes if n.op == "output").meta["tensor_meta"]
    assert tuple(out[0].shape) == (3,) and out[1][0].dtype == ember.int64 and out[1][1] == 3


def test_split_module_by_callback():
    m, x = _block()
    gm = symbolic_trace(m)
    # conv1..bn2 in partition 0, the shortcut and the sum in partition 1
    names = [n.name for n in gm.graph.nodes]
    cut = names.index("downsample_0")
    split = split_module(gm, m, lambda n: 0 if names.index(n.name) < cut else 1)
    calls = [n.target for n in split.graph.nodes if n.op == "call_module"]
    assert calls == ["submod_0", "submod_1"]
    assert [n.target for n in split.submod_0.graph.nodes if n.op == "call_module"] == \
        ["conv1", "bn1", "relu", "conv2", "bn2"]
    close(split(x), m(x))
    # a partition with two outputs gets getitem nodes
    split2 = split_module(gm, m, lambda n: 0 if n.name in ("conv1", "downsample_0") else 1)
    assert any(n.target is operator.getitem for n in split2.graph.nodes)
    close(split2(x), m(x))


def test_graph_drawer_produces_dot_text():
    m, x = _block()
    gm = symbolic_trace(m)
    ShapeProp(gm).propagate(x)
    dot = FxGraphDrawer(gm, "block").get_dot_graph()
    assert isinstance(dot, str) and dot.startswith('digraph "block" {')
    assert '"conv1" -> "bn1";' in dot and '"relu_1" -> "output";' in dot
    assert "target=conv1 (Conv2d)" in dot and "shape=[2, 8, 4, 4]" in dot
    assert dot.count("->") == sum(len(n.users) for n in gm.graph.nodes)
    split = split_module(gm, m, lambda n: 0 if n.op == "call_module" else 1)
    graphs = FxGraphDrawer(split, "s").get_all_dot_graphs()
    assert set(graphs) == {"s", "s_submod_0", "s_submod_1"}


def test_fuse_conv_bn_same_output_fewer_modules():
    m, x = _block()
    fused = fuse(m)
    kinds = [type(mod).__name__ for _, mod in fused.named_modules()]
    assert "BatchNorm2d" not in kinds
    assert len(list(fused.modules())) < len(list(symbolic_trace(m).modules()))
    assert [n.target for n in fused.graph.nodes if n.op == "call_module"] == \
        ["conv1", "relu", "conv2", "downsample.0"]
    close(fused(x), m(x), atol=1e-5)
    # the original model is untouched (fuse copies unless inplace)
    assert isinstance(m.bn1, nn.BatchNorm2d) and m.conv1.bias is None
    assert fused.conv1.bias is not None


def test_fuse_linear_bn1d_and_training_models_unchanged():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6), nn.ReLU())
    m.train()
    m(rand(8, 5))
    m.eval()
    f = fuse(m)
    assert [type(mod).__name__ for mod in f.children()] == ["Linear", "ReLU"]
    x = rand(4, 5)
    close(f(x), m(x))
    m.train()
    kept = fuse(m)
    assert "BatchNorm1d" in [type(mod).__name__ for _, mod in kept.named_modules()]
