"""ember_lite's C path (`ember_lite._cgen`): programs run as one C function generated at load
time from the graph, equal to ember eager (float32: rtol 1e-5, atol 1e-6; float64: rtol
1e-12, atol 1e-12), in fresh processes that never import ember, with the library cached
for the next process; without a compiler (``CC=false``) or with ``EMBER_LITE_C=0`` the
same outputs come from the NumPy kernels; sizes a hostile file lies about never reach
memory."""
import io
import json
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember_lite
from ember.export import Dim, export, save
from ember_lite import _build

from .test_lite_runtime import _CNN

pytestmark = pytest.mark.skipif(_build.find_compiler() is None and not os.environ.get("CI"),
                                reason="no C compiler")

F32 = dict(rtol=1e-5, atol=1e-6)
F64 = dict(rtol=1e-12, atol=1e-12)


def test_ctable_is_generated_from_the_scalar_table():
    # ember_lite ships a rendering of ember's scalar-function table; it must be current
    from ember.export.serde import _lite_ctable
    assert _lite_ctable.PATH.read_text() == _lite_ctable.render(), \
        "ember_lite/_ctable.py is stale: python -m ember.export.serde._lite_ctable"


def _saved(tmp_path):
    """(name, path, inputs, eager outputs) of an MLP and a CNN with a dynamic batch."""
    ember.manual_seed(11)
    mlp = nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.GELU(), nn.Linear(32, 32),
                        nn.Tanh(), nn.Linear(32, 4)).eval()
    cnn = _CNN().eval()
    with ember.no_grad():  # eval-mode BatchNorm with statistics that are not 0 and 1
        cnn.bn.running_mean.copy_(ember.randn(8) * 0.1)
        cnn.bn.running_var.copy_(ember.rand(8) + 0.5)
    out = []
    for name, model, shape in (("mlp", mlp, (16,)), ("cnn", cnn, (3, 8, 8))):
        path = tmp_path / f"{name}.ember"
        save(export(model, (ember.randn(2, *shape),),
                    dynamic_shapes=({0: Dim("batch", min=1, max=64)},)), path)
        xs = [np.random.default_rng(b).standard_normal((b, *shape)).astype(np.float32)
              for b in (3, 7)]
        want = [model(ember.from_numpy(x)).detach().numpy() for x in xs]
        out.append((name, path, xs, want))
    return out


_SCRIPT = """
    import json, sys, numpy as np
    import ember_lite
    report = {}
    for name, path, n in json.loads(sys.argv[1]):
        prog = ember_lite.load(path)
        for i in range(n):
            y, = prog(np.load(f"{path}.in{i}.npy"))
            np.save(f"{path}.{sys.argv[2]}{i}.npy", y)
        report[name] = {"backend": prog.backend, "uses_c": prog.uses_c_kernels,
                        "compiled": prog.c_info.get("compiled"),
                        "reason": prog.c_info.get("reason")}
    report["ember_modules"] = sorted(m for m in sys.modules
                                     if m == "ember" or m.startswith("ember."))
    report["c_modules"] = sorted(m for m in sys.modules if m in
                                 ("ember_lite._crun", "ember_lite._cgen", "ember_lite._build"))
    print(json.dumps(report))
"""


