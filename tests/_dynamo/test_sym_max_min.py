"""``sym_max``/``sym_min`` of two dynamic sizes stay symbolic (``max(s0, s1)``), as torch's
``Max(s0, s1)``: one compiled graph serves both orderings of the sizes, ember.export records
no guard on which is larger (named Dims export), and the program runs, saved, loaded and in
ember_lite, for either ordering.  Values are checked against torch.compile/torch.export."""
import io

import numpy as np
import pytest
import torch
from torch._dynamo.testing import CompileCounter as TorchCounter

import ember
import ember_lite
from ember._dynamo import symbolic
from ember._dynamo.testing import CompileCounter
from ember._inductor import compile_fx, config, sizes
from ember_lite._format import eval_size

ORDERS = [(3, 5), (6, 2), (7, 9), (8, 3)]


def _fn(T):
    def f(x, y):
        n = T.sym_max(x.shape[0], y.shape[0])
        m = T.sym_min(x.shape[0], y.shape[0])
        z = (T.ones(n, 3) * y.sum()).exp()
        return z.sum(0) + 1, T.ones(m, 2) * x.sum(), z.reshape(-1) * 2
    return f


def _inputs(a, b, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(a).astype(np.float32) * 0.3,
            rng.standard_normal(b).astype(np.float32) * 0.3)


def _check(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = g.numpy() if hasattr(g, "numpy") else g
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)


def test_expression_nodes():
    a, b = symbolic.leaf(0, 0, 3), symbolic.leaf(1, 0, 5)
    m = ember.sym_max(a, b)
    assert isinstance(m, symbolic.SymInt) and m == 5 and m.expr == ("max", a.expr, b.expr)
    assert ember.sym_min(a, b) == 3 and ember.sym_min(a, 2) == 2
    assert ember.sym_max(a, a) is a                     # max(s0, s0) is s0
    syms = {a.expr: "s0", b.expr: "s1"}
    assert symbolic.render((m * 2 + 1).expr, {}, syms) == "((max(s0, s1) * 2) + 1)"
    # a constant operand pair folds; a leaf rendered by value folds too
    assert symbolic.render(ember.sym_min(a, b).expr, {a.expr: 3, b.expr: 5}, {}) == 3
    assert type(ember.sym_max(a, 2.5)) is float and ember.sym_max(a, 2.5) == 3.0
    assert ember.sym_max(4, 9) == 9 and type(ember.sym_max(4, 9)) is int


def test_inductor_sizes_and_lite_evaluate_max_min():
    s = sizes.size(symbolic.SymInt(7, ("*", ("max", "s0", "s1"), 2)))
    assert s == "(max(s0, s1) * 2)" and sizes.symbols_of(s) == {"s0", "s1"}
    assert sizes.evaluate(s, {"s0": 3, "s1": 7}) == 14
    assert sizes.evaluate(sizes.size(symbolic.SymInt(3, ("min", "s0", "s1"))),
                          {"s0": 3, "s1": 7}) == 3
    assert eval_size("max(s0, s1 * 2) - min(s0, 4)", {"s0": 9, "s1": 2}) == 9 - 4
    with pytest.raises(ValueError, match="max/min of two"):
        eval_size("max(s0, s1, 3)", {"s0": 1, "s1": 2})
    with pytest.raises(ValueError, match="max/min of two"):
        eval_size("abs(s0)", {"s0": 1})
    with pytest.raises(ValueError, match="max/min of two"):   # a call inside is no size
        eval_size("max(__import__('os').getpid(), 1)", {})


