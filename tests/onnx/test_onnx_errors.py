"""ember.onnx.export's errors name what fails; the onnx package stays optional."""
import subprocess
import sys

import numpy as np
import pytest
from onnx_helpers import assert_close, run, session

import ember
import ember.nn as nn
import ember.onnx
from ember.onnx.errors import OnnxExporterError, UnsupportedOperatorError


def test_unsupported_primitive_is_named():
    with pytest.raises(UnsupportedOperatorError, match=r"'special_bessel_j0' \(graph node "
                                                        r"'special_bessel_j0'\) to ONNX opset "
                                                        r"version 18 is not supported"):
        ember.onnx.export(lambda x: ember.special.bessel_j0(x) + 1, (ember.randn(3),))


def test_unsupported_primitive_inside_a_decomposition_is_named():
    # logdet decomposes into linalg_slogdet, a LAPACK primitive ONNX has no operator for
    with pytest.raises(UnsupportedOperatorError, match="'linalg_slogdet'.*LAPACK"):
        ember.onnx.export(lambda x: ember.logdet(x @ x.T + ember.eye(3)), (ember.randn(3, 3),))


def test_every_primitive_is_lowered_or_says_why_not():
    from ember.ops.primitives import PRIMITIVES
    from ember.onnx._convert import LOWERINGS
    from ember.onnx._unsupported import UNSUPPORTED
    assert not sorted(p for p in PRIMITIVES if p not in LOWERINGS and p not in UNSUPPORTED)
    assert not sorted(p for p in PRIMITIVES if p in LOWERINGS and p in UNSUPPORTED)
    assert all(isinstance(r, str) and len(r) > 20 for r in UNSUPPORTED.values())


def test_errors_are_runtime_errors_like_torch():
    assert issubclass(UnsupportedOperatorError, OnnxExporterError)
    assert issubclass(OnnxExporterError, RuntimeError)
    assert ember.onnx.OnnxExporterError is OnnxExporterError


def test_complex_tensors_are_reported():
    with pytest.raises(UnsupportedOperatorError, match="opset version 18 .*complex"):
        ember.onnx.export(lambda x: ember.view_as_complex(x).abs(), (ember.randn(3, 2),))


def test_custom_translation_table_lowers_an_op():
    def bessel_j0(b, ctx, x):  # a stand-in lowering: cos(x), enough to see it is used
        return b.op("Cos", [x])

    x = ember.randn(5)
    program = ember.onnx.export(lambda t: ember.special.bessel_j0(t),
                                (x,), custom_translation_table={"special_bessel_j0": bessel_j0})
    assert_close(run(session(program), x), ember.cos(x))
    # the table applies to that call only
    with pytest.raises(UnsupportedOperatorError):
        ember.onnx.export(lambda t: ember.special.bessel_j0(t), (x,))


def test_bad_arguments():
    m = nn.Linear(2, 2)
    x = ember.randn(3, 2)
    with pytest.raises(ValueError, match="opset_version=5 is not supported; use 18 to"):
        ember.onnx.export(m, (x,), opset_version=5)
    with pytest.raises(ValueError, match="opset_version=99 is not supported"):
        ember.onnx.export(m, (x,), opset_version=99)
    with pytest.raises(ValueError, match="dynamic_axes names 'y'"):
        ember.onnx.export(m, (x,), input_names=["x"], dynamic_axes={"y": [0]})
    with pytest.raises(ValueError, match="3 input_names for 1 tensor inputs"):
        ember.onnx.export(m, (x,), input_names=["a", "b", "c"])
    with pytest.raises(ValueError, match="only OperatorExportTypes.ONNX"):
        ember.onnx.export(m, (x,), operator_export_type=ember.onnx.OperatorExportTypes.ONNX_ATEN)
    with pytest.raises(ValueError, match="dynamic_shapes or dynamic_axes, not both"):
        ember.onnx.export(m, (x,), input_names=["x"], dynamic_axes={"x": [0]},
                          dynamic_shapes=({0: ember.export.Dim("b")},))


def test_dynamic_axes_list_form_gets_torch_names():
    m = nn.Linear(2, 2)
    p = ember.onnx.export(m, (ember.randn(3, 2),), input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": [0], "y": [0]})
    g = p.model_proto.graph
    assert g.input[0].type.tensor_type.shape.dim[0].dim_param == "x_dynamic_axes_1"
    assert g.output[0].type.tensor_type.shape.dim[0].dim_param == "y_dynamic_axes_1"
    out = run(session(p), np.ones((6, 2), np.float32))
    assert out[0].shape == (6, 2)


def test_missing_onnx_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"pip install ember\[onnx\]"):
        ember.onnx.export(nn.Linear(2, 2), (ember.randn(1, 2),))


def test_import_ember_onnx_does_not_import_onnx():
    code = ("import sys, ember; assert callable(ember.onnx.export); "  # as torch.onnx
            "assert 'onnx' not in sys.modules, 'onnx imported'; "
            "assert 'onnxruntime' not in sys.modules; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "ok", r.stderr


def test_opsets_below_18_convert_down_or_stay_at_18():
    from ember.onnx.errors import OnnxExporterWarning
    mlp = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    x = ember.randn(2, 3)
    with pytest.warns(OnnxExporterWarning, match="below 18"):
        p = ember.onnx.export(mlp, (x,), opset_version=17)
    assert p.model_proto.opset_import[0].version == 17
    assert_close(run(session(p), x), mlp(x))
    # onnx's converter has no adapters below opset 18 for Gemm: kept at 18, and said so
    with pytest.warns(OnnxExporterWarning) as record:
        p = ember.onnx.export(mlp, (x,), opset_version=11)
    assert "kept at opset 18" in str(record[-1].message)
    assert p.model_proto.opset_import[0].version == 18
    assert_close(run(session(p), x), mlp(x))


def test_dropout_in_training_mode_says_to_use_eval():
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
    with pytest.raises(UnsupportedOperatorError, match=r"'native_dropout'.*random numbers.*"
                                                       r"model\.eval\(\)"):
        ember.onnx.export(model, (ember.randn(2, 3),))
    model.eval()
    x = ember.randn(2, 3)
    assert_close(run(session(ember.onnx.export(model, (x,))), x), model(x))


def test_python_value_output_is_reported():
    with pytest.raises(OnnxExporterError, match="output 0 of the program is the Python value"):
        ember.onnx.export(lambda a, b: ember.equal(a, b), (ember.randn(3), ember.randn(3)))
