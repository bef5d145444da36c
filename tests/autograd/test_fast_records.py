"""The dispatcher's fast paths record their nodes with `node.record_unary` and
`node.record_binary`; each must make exactly the node the general `node.record` makes for
the same call: class, params, saved inputs, version entries, edges, input metadata, saved
output and the output's links, for every op that has a fast path and every operand
pattern (tensor/tensor with either or both requiring grad, tensor/number, number/tensor,
leaves, non-leaf inputs and views)."""
import numpy as np
import pytest

import ember
from ember._core import node as node_mod
from ember._core.op import REGISTRY
from ember._core.tensor import Tensor, wrap

FAST_OPS = sorted(n for n, op in REGISTRY.items() if op.ufunc is not None)
BINARY = [n for n in FAST_OPS if REGISTRY[n].category == "binary"]
UNARY = [n for n in FAST_OPS if n not in BINARY]


def test_fast_ops_fit_the_fast_records():
    # what record_unary/record_binary take for granted of an op with a ufunc
    assert {"add", "sub", "mul", "div", "tanh", "exp", "log"} <= set(FAST_OPS)
    for n in FAST_OPS:
        op = REGISTRY[n]
        assert op.n_out == 1 and not op.nondiff_outputs and op.differentiable, n
        assert op.save_inputs in (True, False) and not op.view, n


def _operand(kind, seed):
    """A float64 operand: a leaf requiring grad, one not requiring grad, a non-leaf, a view
    of a non-leaf, or a Python number."""
    if kind == "number":
        return 1.75
    a = np.random.default_rng(seed).uniform(0.5, 1.5, (4 if kind == "view" else 3, 4))
    if kind == "const":
        return ember.tensor(a)
    t = ember.tensor(a, requires_grad=True)
    if kind == "leaf":
        return t
    y = t * 2.0
    return y if kind == "nonleaf" else y[1:]


def _out_for(op, args):
    arrays = [a._data if isinstance(a, Tensor) else a for a in args]
    return wrap(np.asarray(op.ufunc(*arrays)))


def _node_fields(node, out):
    so = node.saved_out
    return dict(
        cls=type(node), op=node.op, params=node.params, n_out=node.n_out,
        saved=tuple(id(a) if isinstance(a, Tensor) else a for a in node.saved)
        if node.saved is not None else None,
        versions=None if node.versions is None else
        tuple((id(t), id(vc), v) for t, vc, v in node.versions),
        edges=tuple(None if e is None else (id(e[0]), e[1]) for e in node.next_edges),
        in_meta=tuple(node.in_meta),
        saved_out=None if so is None else
        [(id(arr), id(vc), v, diff) for arr, vc, v, diff in so],
        out=(out.grad_fn is node, out._output_nr, out._requires_grad), hooked=node.hooked)


def _both(op, args, fast):
    """The node ``fast`` records and the one `record` records for the same call."""
    out_f, out_g = _out_for(op, args), _out_for(op, args)
    nf = fast(out_f)
    ng = node_mod.record(op, args, node_mod._NO_PARAMS, (out_g,))
    f, g = _node_fields(nf, out_f), _node_fields(ng, out_g)
    # the outputs differ (one each): compare what the saved output holds of each
    for d, out in ((f, out_f), (g, out_g)):
        if d["saved_out"] is not None:
            (arr, vc, v, diff), = d["saved_out"]
            assert arr == id(out._data) and vc == id(out._vc)
            d["saved_out"] = [(v, diff)]
    return f, g


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("kind", ["leaf", "nonleaf", "view"])
def test_record_unary_is_record(name, kind):
    op = REGISTRY[name]
    x = _operand(kind, 0)
    f, g = _both(op, (x,), lambda out: node_mod.record_unary(op, x, out))
    assert f == g


PAIRS = [(a, b) for a in ("leaf", "const", "nonleaf", "view", "number")
         for b in ("leaf", "const", "nonleaf", "view", "number")
         if a in ("leaf", "nonleaf", "view") or b in ("leaf", "nonleaf", "view")]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("kinds", PAIRS, ids=["-".join(p) for p in PAIRS])
def test_record_binary_is_record(name, kinds):
    op = REGISTRY[name]
    x, y = _operand(kinds[0], 1), _operand(kinds[1], 2)
    f, g = _both(op, (x, y), lambda out: node_mod.record_binary(op, x, y, out))
    assert f == g


def test_the_operators_record_through_the_fast_records(monkeypatch):
    seen = []
    for fname in ("record_unary", "record_binary"):
        real = getattr(node_mod, fname)
        monkeypatch.setattr("ember._core.dispatch." + fname,
                            lambda *a, _r=real, _n=fname: seen.append(_n) or _r(*a))
    x = ember.rand(4, dtype=ember.float64, requires_grad=True)
    ((x * 2.0).tanh() - x).sum().backward()
    assert seen == ["record_binary", "record_unary", "record_binary"]
    np.testing.assert_allclose(x.grad.numpy(), 2.0 / np.cosh(2.0 * x.detach().numpy()) ** 2 - 1.0,
                               rtol=1e-12)


def test_fast_records_under_anomaly_mode_keep_the_forward_trace():
    x = ember.rand(3, requires_grad=True)
    with ember.autograd.detect_anomaly(check_nan=False):
        y = (x * 2.0).tanh()
    assert y.grad_fn.trace is not None and y.grad_fn.next_functions[0][0].trace is not None
    assert any("test_fast_records_under_anomaly_mode" in line for line in y.grad_fn.trace)


def test_fast_records_pass_saved_tensors_through_pack_hooks():
    packed = []

    def pack(t):
        packed.append(t)
        return t.detach().numpy().copy()

    x = ember.rand(5, requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(pack, lambda a: ember.tensor(a)):
        y = (x * x).exp()   # mul saves both inputs, exp its output
    assert len(packed) == 3
    y.sum().backward()
    xn = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), 2 * xn * np.exp(xn * xn), rtol=1e-6)
