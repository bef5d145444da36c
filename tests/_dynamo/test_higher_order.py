"""ember.cond / ember.while_loop / ember.map (torch's higher-order ops): eagerly they equal
torch.cond, torch.while_loop and torch._higher_order_ops.map.map (the oracles); compiled with
fullgraph=True each is ONE node of one graph whose functions are sub-graphs, results and
gradients equal eager whatever the data, and the second call hits the cache."""
import numpy as np
import pytest
import torch
from torch._higher_order_ops.map import map as torch_map

import ember
from ember._dynamo.higher_order_capture import Subgraph
from ember._dynamo.testing import CompileCounter
from ember._higher_order_ops.cond import cond as hop_cond
from ember._higher_order_ops.map import map as hop_map
from ember._higher_order_ops.while_loop import while_loop as hop_while_loop


class Graphs:
    """A backend keeping the graphs it is given (run by the "eager" backend, which computes
    symbolic shape params from each call's sizes)."""

    def __init__(self):
        self.gms = []

    def __call__(self, gm, example_inputs):
        self.gms.append(gm)
        return ember._dynamo.backends.lookup_backend("eager")(gm, example_inputs)

    def nodes(self, name):
        return [n for gm in self.gms for n in gm.graph.nodes
                if n.op == "call_function" and getattr(n.target, "name", None) == name]


def _np(x):
    return x.detach().numpy()


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---- the functions, written once for both libraries ------------------------------------

def _cond_fn(lib):
    def f(x, y):
        z = x * 2
        return lib.cond(z.sum() > 0, lambda a, b: ((a + b).sin(), a * b),
                        lambda a, b: (a - b * 3, b.exp()), (z, y))
    return f


def _loop_fn(lib):
    def f(n, x):
        def cond_fn(i, h):
            return i < n

        def body_fn(i, h):
            return i + 1, (h * 1.5).sin() + 0.1
        return lib.while_loop(cond_fn, body_fn, (lib.zeros((), dtype=lib.int64), x))
    return f


def _map_fn(lib):
    def f(xs, w):
        return lib.map(lambda x, w: (x @ w).tanh(), xs, w) if lib is ember else \
            torch_map(lambda x, w: (x @ w).tanh(), xs, w)
    return f


# ---- eager against torch ---------------------------------------------------------------

@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_eager_equals_torch(sign):
    x, y = sign * np.abs(_rand(5)), _rand(5, seed=1)
    want = _cond_fn(torch)(torch.tensor(x), torch.tensor(y))
    got = _cond_fn(ember)(ember.tensor(x), ember.tensor(y))
    for g, w in zip(got, want):
        np.testing.assert_allclose(_np(g), w.numpy(), rtol=1e-6)


@pytest.mark.parametrize("trips", [0, 1, 3, 6])
def test_while_loop_eager_equals_torch(trips):
    x = _rand(2, 3)
    want = torch.while_loop(lambda i, h: i < trips, lambda i, h: (i + 1, (h * 1.5).sin() + 0.1),
                            (torch.tensor(0), torch.tensor(x)))
    got = ember.while_loop(lambda i, h: i < trips, lambda i, h: (i + 1, (h * 1.5).sin() + 0.1),
                           (ember.tensor(0), ember.tensor(x)))
    assert isinstance(got, tuple) and int(got[0]) == int(want[0]) == trips
    np.testing.assert_allclose(_np(got[1]), want[1].numpy(), rtol=1e-6)


def test_while_loop_eager_gradient_equals_torch():
    x = _rand(4)
    tx = torch.tensor(x, requires_grad=True)
    torch.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, h.sin() * 2),
                     (torch.tensor(0), tx))[1].sum().backward()
    ex = ember.tensor(x, requires_grad=True)
    ember.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, h.sin() * 2),
                     (ember.tensor(0), ex))[1].sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_map_eager_equals_torch_with_pytree_xs_and_args():
    a, b, w = _rand(4, 3), _rand(4, 2, seed=1), _rand(3, 2, seed=2)

    def f(lib):
        def body(xs, w, scale):
            return {"p": xs[0] @ w * scale, "q": xs[1].sum()}
        return body
    want = torch_map(f(torch), (torch.tensor(a), torch.tensor(b)), torch.tensor(w), 2.0)
    got = ember.map(f(ember), (ember.tensor(a), ember.tensor(b)), ember.tensor(w), 2.0)
    assert sorted(got) == ["p", "q"]
    np.testing.assert_allclose(_np(got["p"]), want["p"].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(got["q"]), want["q"].numpy(), rtol=1e-5, atol=1e-6)
    assert hop_map is ember.map and hop_cond is ember.cond and hop_while_loop is ember.while_loop


