"""Hooks on tensors and nodes that receive no gradient, against torch: a tensor hook on an
unused output of a multi-output node (split/chunk/unbind are one node) or on an input a
Function's backward gave None is called with None, may return None but not a tensor (torch's
error), a node's post hooks run with Nones, and a leaf's post-accumulate hooks run."""
import pytest
import torch

import ember


def _as_list(g):
    return None if g is None else g.tolist()


SPLITS = {
    "split": lambda x: x.split(2),
    "chunk": lambda x: x.chunk(2),
    "unbind": lambda x: x.unbind(),
    "split_with_sizes": lambda x: x.split([1, 3]),
}


@pytest.mark.parametrize("how", SPLITS)
def test_tensor_hooks_of_unused_outputs_get_none_as_torch(how):
    res = []
    for lib in (torch, ember):
        x = lib.arange(4.0).requires_grad_()
        outs = SPLITS[how](x)
        seen = []
        for i, o in enumerate(outs):
            o.register_hook(lambda g, i=i: seen.append((i, _as_list(g))) or
                            (None if g is None else g * 10))
        (outs[0] * 3).sum().backward()
        res.append((seen, x.grad.tolist()))
    assert res[1] == res[0]


class _Drop:
    """A Function whose backward gives no gradient to its second input."""

    @staticmethod
    def make(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * 1

            @staticmethod
            def backward(ctx, g):
                return g, None
        return F


def test_hooks_of_a_node_that_gets_none_run_as_torch():
    res = []
    for lib in (torch, ember):
        x = lib.arange(4.0).requires_grad_()
        b = x * 3
        seen = []
        b.register_hook(lambda g: seen.append(("tensor", g)))
        b.grad_fn.register_prehook(lambda go: seen.append(("pre", go)))
        b.grad_fn.register_hook(lambda gi, go: seen.append(("post", gi, go)))
        _Drop.make(lib).apply(x * 2, b).sum().backward()
        res.append((seen, x.grad.tolist()))
    assert res[1] == res[0]
    assert res[0][0] == [("tensor", None), ("pre", (None,)), ("post", (None, None), (None,))]


def test_leaf_hooks_get_none_and_post_accumulate_hooks_run_as_torch():
    res = []
    for lib in (torch, ember):
        x = lib.arange(4.0).requires_grad_()
        w = lib.arange(4.0).requires_grad_()
        seen = []
        x.register_hook(lambda g: seen.append(("hook", g)))
        x.register_post_accumulate_grad_hook(lambda t: seen.append(("post", t.grad)))
        _Drop.make(lib).apply(w * 1, x).sum().backward()
        res.append((seen, x.grad, w.grad.tolist()))
    assert res[1] == res[0] == ([("hook", None), ("post", None)], None, [1.0] * 4)


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_replacing_a_none_gradient_raises_as_torch(lib):
    x = lib.arange(4.0).requires_grad_()
    p, q = x.split(2)
    q.register_hook(lambda g: lib.ones(2))
    with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None value"):
        p.sum().backward()


def test_retained_unused_output_stays_none_and_grad_matches_torch():
    res = []
    for lib in (torch, ember):
        x = lib.arange(6.0).requires_grad_()
        u = x.unbind()
        seen = []
        for i, t in enumerate(u):
            t.retain_grad()
            t.register_hook(lambda g, i=i: seen.append((i, _as_list(g))))
        (g,) = lib.autograd.grad(u[1] * 2 + u[4], x)
        res.append((seen, g.tolist(), [_as_list(t.grad) for t in u]))
    assert res[1] == res[0]
