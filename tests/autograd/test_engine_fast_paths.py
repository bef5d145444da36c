"""The backward engine's fast paths give the slow paths' results, checked against torch.

The engine hands the next node over without its ready-heap when only one node is ready,
adds the third and later gradient contributions of a slot into a sum it made itself (in
place), and pays for hooks only on nodes that have them.  Each test runs a program that
takes the fast path and the same program forced onto the slow one (hooks that change
nothing, ``create_graph``, a mode that observes every op), with torch as the oracle.
"""
import numpy as np
import pytest
import torch

import ember
from ember._core.dispatch import DispatchMode


def pair(shape=(3, 4), seed=0, dtype=np.float64):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def close(e, t):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-8)


def _fan_in(lib, x, hooks=None):
    """``a`` gets four gradient contributions."""
    a = x * 2
    b = a + a
    if hooks is not None:
        b.register_hook(lambda g: hooks.append(g))
    c = b + a
    d = (c * a).sin() + a
    return d.sum()


def _pass_through(lib):
    class PassThrough(lib.autograd.Function):
        """Hands its output's gradient to its input unchanged (the same tensor)."""

        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g
    return PassThrough


def test_fan_in_leaves_a_handed_over_gradient_alone():
    # a's first gradient is the very tensor b's hook saw; the later contributions must be
    # summed into a new tensor, not into that one
    res = []
    for lib, x in zip((ember, torch), pair(seed=9)):
        seen = []
        a = x * 2
        p = (a * a).sum()
        q = a.sin().sum()
        b = _pass_through(lib).apply(a)  # newest: its node runs before a's other users
        b.register_hook(lambda g: seen.append((g, g.clone())))
        loss = (b * 3).sum() + p + q
        loss.backward()
        res.append((x.grad, seen[0]))
    (ge, (he, he0)), (gt, (ht, _)) = res
    close(he, he0)
    close(he, ht)
    close(ge, gt)


def test_fan_in_sums_match_torch():
    xe, xt = pair()
    seen_e, seen_t = [], []
    _fan_in(ember, xe, seen_e).backward()
    _fan_in(torch, xt, seen_t).backward()
    close(xe.grad, xt.grad)
    close(seen_e[0], seen_t[0])


def test_fan_in_with_retain_grad_matches_torch():
    xe, xt = pair(seed=1)
    res = []
    for lib, x in ((ember, xe), (torch, xt)):
        a = x * 2
        a.retain_grad()
        b = a + a
        b.retain_grad()
        (b * a + a + b).sum().backward()
        res.append((a.grad, b.grad))
    close(res[0][0], res[1][0])
    close(res[0][1], res[1][1])
    close(xe.grad, xt.grad)


def test_fan_in_with_and_without_hooks_gives_the_same_gradients():
    xe, xt = pair(seed=2)
    _fan_in(ember, xe).backward()
    plain = xe.grad.clone()
    xe.grad = None
    # identity hooks on every node and tensor force the hooked path on each node
    a = xe * 2
    b = a + a
    c = b + a
    d = (c * a).sin() + a
    loss = d.sum()
    for t in (a, b, c, d):
        t.register_hook(lambda g: None)
        t.grad_fn.register_prehook(lambda gs: None)
        t.grad_fn.register_hook(lambda gi, go: None)
    loss.backward()
    close(xe.grad, plain)
    _fan_in(torch, xt).backward()
    close(plain, xt.grad)


def test_fan_in_with_create_graph_double_backward_matches_torch():
    xe, xt = pair(seed=3)
    res = []
    for lib, x in ((ember, xe), (torch, xt)):
        loss = _fan_in(lib, x)
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        (g * g).sum().backward()
        res.append((g, x.grad))
    close(res[0][0], res[1][0])
    close(res[0][1], res[1][1])


class _Observe(DispatchMode):
    """Sees every op of the backward pass: the engine's sums must go through dispatch."""

    def __init__(self):
        self.names = []

    def __ember_dispatch__(self, op, args, kwargs):
        self.names.append(op.name)
        return op(*args, **kwargs)


