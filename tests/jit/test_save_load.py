"""jit.save / jit.load, freeze and the lite interpreter: round trips in fresh processes that
never define (or import) the model's class, compared with the eager module."""
import io
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import ember
from ember import jit
from ember.jit.mobile import (_export_operator_list, _get_model_bytecode_version,
                              _load_for_lite_interpreter)

from . import models as M


def _np(t):
    return t.detach().numpy()


def _run_fresh(tmp_path, body, inputs):
    """Run ``body`` in a fresh interpreter (ember imported as ``ember``, ``jit`` its jit,
    ``inputs`` the list of arrays saved here); it sets ``outs``, a list of tensors."""
    for i, a in enumerate(inputs):
        np.save(tmp_path / f"in{i}.npy", a)
    script = textwrap.dedent("""
        import sys, numpy as np
        import ember
        from ember import jit
        inputs = [ember.tensor(np.load(f"in{i}.npy")) for i in range(%d)]
    """ % len(inputs)) + textwrap.dedent(body) + textwrap.dedent("""
        assert not any(m.startswith("tests") for m in sys.modules), "the model code was imported"
        for i, o in enumerate(outs):
            np.save(f"out{i}.npy", o.detach().numpy())
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    n = len(list(tmp_path.glob("out*.npy")))
    return [np.load(tmp_path / f"out{i}.npy") for i in range(n)]


def test_traced_module_round_trip_in_a_fresh_process(tmp_path):
    m = M.Plain().eval()
    x = ember.randn(5, 4)
    t = jit.trace(m, (x,))
    jit.save(t, tmp_path / "plain.pt", _extra_files={"meta.txt": "hello"})
    outs = _run_fresh(tmp_path, """
        extra = {"meta.txt": ""}
        m = jit.load("plain.pt", _extra_files=extra)
        assert extra["meta.txt"] == "hello", extra
        assert isinstance(m, jit.ScriptModule) and m.original_name == "Plain"
        names = [n for n, _ in m.named_parameters()]
        assert names == ["l1.weight", "l1.bias", "bn.weight", "bn.bias", "l2.weight", "l2.bias"], names
        assert "bn.running_mean" in m.state_dict()
        outs = [m(inputs[0])]
    """, [_np(x)])
    np.testing.assert_allclose(outs[0], _np(m(x)), rtol=1e-6)


def test_scripted_module_round_trip_with_dynamic_batch(tmp_path):
    m = M.Plain().eval()
    s = jit.script(m)
    s(ember.randn(3, 4))
    s.save(str(tmp_path / "plain_script.pt"))
    x = ember.randn(9, 4)  # another batch size than the example's
    outs = _run_fresh(tmp_path, """
        m = jit.load("plain_script.pt")
        assert "x: Float32(s0, 4)" in m.code, m.code
        outs = [m(inputs[0])]
    """, [_np(x)])
    np.testing.assert_allclose(outs[0], _np(m(x)), rtol=1e-5, atol=1e-6)


def test_scripted_branch_survives_saving(tmp_path):
    """Both branches of a data-dependent if (and a while loop) are in the saved program:
    the loaded module, which never saw the class, follows each branch (positive and negative
    inputs, in one fresh process: each interpreter start costs ~2 s of imports)."""
    m = M.Net().eval()
    s = jit.script(m)
    s(ember.randn(3, 4))  # one call: the program is captured from it
    s.encode(ember.randn(3, 4))
    s.save(tmp_path / "net.pt")
    pos = ember.randn(6, 4).abs()  # another batch size: sizes are dynamic
    neg = -ember.randn(6, 4).abs()
    outs = _run_fresh(tmp_path, """
        m = jit.load("net.pt")
        outs = [f(x) for x in inputs for f in (m, lambda x: m(x, 1), m.encode)]
        assert "ember::cond" in str(m.graph) and "ember::while_loop" in str(m.graph)
        try:  # the int argument was captured with the first call's value
            m(inputs[0], 4)
            raise AssertionError("another shift was accepted")
        except RuntimeError as e:
            assert "made for inputs (Tensor, 1), but was called with (Tensor, 4)" in str(e), e
    """, [_np(pos), _np(neg)])
    assert len(outs) == 6
    for k, x in enumerate((pos, neg)):
        np.testing.assert_allclose(outs[3 * k], _np(m(x)), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(outs[3 * k + 1], _np(m(x, 1)), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(outs[3 * k + 2], _np(m.encode(x)), rtol=1e-5, atol=1e-6)


def test_scripted_function_round_trip(tmp_path):
    s = jit.script(M.double_until)
    x = ember.tensor([0.1, -0.2, 0.3])
    s(x, 20.0)
    buf = io.BytesIO()
    jit.save(s, buf)
    (tmp_path / "f.pt").write_bytes(buf.getvalue())
    small = ember.tensor([0.01, 0.02])
    outs = _run_fresh(tmp_path, """
        f = jit.load("f.pt")
        outs = [f(inputs[0], 20.0)]
    """, [_np(small)])
    np.testing.assert_allclose(outs[0], _np(M.double_until(small, 20.0)), rtol=1e-6)


def test_load_errors():
    with pytest.raises(ValueError, match="does not exist"):
        jit.load("/nonexistent/model.pt")
    with pytest.raises(RuntimeError, match="not an ember program file"):
        jit.load(io.BytesIO(b"not a zip at all"))
    with pytest.raises(TypeError, match="expected a ScriptModule or ScriptFunction"):
        jit.save(M.Plain(), io.BytesIO())
    with pytest.raises(ValueError, match="reserved by ember.jit"):
        jit.save(jit.trace(M.Plain().eval(), ember.randn(2, 4)), io.BytesIO(),
                 _extra_files={"ember_jit.json": "x"})


def test_saved_file_is_an_ember_program_file():
    t = jit.trace(M.Plain().eval(), ember.randn(2, 4))
    buf = io.BytesIO()
    t.save(buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        names = set(z.namelist())
    assert {"version", "program.json", "lite/program.json", "extra/ember_jit.json"} <= names
    ep = ember.export.load(io.BytesIO(buf.getvalue()))  # export reads it too
    x = ember.randn(2, 4)
    np.testing.assert_allclose(_np(ep.module()(x)), _np(t(x)), rtol=1e-6)


def test_freeze():
    m = M.Net().eval()
    s = jit.script(m)
    x = ember.randn(3, 4)
    s(x)
    with pytest.raises(RuntimeError, match="only implemented for modules in eval mode"):
        jit.freeze(jit.script(M.Net()))
    with pytest.raises(RuntimeError, match="Freezing expects a ScriptModule"):
        jit.freeze(M.Net().eval())
    f = jit.freeze(s)
    assert list(f.named_parameters()) == [] and list(f.buffers()) == []
    for v in (x, -x, ember.randn(7, 4)):
        np.testing.assert_allclose(_np(f(v)), _np(m(v)), rtol=1e-6, atol=1e-6)
    # BatchNorm's scale and shift were computed once (folded into constants)
    assert "ember.ops.rsqrt" not in f.code and "_folded_" in f.code
    with pytest.raises(AttributeError):
        f.encode  # not preserved
    with pytest.raises(RuntimeError, match="call it once"):
        jit.freeze(s, preserved_attrs=["encode"])  # encode was never called: no program
    s.encode(x)
    g = jit.freeze(s, preserved_attrs=["encode"])
    np.testing.assert_allclose(_np(g.encode(x)), _np(m.encode(x)), rtol=1e-6)


def test_optimize_for_inference_of_a_trace():
    m = M.Plain()
    x = ember.randn(4, 4)
    t = jit.trace(m.eval(), (x,))
    o = jit.optimize_for_inference(t)
    assert not o.training and list(o.parameters()) == []
    np.testing.assert_allclose(_np(o(x)), _np(m(x)), rtol=1e-6)
    with pytest.raises(RuntimeError, match="expects a ScriptModule"):
        jit.optimize_for_inference(m)


def test_lite_interpreter_round_trip(tmp_path):
    m = M.Plain().eval()
    x = ember.randn(5, 4)
    t = jit.trace(m, (x,))
    path = tmp_path / "plain.ptl"
    t._save_for_lite_interpreter(str(path))
    lite = _load_for_lite_interpreter(str(path))
    np.testing.assert_allclose(_np(lite(x)), _np(m(x)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(lite.run_method("forward", x)), _np(m(x)), rtol=1e-5,
                               atol=1e-6)
    assert lite.find_method("forward") and not lite.find_method("backward")
    from ember.export.serde import FORMAT_VERSION
    assert _get_model_bytecode_version(str(path)) == FORMAT_VERSION == 2
    ops = _export_operator_list(lite)
    assert {"ember::matmul", "ember::add"} <= ops and all(o.startswith("ember::") for o in ops)
    assert _export_operator_list(t) == ops
    assert jit.export_opnames(t) == sorted(ops)
    with pytest.raises(ValueError, match="map_location should be either None, string or"):
        _load_for_lite_interpreter(str(path), map_location=3)
    # the lite runtime, in a process that imports neither the model nor ember's nn/autograd
    np.save(tmp_path / "x.npy", _np(x))
    code = textwrap.dedent("""
        import sys, numpy as np, ember_lite
        p = ember_lite.load("plain.ptl")
        np.save("y.npy", p(np.load("x.npy"))[0])
        assert "ember" not in sys.modules
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), _np(m(x)), rtol=1e-5, atol=1e-6)


