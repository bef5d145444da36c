"""ember_lite on whole programs: the kept file of each format version still loads and gives
the outputs recorded when it was written; a model saved here runs, in a fresh process that
never defines its class, with ember.export.load and with ember_lite, equal to eager."""
import io
import json
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember_lite
from ember.export import Dim, export, load, save

DATA = pathlib.Path(__file__).parent / "data"


@pytest.mark.parametrize("version", [1, 2])
def test_every_format_version_still_loads(version):
    assert version in ember_lite.READS
    path = DATA / f"program_v{version}.ember"
    expected = json.loads((DATA / f"expected_v{version}.json").read_text())
    assert expected["format_version"] == version
    prog = ember_lite.load(path)
    assert prog.input_specs == [("x", ("s0", 4), "float32")]
    extra = {"made_by": None}
    mod = load(path, extra_files=extra).module()
    assert extra["made_by"] == f"make_v{version}.py"
    # version 2 keeps each node's nn_module_stack: unflatten gives the submodules graphs
    flat = ember.export.unflatten(load(path))
    with_graph = [n for n, m in flat.named_modules() if n and m.graph is not None]
    assert with_graph == (["fc1", "norm", "fc2"] if version >= 2 else [])
    for case in expected["cases"]:
        x = np.array(case["input"], np.float32)
        want_y = np.array(case["output"], np.float32)
        want_i = np.array(case["argmax"], np.int64)
        y, i = prog(x)
        np.testing.assert_allclose(y, want_y, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(i, want_i)
        ey, ei = mod(ember.from_numpy(x))
        np.testing.assert_allclose(ey.detach().numpy(), want_y, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(ei.numpy(), want_i)


def test_every_version_written_has_a_kept_file():
    from ember.export.serde import FORMAT_VERSION
    for v in range(1, FORMAT_VERSION + 1):
        assert (DATA / f"program_v{v}.ember").exists(), f"keep a file of format version {v}"
        assert (DATA / f"make_v{v}.py").exists()


class _ConvNet(nn.Module):
    """Defined only in this test process: the fresh process must not need it."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.head = nn.Linear(4, 5)

    def forward(self, x):
        h = ember.relu(self.bn(self.conv(x)))
        return ember.softmax(self.head(h.mean(dim=(2, 3))), dim=-1)


def test_fresh_process_round_trip(tmp_path):
    ember.manual_seed(3)
    model = _ConvNet().eval()
    x = ember.randn(2, 3, 6, 6)
    ep = export(model, (x,), dynamic_shapes=({0: Dim("n", min=1, max=16)},))
    path = tmp_path / "convnet.ember"
    save(ep, path)
    inputs = [np.random.default_rng(i).standard_normal((n, 3, 6, 6)).astype(np.float32)
              for i, n in enumerate((2, 5))]
    want = [model(ember.from_numpy(a)).detach().numpy() for a in inputs]
    for i, a in enumerate(inputs):
        np.save(tmp_path / f"in{i}.npy", a)
    script = textwrap.dedent(f"""
        import sys, numpy as np
        import ember_lite
        lite = ember_lite.load({str(path)!r})
        lite_out = [lite(np.load({str(tmp_path)!r} + f"/in{{i}}.npy"))[0] for i in range(2)]
        assert not any(m == "ember" or m.startswith("ember.") for m in sys.modules)
        import ember
        from ember.export import load
        mod = load({str(path)!r}).module()
        for i, lo in enumerate(lite_out):
            x = np.load({str(tmp_path)!r} + f"/in{{i}}.npy")
            np.save({str(tmp_path)!r} + f"/lite{{i}}.npy", lo)
            np.save({str(tmp_path)!r} + f"/ember{{i}}.npy",
                    mod(ember.from_numpy(x)).detach().numpy())
        assert "_ConvNet" not in repr(sys.modules.get("__main__").__dict__)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    for i, w in enumerate(want):
        np.testing.assert_array_equal(np.load(tmp_path / f"ember{i}.npy"), w)
        np.testing.assert_allclose(np.load(tmp_path / f"lite{i}.npy"), w, rtol=1e-5,
                                   atol=1e-6)


def test_input_checks_name_the_input():
    model = nn.Linear(3, 2)
    ep = export(model, (ember.randn(4, 3),), dynamic_shapes=({0: Dim("b", min=2, max=8)},))
    buf = io.BytesIO()
    save(ep, buf)
    buf.seek(0)
    prog = ember_lite.load(buf)
    with pytest.raises(TypeError, match="takes 1 input"):
        prog()
    with pytest.raises(ValueError, match="dim 1 must be 3, got 4"):
        prog(np.zeros((4, 4), np.float32))
    with pytest.raises(ValueError, match=r"s0 = 9 is outside its range \[2, 8\]"):
        prog(np.zeros((9, 3), np.float32))
    with pytest.raises(TypeError, match="expected dtype float32, got float64"):
        prog(np.zeros((4, 3)))
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(prog(x)[0], model(ember.from_numpy(x)).detach().numpy(),
                               rtol=1e-6, atol=1e-6)


def test_training_program_updates_its_buffers():
    ember.manual_seed(4)
    m = nn.BatchNorm1d(3)
    x = ember.randn(6, 3)
    ep = export(m, (x,))
    buf = io.BytesIO()
    save(ep, buf)
    buf.seek(0)
    prog = ember_lite.load(buf)
    y1, = prog(x.numpy())
    np.testing.assert_allclose(y1, m(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    prog(x.numpy())
    m(x)
    np.testing.assert_allclose(prog._weights["running_mean"], m.running_mean.numpy(),
                               rtol=1e-6, atol=1e-7)


def test_random_program_matches_ember():
    # decomposed random ops reach the counter-based RNG primitive, which the lite runtime
    # runs bit for bit like ember
    from ember.ops.primitives import rng_key
    seed, off = rng_key()

    def f(s, o):
        from ember._core.op import REGISTRY
        return REGISTRY["_rng_uniform"](s, o, shape=(3, 4), dtype=np.dtype(np.float32))
    ep = export(f, (seed, off))
    buf = io.BytesIO()
    save(ep, buf)
    buf.seek(0)
    got, = ember_lite.load(buf)(seed.numpy(), off.numpy())
    np.testing.assert_array_equal(got, f(seed, off).numpy())


class _CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        return self.fc(self.pool(ember.relu(self.bn(self.conv(x)))).flatten(1))


class _LSTMHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 6, batch_first=True)
        self.fc = nn.Linear(6, 2)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1])


class _Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.fc = nn.Linear(4, 3)

    def forward(self, idx):
        return ember.softmax(self.fc(self.emb(idx)).mean(1), -1)


def _models():
    ember.manual_seed(5)
    return [
        ("cnn", _CNN(), lambda b: (ember.randn(b, 3, 8, 8),)),
        ("lstm", _LSTMHead(), lambda b: (ember.randn(b, 5, 4),)),
        ("transformer_layer", nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                         batch_first=True),
         lambda b: (ember.randn(b, 5, 8),)),
        ("embedding", _Embed(), lambda b: (ember.randint(0, 10, (b, 3)),)),
        ("attention", nn.MultiheadAttention(8, 2, batch_first=True),
         lambda b: tuple(ember.randn(b, 4, 8) for _ in range(3))),
    ]


