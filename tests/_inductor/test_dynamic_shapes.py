"""Dynamic shapes: symbolic sizes are kernel arguments, so one build serves every size."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember._core.meta import TensorMeta
from ember._inductor import build, compile_fx, config
from ember._inductor.passes.record import record_graph

from .helpers import SymInt, assert_close, rand


def _symbolize(gm, sizes):
    """Replace the example sizes ``{value: expr}`` by SymInts in metas and shape params."""
    def sym(d):
        return SymInt(d, sizes[int(d)]) if int(d) in sizes else d

    for n in gm.graph.nodes:
        v = n.meta.get("val")
        if isinstance(v, TensorMeta):
            n.meta["val"] = TensorMeta(tuple(sym(d) for d in v.shape), v.dtype)
        if "shape" in n.kwargs:
            n.kwargs = dict(n.kwargs, shape=tuple(sym(d) for d in n.kwargs["shape"]))
    return gm


def _fn(x, y):
    z = (x.exp() * 2 + x).sigmoid() * y
    return z, z.sum(-1), x.amax(1), x.reshape(-1) * 3, F.softmax(x, -1)


@pytest.mark.parametrize("backend", ["c", "numpy", "cpp_wrapper"])
def test_one_build_serves_two_sizes(backend, monkeypatch):
    if backend == "numpy":
        monkeypatch.setattr(config, "cc", None)
    if backend == "cpp_wrapper":
        monkeypatch.setattr(config, "cpp_wrapper", True)
    x, y = rand(7, 16), rand(16, seed=1)
    gm, _ = record_graph(_fn, x, y)
    _symbolize(gm, {7: "s0", 112: "s0*16"})
    before = dict(build.COUNTERS)
    compiled = compile_fx(gm, [x, y])
    assert compiled.reason is None
    assert compiled.backend == ("numpy" if backend == "numpy" else "c")
    assert compiled.cpp_wrapper == (backend == "cpp_wrapper")
    builds = sum(build.COUNTERS.values()) - sum(before.values())
    assert builds == (0 if backend == "numpy" else 1)
    if backend != "numpy":
        assert "int64_t s0" in compiled.source
    for rows in (7, 3, 40):
        xs = rand(rows, 16, seed=rows)
        assert_close(compiled(xs, y), _fn(xs, y))
    assert sum(build.COUNTERS.values()) - sum(before.values()) == builds  # no rebuilds


def test_two_symbolic_dims(monkeypatch):
    x = rand(5, 9)
    gm, _ = record_graph(lambda x: ((x * x).sum(1), (x + 1).amin(0), x.t() * 2), x)
    _symbolize(gm, {5: "s0", 9: "s1"})
    compiled = compile_fx(gm, [x])
    assert compiled.reason is None
    for shape in ((5, 9), (2, 31), (33, 4)):
        xs = rand(*shape, seed=shape[0])
        assert_close(compiled(xs), ((xs * xs).sum(1), (xs + 1).amin(0), xs.t() * 2))


def test_decompositions_generalise_to_symbolic_sizes():
    """softmax, layer_norm and a view over symbolic rows decompose (traced at two sizes)
    and fuse: one kernel serves every row count."""
    x, w, b = rand(6, 32), rand(32, seed=1), rand(32, seed=2)

    def fn(x, w, b):
        return F.gelu(F.layer_norm(x, (32,), w, b)) * 2 + F.softmax(x, -1)
    gm, _ = record_graph(fn, x, w, b)
    _symbolize(gm, {6: "s0"})
    compiled = compile_fx(gm, [x, w, b])
    assert compiled.reason is None and compiled.kernel_count == 1, compiled.source
    assert "_eager" not in compiled.source
    for rows in (6, 1, 17):
        xs = rand(rows, 32, seed=rows)
        assert_close(compiled(xs, w, b), (fn(xs, w, b),))


def test_decomposition_with_symbolic_reduced_dim():
    x = rand(4, 10)
    gm, _ = record_graph(lambda x: (x.var(-1), x.mean(-1), F.log_softmax(x, -1)), x)
    _symbolize(gm, {10: "s0"})
    compiled = compile_fx(gm, [x])
    assert compiled.reason is None
    for cols in (10, 3, 33):
        xs = rand(4, cols, seed=cols)
        assert_close(compiled(xs), (xs.var(-1), xs.mean(-1), F.log_softmax(xs, -1)))


def _onehot_t_matmul(p):
    onehot = (p.argmin(dim=1)[:, None] == ember.arange(3)[None, :]).to(ember.float64)
    return onehot.T @ p


def test_eager_step_params_follow_symbolic_sizes():
    """An eager step's symbolic params are evaluated per call: the slice and view of the
    one-hot rows (kwargs of wrapper-run nodes) kept the example's size (issue 11)."""
    ember._dynamo.reset()
    cg = ember.compile(_onehot_t_matmul, backend="inductor")
    for n in (10, 20, 30, 7):
        p = ember.randn(n, 2, dtype=ember.float64)
        got, want = cg(p), _onehot_t_matmul(p)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def _write_into_slice(x, y):
    z = ember.zeros(x.shape[0] + y.shape[0])
    z[: x.shape[0]] += x
    return z + 1 + y.sum()


def _size_of_unread_input(x, y):
    return ember.zeros(x.shape[0] + y.shape[0]) + x.sum()


@pytest.mark.parametrize("backend", ["c", "numpy", "cpp_wrapper"])
@pytest.mark.parametrize("fn", [_write_into_slice, _size_of_unread_input])
def test_compile_dynamic_across_sizes(fn, backend, monkeypatch):
    # a write through a slice whose bound is a size (the view chain's params were left
    # at the first call's size), and a size read from an input no operation reads (its
    # symbol was never bound in the wrapper)
    if backend == "numpy":
        monkeypatch.setattr(config, "cc", None)
    if backend == "cpp_wrapper":
        monkeypatch.setattr(config, "cpp_wrapper", True)
    f = ember.compile(fn, dynamic=True)
    for a, b in [(3, 5), (6, 2), (7, 9)]:
        x, y = rand(a, seed=a), rand(b, seed=b)
        assert_close(f(x, y), fn(x, y))