def test_map_eager_gradient_equals_torch():
    xs, w = _rand(5, 3), _rand(3, 2, seed=1)
    txs, tw = torch.tensor(xs, requires_grad=True), torch.tensor(w, requires_grad=True)
    _map_fn(torch)(txs, tw).pow(2).sum().backward()
    exs, ew = ember.tensor(xs, requires_grad=True), ember.tensor(w, requires_grad=True)
    _map_fn(ember)(exs, ew).pow(2).sum().backward()
    np.testing.assert_allclose(exs.grad.numpy(), txs.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-6)


# ---- compiled: one node, one graph, the cache hit ----------------------------------------

def test_cond_compiled_is_one_node_for_both_branches():
    g = Graphs()
    compiled = ember.compile(_cond_fn(ember), backend=g, fullgraph=True)
    y = ember.tensor(_rand(5, seed=1))
    for sign in (1.0, -1.0, 1.0, -1.0):
        x = ember.tensor(sign * np.abs(_rand(5)))
        got = compiled(x, y)
        want = _cond_fn(torch)(torch.tensor(x.numpy()), torch.tensor(y.numpy()))
        for a, b in zip(got, want):
            np.testing.assert_allclose(_np(a), b.numpy(), rtol=1e-6)
    assert len(g.gms) == 1  # the second call and every later one hit the cache
    (node,) = g.nodes("cond")
    assert not g.nodes("where")
    tg, fg = node.kwargs["true_graph"], node.kwargs["false_graph"]
    assert isinstance(tg, Subgraph) and isinstance(fg, Subgraph)
    assert [n.target.name for n in tg.graph_module.graph.nodes if n.op == "call_function"] == \
        ["add", "sin", "mul"]
    assert [n.target.name for n in fg.graph_module.graph.nodes if n.op == "call_function"] == \
        ["mul", "sub", "exp"]


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_while_loop_compiled_equals_eager_for_several_trip_counts(backend):
    cnt = CompileCounter()
    f = _loop_fn(ember)
    compiled = ember.compile(lambda n, x: f(n, x), backend=cnt if backend == "eager" else
                             backend, fullgraph=True)
    x = ember.tensor(_rand(2, 3))
    for trips in (0, 2, 5, 1):
        n = ember.tensor(trips)
        got, want = compiled(n, x), _loop_fn(torch)(torch.tensor(trips), torch.tensor(x.numpy()))
        assert int(got[0]) == trips
        np.testing.assert_allclose(_np(got[1]), want[1].numpy(), rtol=1e-5, atol=1e-6)
    if backend == "eager":
        assert cnt.frame_count == 1


def test_while_loop_compiled_is_one_node():
    g = Graphs()
    compiled = ember.compile(_loop_fn(ember), backend=g, fullgraph=True)
    compiled(ember.tensor(3), ember.randn(4))
    compiled(ember.tensor(7), ember.randn(4))
    assert len(g.gms) == 1
    (node,) = g.nodes("while_loop")
    assert node.kwargs["n_carried"] == 2
    body = node.kwargs["body_graph"].graph_module
    assert "sin" in [n.target.name for n in body.graph.nodes if n.op == "call_function"]


def test_map_compiled_is_one_node_and_dynamic_sizes_pass_through():
    g = Graphs()
    compiled = ember.compile(_map_fn(ember), backend=g, fullgraph=True)
    w = ember.tensor(_rand(3, 2, seed=1))
    for n in (4, 4, 6, 9):
        xs = ember.tensor(_rand(n, 3))
        np.testing.assert_allclose(_np(compiled(xs, w)),
                                   _map_fn(torch)(torch.tensor(xs.numpy()),
                                                  torch.tensor(w.numpy())).numpy(), rtol=1e-5, atol=1e-6)
    assert len(g.gms) == 2  # static, then once more with the leading size symbolic
    node = g.nodes("map")[-1]
    (size,) = node.meta["val"][0].shape[:1]
    assert isinstance(size, ember._dynamo.symbolic.SymInt) and size.expr == "s0"
    body = node.kwargs["body_graph"].graph_module
    shapes = [n.meta["val"].shape for n in body.graph.nodes if n.op == "placeholder"
              and hasattr(n.meta["val"], "shape")]
    assert shapes == [(3,), (3, 2)]


