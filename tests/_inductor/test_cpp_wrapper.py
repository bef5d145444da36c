"""cpp_wrapper: the whole graph as one C entry point, matmuls of every batch/broadcast
layout, linear layers and embedding lookups included (BLAS through SciPy's pointers);
graphs it cannot take run the Python wrapper with the reason kept, never an error."""
import logging

import numpy as np
import pytest

import ember
import ember.nn.functional as F

from .helpers import assert_close, check, compile_fn, rand

CPP = {"cpp_wrapper": True}


def _shim(compiled):
    return compiled.source[compiled.source.index("def call(*args):"):]


def cpp(fn, *inputs):
    """Compile with cpp_wrapper, check it took the graph whole and equals eager."""
    c = check(fn, *inputs, options=CPP)
    assert c.cpp_wrapper, c.cpp_wrapper_reason
    shim = _shim(c)
    # one Python call runs the graph: no kernel or eager step is called from Python
    assert shim.count("ek_entry(") == 1 and "_eager" not in shim and "kernel" not in shim, shim
    return c


@pytest.mark.parametrize("shape", [(5, 7), (2, 5, 7), (2, 3, 5, 7)])
def test_linear_with_bias(shape):
    x, w, b = rand(*shape), rand(4, 7, seed=1), rand(4, seed=2)
    cpp(lambda x, w, b: F.linear(x, w, b), x, w, b)
    cpp(lambda x, w: F.linear(x, w).relu(), x, w)


def test_linear_of_a_transposed_input():
    # (5, 2, 7) read through a transpose: its batch does not continue its rows
    x, w, b = rand(2, 5, 7), rand(4, 7, seed=1), rand(4, seed=2)
    cpp(lambda x, w, b: F.linear(x.transpose(0, 1), w, b) * 2, x, w, b)


@pytest.mark.parametrize("sa,sb", [((3, 4, 5), (3, 5, 6)), ((4, 5), (3, 5, 6)),
                                   ((3, 4, 5), (5, 6)), ((3, 4, 5), (1, 5, 6)),
                                   ((2, 1, 4, 5), (1, 3, 5, 6)), ((2, 3, 4, 5), (2, 3, 5, 6)),
                                   ((5,), (3, 5, 6)), ((3, 4, 5), (5,)), ((5,), (5, 6)),
                                   ((4, 5), (5,))])
def test_batched_and_broadcast_matmul(sa, sb):
    a, b = rand(*sa), rand(*sb, seed=1)
    cpp(lambda a, b: (a @ b) + 1, a, b)


def test_attention_scores_through_transposed_views():
    q, k, v = rand(2, 3, 4, 5), rand(2, 3, 4, 5, seed=1), rand(2, 3, 4, 5, seed=2)
    cpp(lambda q, k, v: F.softmax(q @ k.transpose(-2, -1) * 0.5, -1) @ v, q, k, v)
    # sdpa: the flash-attention kernels, called from the entry point
    cpp(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True) * 2, q, k, v)


def test_strided_and_expanded_operands():
    x, w = rand(4, 9), rand(3, 6, seed=1)
    cpp(lambda x, w: x[:, 1:4] @ w, x, w)                    # a row stride of 9
    cpp(lambda x, w: x[:, 1:4].t() @ x[:, 2:8], x, w)        # transposed left operand
    col = rand(4, 1, seed=2)
    cpp(lambda c, w: c.expand(4, 3) @ w, col, w)             # stride 0: copied first
    cpp(lambda x, w: x[::2, ::3] @ w, x, w)                  # no unit stride: copied


def test_float64_matmul():
    a, b = rand(3, 4, 5, dtype=ember.float64), rand(5, 2, seed=1, dtype=ember.float64)
    cpp(lambda a, b: (a @ b).tanh(), a, b)


def test_embedding_lookup_and_its_errors():
    w = rand(10, 4)
    i = ember.from_numpy(np.array([[1, 9, 0], [3, 3, 2]]))
    c = cpp(lambda w, i: F.embedding(i, w) * 2, w, i)
    neg = ember.from_numpy(np.array([[-1, 2, 0], [3, 3, 2]]))
    bad = ember.from_numpy(np.array([[1, 10, 0], [3, 3, 2]]))
    for idx in (neg, bad):
        try:
            want = F.embedding(idx, w) * 2
        except Exception as e:  # noqa: BLE001 - compiled must raise what eager raises
            with pytest.raises(type(e)):
                c(w, idx)
        else:
            assert_close(c(w, idx), (want,))


def test_index_of_a_table_row():
    x, i = rand(6, 3), ember.from_numpy(np.array([5, 0, 2, 2]))
    cpp(lambda x, i: x[i] + 1, x, i)