@pytest.mark.parametrize("name,model,make", _models(), ids=[m[0] for m in _models()])
def test_common_models_with_a_dynamic_batch(name, model, make):
    model.eval()
    args = make(2)
    dyn = tuple({0: Dim("batch", min=1, max=16)} for _ in args)
    ep = export(model, args, dynamic_shapes=dyn)
    buf = io.BytesIO()
    save(ep, buf)
    buf.seek(0)
    prog = ember_lite.load(buf)
    for b in (2, 7):
        xs = make(b)
        want = model(*xs)
        want = [w for w in (want if isinstance(want, tuple) else (want,)) if w is not None]
        got = prog(*[x.numpy() for x in xs])
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_input_mutation_is_written_back():
    def f(x):
        x.add_(1)
        return x * 2
    ep = export(f, (ember.zeros(3),))
    buf = io.BytesIO()
    save(ep, buf)
    buf.seek(0)
    a = np.array([1.0, 2.0, 3.0], np.float32)
    y, = ember_lite.load(buf)(a)
    np.testing.assert_array_equal(a, [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(y, [4.0, 6.0, 8.0])


def _cond_fn(x):
    return ember.cond(x.sum() > 0, lambda x: x * 2, lambda x: x.sin() - 1, (x,))


def _while_fn(i, x):
    return ember.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2), (i, x))


def _map_fn(xs, y):
    return ember.map(lambda x, y: ember.softmax(x * y, 0), xs, y)


_F32 = np.float32


@pytest.mark.parametrize("fn,example,dynamic,inputs", [
    (_cond_fn, (ember.ones(3),), None,
     [(np.array([1, 2, 3], _F32),), (np.array([-1, -2, 3], _F32),)]),
    (_while_fn, (ember.tensor(0), ember.ones(3)), None,
     [(np.array(0), np.ones(3, _F32)), (np.array(5), np.arange(3, dtype=_F32))]),
    (_map_fn, (ember.ones(4, 3), ember.ones(3)), ({0: Dim("n")}, None),
     [(np.ones((4, 3), _F32), np.arange(3, dtype=_F32)),
      (np.arange(18, dtype=_F32).reshape(6, 3), np.arange(3, dtype=_F32))]),
], ids=["cond", "while_loop", "map"])
def test_control_flow_survives_saving(fn, example, dynamic, inputs):
    # both branches (and loop bodies) are sub-graphs in the file: every input takes its
    # own path, in ember.export.load's module and in ember_lite
    ep = export(fn, example, dynamic_shapes=dynamic)
    buf = io.BytesIO()
    save(ep, buf)
    raw = buf.getvalue()
    mod = load(io.BytesIO(raw)).module()
    prog = ember_lite.load(io.BytesIO(raw))
    for ins in inputs:
        want = fn(*[ember.from_numpy(a) for a in ins])
        want = want if isinstance(want, tuple) else (want,)
        got = mod(*[ember.from_numpy(a) for a in ins])
        got = got if isinstance(got, tuple) else (got,)
        lite = prog(*ins)
        for w, g, lo in zip(want, got, lite):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
            assert lo.dtype == w.numpy().dtype
            np.testing.assert_allclose(lo, w.numpy(), rtol=1e-6, atol=1e-7)