def test_dynamic_size_inside_a_branch_reaches_the_subgraph():
    g = Graphs()

    def f(x):
        n = x.shape[0]
        return ember.cond(x.sum() > 0, lambda a: a.reshape(n, 2).sum(1),
                          lambda a: a.reshape(2, n).sum(0), (x.reshape(-1),))
    compiled = ember.compile(f, backend=g, fullgraph=True, dynamic=True)
    for rows in (3, 5, 7):
        for sign in (1, -1):
            x = ember.tensor(sign * np.abs(_rand(rows, 2)) + sign * 0.1)
            np.testing.assert_allclose(_np(compiled(x)), _np(f(x)), rtol=1e-6)
    assert len(g.gms) == 1
    (node,) = g.nodes("cond")
    sizes = [n.meta["val"] for n in node.kwargs["true_graph"].graph_module.graph.nodes
             if n.op == "placeholder" and not hasattr(n.meta["val"], "shape")]
    assert any(getattr(s, "expr", None) == "s0" for s in sizes)


# ---- gradients ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_compiled_gradients_equal_eager(backend, sign):
    lin = ember.nn.Linear(3, 3)

    def f(x):
        return ember.cond(x.sum() > 0, lambda a: lin(a).tanh(), lambda a: a.exp() * 0.5, (x,))
    x0 = sign * (np.abs(_rand(2, 3)) + 0.1)
    grads = []
    for fn in (f, ember.compile(f, backend=backend, fullgraph=True)):
        x = ember.tensor(x0, requires_grad=True)
        lin.zero_grad()
        fn(x).pow(2).sum().backward()
        grads.append((x.grad.numpy().copy(), None if lin.weight.grad is None else
                      lin.weight.grad.numpy().copy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-5, atol=1e-6)
    if sign > 0:  # the branch reading the closure's parameters: their gradient arrives
        np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-5, atol=1e-6)
    else:
        assert grads[1][1] is None or not grads[1][1].any()


