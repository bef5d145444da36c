"""ember.onnx.export on whole models: the ONNX model passes onnx.checker and ONNX Runtime's
outputs equal ember eager, at batch sizes other than the export's (dynamic batch)."""
import io

import numpy as np
import onnx
import pytest
from onnx_helpers import assert_close, run, session

import ember
import ember.nn as nn
import ember.onnx
from ember.export import Dim


def _check_dynamic_batch(model, example, batch_dim=0, sizes=(3, 7), rtol=1e-5, atol=1e-5):
    program = ember.onnx.export(model, (example,), input_names=["x"],
                                dynamic_axes={"x": {batch_dim: "batch"}})
    x_info = program.model_proto.graph.input[0]
    assert x_info.type.tensor_type.shape.dim[batch_dim].dim_param == "batch"
    sess = session(program)
    for b in sizes:
        shape = list(example.shape)
        shape[batch_dim] = b
        x = ember.randn(*shape)
        with ember.no_grad():
            expected = model(x)
        assert_close(run(sess, x), expected, rtol=rtol, atol=atol)
    return program


def test_mlp():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(),
                          nn.Linear(16, 3))
    program = _check_dynamic_batch(model, ember.randn(5, 4))
    ops = [n.op_type for n in program.model_proto.graph.node]
    assert ops.count("Gemm") == 3  # linear layers stay one node each
    out = program.model_proto.graph.output[0]
    assert out.type.tensor_type.shape.dim[0].dim_param == "batch"
    assert out.type.tensor_type.shape.dim[1].dim_value == 3


def test_cnn_with_batchnorm_eval():
    ember.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 4, 3, stride=2, padding=1, groups=2), nn.BatchNorm2d(4), nn.ReLU(),
        nn.AvgPool2d(2), nn.Flatten(), nn.Linear(4, 5)).eval()
    for m in model:  # non-trivial running statistics
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(ember.randn(m.num_features))
            m.running_var.copy_(ember.rand(m.num_features) + 0.5)
    program = _check_dynamic_batch(model, ember.randn(2, 3, 8, 8))
    ops = [n.op_type for n in program.model_proto.graph.node]
    # each convolution is one Conv node; BatchNorm folds to a multiply and an add
    assert ops.count("Conv") == 2 and ops.count("Mul") == 2 and "Sqrt" not in ops


@pytest.mark.parametrize("batch_first", [True, False])
def test_lstm(batch_first):
    ember.manual_seed(0)
    model = nn.LSTM(4, 6, num_layers=2, batch_first=batch_first)
    example = ember.randn(2, 5, 4) if batch_first else ember.randn(5, 2, 4)
    program = _check_dynamic_batch(model, example, batch_dim=0 if batch_first else 1)
    assert len(program.model_proto.graph.output) == 3  # output, h_n, c_n


def test_gru():
    ember.manual_seed(0)
    model = nn.GRU(3, 5, batch_first=True)
    _check_dynamic_batch(model, ember.randn(2, 4, 3))


@pytest.mark.parametrize("batch_first", [True, False])
def test_transformer_encoder_layer(batch_first):
    ember.manual_seed(0)
    model = nn.TransformerEncoderLayer(16, 4, 32, batch_first=batch_first).eval()
    example = ember.randn(2, 6, 16) if batch_first else ember.randn(6, 2, 16)
    _check_dynamic_batch(model, example, batch_dim=0 if batch_first else 1, atol=2e-5)


def test_transformer_encoder_layer_gelu_norm_first():
    ember.manual_seed(0)
    model = nn.TransformerEncoderLayer(8, 2, 16, activation="gelu", norm_first=True,
                                       batch_first=True).eval()
    _check_dynamic_batch(model, ember.randn(2, 5, 8), atol=2e-5)


def test_exported_program_with_its_dims():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU()).eval()
    x = ember.randn(4, 4)
    ep = ember.export.export(model, (x,), dynamic_shapes=({0: Dim("n")},))
    program = ember.onnx.export(ep, output_names=["y"])
    assert program.exported_program is ep
    g = program.model_proto.graph
    assert [o.name for o in g.output] == ["y"]
    # parameters are initializers named by their state_dict keys; BatchNorm's statistics
    # are folded into one scale and one shift
    names = {t.name for t in g.initializer}
    assert {"0.weight", "0.bias"} <= names and "1.running_var" not in names
    unfolded = ember.onnx.export(ep, do_constant_folding=False)
    assert {"1.running_mean", "1.running_var"} <= \
        {t.name for t in unfolded.model_proto.graph.initializer}
    assert len(unfolded.model_proto.graph.node) > len(g.node)
    for p in (program, unfolded):
        sess = session(p)
        for n in (2, 9):
            x = ember.randn(n, 4)
            with ember.no_grad():
                assert_close(run(sess, x), model(x))