def test_graph_it_cannot_take_runs_the_python_wrapper(caplog):
    a = ember.from_numpy(np.arange(12).reshape(3, 4))
    b = ember.from_numpy(np.arange(8).reshape(4, 2))
    with caplog.at_level(logging.INFO, logger="ember._inductor.compile_fx"):
        c = check(lambda a, b: (a @ b) * 2, a, b, options=CPP)
    assert not c.cpp_wrapper and "matmul of int64" in c.cpp_wrapper_reason
    assert any("matmul of int64" in r.getMessage() for r in caplog.records)
    x = rand(5, 5)
    c = check(lambda x: ember.linalg.inv(x) + 1, x, options=CPP)
    assert not c.cpp_wrapper and "only Python can run" in c.cpp_wrapper_reason


def _gpt():
    import sys
    import os
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    from benchmarks.workloads_nn import tiny_gpt
    ember.manual_seed(0)
    return tiny_gpt(ember, d=32, heads=4, seq=8, vocab=29, layers=2)


@pytest.mark.parametrize("flash", [True, False])
def test_tiny_gpt_forward_is_one_c_call(monkeypatch, flash):
    # attention: the flash-attention kernels kept whole, or matmuls and a softmax kernel
    from ember._inductor import config
    if not flash:
        monkeypatch.setattr(config, "keep_whole", config.keep_whole -
                            {"_flash_attention", "_flash_attention_backward"})
    m = _gpt()
    idx = ember.from_numpy(np.random.default_rng(0).integers(0, 29, (2, 8)))
    with ember.no_grad():
        c, want = compile_fn(lambda i: m(i), idx, options=CPP)
        assert c.cpp_wrapper, c.cpp_wrapper_reason
        assert_close(c(idx), want)
        shim = _shim(c)
        assert shim.count("ek_entry(") == 1 and "kernel" not in shim and "_eager" not in shim
        other = ember.from_numpy(np.random.default_rng(1).integers(0, 29, (2, 8)))
        assert_close(c(other), (m(other),))


def test_symbolic_batch_and_rows():
    """One build serves every size: batch counts, row counts and strides are arguments."""
    from ember._inductor import compile_fx
    from ember._inductor.passes.record import record_graph

    from .test_dynamic_shapes import _symbolize

    def fn(x, w, b, y):
        h = F.linear(x, w, b).relu()                     # (s0, 4, 6): rows folded
        att = h @ h.transpose(-2, -1)                    # (s0, 4, 4): one gemm per batch
        return att.softmax(-1) @ y, h[:, 1:3] @ w        # a strided left operand
    x, w, b, y = rand(3, 4, 5), rand(6, 5, seed=1), rand(6, seed=2), rand(4, 2, seed=3)
    gm, _ = record_graph(fn, x, w, b, y)
    _symbolize(gm, {3: "s0", 12: "s0*4", 6 * 3: "s0*6"})
    c = compile_fx(gm, [x, w, b, y], CPP)
    assert c.cpp_wrapper, c.cpp_wrapper_reason
    assert "int64_t s0" in c.source
    for n in (3, 1, 7):
        xs = rand(n, 4, 5, seed=n)
        assert_close(c(xs, w, b, y), fn(xs, w, b, y))


@pytest.fixture
def graphs(monkeypatch):
    """The graphs ``ember.compile`` builds, as compiled."""
    import ember._inductor as inductor
    seen, real = [], inductor.compile_fx

    def recording(gm, example, options=None):
        c = real(gm, example, options)
        seen.append(c)
        return c
    monkeypatch.setattr(inductor, "compile_fx", recording)
    return seen


def _one_c_call_each(graphs, count):
    assert len(graphs) == count
    for c in graphs:
        assert c.cpp_wrapper, c.cpp_wrapper_reason
        shim = _shim(c)
        assert shim.count("ek_entry(") == 1 and "kernel" not in shim and "_eager" not in shim


@pytest.fixture
def python_attention(monkeypatch):
    """Counts of the eager flash kernels called from Python (none: the entry point calls
    the C ones itself)."""
    from ember._core.ckernels import attention as CA
    seen = []
    for name in ("forward", "backward"):
        real = getattr(CA, name)
        monkeypatch.setattr(CA, name, lambda *a, _r=real, _n=name, **k: seen.append(_n) or
                            _r(*a, **k))
    return seen