def test_map_compiled_gradients_equal_torch():
    xs, w = _rand(5, 3), _rand(3, 2, seed=1)
    txs, tw = torch.tensor(xs, requires_grad=True), torch.tensor(w, requires_grad=True)
    _map_fn(torch)(txs, tw).pow(2).sum().backward()
    exs, ew = ember.tensor(xs, requires_grad=True), ember.tensor(w, requires_grad=True)
    ember.compile(_map_fn(ember), backend="eager", fullgraph=True)(exs, ew).pow(2).sum().backward()
    np.testing.assert_allclose(exs.grad.numpy(), txs.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_while_loop_compiled_gradient_equals_torch():
    x = _rand(4)
    tx = torch.tensor(x, requires_grad=True)
    _loop_fn(torch)(torch.tensor(3), tx)[1].sum().backward()
    ex = ember.tensor(x, requires_grad=True)
    ember.compile(_loop_fn(ember), backend="eager", fullgraph=True)(
        ember.tensor(3), ex)[1].sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


# ---- nesting, closures, fallbacks --------------------------------------------------------

def test_cond_nested_in_while_loop_body_is_one_graph():
    cnt = CompileCounter()

    def f(x):
        def body(i, h):
            return i + 1, ember.cond(h.sum() > 0, lambda a: a - 1.0, lambda a: a + 2.0, (h,))
        return ember.while_loop(lambda i, h: i < 5, body, (ember.zeros((), dtype=ember.int64), x))[1]
    compiled = ember.compile(f, backend=cnt, fullgraph=True)
    for seed in range(3):
        x = ember.tensor(_rand(3, seed=seed))
        np.testing.assert_allclose(_np(compiled(x)), _np(f(x)), rtol=1e-6)
    assert cnt.frame_count == 1


def test_branch_that_needs_a_value_runs_as_python():
    def true_fn(a):
        return a * 2 if a.max() > 10 else a + 1  # needs a value: no sub-graph

    def f(x):
        return ember.cond(x.sum() > 0, true_fn, lambda a: a - 1, (x,))
    x = ember.ones(3)
    np.testing.assert_allclose(_np(ember.compile(f, backend="eager")(x)), [2.0, 2.0, 2.0])
    with pytest.raises(ember._dynamo.exc.Unsupported, match="graph break"):
        ember.compile(f, backend="eager", fullgraph=True)(x)


# ---- errors ------------------------------------------------------------------------------

def test_while_loop_errors():
    x = ember.ones(3)
    with pytest.raises(RuntimeError, match="body_fn output 1 has shape \\[\\] .* carried input 1"):
        ember.while_loop(lambda i, h: i < 2, lambda i, h: (i + 1, h.sum()), (ember.tensor(0), x))
    with pytest.raises(RuntimeError, match="body_fn output 1 .*float64.* carried input 1"):
        ember.while_loop(lambda i, h: i < 2, lambda i, h: (i + 1, h.double()),
                         (ember.tensor(0), x))
    with pytest.raises(RuntimeError, match="cond_fn must return a boolean scalar tensor"):
        ember.while_loop(lambda i, h: h, lambda i, h: (i + 1, h), (ember.tensor(0), x))
    with pytest.raises(RuntimeError, match="carried_inputs must be a tuple or list"):
        ember.while_loop(lambda h: h.sum() > 0, lambda h: h, x)
    compiled = ember.compile(lambda x: ember.while_loop(
        lambda i, h: i < 2, lambda i, h: (i + 1, h[:2]), (ember.zeros((), dtype=ember.int64), x)),
        backend="eager", fullgraph=True)
    with pytest.raises(RuntimeError, match="body_fn output 1 has shape \\[2\\] .* carried input 1 "
                                           "has shape \\[3\\]"):
        compiled(x)
    compiled = ember.compile(lambda x: ember.while_loop(
        lambda i, h: h > 0, lambda i, h: (i + 1, h), (ember.zeros((), dtype=ember.int64), x)), backend="eager",
        fullgraph=True)
    with pytest.raises(RuntimeError, match="cond_fn must return a boolean scalar tensor"):
        compiled(x)


def test_cond_and_map_errors():
    x = ember.ones(2)
    with pytest.raises(RuntimeError, match="output 0 of the branches differs: true_fn gives "
                                           "shape \\[2\\] .* false_fn shape \\[\\]"):
        ember.compile(lambda x: ember.cond(x.sum() > 0, lambda y: y, lambda y: y.sum(), (x,)),
                      backend="eager", fullgraph=True)(x)
    with pytest.raises(RuntimeError, match="differs: .*float32.*float64"):
        ember.compile(lambda x: ember.cond(x.sum() > 0, lambda y: y, lambda y: y.double(),
                                           (x,)), backend="eager", fullgraph=True)(x)
    with pytest.raises(RuntimeError, match="same size along dim 0.*tensor 1 has 3"):
        ember.map(lambda a, b: a + b.sum(), (ember.ones(2, 2), ember.ones(3)))
    with pytest.raises(RuntimeError, match="0-dim"):
        ember.map(lambda a: a, ember.tensor(1.0))
    with pytest.raises(RuntimeError, match="must return tensors"):
        ember.compile(lambda xs: ember.map(lambda a: 3, xs), backend="eager")(ember.ones(2, 2))


# ---- export: the nodes survive, run, decompose -------------------------------------------

class _Model(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = ember.nn.Linear(3, 3)

    def forward(self, x):
        y = ember.cond(x.sum() > 0, lambda a: ember.nn.functional.gelu(self.lin(a)),
                       lambda a: a.softmax(-1), (x,))
        z = ember.map(lambda r: r.logsumexp(0), y)
        return ember.while_loop(lambda i, w: i < 3, lambda i, w: (i + 1, w * 2),
                                (ember.zeros((), dtype=ember.int64), z))[1]


def _hop_nodes(gm):
    return {n.target.name: n for n in gm.graph.nodes if n.op == "call_function"
            and getattr(n.target, "name", None) in ("cond", "map", "while_loop")}


@pytest.mark.parametrize("dynamic", [False, True])
def test_export_keeps_the_control_flow_and_decomposes_its_bodies(dynamic):
    m = _Model()
    x = ember.tensor(_rand(4, 3))
    dyn = {"x": {0: ember.export.Dim("b")}} if dynamic else None
    ep = ember.export.export(m, (x,), dynamic_shapes=dyn)
    assert sorted(_hop_nodes(ep.graph_module)) == ["cond", "map", "while_loop"]
    dec = ep.run_decompositions(ember.export.primitive_decompositions())
    nodes = _hop_nodes(dec.graph_module)
    bodies = [nodes["cond"].kwargs["true_graph"], nodes["cond"].kwargs["false_graph"],
              nodes["map"].kwargs["body_graph"]]
    names = {n.target.name for b in bodies for n in b.graph_module.graph.nodes
             if n.op == "call_function" and hasattr(n.target, "name")}
    from ember.ops.primitives import PRIMITIVES
    assert {"linear", "gelu", "softmax", "logsumexp"}.isdisjoint(names)
    assert names <= set(PRIMITIVES), names - set(PRIMITIVES)
    rows = (4, 6) if dynamic else (4,)
    for n in rows:
        for sign in (1.0, -1.0):
            xx = ember.tensor(sign * (np.abs(_rand(n, 3, seed=n)) + 0.1))
            want = _np(m(xx))
            np.testing.assert_allclose(_np(ep.module()(xx)), want, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(_np(dec.module()(xx)), want, rtol=1e-5, atol=1e-5)


def test_subgraph_from_graph_module_keys_and_runs_like_its_source():
    g = Graphs()
    ember.compile(_cond_fn(ember), backend=g, fullgraph=True)(ember.ones(3), ember.ones(3))
    sub = g.nodes("cond")[0].kwargs["false_graph"]
    a = Subgraph.from_graph_module(sub.graph_module)
    b = Subgraph.from_graph_module(sub.graph_module)
    assert a == b and hash(a) == hash(b) and a.out_metas == sub.out_metas
    x, y = ember.tensor(_rand(3)), ember.tensor(_rand(3, seed=1))
    for got, want in zip(a(x, y, *sub.sizes), sub(x, y, *sub.sizes)):
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-6)
    other = Subgraph.from_graph_module(g.nodes("cond")[0].kwargs["true_graph"].graph_module)
    assert other != a


def test_cond_on_a_tensor_input_keeps_both_branches():
    """A predicate that is an input (not computed in the region) is a graph value too: the
    graph does not bake the first call's branch in."""
    g = Graphs()
    compiled = ember.compile(lambda p, x: ember.cond(p, lambda a: a + 1, lambda a: a - 1, (x,)),
                             backend=g, fullgraph=True)
    x = ember.zeros(2)
    preds = (True, True, True, False, False, True, False)
    got = [float(compiled(ember.tensor(p), x)[0]) for p in preds]
    want = [float(torch.cond(torch.tensor(p), lambda a: a + 1, lambda a: a - 1, (torch.zeros(2),))[0])
            for p in preds]
    assert got == want == [1.0, 1.0, 1.0, -1.0, -1.0, 1.0, -1.0]
    assert len(g.gms) == 1 and len(g.nodes("cond")) == 1


def test_export_of_a_tensor_predicate_input_keeps_the_cond():
    class M(ember.nn.Module):
        def forward(self, p, x):
            return ember.cond(p, lambda a: a.sin(), lambda a: a.cos(), (x,))
    x = ember.tensor(_rand(3))
    ep = ember.export.export(M(), (ember.tensor(True), x))
    assert "cond" in _hop_nodes(ep.graph_module)
    for p in (True, False):
        np.testing.assert_allclose(_np(ep.module()(ember.tensor(p), x)),
                                   np.sin(x.numpy()) if p else np.cos(x.numpy()), rtol=1e-6)


def test_branch_output_never_aliases_and_mutating_an_input_is_an_error():
    def f(x):
        return ember.cond(x.sum() > 0, lambda a: a, lambda a: a * 2, (x[1:3],))
    x = ember.ones(4)
    out = ember.compile(f, backend="eager", fullgraph=True)(x)
    out.add_(5)  # a fresh tensor, as torch.cond's outputs are
    np.testing.assert_allclose(x.numpy(), np.ones(4))
    np.testing.assert_allclose(out.numpy(), [6.0, 6.0])
    with pytest.raises(RuntimeError, match="true_fn writes in place to a tensor it did not "
                                           "create .* clone first"):
        ember.compile(lambda x: ember.cond(x.sum() > 0, lambda a: a.add_(1), lambda a: a * 2,
                                           (x,)), backend="eager")(ember.ones(2))


def test_loop_body_that_mutates_its_input_runs_as_python():
    def f(x):
        return ember.while_loop(lambda i, h: i < 2, lambda i, h: (i + 1, h.mul_(2)),
                                (ember.zeros((), dtype=ember.int64), x))[1]
    x, y = ember.ones(2), ember.ones(2)
    np.testing.assert_allclose(_np(ember.compile(f, backend="eager")(x)), _np(f(y)))
    np.testing.assert_allclose(x.numpy(), y.numpy())  # the write happened as eagerly
