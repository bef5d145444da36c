"""The engine's execution order: the reachable nodes by sequence number, newest first
(`engine._execution_order`), must be the order of counting dependencies and running the
newest ready node first (`engine._ordered_by_dependencies`, torch's engine's rule) on any
recorded graph; a graph with an edge to a node no older than its consumer is ordered by
counting, and backward still gives torch's gradients."""
import numpy as np
import pytest
import torch

import ember
from ember.autograd import engine


def _random_graph(lib, seed, n_ops=40):
    """A random DAG of ops over three leaves: each op reads one or two earlier values
    (reuse makes diamonds and fan-out), some of them multi-output (split) or views."""
    rng = np.random.default_rng(seed)
    leaves = [lib.tensor(rng.uniform(0.5, 1.5, (6,)), requires_grad=True) for _ in range(3)]
    vals = list(leaves)
    for _ in range(n_ops):
        k = rng.integers(6)
        a = vals[rng.integers(len(vals))]
        b = vals[rng.integers(len(vals))]
        if k == 0:
            v = a * b
        elif k == 1:
            v = (a + 1.0).tanh()
        elif k == 2:
            p, q = a.split(3)
            v = lib.cat([q, p * 2.0])
        elif k == 3:
            v = a.flip(0) - b[1:].sum()
        elif k == 4:
            v = (a * 0.5).exp() / (b * b + 1.0)
        else:
            v = a.sin() + b.cos()
        vals.append(v)
    out = sum((v * float(i % 3 + 1)).sum() for i, v in enumerate(vals[3:]))
    return leaves, out


@pytest.mark.parametrize("seed", range(6))
def test_seq_order_is_the_dependency_order(seed):
    leaves, out = _random_graph(ember, seed)
    root = [(out.grad_fn, 0)]
    order = engine._execution_order(root)
    assert order == engine._ordered_by_dependencies(root)
    assert len(order) == len(set(order)) > 40
    # several roots, one of them below another
    mid = out.grad_fn.next_functions[0][0]
    roots = [(out.grad_fn, 0), (mid, 0)]
    assert engine._execution_order(roots) == engine._ordered_by_dependencies(roots)


@pytest.mark.parametrize("seed", range(3))
def test_gradients_match_torch(seed):
    el, eo = _random_graph(ember, seed)
    tl, to = _random_graph(torch, seed)
    eo.backward()
    to.backward()
    for e, t in zip(el, tl):
        assert (e.grad is None) == (t.grad is None)
        if t.grad is not None:
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    (el, eo), (tl, to) = _random_graph(ember, seed), _random_graph(torch, seed)
    eg = ember.autograd.grad(eo, el[:2], allow_unused=True)
    tg = torch.autograd.grad(to, tl[:2], allow_unused=True)
    for e, t in zip(eg, tg):
        assert (e is None) == (t is None)
        if t is not None:
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)


def test_an_edge_to_a_newer_node_is_ordered_by_counting(monkeypatch):
    x = ember.tensor([0.5, 1.0, 2.0], dtype=ember.float64, requires_grad=True)
    a = x * 3.0
    b = a.exp()
    c = b * a
    mid = b.grad_fn
    mid.seq = c.grad_fn.seq + 10   # as if b's node were recorded after its consumer
    calls = []
    real = engine._ordered_by_dependencies
    monkeypatch.setattr(engine, "_ordered_by_dependencies",
                        lambda roots: calls.append(1) or real(roots))
    order = engine._execution_order([(c.grad_fn, 0)])
    assert calls and order.index(mid) < order.index(a.grad_fn)  # b's node before a's
    c.sum().backward()
    xn = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.exp(3 * xn) * (3 * xn + 1), rtol=1e-12)


def _hooked_program(lib, calls):
    x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    y = lib.tensor([0.5, 3.0], dtype=lib.float64, requires_grad=True)
    x.register_hook(lambda g: calls.append(("x", g is None)))
    a = x * 2
    a.register_hook(lambda g: calls.append(("a", g is None)))
    b = a * 3 + y
    b.register_hook(lambda g: calls.append(("b", g is None)))
    b.grad_fn.register_prehook(lambda gs: calls.append(("b-node", gs[0] is None)))
    return x, y, a, b, (b * b).sum() + (a * y).sum()


@pytest.mark.parametrize("which", ["b", "a", "y", "a,y", "backward:a"])
def test_nodes_without_a_path_to_the_inputs_run_no_hooks(which):
    # autograd.grad / backward(inputs=) run only what leads to an input: no hook of a node
    # above the inputs is called (captum's layer methods hook modules upstream of the layer)
    got = {}
    for lib in (ember, torch):
        calls = []
        x, y, a, b, loss = _hooked_program(lib, calls)
        names = {"a": a, "b": b, "y": y}
        if which.startswith("backward:"):
            loss.backward(inputs=[names[which.split(":")[1]]])
            grads = (a.grad,)
        else:
            grads = lib.autograd.grad(loss, [names[n] for n in which.split(",")])
        got[lib.__name__] = (calls, [g.detach().numpy().tolist() for g in grads],
                             x.grad is None, y.grad is None)
    assert got["ember"] == got["torch"]