@pytest.mark.parametrize("mode", ["c", "cpp_wrapper", "numpy", "eager"])
def test_one_graph_for_both_orderings_matches_torch_compile(mode, monkeypatch):
    if mode == "numpy":   # no C compiler: the NumPy kernels evaluate max(s0, s1) in Python
        monkeypatch.setattr(config, "cc", None)
    built = []

    def c_backend(gm, example_inputs):
        cg = compile_fx(gm, example_inputs,
                        {"cpp_wrapper": True} if mode == "cpp_wrapper" else None)
        built.append(cg)
        return cg

    cnt = CompileCounter() if mode == "eager" else None
    ef = ember.compile(_fn(ember), dynamic=True, backend=cnt if cnt else c_backend)
    torch._dynamo.reset()
    tcnt = TorchCounter()
    tf = torch.compile(_fn(torch), dynamic=True, backend=tcnt)
    for k, (a, b) in enumerate(ORDERS):
        x, y = _inputs(a, b, k)
        want = tf(torch.from_numpy(x), torch.from_numpy(y))
        _check(ef(ember.from_numpy(x), ember.from_numpy(y)), want)
    assert tcnt.frame_count == 1
    if cnt is not None:
        assert cnt.frame_count == 1
    else:
        assert len(built) == 1 and built[0].backend == ("numpy" if mode == "numpy" else "c")
        assert built[0].cpp_wrapper == (mode == "cpp_wrapper")
        assert "max(s" in built[0].source and "min(s" in built[0].source


class _M:
    def __init__(self, T):
        class M(T.nn.Module):
            def forward(self, x, y):
                return _fn(T)(x, y)
        self.m = M()


def _export(T):
    from importlib import import_module
    Dim = import_module(T.__name__ + ".export").Dim
    x, y = _inputs(3, 5, 0)
    return T.export.export(_M(T).m, (T.from_numpy(x), T.from_numpy(y)),
                           dynamic_shapes=({0: Dim("a")}, {0: Dim("b")}))


def test_export_keeps_max_symbolic_and_runs_for_both_orderings(tmp_path):
    ep, tep = _export(ember), _export(torch)
    targets = [getattr(n.target, "__name__", None) for n in ep.graph.nodes]
    ttargets = [getattr(n.target, "__name__", None) for n in tep.graph.nodes]
    for name in ("sym_max", "sym_min"):
        assert name in targets and name in ttargets   # a node, as in torch's graph
    path = tmp_path / "p.ember"
    ember.export.save(ep, path)
    loaded = ember.export.load(path)
    buf = io.BytesIO()
    ember.export.save(ep, buf)
    buf.seek(0)
    lite = ember_lite.load(buf)
    assert lite.backend == "c" and lite.c_info.get("compiled") is not None
    for k, (a, b) in enumerate(ORDERS):
        x, y = _inputs(a, b, 10 + k)
        want = tep.module()(torch.from_numpy(x), torch.from_numpy(y))
        ex, ey = ember.from_numpy(x), ember.from_numpy(y)
        _check(ep.module()(ex, ey), want)
        _check(loaded.module()(ex, ey), want)
        _check(lite(x, y), want)


def test_existing_helpers_still_specialise_where_torch_would_not():
    # sym_ite picks an operand on the values (ember has no symbolic bools): one graph per
    # outcome, where max/min alone need one graph
    def f(T):
        def g(x, y):
            big = T.sym_ite(x.shape[0] >= y.shape[0], x.shape[0], y.shape[0])
            return x.new_zeros(big) + y.sum()
        return g
    cnt = CompileCounter()
    ef = ember.compile(f(ember), backend=cnt, dynamic=True)
    for a, b in ORDERS:
        out = ef(ember.ones(a), ember.ones(b))
        np.testing.assert_array_equal(out.numpy(), f(torch)(torch.ones(a), torch.ones(b)))
    assert cnt.frame_count == 2


def test_gradients_through_a_max_sized_tensor_match_torch():
    def f(T):
        def g(x, y, w):
            n = T.sym_max(x.shape[0], y.shape[0])
            z = T.ones(n, 1) * w * (x.sum() + T.arange(n).unsqueeze(1) * 0.1)
            return z.sin().sum() + y.sum()
        return g
    ef = ember.compile(f(ember), dynamic=True)
    for k, (a, b) in enumerate(ORDERS):
        x, y = _inputs(a, b, 20 + k)
        w = np.array([0.5, -1.0, 2.0], np.float32)
        e = [ember.tensor(v, requires_grad=True) for v in (x, y, w)]
        t = [torch.tensor(v, requires_grad=True) for v in (x, y, w)]
        ef(*e).backward()
        f(torch)(*t).backward()
        for ge, gt in zip(e, t):
            np.testing.assert_allclose(ge.grad.numpy(), gt.grad.numpy(), rtol=1e-5, atol=1e-5)