def test_dynamic_shapes_argument_names_the_dim():
    model = nn.Linear(3, 2)
    program = ember.onnx.export(model, (ember.randn(4, 3),), dynamic_shapes=({0: Dim("rows")},))
    dims = program.model_proto.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "rows" and dims[1].dim_value == 3
    assert program.model_proto.graph.input[0].name == "input"  # forward's argument name


def test_static_export_has_fixed_shapes():
    model = nn.Linear(3, 2)
    program = ember.onnx.export(model, (ember.randn(4, 3),))
    dims = program.model_proto.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_value for d in dims] == [4, 3]


def test_save_to_path_and_file_object(tmp_path):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Sigmoid())
    x = ember.randn(2, 3)
    path = tmp_path / "model.onnx"
    ember.onnx.export(model, (x,), str(path), external_data=False)
    buf = io.BytesIO()
    ember.onnx.export(model, (x,), buf)
    for proto in (onnx.load(str(path)), onnx.load_from_string(buf.getvalue())):
        onnx.checker.check_model(proto)
        import onnxruntime as ort
        sess = ort.InferenceSession(proto.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        assert_close(run(sess, x), model(x))


def test_legacy_call_returns_none_and_saves(tmp_path):
    model = nn.Linear(3, 2)
    x = ember.randn(2, 3)
    path = tmp_path / "legacy.onnx"
    assert ember.onnx.export(model, x, str(path), dynamo=False, input_names=["x"],
                             output_names=["y"], dynamic_axes={"x": {0: "n"}, "y": {0: "n"}},
                             external_data=False) is None
    proto = onnx.load(str(path))
    assert [i.name for i in proto.graph.input] == ["x"]
    import onnxruntime as ort
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    x5 = ember.randn(5, 3)
    assert_close(run(sess, x5), model(x5))


def test_external_data_and_export_params(tmp_path):
    model = nn.Linear(64, 64)  # 16 KB of weights: stored outside the model file
    x = ember.randn(2, 64)
    path = tmp_path / "big.onnx"
    ember.onnx.export(model, (x,), str(path))
    assert (tmp_path / "big.onnx.data").exists()
    proto = onnx.load(str(path))
    w = next(t for t in proto.graph.initializer if t.name == "weight")
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(w), model.weight.detach().numpy())
    lean = tmp_path / "lean.onnx"
    ember.onnx.export(model, (x,), str(lean), export_params=False, external_data=False)
    proto = onnx.load(str(lean))
    assert len(proto.graph.initializer) == 0
    assert {"weight", "bias"} <= {i.name for i in proto.graph.input}


def test_onnx_program_call_and_verify():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Softmax(dim=-1))
    x = ember.randn(5, 3)
    program = ember.onnx.export(model, (x,), verify=True)
    (out,) = program(x)
    np.testing.assert_allclose(out.numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert "ONNXProgram(inputs=['input']" in repr(program)


def test_is_in_onnx_export():
    seen = []

    class M(nn.Module):
        def forward(self, x):
            seen.append(ember.onnx.is_in_onnx_export())
            return x * 2

    ember.onnx.export(M(), (ember.randn(2),))
    assert seen and all(seen)
    assert not ember.onnx.is_in_onnx_export()


class _Exportable(ember.onnx.ExportableModule):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x):
        return self.lin(x).relu()

    def example_arguments(self):
        return (ember.randn(4, 3),), None

    def input_names(self):
        return ("features",)

    def output_names(self):
        return ("scores",)

    def dynamic_shapes(self):
        return ({0: "batch_size"},)  # a dim named by a string, as torch.onnx accepts


def test_exportable_module():
    m = _Exportable()
    for program in (m.to_onnx(), ember.onnx.export(m)):
        g = program.model_proto.graph
        assert [i.name for i in g.input] == ["features"]
        assert [o.name for o in g.output] == ["scores"]
        assert g.input[0].type.tensor_type.shape.dim[0].dim_param == "batch_size"
        x = ember.randn(6, 3)
        assert_close(run(session(program), x), m(x))
    with pytest.raises(TypeError):
        ember.onnx.ExportableModule()  # abstract: example_arguments is required