def test_both_training_modes_survive_saving():
    m = M.ModeDependent()
    s = jit.script(m)
    x = ember.randn(5, 4)
    s(x)  # first call (and capture) in training mode
    m.eval()
    s.eval()
    buf = io.BytesIO()
    s.save(buf)
    loaded = jit.load(io.BytesIO(buf.getvalue()))
    assert loaded.training is False
    np.testing.assert_allclose(_np(loaded(x)), _np(m(x)), rtol=1e-5, atol=1e-6)
    loaded.train()
    m.train()
    np.testing.assert_allclose(_np(loaded(x)), _np(m(x)), rtol=1e-5, atol=1e-6)
    # training mode wrote the running statistics of the loaded module's own buffers
    np.testing.assert_allclose(_np(loaded.bn.running_mean), _np(m.bn.running_mean), rtol=1e-5,
                               atol=1e-7)


def test_traced_function_round_trip_and_export_files(tmp_path):
    x, y = ember.randn(3, 3), ember.randn(3, 3)
    t = jit.trace(M.branchy, (x, y))
    t.save(str(tmp_path / "fn.pt"))
    outs = _run_fresh(tmp_path, """
        f = jit.load("fn.pt")
        assert isinstance(f, jit.ScriptFunction), type(f)
        outs = [f(inputs[0], inputs[1]), f(-inputs[0], inputs[1])]
    """, [_np(x), _np(y)])
    # the trace froze the example's branch, for both inputs
    np.testing.assert_array_equal(outs[0], _np(M.branchy(x, y)))
    np.testing.assert_array_equal(outs[1], _np(M.branchy(x, y)))
    ep = ember.export.export(M.Plain().eval(), (ember.randn(2, 4),))
    ember.export.save(ep, str(tmp_path / "ep.pt2"))
    with pytest.raises(RuntimeError, match="without ember.jit's metadata.*ember.export.load"):
        jit.load(str(tmp_path / "ep.pt2"))