def _run(models, tag, **env):
    arg = json.dumps([(name, str(path), len(xs)) for name, path, xs, _ in models])
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(_SCRIPT), arg, tag],
                         capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, **env))
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_mlp_and_cnn_through_c_in_fresh_processes(tmp_path):
    models = _saved(tmp_path)
    for _, path, xs, _ in models:
        for i, x in enumerate(xs):
            np.save(f"{path}.in{i}.npy", x)
    cache = str(tmp_path / "cache")  # a fresh cache: the first process compiles
    first = _run(models, "c", EMBER_CACHE_DIR=cache)
    second = _run(models, "again", EMBER_CACHE_DIR=cache)
    no_cc = _run(models, "nocc", EMBER_CACHE_DIR=cache, CC="false")
    off = _run(models, "off", EMBER_CACHE_DIR=cache, EMBER_LITE_C="0")
    for report in (first, second, no_cc, off):
        assert report["ember_modules"] == []   # the lite runtime never imports ember
    for name, path, xs, want in models:
        assert first[name]["backend"] == "c" and first[name]["uses_c"], first[name]
        assert first[name]["compiled"] is True
        assert second[name]["backend"] == "c" and second[name]["compiled"] is False
        assert no_cc[name]["backend"] == "numpy" and "false" in no_cc[name]["reason"]
        assert off[name] == {"backend": "numpy", "uses_c": False, "compiled": None,
                             "reason": "disabled by EMBER_LITE_C=0"}
        assert off["c_modules"] == [] and len(first["c_modules"]) == 3  # imported on use
        for i, w in enumerate(want):
            c = np.load(f"{path}.c{i}.npy")
            np.testing.assert_allclose(c, w, **F32, err_msg=f"{name} batch {len(xs[i])}")
            np.testing.assert_array_equal(np.load(f"{path}.again{i}.npy"), c)
            for tag in ("nocc", "off"):   # the NumPy kernels: the same outputs
                np.testing.assert_allclose(np.load(f"{path}.{tag}{i}.npy"), w, **F32)


def _program(fn, *example, dynamic=None):
    buf = io.BytesIO()
    save(export(fn, example, dynamic_shapes=dynamic), buf)
    return buf.getvalue()


def _many_ops(x, y, w, v):
    """Every elementwise function of the C table that these inputs suit, reductions,
    broadcasts, views and products in one program (one C build)."""
    pos = x.abs() + 0.5
    unit = ember.tanh(x) * 0.9
    outs = [x.exp(), x.expm1(), ember.exp2(x), pos.log(), pos.log2(), pos.log10(),
            pos.log1p(), pos.sqrt(), x.sin(), x.cos(), x.tan(), unit.asin(), unit.acos(),
            x.atan(), x.sinh(), x.cosh(), x.tanh(), x.asinh(), (pos + 1).acosh(),
            unit.atanh(), x.sigmoid(), ember.erf(x), ember.erfc(x), pos.lgamma(), x.floor(),
            x.ceil(), x.trunc(), x.round(), x.sign(), -x, x.abs(),
            x + y, x - y, x * y, x / pos, ember.maximum(x, y), ember.minimum(x, y),
            ember.atan2(x, y), ember.hypot(x, y), ember.copysign(x, y), pos ** y,
            ember.fmod(x, pos), ember.remainder(x, pos), ember.floor_divide(x, pos),
            x * 2.5 - 1, 1.0 / pos, x + y[0:1, :],
            x.sum(), x.sum(0), x.sum(1, keepdim=True), x.amax(1), x.amin(0), x.mean(1),
            x.permute(1, 0) * 1, x.t().reshape(-1), x.expand(2, 6, 5) + 0,
            x @ w, x.t() @ x, (x.unsqueeze(0).expand(3, 6, 5) @ v), ember.softmax(x, 1),
            ember.nn.functional.layer_norm(x, (5,)), x > y, x <= 0.25, x == y, x.isnan(),
            ember.where(x > y, x, y * 2), ember.cat([x, y[:, 1:3], x.exp()], 1),
            x.to(ember.float64), x[1:5:2, ::2] * 3]
    return tuple(outs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ops_through_c_equal_ember(dtype):
    rng = np.random.default_rng(0)
    args = [ember.from_numpy(rng.standard_normal(s).astype(dtype))
            for s in ((6, 5), (6, 5), (5, 4), (3, 5, 2))]
    prog = ember_lite.load(io.BytesIO(_program(_many_ops, *args)))
    assert prog.backend == "c", prog.c_info["reason"]
    got = prog(*[a.numpy() for a in args])
    want = _many_ops(*args)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.numpy().dtype and g.shape == tuple(w.shape), k
        np.testing.assert_allclose(g, w.numpy(), **(F32 if dtype == np.float32 else F64),
                                   err_msg=f"output {k}")


def test_one_library_serves_every_batch_size():
    ember.manual_seed(1)
    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).eval()
    raw = _program(m, ember.randn(2, 4), dynamic=({0: Dim("b", min=1, max=512)},))
    prog = ember_lite.load(io.BytesIO(raw))
    assert prog.backend == "c"
    for b in (2, 5, 300):
        x = np.random.default_rng(b).standard_normal((b, 4)).astype(np.float32)
        np.testing.assert_allclose(prog(x)[0], m(ember.from_numpy(x)).detach().numpy(), **F32)