def test_fan_in_sums_are_dispatched_while_a_mode_observes():
    xe, xt = pair(seed=4)
    loss = _fan_in(ember, xe)
    with _Observe() as mode:
        loss.backward()
    assert mode.names.count("add") >= 3  # a's four contributions: three adds, all seen
    _fan_in(torch, xt).backward()
    close(xe.grad, xt.grad)


def test_grad_of_inputs_with_fan_in_matches_torch():
    xe, xt = pair(seed=5)
    res = []
    for lib, x in ((ember, xe), (torch, xt)):
        a = x * 2
        b = a + a
        loss = (b * a + a.cos() + b).sum()
        res.append(lib.autograd.grad(loss, (a, x)))
    close(res[0][0], res[1][0])
    close(res[0][1], res[1][1])


def _order_program(lib, x, order):
    """Two branches ready at the same time, then a chain: node order as torch runs it."""
    p = x.exp()
    q = x.sin()
    r = x.cos()
    s = (p * q) + (q * r).tanh() + r.sigmoid()
    for name, t in (("p", p), ("q", q), ("r", r), ("s", s)):
        t.grad_fn.register_prehook(lambda gs, name=name: order.append(name))
    return s.sum()


def _waiting_program(lib, x, order):
    """Running ``n`` frees ``m`` while the older-than-n, newer-than-m ``h`` is ready."""
    m = x.exp()
    h = x.cos()
    n = m.sin()
    s = n + h
    for name, t in (("m", m), ("h", h), ("n", n), ("s", s)):
        t.grad_fn.register_prehook(lambda gs, name=name: order.append(name))
    return s.sum()


@pytest.mark.parametrize("program", [_order_program, _waiting_program])
def test_node_order_matches_torch(program):
    xe, xt = pair(seed=6)
    oe, ot = [], []
    program(ember, xe, oe).backward()
    program(torch, xt, ot).backward()
    assert oe == ot
    close(xe.grad, xt.grad)


def test_chain_in_place_leaf_accumulation_over_steps_matches_torch():
    xe, xt = pair((16,), seed=7, dtype=np.float32)
    for _ in range(3):
        for lib, x in ((ember, xe), (torch, xt)):
            y = x
            for _ in range(5):
                y = (y * 1.01).tanh()
            y.sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_modified_saved_tensor_still_raises_on_the_fast_path():
    xe, _ = pair(seed=8)
    y = xe * 2
    z = y.tanh()  # saves its output
    w = z * y     # saves both inputs
    z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.sum().backward()


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("sa,sb", [((5,), (5, 3)), ((4, 5), (5,)), ((5,), (2, 5, 3)),
                                   ((2, 4, 5), (5,))])
def test_matmul_with_a_vector_grads_and_double_grads_match_torch(sa, sb, dtype):
    """vector @ matrix and matrix @ vector take one product per gradient (no
    unsqueeze/squeeze nodes); first and second derivatives are torch's."""
    rng = np.random.default_rng(0)

    def arr(shape):
        a = rng.standard_normal(shape)
        return (a + 1j * rng.standard_normal(shape) if dtype == np.complex128 else a).astype(dtype)
    A, B = arr(sa), arr(sb)
    res = []
    for lib in (ember, torch):
        a, b = lib.tensor(A, requires_grad=True), lib.tensor(B, requires_grad=True)
        o = lib.matmul(a, b)
        g = lib.tensor(np.full(tuple(o.shape), 1.5 + (0.5j if dtype == np.complex128 else 0),
                               dtype=dtype))
        ga, gb = lib.autograd.grad(o, (a, b), g, create_graph=True)
        gga, ggb = lib.autograd.grad((ga.abs() ** 2).sum() + (gb.abs() ** 2).sum(), (a, b))
        res.append([t.detach().resolve_conj().numpy() for t in (ga, gb, gga, ggb)])
    for e, t in zip(*res):
        np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-12)


def test_hessian_loop_through_a_matrix_vector_product_matches_torch():
    w = np.random.default_rng(1).standard_normal((16, 16)) * 0.3
    x = np.random.default_rng(2).standard_normal(16)
    h = [lib.autograd.functional.hessian(
        lambda v, lib=lib: (lib.tensor(w) @ v).tanh().sum(), lib.tensor(x))
        for lib in (ember, torch)]
    np.testing.assert_allclose(h[0].numpy(), h[1].numpy(), rtol=1e-10, atol=1e-12)