@pytest.mark.parametrize("fn", [
    lambda x, y: x.reshape(-1)[: x.shape[0] + 1],            # a slice bound computed from b
    lambda x, y: x.sum(1) + ember.arange(x.shape[0]),         # a Range of symbolic length
    lambda x, y: ember.cat([x, y], 0).sort(0).values,         # b + c rows, sorted whole
    lambda x, y: ember.cat([x, y], 0).cumsum(0)[-1] + y.var(0),
], ids=["slice_bound", "arange", "cat_sort", "cat_scan"])
def test_sizes_computed_in_the_graph(fn):
    """Sizes the program computes from dynamic dims are computed by the ONNX graph: at other
    sizes the outputs (and the declared output shapes) follow."""
    program = ember.onnx.export(fn, (ember.randn(4, 6), ember.randn(3, 6)),
                                dynamic_shapes=({0: Dim("b")}, {0: Dim("c")}))
    out_dims = program.model_proto.graph.output[0].type.tensor_type.shape.dim
    sess = session(program)
    for b, c in ((6, 2), (10, 7)):
        x, y = ember.randn(b, 6), ember.randn(c, 6)
        expected = fn(x, y)
        assert_close(run(sess, x, y), expected)
        declared = [d.dim_value if d.HasField("dim_value") else None for d in out_dims]
        assert all(d is None or d == e for d, e in zip(declared, expected.shape))


def test_sym_max_and_min_sizes_become_onnx_max_and_min():
    """Sizes over ``sym_max``/``sym_min`` of two dynamic dims are computed in the ONNX graph
    with Max/Min on the int64 sizes: right for either ordering of the two dims (torch eager,
    whose ``sym_max`` of ints is ``max``, is the oracle)."""
    import torch

    def program(lib):
        class M(lib.nn.Module):
            def forward(self, x, y):
                n = lib.sym_max(x.shape[0], y.shape[0])
                m = lib.sym_min(x.shape[0], y.shape[0])
                return lib.arange(2 * n + m) + x.sum(), lib.ones(m, 2) * y.sum()
        return M()
    onnx_program = ember.onnx.export(program(ember), (ember.randn(3), ember.randn(5)),
                                     dynamic_shapes=({0: Dim("a")}, {0: Dim("b")}))
    kinds = [n.op_type for n in onnx_program.model_proto.graph.node]
    assert "Max" in kinds and "Min" in kinds
    sess = session(onnx_program)
    rng = np.random.default_rng(0)
    for a, b in ((3, 5), (7, 2), (4, 4)):
        x = rng.standard_normal(a).astype(np.float32)
        y = rng.standard_normal(b).astype(np.float32)
        got = run(sess, x, y)
        want = program(torch)(torch.from_numpy(x), torch.from_numpy(y))
        assert got[0].shape == (2 * max(a, b) + min(a, b),)
        assert got[1].shape == (min(a, b), 2)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opset", [18, 20, 23])
def test_opsets(opset):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.GELU(), nn.Flatten(),
                          nn.LayerNorm(12), nn.Linear(12, 2)).eval()
    x = ember.randn(2, 2, 4, 4)
    program = ember.onnx.export(model, (x,), opset_version=opset)
    assert program.model_proto.opset_import[0].version == opset
    with ember.no_grad():
        assert_close(run(session(program), x), model(x))


class _LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.rnn = nn.LSTM(8, 16, batch_first=True, num_layers=2)
        self.out = nn.Linear(16, 20)

    def forward(self, idx):
        h, _ = self.rnn(self.emb(idx))
        return self.out(h).log_softmax(-1)


class _SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x)  # the output and the averaged attention weights


class _BiGRU(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 5, bidirectional=True)

    def forward(self, x):
        return self.gru(x)[0]


@pytest.mark.parametrize("make, example, batch_dim", [
    (_LanguageModel, lambda: ember.randint(0, 20, (2, 7)), 0),
    (_SelfAttention, lambda: ember.randn(2, 5, 8), 0),
    (_BiGRU, lambda: ember.randn(5, 2, 4), 1),
], ids=["embedding_lstm_lm", "multihead_attention_weights", "bidirectional_gru"])
def test_more_models_with_dynamic_batch(make, example, batch_dim):
    ember.manual_seed(0)
    model = make().eval()
    x = example()
    program = ember.onnx.export(model, (x,), dynamic_shapes=({batch_dim: Dim("b")},))
    sess = session(program)
    for b in (3, 6):
        shape = list(x.shape)
        shape[batch_dim] = b
        xi = ember.randint(0, 20, tuple(shape)) if x.dtype == ember.int64 else ember.randn(*shape)
        with ember.no_grad():
            assert_close(run(sess, xi), model(xi))