def test_tiny_gpt_training_step_is_one_c_call_per_graph(graphs, python_attention):
    """Forward and backward graphs each one C call: the flash-attention kernels, matmuls,
    the embedding gathers and their scatter-add gradients all in C."""
    m = _gpt()
    idx = ember.from_numpy(np.random.default_rng(0).integers(0, 29, (2, 8)))
    params = list(m.parameters())

    def step(model):
        for p in params:
            p.grad = None
        out = model(idx)
        out.square().mean().backward()
        return out.detach(), [p.grad.clone() for p in params]
    ref_out, ref_grads = step(m)
    compiled = ember.compile(m, backend="inductor", options=CPP)
    for _ in range(2):  # the second call runs the cached graphs
        python_attention.clear()
        out, grads = step(compiled)
        np.testing.assert_allclose(out.numpy(), ref_out.numpy(), atol=2e-5, rtol=2e-5)
        for g, r in zip(grads, ref_grads):
            np.testing.assert_allclose(g.numpy(), r.numpy(), atol=5e-5, rtol=5e-4)
    _one_c_call_each(graphs, 2)
    assert not python_attention, python_attention


SDPA = F.scaled_dot_product_attention


@pytest.mark.parametrize("mask", [None, "bool", "float", "bool_rows"])
def test_sdpa_masks_in_the_entry_point(mask):
    q, k, v = rand(2, 3, 70, 8), rand(2, 3, 90, 8, seed=1), rand(2, 3, 90, 6, seed=2)
    args = [q, k, v]
    if mask == "bool":
        args.append(ember.from_numpy(np.random.default_rng(3).random((70, 90)) > 0.3))
    elif mask == "float":
        args.append(rand(2, 1, 70, 90, seed=4))
    elif mask == "bool_rows":  # one row of keys for every query: a stride-0 row
        args.append(ember.from_numpy(np.random.default_rng(3).random((1, 90)) > 0.3))
    cpp(lambda *a: SDPA(*a, scale=0.4) + 1, *args)


def test_sdpa_strided_broadcast_and_float64_operands():
    x = rand(2, 8, 3, 6)
    # heads split off a (B, T, H, D) tensor: permuted, read where they lie
    cpp(lambda x: SDPA(x.transpose(1, 2), (x * 2).transpose(1, 2), x.transpose(1, 2) + 1,
                       is_causal=True), x)
    q, v = rand(2, 3, 9, 8), rand(2, 3, 11, 8, seed=2)
    k1 = rand(1, 3, 11, 8, seed=1)
    cpp(lambda q, k, v: SDPA(q, k.expand(2, 3, 11, 8), v), q, k1, v)   # a batch stride 0
    cpp(lambda q, k, v: SDPA(q, k, v), q, k1, v)                        # broadcast batch
    cpp(lambda q, k, v: SDPA(q[..., ::2], k[..., ::2], v), q, k1, v)    # no unit stride: copied
    cpp(lambda q, k, v: SDPA(q, k, v, is_causal=True), q[0, 0], k1[0, 0], v[0, 0])  # 2-d
    d = [t.to(ember.float64) for t in (q, k1, v)]
    cpp(lambda q, k, v: SDPA(q, k, v, is_causal=True) * 3, *d)


@pytest.mark.parametrize("mask", [None, "bool", "float"])
def test_sdpa_backward_in_the_entry_point(graphs, python_attention, mask):
    """The backward graph's _flash_attention_backward in C, the float mask's gradient
    (the score gradient ds) included."""
    rng = np.random.default_rng(5)
    q, k, v = (rand(2, 3, 20, 8, seed=s).requires_grad_() for s in range(3))
    args = [q, k, v]
    if mask == "bool":
        args.append(ember.from_numpy(rng.random((20, 20)) > 0.3))
    elif mask == "float":
        args.append(rand(2, 1, 20, 20, seed=4).requires_grad_())

    def f(*a):
        return (SDPA(*a, scale=0.3, is_causal=mask is None) * 2).square().sum()
    diff = [a for a in args if a.requires_grad]
    want = ember.autograd.grad(f(*args), diff)
    compiled = ember.compile(f, backend="inductor", options=CPP)
    compiled(*args)  # captures
    python_attention.clear()
    got = ember.autograd.grad(compiled(*args), diff)
    assert_close(got, want)
    _one_c_call_each(graphs, 2)
    assert not python_attention, python_attention


def test_index_put_in_the_entry_point():
    x, v = rand(6, 3), rand(5, 3, seed=1)
    i = ember.from_numpy(np.array([5, 0, 2, 2, -1]))
    for acc in (True, False):  # duplicates add up, or the last one is kept
        cpp(lambda x, v, i: x.index_put((i,), v * 2, accumulate=acc) + 1, x, v, i)
    # several index tensors broadcast together; values broadcast to the indexed shape
    r = ember.from_numpy(np.array([[0], [4]]))
    c = ember.from_numpy(np.array([2, 0, 1]))
    cpp(lambda x, r, c: x.index_put((r, c), ember.ones(3)), x, r, c)
    w = rand(10, 4)
    idx = ember.from_numpy(np.array([[1, 9, 0], [3, 3, 2]]))
    g = rand(2, 3, 4, seed=2)
    cpp(lambda w, i, g: ember.zeros_like(w).index_put((i,), g, accumulate=True), w, idx, g)


