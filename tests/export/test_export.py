"""ember.export.export: the captured program, its signature, dynamic shapes and errors.

Outputs are checked against the eager module they came from; signatures and error
behaviour against torch.export (the test-only oracle)."""
import warnings

import numpy as np
import pytest
import torch

import ember
from ember.export import Dim, InputKind, OutputKind, export
from ember.export.sizes import sym_size
from ember._core.op import Op
from ember.ops.primitives import PRIMITIVES


def _allclose(a, b, atol=1e-6):
    return np.allclose(a.detach().numpy(), b.detach().numpy(), atol=atol)


class MyModule(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = ember.nn.Linear(100, 10)

    def forward(self, x, y):
        return ember.nn.functional.relu(self.lin(x + y), inplace=True)


def test_export_matches_eager_and_lifts_parameters():
    ember.manual_seed(0)
    mod = MyModule()
    ep = export(mod, (ember.randn(8, 100), ember.randn(8, 100)))
    a, b = ember.randn(8, 100), ember.randn(8, 100)
    assert _allclose(ep.module()(a, b), mod(a, b))
    kinds = [(s.kind, s.target) for s in ep.graph_signature.input_specs]
    assert kinds == [(InputKind.PARAMETER, "lin.weight"), (InputKind.PARAMETER, "lin.bias"),
                     (InputKind.USER_INPUT, None), (InputKind.USER_INPUT, None)]
    assert [s.kind for s in ep.graph_signature.output_specs] == [OutputKind.USER_OUTPUT]
    assert set(ep.state_dict) == {"lin.weight", "lin.bias"}
    assert ep.state_dict["lin.weight"] is mod.lin.weight
    # the graph is op-level and functional: no in-place op survives
    targets = [n.target for n in ep.graph.nodes if n.op == "call_function"]
    assert [t.name for t in targets] == ["add", "linear", "relu"]
    text = str(ep)
    assert "ops.linear(add, p_lin_weight, p_lin_bias)" in text
    assert "lin.weight" in text and "USER_OUTPUT" in text
    with pytest.raises(RuntimeError, match="module\\(\\)"):
        ep(a, b)


class ConvBN(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = ember.nn.Conv2d(1, 3, 1, 1)
        self.bn = ember.nn.BatchNorm2d(3)

    def forward(self, x):
        return (self.bn(self.conv(x)),)


def _torch_twin(mod):
    t = torch.nn.Module()
    t.conv = torch.nn.Conv2d(1, 3, 1, 1)
    t.bn = torch.nn.BatchNorm2d(3)
    t.forward = lambda x: (t.bn(t.conv(x)),)
    with torch.no_grad():
        for (n, p) in t.named_parameters():
            p.copy_(torch.from_numpy(dict(mod.named_parameters())[n].detach().numpy()))
    return t


def test_batchnorm_buffers_are_mutated_outputs_as_torch_signature():
    ember.manual_seed(0)
    mod = ConvBN()
    x = ember.randn(2, 1, 3, 3)
    ep = export(mod, (x,))

    class T(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(1, 3, 1, 1)
            self.bn = torch.nn.BatchNorm2d(3)

        def forward(self, x):
            return (self.bn(self.conv(x)),)
    # torch 2.13's export keeps the in-place update in its training IR; its functional
    # form (run_decompositions) lists the buffer mutations as ember's graph does
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)   # torch's own pytree deprecation
        tep = torch.export.export(T(), (torch.randn(2, 1, 3, 3),)).run_decompositions({})

    def kinds(sig):
        return ([(s.kind.name, s.target) for s in sig.input_specs],
                sorted((s.kind.name, s.target) for s in sig.output_specs))
    assert kinds(ep.graph_signature) == kinds(tep.graph_signature)
    # running the module updates the running statistics as eager training does
    m = ep.module()
    eager = ConvBN()
    eager.load_state_dict(mod.state_dict())
    x2 = ember.randn(2, 1, 3, 3)
    (got,) = m(x2)
    (want,) = eager(x2)
    assert _allclose(got, want, 1e-5)
    for name in ("bn.running_mean", "bn.running_var", "bn.num_batches_tracked"):
        assert _allclose(m.state_dict()[name], eager.state_dict()[name], 1e-6), name
    assert int(m.state_dict()["bn.num_batches_tracked"]) == 1


def test_module_keeps_train_and_eval_meaningful():
    ember.manual_seed(0)
    mod = ember.nn.Sequential(ember.nn.Linear(6, 6), ember.nn.BatchNorm1d(6),
                              ember.nn.Dropout(0.5))
    x = ember.randn(4, 6)
    ep = export(mod, (x,))
    assert ep.training is True and ep.alternate is not None
    m = ep.module()
    ember.manual_seed(3)
    a = m(x)
    ember.manual_seed(3)
    b = mod(x)
    assert _allclose(a, b, 1e-5)
    m.eval()
    mod.eval()
    x2 = ember.randn(4, 6)
    assert _allclose(m(x2), mod(x2), 1e-5)
    # eval mode reads the running statistics the training call wrote
    assert _allclose(m.state_dict()["1.running_mean"], mod.state_dict()["1.running_mean"])


def test_dynamic_batch_runs_at_other_sizes_and_checks_ranges():
    ember.manual_seed(0)
    mod = ember.nn.Sequential(ember.nn.Conv2d(1, 3, 3, padding=1), ember.nn.Flatten(),
                              ember.nn.Linear(27, 2)).eval()
    batch = Dim("batch", min=2, max=64)
    ep = export(mod, (ember.randn(4, 1, 3, 3),), dynamic_shapes={"input": {0: batch}})
    assert [str(r) for r in ep.range_constraints.values()] == ["VR[2, 64]"]
    # the sizes are computed in the graph from the input
    assert any(n.target is sym_size for n in ep.graph.nodes)
    # the convolution is one node, as in torch's export
    assert [getattr(n.target, "name", None) for n in ep.graph.nodes
            if "conv" in str(getattr(n.target, "name", ""))] == ["conv2d"]
    m = ep.module()
    for n in (2, 7, 64):
        x = ember.randn(n, 1, 3, 3)
        assert _allclose(m(x), mod(x), 1e-5)
    with pytest.raises(RuntimeError, match=r"shape\[0\] to be <= 64, but got 65"):
        m(ember.randn(65, 1, 3, 3))
    # a lower bound of 2 is export's 0/1 specialisation: sizes 1 and 0 run, as torch's
    for n in (1, 0):
        x = ember.randn(n, 1, 3, 3)
        assert _allclose(m(x), mod(x), 1e-5)
    with pytest.raises(RuntimeError, match=r"shape\[2\] to be equal to 3, but got 4"):
        m(ember.randn(4, 1, 4, 3))
    with pytest.raises(RuntimeError, match="to have 4 dimensions"):
        m(ember.randn(4, 3, 3))
    with pytest.raises(RuntimeError, match="dtype ember.float32"):
        m(ember.randn(4, 1, 3, 3, dtype=ember.float64))


def test_static_program_rejects_other_shapes_like_torch():
    mod = ember.nn.Linear(4, 3)
    ep = export(mod, (ember.randn(1, 4),))
    with pytest.raises(RuntimeError) as e:
        ep.module()(ember.randn(2, 4))
    tep = torch.export.export(torch.nn.Linear(4, 3), (torch.randn(1, 4),))
    with pytest.raises(Exception) as te:
        tep.module()(torch.randn(2, 4))
    assert "shape[0]" in str(e.value) and "1" in str(e.value)
    assert "size()[0] == 1" in str(te.value)


class _Tutorial(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = ember.nn.Linear(5, 3)

    def forward(self, w, x, y, z):
        x0 = x + y
        x1 = self.l(w)
        return x1, x0.flatten() + z


def _tutorial_inputs():
    return ember.randn(6, 5), ember.randn(4), ember.randn(8, 4), ember.randn(32)


def test_dim_specialised_by_the_program_is_reported_with_a_fix():
    w, x, y, z = _tutorial_inputs()
    shapes = {"w": (Dim.AUTO, Dim.DYNAMIC), "x": (Dim.AUTO,), "y": (Dim.AUTO, Dim.AUTO),
              "z": (Dim.AUTO,)}
    with pytest.raises(ember.export.UserError, match="Constraints violated") as e:
        export(_Tutorial(), (w, x, y, z), dynamic_shapes=shapes)
    msg = str(e.value)
    assert "args[0].shape[1]" in msg and "Suggested fix" in msg and "= 5" in msg
    # torch's chain: the violation is the context of the user error
    assert isinstance(e.value.__context__,
                      ember.fx.experimental.symbolic_shapes.ConstraintViolationError)


def test_equal_dims_declared_apart_suggest_equality():
    class Foo(ember.nn.Module):
        def forward(self, x, y):
            return x + y + ember.ones(4)
    dx, dy, d1 = ember.export.dims("dx", "dy", "d1")
    with pytest.raises(ember.export.UserError) as e:
        export(Foo(), (ember.randn(6, 4), ember.randn(6, 4)),
               dynamic_shapes={"x": (dx, d1), "y": (dy, d1)})
    msg = str(e.value)
    assert "dy = dx" in msg or "dx = dy" in msg
    assert "d1" in msg and "4" in msg   # d1 is specialised by ones(4)
    ep = export(Foo(), (ember.randn(6, 4), ember.randn(6, 4)),
                dynamic_shapes={"x": (dx, None), "y": (dx, None)})
    a, b = ember.randn(9, 4), ember.randn(9, 4)
    assert _allclose(ep.module()(a, b), a + b + 1)
    with pytest.raises(RuntimeError, match="same symbol"):
        ep.module()(ember.randn(9, 4), ember.randn(8, 4))


def test_branch_on_size_narrows_range_with_suggested_min():
    class Gate(ember.nn.Module):
        def forward(self, x):
            if x.shape[0] > 4:
                return x * 2
            return x

    with pytest.raises(ember.export.UserError, match=r"Dim\('n', min=5"):
        export(Gate(), (ember.randn(8),), dynamic_shapes=({0: Dim("n")},))
    ep = export(Gate(), (ember.randn(8),), dynamic_shapes=({0: Dim("n", min=5)},))
    assert _allclose(ep.module()(ember.ones(11)), 2 * ember.ones(11))
    # Dim.AUTO lets export narrow the range itself
    ep = export(Gate(), (ember.randn(8),), dynamic_shapes=({0: Dim.AUTO},))
    (r,) = ep.range_constraints.values()
    assert r.lower == 5
    with pytest.raises(RuntimeError, match=">= 5"):
        ep.module()(ember.ones(3))


def test_auto_dim_the_program_specialises_becomes_static():
    w, x, y, z = _tutorial_inputs()
    shapes = {"w": (Dim.AUTO, Dim.AUTO), "x": (Dim.AUTO,), "y": (Dim.AUTO, Dim.AUTO),
              "z": (Dim.AUTO,)}
    ep = export(_Tutorial(), (w, x, y, z), dynamic_shapes=shapes)
    w_meta = [n for n in ep.graph.nodes if n.name == "w"][0].meta["val"]
    assert type(w_meta.shape[1]) is int and w_meta.shape[1] == 5   # specialised by Linear
    assert type(w_meta.shape[0]) is not int                        # still dynamic
    m = ep.module()
    w2, x2, y2, z2 = ember.randn(3, 5), ember.randn(4), ember.randn(5, 4), ember.randn(20)
    got = m(w2, x2, y2, z2)
    assert _allclose(got[0], ember.nn.functional.linear(w2, m.l.weight, m.l.bias))
    assert _allclose(got[1], (x2 + y2).flatten() + z2)
    with pytest.raises(RuntimeError, match=r"args\[0\].shape\[1\] to be equal to 5"):
        m(ember.randn(3, 6), x2, y2, z2)


def test_derived_dims():
    class Cat(ember.nn.Module):
        def forward(self, x, y):
            return ember.cat([y, y]) + x

    dx = Dim("dx", max=100)
    ep = export(Cat(), (ember.randn(8), ember.randn(4)),
                dynamic_shapes={"x": (2 * dx,), "y": (dx,)})
    a, b = ember.randn(14), ember.randn(7)
    assert _allclose(ep.module()(a, b), ember.cat([b, b]) + a)
    with pytest.raises(RuntimeError, match="shape\\[0\\]"):
        ep.module()(ember.randn(14), ember.randn(6))
    # only the derived dim is given: its root is solved from it
    ep = export(lambda x: x * 2, (ember.randn(10),), dynamic_shapes=((2 * dx + 2,),))
    assert _allclose(ep.module()(ember.ones(8)), 2 * ember.ones(8))
    with pytest.raises(RuntimeError, match="form"):
        ep.module()(ember.ones(7))


def test_data_dependent_branch_names_the_line_and_suggests_cond():
    class Bad1(ember.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return ember.sin(x)
            return ember.cos(x)
    with pytest.raises(ember.export.UserError) as e:
        export(Bad1(), (ember.randn(3, 3),))
    assert "ember.cond" in str(e.value)
    assert f"{__file__}:" in str(e.value)

    class Fixed(ember.nn.Module):
        def forward(self, x):
            return ember.cond(x.sum() > 0, lambda x: x.sin(), lambda x: x.cos(), [x])
    ep = export(Fixed(), (ember.randn(3, 3),))
    ones = ember.ones(3, 3)
    assert _allclose(ep.module()(ones), ones.sin())
    assert _allclose(ep.module()(-ones), (-ones).cos())


def test_inputs_written_in_place_and_constants_and_structures():
    class M(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = ember.tensor([2.0, 3.0])   # a plain tensor attribute: a constant

        def forward(self, pair, opts):
            a, b = pair
            a.add_(1)
            return {"sum": a + b * self.scale, "k": opts["k"] * 2}

    m = M()
    a, b = ember.zeros(2), ember.ones(2)
    ep = export(m, ((a, b), {"k": ember.ones(2)}))
    kinds = [s.kind for s in ep.graph_signature.input_specs]
    assert kinds.count(InputKind.CONSTANT_TENSOR) == 1
    assert [s.kind for s in ep.graph_signature.output_specs][0] is OutputKind.USER_INPUT_MUTATION
    a2 = ember.zeros(2)
    out = ep.module()((a2, ember.ones(2)), {"k": ember.full((2,), 3.0)})
    assert set(out) == {"sum", "k"}
    assert _allclose(out["sum"], ember.tensor([3.0, 4.0]))
    assert _allclose(out["k"], ember.full((2,), 6.0))
    assert _allclose(a2, ember.ones(2))     # the write reached the caller's tensor
    assert _allclose(a, ember.zeros(2))     # export itself did not write the example
    with pytest.raises(TypeError, match="structure"):
        ep.module()(a2, ember.ones(2))


def test_functions_export_beyond_torch():
    ep = export(lambda x, y: (x @ y).relu(), (ember.randn(3, 4), ember.randn(4, 5)))
    x, y = ember.randn(3, 4), ember.randn(4, 5)
    assert _allclose(ep.module()(x, y), (x @ y).relu())


def test_run_decompositions_reaches_primitives():
    ember.manual_seed(0)
    mod = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.LayerNorm(8), ember.nn.GELU(),
                              ember.nn.Softmax(-1)).eval()
    ep = export(mod, (ember.randn(3, 4),), dynamic_shapes=({0: Dim("b")},))
    core = ep.run_decompositions(ember.export.primitive_decompositions())
    ops = {n.target.name for n in core.graph.nodes
           if n.op == "call_function" and isinstance(n.target, Op)}
    assert ops and ops <= set(PRIMITIVES), ops - set(PRIMITIVES)
    assert "layer_norm" in {n.target.name for n in ep.graph.nodes
                            if isinstance(n.target, Op)} | {"layer_norm"}
    for n in (3, 5):
        x = ember.randn(n, 4)
        assert _allclose(core.module()(x), mod(x), 1e-5)
    same = ep.run_decompositions({})
    assert [n.target for n in same.graph.nodes if n.op == "call_function"] == \
        [n.target for n in ep.graph.nodes if n.op == "call_function"]


def _targets(ep):
    return [str(n.target) if not isinstance(n.target, Op) else
            str(ember.ops.op_namespaces.overload_of(n.target) or n.target.name)
            for n in ep.graph.nodes if n.op == "call_function"]


def test_default_decompositions_reach_core_aten_as_torch():
    """``run_decompositions()`` keeps Core ATen ops (gelu, _softmax-level ops) and
    decomposes the rest (layer_norm): the set of aten operators torch's core graph has."""
    ember.manual_seed(0)
    mod = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.LayerNorm(8), ember.nn.GELU(),
                              ember.nn.ReLU()).eval()
    core = export(mod, (ember.randn(3, 4),)).run_decompositions()
    ours = set(_targets(core))
    assert {"aten.gelu.default", "aten.relu.default"} <= ours
    assert not any("layer_norm" in t for t in ours)
    tmod = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LayerNorm(8), torch.nn.GELU(),
                               torch.nn.ReLU()).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)   # torch's own pytree deprecation
        theirs = {str(n.target) for n in torch.export.export(tmod, (torch.randn(3, 4),))
                  .run_decompositions().graph.nodes if n.op == "call_function"}
    assert {"aten.gelu.default", "aten.relu.default", "aten.native_layer_norm.default"} <= theirs
    x = ember.randn(3, 4)
    assert _allclose(core.module()(x), mod(x), 1e-5)


def test_graph_targets_compare_equal_to_aten_overloads():
    ep = export(lambda x, y: (x + y) * 2, (ember.randn(3), ember.randn(3)))
    add, mul = [n.target for n in ep.graph.nodes if n.op == "call_function"]
    assert add == ember.ops.aten.add.Tensor and ember.ops.aten.add.Tensor == add
    assert mul == ember.ops.aten.mul.Tensor and add != ember.ops.aten.add.Scalar
    assert {ember.ops.aten.add.Tensor: 1}[add] == 1 and {add: 2}[ember.ops.aten.add.Tensor] == 2
    assert "target=ember.ops.aten.add.Tensor" in str(ep.graph)


def test_custom_decomposition_replaces_an_op():
    mod = ember.nn.Linear(3, 2)
    ep = export(mod, (ember.randn(2, 3),))
    linear = ember._core.op.REGISTRY["linear"]
    table = ember.export.default_decompositions()
    assert table[linear] is linear.decomp
    table[linear] = lambda x, w, b=None: 2 * (x @ w.t() + b)
    new = ep.run_decompositions(table)
    x = ember.randn(2, 3)
    assert _allclose(new.module()(x), 2 * mod(x), 1e-6)
    assert "mul" in {n.target.name for n in new.graph.nodes if isinstance(n.target, Op)}


def test_compile_of_exported_module():
    mod = ember.nn.Linear(3, 3)
    inp = ember.randn(2, 3)
    ep = export(mod, (inp,))
    res = ember.compile(ep.module(), backend="inductor")(inp)
    assert _allclose(res, mod(inp), 1e-6)


def test_bad_arguments():
    mod = ember.nn.Linear(3, 3)
    with pytest.raises(ValueError, match="tuple"):
        export(mod, ember.randn(2, 3))
    with pytest.raises(ValueError, match="not arguments"):
        export(mod, (ember.randn(2, 3),), dynamic_shapes={"x": {0: Dim("b")}})
    with pytest.raises(ember.export.UserError, match="size of at least 2"):
        export(mod, (ember.randn(1, 3),), dynamic_shapes={"input": {0: Dim("b")}})
    with pytest.raises(ValueError, match="out of range"):
        export(mod, (ember.randn(2, 3),), dynamic_shapes={"input": {2: Dim("b")}})
    with pytest.raises(ValueError, match="identifier"):
        Dim("not a name")


def test_auto_dims_tied_by_the_program_match_torch():
    class DynamicModel(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = ember.nn.Linear(5, 3)

        def forward(self, w, x, y, z):
            assert w.shape[0] <= 512
            ember._check(x.shape[0] >= 4)
            if w.shape[0] == x.shape[0] + 2:
                return self.l(w), (x + y).flatten() + z
            return w

    class T(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = torch.nn.Linear(5, 3)

        def forward(self, w, x, y, z):
            assert w.shape[0] <= 512
            torch._check(x.shape[0] >= 4)
            if w.shape[0] == x.shape[0] + 2:
                return self.l(w), (x + y).flatten() + z
            return w

    A = Dim.AUTO
    shapes = {"w": (A, A), "x": (A,), "y": (A, A), "z": (A,)}
    ep = export(DynamicModel(), (ember.randn(6, 5), ember.randn(4), ember.randn(8, 4),
                                 ember.randn(32)), dynamic_shapes=shapes)
    tshapes = {k: tuple(torch.export.Dim.AUTO for _ in v) for k, v in shapes.items()}
    tep = torch.export.export(T(), (torch.randn(6, 5), torch.randn(4), torch.randn(8, 4),
                                    torch.randn(32)), dynamic_shapes=tshapes)
    # torch's free symbols (the ranges of x's and y's first dims) are ember's two symbols
    tranges = sorted((int(r.lower), str(r.upper)) for k, r in tep.range_constraints.items()
                     if str(k).isidentifier())
    ranges = sorted((r.lower, "int_oo" if r.upper >= 2 ** 63 - 1 else str(r.upper))
                    for r in ep.range_constraints.values())
    assert ranges == tranges
    shapes_of = {n.name: [getattr(s, "expr", s) for s in n.meta["val"].shape]
                 for n in ep.graph.nodes if n.op == "placeholder"}
    s_x = shapes_of["x"][0]
    assert shapes_of["w"] == [f"({s_x} + 2)", 5] and shapes_of["y"][1] == s_x
    w, x, y, z = ember.randn(9, 5), ember.randn(7), ember.randn(3, 7), ember.randn(21)
    m = ep.module()
    got = m(w, x, y, z)
    assert _allclose(got[1], (x + y).flatten() + z)
    with pytest.raises(RuntimeError, match="shape\\[0\\]"):
        m(ember.randn(10, 5), x, y, z)     # w's first dim must be x's plus 2


def test_values_read_from_inputs_are_symbols_not_baked_in():
    class Foo(ember.nn.Module):
        def forward(self, x, y):
            return y.tolist() + [x.item()]
    ep = export(Foo(), (ember.tensor(1), ember.tensor([2, 3])))
    assert ep.module()(ember.tensor(7), ember.tensor([5, 6])) == [5, 6, 7]
    assert sorted(ep.range_constraints) == ["u0", "u1", "u2"]

    class Scale(ember.nn.Module):
        def forward(self, x, y):
            return y * x.item()
    ep = export(Scale(), (ember.tensor(3), ember.ones(2)))
    assert _allclose(ep.module()(ember.tensor(5), ember.ones(2)), ember.full((2,), 5.0))


def test_checked_values_narrow_ranges_and_are_asserted_at_run_time():
    class Foo(ember.nn.Module):
        def forward(self, x, y):
            a = x.item()
            ember._check(a >= 10)
            ember._check(a <= 60)
            if a // 2 >= 5:
                return y + 2
            return y * 5
    ep = export(Foo(), (ember.tensor(32), ember.randn(4)))
    assert str(ep.range_constraints["u0"]) == "VR[10, 60]"
    assert _allclose(ep.module()(ember.tensor(12), ember.zeros(4)), ember.full((4,), 2.0))
    with pytest.raises(RuntimeError, match="Runtime assertion failed for expression u0 >= 10"):
        ep.module()(ember.tensor(2), ember.zeros(4))


def test_value_used_as_index_and_size_is_computed_in_the_graph():
    class Pick(ember.nn.Module):
        def forward(self, x, y):
            return y[x.item()]
    ep = export(Pick(), (ember.tensor(32), ember.randn(60)))
    y = ember.randn(60)
    assert _allclose(ep.module()(ember.tensor(5), y), y[5])
    assert _allclose(ep.module()(ember.tensor(-3), y), y[-3])
    with pytest.raises(RuntimeError, match="u0 < 60"):
        ep.module()(ember.tensor(70), y)

    class Rep(ember.nn.Module):
        def forward(self, x, y):
            a = x.item()
            return y.unsqueeze(0).repeat(a, 1) + a
    ep = export(Rep(), (ember.tensor(32), ember.randn(60)), strict=False)
    out = ep.module()(ember.tensor(3), ember.zeros(60))
    assert out.shape == (3, 60) and _allclose(out, ember.full((3, 60), 3.0))


def test_float_value_reads_and_literals():
    class F(ember.nn.Module):
        def forward(self, x, y):
            return y * x.item()
    with pytest.raises(ember.export.UserError, match="values of an input"):
        export(F(), (ember.tensor(0.5), ember.ones(2)))
    ep = export(lambda x: x + ember.tensor([1.0, 2.0]), (ember.zeros(2),))
    assert _allclose(ep.module()(ember.ones(2)), ember.tensor([2.0, 3.0]))


@pytest.mark.parametrize("fn", [
    lambda x: x.view(x.shape[0], 2, 3),
    lambda x: x.reshape(x.shape[0] * 2, 3),
    lambda x: x[: x.shape[0] // 2],
    lambda x: x.reshape(-1)[: x.shape[0] + 1],
    lambda x: x[-1] * x[x.shape[0] - 2],
])
def test_sizes_computed_from_a_dynamic_dim_stay_symbolic(fn):
    ep = export(fn, (ember.randn(4, 6),), dynamic_shapes=({0: Dim("b")},))
    for n in (3, 7):
        x = ember.randn(n, 6)
        assert ember.equal(ep.module()(x), fn(x))
    metas = [n.meta["val"] for n in ep.graph.nodes
             if n.op == "call_function" and isinstance(n.target, Op)]
    # node metadata keeps the computed sizes symbolic (consumers read shapes from it)
    assert all(type(s) is not int or s in (1, 2, 3, 6) for m in metas for s in m.shape)


def test_a_python_loop_over_a_size_specialises_it():
    class M(ember.nn.Module):
        def forward(self, x):
            return ember.stack([x[:, t] * 2 for t in range(x.shape[1])], 1)
    ep = export(M(), (ember.randn(2, 6),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},))
    assert len(ep.range_constraints) == 1      # dim 1 became static, dim 0 stays dynamic
    assert _allclose(ep.module()(ember.ones(5, 6)), 2 * ember.ones(5, 6))
    with pytest.raises(RuntimeError, match=r"shape\[1\] to be equal to 6"):
        ep.module()(ember.ones(2, 4))
    with pytest.raises(ember.export.UserError, match=r"Dim\('t', min=6\)|t = 6"):
        export(M(), (ember.randn(2, 6),), dynamic_shapes=({1: Dim("t")},))


def test_transformer_with_padding_mask_exports_a_dynamic_batch():
    ember.manual_seed(0)
    layer = ember.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, dropout=0.0)
    enc = ember.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False).eval()
    x, mask = ember.randn(2, 5, 8), ember.zeros(2, 5, dtype=ember.bool)
    b = Dim("b")
    ep = export(enc, (x,), {"src_key_padding_mask": mask},
                dynamic_shapes={"src": {0: b}, "src_key_padding_mask": {0: b}})
    x2, m2 = ember.randn(3, 5, 8), ember.zeros(3, 5, dtype=ember.bool)
    m2[0, 4] = True
    assert _allclose(ep.module()(x2, src_key_padding_mask=m2),
                     enc(x2, src_key_padding_mask=m2), 1e-5)


def test_programs_reading_input_values_save_and_load(tmp_path):
    import ember_lite

    class Foo(ember.nn.Module):
        def forward(self, x, y):
            a = x.item()
            ember._check(a >= 0)
            ember._check(a < y.shape[0])
            return y[a] * 2, y.shape[0] + a
    ep = export(Foo(), (ember.tensor(3), ember.randn(10)), dynamic_shapes=(None, {0: Dim("n")}))
    path = tmp_path / "p.ember"
    ember.export.save(ep, path)
    m = ember.export.load(path).module()
    y = ember.randn(12)
    got, size = m(ember.tensor(5), y)
    assert _allclose(got, y[5] * 2) and size == 17
    with pytest.raises(RuntimeError, match="u0 < n|u0 < s0"):
        m(ember.tensor(15), y)
    lite = ember_lite.load(path)   # the lite runtime reads the value and checks it too
    for a in (0, 5, 11):
        got, size = lite(np.array(a), y.numpy())
        np.testing.assert_array_equal(got, y.numpy()[a] * 2)
        assert int(size) == 12 + a
    with pytest.raises(RuntimeError, match="Runtime assertion failed for expression u0 < n"):
        lite(np.array(15), y.numpy())
    with pytest.raises(RuntimeError, match="u0 >= 0"):
        lite(np.array(-1), y.numpy())


def test_validate_checks_signature_against_graph():
    ep = export(ember.nn.Linear(3, 2), (ember.randn(2, 3),))
    ep.validate()
    ep.graph_signature.input_specs[0].target = "no.such.weight"
    with pytest.raises(RuntimeError, match="no.such.weight"):
        ep.validate()
    with pytest.raises(TypeError, match="integer linear function"):
        Dim("d") * 1.5