def test_transformer_encoder_with_padding_mask():
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    x = ember.randn(2, 5, 8)
    mask = ember.tensor(np.array([[False] * 5, [False] * 3 + [True] * 2]))
    program = ember.onnx.export(lambda x, m: model(x, src_key_padding_mask=m), (x, mask))
    with ember.no_grad():
        assert_close(run(session(program), x, mask), model(x, src_key_padding_mask=mask))


def test_onnx_program_methods():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    x = ember.randn(5, 3)
    program = ember.onnx.export(model, (x,), dynamic_shapes=({0: Dim("batch")},))
    expected = model(x)
    # the reference evaluator agrees with ONNX Runtime
    assert_close([t.numpy() for t in program.call_reference(x)], expected)
    # any intermediate value by name: the first Gemm is the first layer's output
    first = next(n.output[0] for n in program.model_proto.graph.node if n.op_type == "Gemm")
    (h,) = program.compute_values([first], (x,))
    np.testing.assert_allclose(h.numpy(), model[0](x).detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="no value named 'nope'"):
        program.compute_values(["nope"], (x,))
    # new weights, then a new session
    program(x)
    new = {k: v * 2 for k, v in model.state_dict().items()}
    program.apply_weights(new)
    model.load_state_dict(new)
    assert_close([t.numpy() for t in program(x)], model(x))
    with pytest.raises(ValueError, match="is float32 \\[2, 4\\] in the model"):
        program.apply_weights({"2.weight": ember.zeros(3, 3)})
    program.rename_axes({"batch": "N"})
    dims = program.model_proto.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "N"
    program.optimize()
    program.release()
    assert_close([t.numpy() for t in program(x)], model(x))


class _WithKeywords(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x, k, mask=None, scale=1.0):
        y = self.lin(x) * scale
        if mask is not None:
            y = y.masked_fill(mask, 0.0)
        return {"y": y, "pair": (y.sum(-1), x[:, :k])}


def test_keyword_and_python_arguments_nested_outputs():
    """Tensor kwargs become inputs, Python values are baked in, nested outputs flatten in
    order."""
    ember.manual_seed(0)
    model = _WithKeywords()
    x = ember.randn(4, 3)
    mask = x > 0
    program = ember.onnx.export(model, (x, 2), kwargs={"mask": mask, "scale": 2.0})
    g = program.model_proto.graph
    assert [i.name for i in g.input] == ["x", "mask"]
    assert [o.name for o in g.output] == ["output_0", "output_1", "output_2"]
    x2 = ember.randn(4, 3)
    out = model(x2, 2, mask=x2 > 0, scale=2.0)
    assert_close(run(session(program), x2, x2 > 0), [out["y"], out["pair"][0], out["pair"][1]])


def test_verbose_report_dump_profile(tmp_path, capsys):
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    x = ember.randn(2, 3)
    ember.onnx.export(model, (x,), verbose=True, profile=True, report=True,
                      dump_exported_program=True, artifacts_dir=str(tmp_path / "art"))
    printed = capsys.readouterr().out
    assert "Gemm" in printed and "Relu" in printed          # the graph
    assert "capture" in printed and "lowering" in printed   # the phase times
    files = sorted(p.name for p in (tmp_path / "art").iterdir())
    report = next(f for f in files if f.endswith("_success.md"))
    text = (tmp_path / "art" / report).read_text()
    assert "- linear: 1" in text and "- Gemm: 1" in text
    dump = next(f for f in files if f.endswith(".pt2.txt"))
    assert "linear" in (tmp_path / "art" / dump).read_text()


def test_input_observer():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh())
    observer = ember.onnx.InputObserver()
    calls = [ember.randn(2, 3), ember.randn(5, 3), ember.randn(4, 3), ember.randn(7, 3)]
    with observer(model, store_n_calls=3):
        for x in calls:
            model(x)
    assert "forward" not in vars(model)  # the method is restored
    assert observer.num_obs() == 3
    args = observer.infer_arguments()
    assert isinstance(args, tuple) and args[0].shape == (2, 3)
    shapes = observer.infer_dynamic_shapes()
    assert list(shapes[0]) == [0]                   # dim 0 varied, dim 1 did not
    program = ember.onnx.export(model, args, dynamic_shapes=shapes)
    rows = observer.check_discrepancies(program)
    assert [r["SUCCESS"] for r in rows] == [True] * 3 and max(r["abs"] for r in rows) < 1e-5
    assert observer.infer_arguments(1, flat=True)[0].shape == (5, 3)
    a, kw = observer.infer_arguments(as_args_kwargs=True)
    assert kw == {} and len(a) == 1
    with pytest.raises(RuntimeError, match="no call was observed"):
        ember.onnx.InputObserver().infer_arguments()