def test_embedding_indices_are_checked_on_every_call():
    ember.manual_seed(4)
    emb = nn.Embedding(10, 3)
    raw = _program(emb, ember.tensor([[1, 2], [3, 4]]), dynamic=({0: Dim("b", min=1, max=64)},))
    prog = ember_lite.load(io.BytesIO(raw))
    assert prog.backend == "c", prog.c_info
    idx = np.array([[0, 9], [3, 3], [7, 1]])
    np.testing.assert_array_equal(prog(idx)[0], emb(ember.from_numpy(idx)).detach().numpy())
    # out of range: the C entry refuses the call, the NumPy kernels raise as they always did
    with pytest.raises(RuntimeError, match="index 10 is out of bounds"):
        prog(np.array([[0, 10], [1, 2]]))


def _tamper(raw, edit):
    """``raw`` with its lite graph passed through ``edit(graph nodes)``."""
    src = zipfile.ZipFile(io.BytesIO(raw))
    prog = json.loads(src.read("lite/program.json"))
    edit(prog["graph"])
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as dst:
        for n in src.namelist():
            dst.writestr(n, json.dumps(prog) if n == "lite/program.json" else src.read(n))
    return buf.getvalue()


def _node(graph, target):
    return next(n for n in graph if n.get("target") == target)


def test_shapes_a_file_lies_about_never_reach_memory():
    ember.manual_seed(2)
    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).eval()
    raw = _program(m, ember.randn(2, 4), dynamic=({0: Dim("b", min=1, max=512)},))
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    want = m(ember.from_numpy(x)).detach().numpy()

    def bigger_static(g):   # an intermediate claimed 4x larger than it is
        _node(g, "matmul")["meta"]["shape"][1] = 32

    def bigger_symbolic(g):   # a batch claimed twice the input's: only a call can tell
        _node(g, "matmul")["meta"]["shape"][0] = "2*s0"

    def permute_twice(g):   # a permutation naming one dim twice would read past the end
        _node(g, "permute")["kwargs"]["dims"] = {"tuple": [1, 1]}

    def divide_by_zero(g):   # integer division by 0 would kill the process in C
        _node(g, "matmul")["meta"]["shape"][0] = "s0//0"

    for edit, backend in ((bigger_static, "numpy"), (bigger_symbolic, "c"),
                          (permute_twice, "numpy"), (divide_by_zero, "numpy")):
        prog = ember_lite.load(io.BytesIO(_tamper(raw, edit)))
        assert prog.backend == backend, (edit.__name__, prog.c_info)
        try:   # whatever the NumPy kernels make of the lie: never a C read out of bounds
            got = prog(x)
        except Exception:  # noqa: BLE001
            continue
        if edit is bigger_symbolic:  # the entry's check refused the call: NumPy ran it
            np.testing.assert_allclose(got[0], want, **F32)