def test_index_put_of_bool_and_half_types():
    i = ember.from_numpy(np.array([1, 1, 3]))
    for dt in (ember.bool, ember.bfloat16, ember.float16):
        x, v = rand(5, 2).to(dt), rand(3, 2, seed=1).to(dt)
        cpp(lambda x, v, i: x.index_put((i,), v).to(ember.float32) + 1, x, v, i)
        c = check(lambda x, v, i: x.index_put((i,), v, accumulate=True), x, v, i, options=CPP)
        assert "index_put" in c.cpp_wrapper_reason  # the Python wrapper adds as NumPy does


def test_index_put_out_of_range_raises_eagers_error():
    x, v = rand(6, 3), rand(2, 3, seed=1)
    c = cpp(lambda x, v, i: x.index_put((i,), v) * 2, x, v, ember.from_numpy(np.array([1, 2])))
    bad = ember.from_numpy(np.array([1, 6]))
    with pytest.raises(IndexError):
        x.index_put((bad,), v)
    with pytest.raises(IndexError):
        c(x, v, bad)


def test_sdpa_symbolic_sizes():
    """One build serves every batch and query count: sizes, strides and the per-batch
    offsets are computed from the arguments."""
    from ember._core.meta import TensorMeta
    from ember._inductor import compile_fx
    from ember._inductor.passes.record import record_graph

    from .helpers import SymInt

    def sym(d):
        exprs = {5: "s0", 7: "s1"}
        return SymInt(d, exprs[int(d)]) if int(d) in exprs else d

    def fn(q, k, v):
        return SDPA(q.transpose(1, 2), k, v, is_causal=True) * 2
    q, k, v = rand(5, 7, 3, 8), rand(5, 3, 9, 8, seed=1), rand(5, 3, 9, 8, seed=2)
    gm, _ = record_graph(fn, q, k, v)
    for n in gm.graph.nodes:
        vals = n.meta.get("val")
        if isinstance(vals, TensorMeta):
            n.meta["val"] = TensorMeta(tuple(sym(d) for d in vals.shape), vals.dtype)
        elif isinstance(vals, tuple):
            n.meta["val"] = tuple(TensorMeta(tuple(sym(d) for d in m.shape), m.dtype)
                                  for m in vals)
    c = compile_fx(gm, [q, k, v], CPP)
    assert c.cpp_wrapper, c.cpp_wrapper_reason
    assert "int64_t s0" in c.source and "int64_t s1" in c.source
    for b, L in ((5, 7), (2, 3), (1, 70), (2, 0)):  # no queries: the Python wrapper
        qs = rand(b, L, 3, 8, seed=b)
        ks, vs = rand(b, 3, 9, 8, seed=b + 1), rand(b, 3, 9, 8, seed=b + 2)
        assert_close(c(qs, ks, vs), (fn(qs, ks, vs),))


def test_sdpa_without_the_compiled_eager_kernels(monkeypatch):
    from ember._core import ckernels
    monkeypatch.setattr(ckernels, "ENABLED", False)
    q, k, v = rand(2, 3, 4, 5), rand(2, 3, 4, 5, seed=1), rand(2, 3, 4, 5, seed=2)
    c = check(lambda q, k, v: SDPA(q, k, v) * 2, q, k, v, options=CPP)
    assert not c.cpp_wrapper and "flash-attention kernels" in c.cpp_wrapper_reason


def test_slice_gradient_in_the_entry_point():
    # a slice's gradient (split's, in q/k/v projections) is zeros with the slice written in
    from ember._core.dispatch import apply
    from ember.ops.views import INDEX_VIEW_BACKWARD

    def grad_of_slice(shape, key):
        return lambda g: apply(INDEX_VIEW_BACKWARD, (g * 2,), {"shape": shape, "key": key}) + 1

    cases = [((4, 6), ((None, None, None), (2, 4, None)), (4, 2)),
             ((2, 5, 6), ((None, None, None), (1, 5, 2), (3, None, None)), (2, 2, 3)),
             ((3, 4), (1,), (4,)),
             ((3, 4), (-1, (None, None, -1)), (4,))]
    for shape, key, gshape in cases:
        g = rand(*gshape)
        cpp(grad_of_slice(shape, key), g)
        cpp(grad_of_slice(shape, key), g.to(ember.float64))