class _Gate(nn.Module):
    """Data-dependent branching with ember.cond: both branches survive the export (an ONNX
    If), the weights they read included."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return ember.cond(x.sum() > 0, lambda x: (self.lin(x).relu(), x[:2]),
                          lambda x: (x.cos() * 2, x[1:3]), (x,))


def test_cond_becomes_if():
    ember.manual_seed(0)
    model = _Gate()
    program = ember.onnx.export(model, (ember.randn(4, 3),))
    assert "If" in [n.op_type for n in program.model_proto.graph.node]
    sess = session(program)
    for sign in (1.0, -1.0):  # each branch taken at run time
        x = ember.randn(4, 3).abs() * sign
        assert_close(run(sess, x), model(x))


def test_while_loop_becomes_loop():
    def fn(x, n):
        return ember.while_loop(lambda i, y: i < n.sum(), lambda i, y: (i + 1, y * 2 + 1),
                                (ember.tensor(0), x))

    program = ember.onnx.export(fn, (ember.randn(3), ember.tensor(4)))
    assert "Loop" in [n.op_type for n in program.model_proto.graph.node]
    sess = session(program)
    for k in (0, 3, 7):  # the trip count is decided at run time
        x, n = ember.randn(3), ember.tensor(k)
        assert_close(run(sess, x, n), fn(x, n))


def test_map_becomes_loop_over_a_dynamic_dim():
    def fn(xs, b):
        return ember.map(lambda x, b: (x.sum() * 2 + b, x * b), xs, b)

    program = ember.onnx.export(fn, (ember.randn(4, 3), ember.randn(3)),
                                dynamic_shapes=({0: Dim("n")}, None))
    sess = session(program)
    for n in (2, 6):
        xs, b = ember.randn(n, 3), ember.randn(3)
        assert_close(run(sess, xs, b), fn(xs, b))


def test_script_and_traced_modules_export():
    """torch.onnx.export takes ScriptModules too."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    x = ember.randn(2, 3)
    for scripted in (ember.jit.trace(model, x), ember.jit.script(model)):
        program = ember.onnx.export(scripted, (x,))
        assert [n.op_type for n in program.model_proto.graph.node][:2] == ["Gemm", "Relu"]
        assert_close(run(session(program), x), model(x))


def test_dim_hints():
    model = nn.Linear(3, 2)
    x = ember.randn(4, 3)
    for spec, want in (({0: Dim.DYNAMIC, 1: Dim.STATIC}, ["input_dim_0", 3]),
                       ({0: Dim.AUTO}, ["s0", 3])):
        program = ember.onnx.export(model, (x,), dynamic_shapes=(spec,))
        dims = program.model_proto.graph.input[0].type.tensor_type.shape.dim
        assert [d.dim_param or d.dim_value for d in dims] == want
        x7 = ember.randn(7, 3)
        assert_close(run(session(program), x7), model(x7))


def test_dynamic_axes_with_python_arguments_and_free_axis_names():
    model = _WithKeywords()
    x = ember.randn(4, 3)
    program = ember.onnx.export(model, (x, 2), input_names=["x"],
                                dynamic_axes={"x": {0: "batch-size"}})
    dims = program.model_proto.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch-size"   # the name as given (a Dim needs an identifier)
    x6 = ember.randn(6, 3)
    out = model(x6, 2)
    assert_close(run(session(program), x6), [out["y"], out["pair"][0], out["pair"][1]])


def test_output_dims_are_written_with_the_input_dim_names():
    program = ember.onnx.export(lambda x, y: ember.cat([x, y]).reshape(-1),
                                (ember.randn(4, 3), ember.randn(2, 3)),
                                dynamic_shapes=({0: Dim("rows")}, {0: Dim("extra")}))
    (dim,) = program.model_proto.graph.output[0].type.tensor_type.shape.dim
    assert dim.dim_param.replace(" ", "") == "((rows+extra)*3)"


def test_decomposed_exported_program():
    """A program already run through run_decompositions (primitives) exports too."""
    ember.manual_seed(0)
    model = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).eval()
    ep = ember.export.export(model, (ember.randn(2, 5, 8),),
                             dynamic_shapes=({0: Dim("b")},)).run_decompositions()
    sess = session(ember.onnx.export(ep))
    x = ember.randn(3, 5, 8)
    with ember.no_grad():
        assert_close(run(sess, x), model(x))