def test_lite_interpreter_runs_both_branches_of_a_scripted_module(tmp_path):
    m = M.Net().eval()
    s = jit.script(m)
    s(ember.randn(3, 4))
    with pytest.raises(RuntimeError, match=r"encode\(\) has no program yet"):
        s._save_for_lite_interpreter(io.BytesIO())  # every compiled method needs a call
    s.encode(ember.randn(3, 4))
    path = str(tmp_path / "net.ptl")
    s._save_for_lite_interpreter(path)
    lite = _load_for_lite_interpreter(path)
    for v in (ember.randn(5, 4).abs(), -ember.randn(5, 4).abs()):
        np.testing.assert_allclose(_np(lite(v)), _np(m(v)), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(_np(lite.run_method("encode", v)), _np(m.encode(v)),
                                   rtol=1e-5, atol=1e-6)
    ops = _export_operator_list(lite)
    # the ops inside the branches and the loop body are listed too
    assert {"ember::cond", "ember::while_loop", "ember::neg", "ember::abs", "ember::lt"} <= ops
    with pytest.raises(RuntimeError, match=r"saved for inputs \(Tensor, 1\), but was called "
                                           r"with \(Tensor, 2\)"):
        lite(ember.randn(2, 4), 2)


def test_load_map_location_and_file_objects(tmp_path):
    m = M.Plain().eval()
    t = jit.trace(m, ember.randn(2, 4))
    with open(tmp_path / "p.pt", "wb") as fh:
        jit.save(t, fh)
    with open(tmp_path / "p.pt", "rb") as fh:
        loaded = jit.load(fh, map_location="cpu")
    assert loaded.l1.weight.device == ember.device("cpu")
    assert isinstance(loaded.l1.weight, ember.nn.Parameter)
    x = ember.randn(2, 4)
    np.testing.assert_allclose(_np(loaded(x)), _np(m(x)), rtol=1e-6)


def test_freeze_and_code_follow_the_module_mode():
    m = M.ModeDependent()
    s = jit.script(m)
    x = ember.randn(5, 4)
    s(x)  # captured in training mode
    # training mode: BatchNorm writes its running statistics
    assert "self.bn.running_mean.copy_(" in s.code
    s.eval()
    m.eval()
    assert "running_mean.copy_(" not in s.code and "_native_batch_norm_legit_no_training(" in s.code
    f = jit.freeze(s)
    np.testing.assert_allclose(_np(f(x)), _np(m(x)), rtol=1e-5, atol=1e-6)


def test_loaded_scripted_program_checks_the_sizes_it_specialised():
    class Steps(ember.nn.Module):
        def forward(self, x):
            out = x[:, 0]
            for t in range(1, x.shape[1]):  # a loop over a size: that size is specialised
                out = out + x[:, t]
            return out
    s = jit.script(Steps())
    s(ember.randn(2, 5))
    buf = io.BytesIO()
    s.save(buf)
    loaded = jit.load(io.BytesIO(buf.getvalue()))
    x = ember.randn(7, 5)  # another batch: dynamic
    np.testing.assert_allclose(_np(loaded(x)), _np(x.sum(1)), rtol=1e-5)
    with pytest.raises(RuntimeError, match=r"expected input x.shape\[1\] to be equal to 5, but "
                                           r"got 3"):
        loaded(ember.randn(7, 3))
    np.testing.assert_allclose(_np(s(ember.ones(2, 3))), [3.0, 3.0])  # Python: any size