def test_index_tables_are_checked_against_the_indexed_size():
    conv = nn.Conv2d(1, 2, 3, padding=1).eval()
    raw = _program(conv, ember.randn(1, 1, 5, 5))
    prog = ember_lite.load(io.BytesIO(raw))
    assert prog.backend == "c"
    x = np.random.default_rng(3).standard_normal((1, 1, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(prog(x)[0], conv(ember.from_numpy(x)).detach().numpy(), **F32)
    # the same table with a value past the padded input's size: no C (NumPy raises)
    src = zipfile.ZipFile(io.BytesIO(raw))
    lite = json.loads(src.read("lite/program.json"))
    table = _node(lite["graph"], "tensor")["kwargs"]["data"]["array"]["storage"]
    data = np.frombuffer(src.read(table), np.int64).copy()
    data[-1] = 99
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as dst:
        for n in src.namelist():
            dst.writestr(n, data.tobytes() if n == table else src.read(n))
    prog = ember_lite.load(io.BytesIO(buf.getvalue()))
    assert prog.backend == "numpy" and "out of range" in prog.c_info["reason"]
    with pytest.raises(RuntimeError, match="index"):
        prog(x)


def test_training_program_through_c_updates_its_buffers():
    ember.manual_seed(4)
    m = nn.BatchNorm1d(3)
    x = ember.randn(6, 3)
    prog = ember_lite.load(io.BytesIO(_program(m, x)))
    assert prog.backend == "c", prog.c_info
    for _ in range(2):   # the second call reads the buffers the first one wrote
        np.testing.assert_allclose(prog(x.numpy())[0], m(x).detach().numpy(), **F32)
        np.testing.assert_allclose(prog._weights["running_mean"], m.running_mean.numpy(),
                                   **F32)
        np.testing.assert_allclose(prog._weights["running_var"], m.running_var.numpy(), **F32)
    # a weight that no longer matches what the C was generated for is never handed to it
    prog._weights["running_mean"] = np.zeros(1, np.float32)
    numpy_prog = ember_lite.load(io.BytesIO(_program(m, x)), c_kernels=False)
    numpy_prog._weights.update(prog._weights)
    np.testing.assert_array_equal(prog(x.numpy())[0], numpy_prog(x.numpy())[0])


def _int_ops(i, j):
    return (i + j * 3 - 1, ember.maximum(i, j), ember.minimum(i, j), i.abs(), -i, i.sign(),
            i > j, i == j, ember.where(i > j, i, j), (i * j).sum(1))


def test_int64_ops_through_c_equal_ember():
    rng = np.random.default_rng(5)
    i, j = (ember.from_numpy(rng.integers(-50, 50, (4, 6))) for _ in range(2))
    big = ember.full((4, 6), 2 ** 62)
    prog = ember_lite.load(io.BytesIO(_program(_int_ops, i, j)))
    assert prog.backend == "numpy" and "sum" in prog.c_info["reason"]  # no integer sums
    prog = ember_lite.load(io.BytesIO(_program(lambda i, j: _int_ops(i, j)[:-1], i, j)))
    assert prog.backend == "c", prog.c_info
    for a, b in ((i, j), (big, big)):   # 2**62 * 3 wraps in C as in torch
        for g, w in zip(prog(a.numpy(), b.numpy()), _int_ops(a, b)[:-1]):
            assert g.dtype == w.numpy().dtype
            np.testing.assert_array_equal(g, w.numpy())


def test_threads_share_a_program():
    # each call has its own pointers and each thread its own arena: concurrent calls with
    # different batch sizes all get their own results
    import concurrent.futures
    ember.manual_seed(6)
    m = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4)).eval()
    prog = ember_lite.load(io.BytesIO(
        _program(m, ember.randn(2, 8), dynamic=({0: Dim("b", min=2, max=4096)},))))
    assert prog.backend == "c"
    xs = [np.random.default_rng(k).standard_normal((2 + 37 * k, 8)).astype(np.float32)
          for k in range(8)]
    want = [m(ember.from_numpy(x)).detach().numpy() for x in xs]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for _ in range(5):
            got = list(pool.map(lambda x: prog(x)[0], xs))
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, **F32)
